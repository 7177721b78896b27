// Asynchronous collectives (issue 34, item 7): AsyncCollectiveCreator turns
// each collective into a start/done pair printed and serialized as XLA's, the
// verifier keeps a start for its done alone, and LatencyHidingScheduler moves
// starts up past compute worth their exchange (never past their operand, the
// parameters or the start before), dones down to their first reader, and lets
// independent compute fill a wait. Orders are checked on small modules whose
// costs LatencyEstimate makes exact: a 64x64x64 dot is one second.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/registry.h"
#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_serialization.h"
#include "hlo/passes/async_collective_creator.h"
#include "hlo/passes/latency_hiding_scheduler.h"
#include "../../support/hlo_pass_test_util.h"

namespace lazytrain::hlo {
namespace {

int count(const HloModule& m, HloOpcode opcode) {
  return static_cast<int>(std::count_if(m.instructions.begin(), m.instructions.end(), [&](const HloInstruction& in) { return in.opcode == opcode; }));
}

// The position of the first instruction with `opcode` (after `after`), -1 when none.
int position(const HloModule& m, HloOpcode opcode, int after = -1) {
  for (const auto& in : m.instructions) {
    if (in.id > after && in.opcode == opcode) return in.id;
  }
  return -1;
}

// A 64x64x64 dot costs one second and nothing else costs anything; an exchange costs `exchange_seconds`.
LatencyEstimate one_second_dots(double exchange_seconds) {
  LatencyEstimate e;
  e.flops_per_second = 2.0 * 64 * 64 * 64;
  e.bytes_per_second = 1e30;
  e.collective_bytes_per_second = 1e30;
  e.collective_latency_seconds = exchange_seconds;
  return e;
}

DotDimensionNumbers matmul_dims() {
  DotDimensionNumbers d;
  d.lhs_contracting_dimensions = {1};
  d.rhs_contracting_dimensions = {0};
  return d;
}

using testing::three_collectives;

TEST(AsyncCollectives, EachCollectiveBecomesAStartDonePairPrintedAsXla) {
  HloModule m = three_collectives();
  EXPECT_TRUE(AsyncCollectiveCreator().run(m));
  EXPECT_EQ(count(m, HloOpcode::kAllReduce) + count(m, HloOpcode::kAllGather) + count(m, HloOpcode::kReduceScatter), 0);
  const std::string text = m.to_string();
  EXPECT_NE(text.find("f32[4,6]{1,0} all-reduce-start(f32[4,6]{1,0} %parameter.0), channel_id=1, replica_groups={}, to_apply=%add"),
            std::string::npos) << text;
  EXPECT_NE(text.find("f32[4,12]{1,0} all-gather-start(f32[4,6]{1,0} %parameter.0), channel_id=2, replica_groups={{0,1},{2,3}}, dimensions={1}"),
            std::string::npos) << text;
  EXPECT_NE(text.find("f32[1,6]{1,0} reduce-scatter-start(f32[4,6]{1,0} %parameter.0), channel_id=3, replica_groups={{0,1,2,3}}, "
                      "dimensions={0}, to_apply=%max"),
            std::string::npos) << text;
  EXPECT_NE(text.find("f32[4,12]{1,0} all-gather-done(f32[4,12]{1,0} %all-gather-start."), std::string::npos) << text;
  EXPECT_NE(text.find("f32[1,6]{1,0} reduce-scatter-done(f32[1,6]{1,0} %reduce-scatter-start."), std::string::npos) << text;
  // The compile cache stores them.
  EXPECT_EQ(deserialize_module(serialize_module(m)).to_string(), text);
  // Nothing left to convert.
  EXPECT_FALSE(AsyncCollectiveCreator().run(m));
}

TEST(AsyncCollectives, TheVerifierKeepsAStartForItsDoneAlone) {
  HloBuilder b("misread");
  int x = b.parameter({4}, DType::kFloat32);
  HloInstruction start;
  start.opcode = HloOpcode::kAllReduceStart;
  start.reduce_kind = ReduceKind::kAdd;
  const int s = b.copy(start, {x});
  HloInstruction done;
  done.opcode = HloOpcode::kAllReduceDone;
  const int d = b.copy(done, {s});
  const int misread = b.binary(HloOpcode::kAdd, s, d);  // reads the start itself
  try {
    b.build({misread});
    FAIL() << "a start read by an add verified";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all-reduce-start.1: a start must be read by exactly one done, and by nothing else"), std::string::npos)
        << e.what();
  }
  // A done of the wrong kind is refused by its shape rule.
  HloBuilder c("wrong kind");
  const int y = c.parameter({4}, DType::kFloat32);
  const int s2 = c.copy(start, {y});
  HloInstruction gather_done;
  gather_done.opcode = HloOpcode::kAllGatherDone;
  EXPECT_THROW(c.copy(gather_done, {s2}), Error);
}

// parameters w [2,64] (gathered over two replicas) and a [64,64]; three dots
// a·a·a·a in a chain, then the gathered w times the chain's end.
HloModule gather_after_three_dots() {
  HloBuilder b("gather");
  const int w = b.parameter({2, 64}, DType::kFloat32);
  const int a = b.parameter({64, 64}, DType::kFloat32);
  const int d1 = b.dot(a, a, matmul_dims());
  const int d2 = b.dot(d1, a, matmul_dims());
  const int d3 = b.dot(d2, a, matmul_dims());
  const int gathered = b.all_gather(w, 0, {{0, 1}});
  return b.build({b.dot(gathered, d3, matmul_dims())});
}

HloModule scheduled(HloModule m, const LatencyEstimate& estimate) {
  AsyncCollectiveCreator().run(m);
  LatencyHidingScheduler(estimate).run(m);
  return m;
}

TEST(AsyncCollectives, AStartMovesUpPastComputeWorthItsExchange) {
  // 1.5 s of exchange: it passes two one-second dots (the first covers 1 s, not enough).
  HloModule m = scheduled(gather_after_three_dots(), one_second_dots(1.5));
  const int start = position(m, HloOpcode::kAllGatherStart), done = position(m, HloOpcode::kAllGatherDone);
  const int first_dot = position(m, HloOpcode::kDot);
  EXPECT_EQ(start, first_dot + 1) << m.to_string();      // after d1, before d2 and d3
  EXPECT_EQ(position(m, HloOpcode::kDot, done), done + 1) << m.to_string();  // the done right before its reader
  // A long exchange goes up to the parameters, not above them.
  HloModule far = scheduled(gather_after_three_dots(), one_second_dots(100));
  EXPECT_EQ(position(far, HloOpcode::kAllGatherStart), far.num_parameters) << far.to_string();
  // A short one passes the last dot only.
  HloModule near = scheduled(gather_after_three_dots(), one_second_dots(0.5));
  const int second_dot = position(near, HloOpcode::kDot, position(near, HloOpcode::kDot));
  EXPECT_EQ(position(near, HloOpcode::kAllGatherStart), second_dot + 1) << near.to_string();
}

TEST(AsyncCollectives, StartsKeepTheirOrderAndStayAfterTheirOperand) {
  HloBuilder b("two gathers");
  const int a = b.parameter({64, 64}, DType::kFloat32);
  const int w = b.parameter({2, 64}, DType::kFloat32);
  const int d1 = b.dot(a, a, matmul_dims());
  const int first = b.all_gather(b.slice(d1, {0, 0}, {2, 64}, {1, 1}), 0, {{0, 1}});  // its operand is computed from d1
  const int d2 = b.dot(d1, a, matmul_dims());
  const int second = b.all_gather(w, 0, {{0, 1}});  // could go to the top, but not above the first
  const int out = b.binary(HloOpcode::kAdd, b.dot(first, d2, matmul_dims()), b.dot(second, d2, matmul_dims()));
  HloModule m = scheduled(b.build({out}), one_second_dots(100));
  const int s1 = position(m, HloOpcode::kAllGatherStart), s2 = position(m, HloOpcode::kAllGatherStart, s1);
  EXPECT_EQ(s1, position(m, HloOpcode::kSlice) + 1) << m.to_string();
  EXPECT_EQ(s2, s1 + 1) << m.to_string();
  EXPECT_LT(m.at(s1).channel_id, m.at(s2).channel_id);
}

TEST(AsyncCollectives, IndependentComputeFillsTheWaitForAnExchange) {
  // g = a·a is reduce-scattered and read at once; e1, e2 do not need it.
  HloBuilder b("fill");
  const int a = b.parameter({64, 64}, DType::kFloat32);
  const int g = b.dot(a, a, matmul_dims());
  const int scattered = b.reduce_scatter(g, ReduceKind::kAdd, 0, {{0, 1}});
  const int u = b.binary(HloOpcode::kAdd, scattered, scattered);
  const int e1 = b.dot(a, b.binary(HloOpcode::kMultiply, a, a), matmul_dims());
  const int e2 = b.dot(e1, a, matmul_dims());
  const int e3 = b.dot(e2, a, matmul_dims());
  HloModule m = scheduled(b.build({u, e3}), one_second_dots(1.5));
  const int start = position(m, HloOpcode::kReduceScatterStart), done = position(m, HloOpcode::kReduceScatterDone);
  // 1.5 s of exchange: the multiply (free) and two dots go between, the third stays after.
  int dots_between = 0;
  for (int i = start + 1; i < done; ++i) dots_between += m.at(i).opcode == HloOpcode::kDot;
  EXPECT_EQ(dots_between, 2) << m.to_string();
  EXPECT_EQ(m.at(done + 1).opcode, HloOpcode::kAdd) << m.to_string();  // its reader right after
  EXPECT_EQ(position(m, HloOpcode::kDot, done + 1), done + 2) << m.to_string();
}

TEST(AsyncCollectives, AModuleWithoutCollectivesIsLeftAlone) {
  HloBuilder b("none");
  const int a = b.parameter({64, 64}, DType::kFloat32);
  HloModule m = b.build({b.dot(a, a, matmul_dims())});
  const std::string before = m.to_string();
  EXPECT_FALSE(AsyncCollectiveCreator().run(m));
  EXPECT_FALSE(LatencyHidingScheduler().run(m));
  EXPECT_EQ(m.to_string(), before);
}

// The CPU backend's pipeline makes the pairs last (CompilerOptions::async_collectives), and leaves the collectives be without it.
TEST(AsyncCollectives, TheCpuBackendCompilesPairsUnlessToldNot) {
  for (bool async : {true, false}) {
    backend::CompilerOptions options;
    options.async_collectives = async;
    const auto executable = backend::make_compiler("cpu", options)->compile(three_collectives());
    EXPECT_EQ(count(executable->module(), HloOpcode::kAllGatherStart), async ? 1 : 0) << executable->module().to_string();
    EXPECT_EQ(count(executable->module(), HloOpcode::kAllGather), async ? 0 : 1) << executable->module().to_string();
  }
}

}  // namespace
}  // namespace lazytrain::hlo
