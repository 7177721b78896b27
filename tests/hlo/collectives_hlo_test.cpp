// HLO collectives: all-reduce, all-gather and reduce-scatter print as XLA
// prints them, keep their shapes by the group size, survive serialization, are
// rejected by the verifier when their groups are malformed, and are never
// folded, merged or fused by the CPU pass pipeline.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cpu/cpu_pipeline.h"
#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_serialization.h"
#include "hlo/passes/hlo_pass.h"
#include "../support/hlo_pass_test_util.h"

namespace lazytrain::hlo {
namespace {

int count(const HloModule& m, HloOpcode opcode) {
  return static_cast<int>(std::count_if(m.instructions.begin(), m.instructions.end(), [&](const HloInstruction& in) { return in.opcode == opcode; }));
}

using testing::three_collectives;

TEST(CollectivesHlo, PrintedAsXlaPrintsThem) {
  const std::string text = three_collectives().to_string();
  EXPECT_NE(text.find("f32[4,6]{1,0} all-reduce(f32[4,6]{1,0} %parameter.0), channel_id=1, replica_groups={}, to_apply=%add"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[4,12]{1,0} all-gather(f32[4,6]{1,0} %parameter.0), channel_id=2, replica_groups={{0,1},{2,3}}, dimensions={1}"),
            std::string::npos) << text;
  EXPECT_NE(text.find("f32[1,6]{1,0} reduce-scatter(f32[4,6]{1,0} %parameter.0), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%max"),
            std::string::npos) << text;
}

TEST(CollectivesHlo, SerializationKeepsGroupsAndChannels) {
  const HloModule m = three_collectives();
  const HloModule back = deserialize_module(serialize_module(m));
  EXPECT_EQ(back.to_string(), m.to_string());
  EXPECT_EQ(back.at(2).replica_groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(back.at(3).channel_id, 3);
}

TEST(CollectivesHlo, MalformedGroupsAreRejectedNamingTheRule) {
  auto error_of = [](auto build) {
    try {
      HloBuilder b("bad");
      int x = b.parameter({4}, DType::kFloat32);
      build(b, x);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of([](HloBuilder& b, int x) { b.all_gather(x, 0, {}); }).find("needs replica_groups"), std::string::npos);
  EXPECT_NE(error_of([](HloBuilder& b, int x) { b.all_reduce(x, ReduceKind::kAdd, {{0, 1}, {1, 2}}); }).find("appears in two replica groups"),
            std::string::npos);
  EXPECT_NE(error_of([](HloBuilder& b, int x) { b.all_reduce(x, ReduceKind::kAdd, {{0, 1}, {2}}); }).find("of one size"), std::string::npos);
  EXPECT_NE(error_of([](HloBuilder& b, int x) { b.reduce_scatter(x, ReduceKind::kAdd, 0, {{0, 1, 2}}); }).find("does not split into 3"),
            std::string::npos);
  EXPECT_NE(error_of([](HloBuilder& b, int x) { b.all_gather(x, 1, {{0, 1}}); }).find("within the operand's rank"), std::string::npos);
}

TEST(CollectivesHlo, ThePassPipelineNeverFoldsMergesOrFusesThem) {
  HloBuilder b("passes");
  int x = b.parameter({8}, DType::kFloat32);
  // Two equal all-reduces of one value (CSE would merge equal instructions), an
  // all-reduce of a constant (constant folding would evaluate it) and an
  // elementwise consumer on each side (fusion would absorb its neighbours).
  int doubled = b.binary(HloOpcode::kAdd, x, x);
  int first = b.all_reduce(doubled, ReduceKind::kAdd, {});
  int second = b.all_reduce(doubled, ReduceKind::kAdd, {});
  int constant = b.all_reduce(b.full(2.0, {8}, DType::kFloat32), ReduceKind::kAdd, {});
  int out = b.binary(HloOpcode::kMultiply, b.binary(HloOpcode::kAdd, first, second), constant);
  const HloModule built = b.build({out});
  for (bool async : {false, true}) {
    HloModule m = built;
    run_passes(m, backend::cpu::cpu_pass_pipeline(true, async));
    // With async collectives each stays, as a start/done pair.
    EXPECT_EQ(count(m, async ? HloOpcode::kAllReduceStart : HloOpcode::kAllReduce), 3) << m.to_string();
    EXPECT_EQ(count(m, HloOpcode::kAllReduceDone), async ? 3 : 0) << m.to_string();
    for (const auto& in : m.instructions) {
      if (in.opcode != HloOpcode::kFusion) continue;
      EXPECT_EQ(count(*in.fused_computation, HloOpcode::kAllReduce), 0) << m.to_string();
    }
  }
  EXPECT_TRUE(is_collective(HloOpcode::kAllGather) && is_collective(HloOpcode::kReduceScatter) && !is_collective(HloOpcode::kReduce));
}

}  // namespace
}  // namespace lazytrain::hlo
