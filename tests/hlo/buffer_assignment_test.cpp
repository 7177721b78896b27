// Static buffer assignment (hlo/buffer_assignment.h): values alive at the same
// time never share bytes, dead values' bytes are reused, outputs, parameters
// and run-time storage stay out of the arena, views share their operand's
// buffer, and in-place outputs take an operand's buffer only at its last use.
// Then the cpu backend: a training loop allocates its arena once and the same
// number of buffers every step.
#include "hlo/buffer_assignment.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../support/backend_scope.h"
#include "hlo/hlo_builder.h"
#include "lazy/lazy_api.h"
#include "nn/layers.h"
#include "optim/adamw.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain::hlo {
namespace {

// Every value not a parameter is written into handed storage; reshapes are views
// (no storage of their own);
// elementwise binaries may run in place over their first operand.
BufferAssignmentOptions plain_options() {
  BufferAssignmentOptions o;
  o.storage = [](const HloInstruction& in) {
    return in.opcode == HloOpcode::kParameter ? OutputStorage::kExternal : OutputStorage::kArena;
  };
  o.may_alias = [](const HloInstruction& in) { return in.opcode == HloOpcode::kReshape ? std::vector<size_t>{0} : std::vector<size_t>{}; };
  o.in_place_candidates = [](const HloInstruction&) { return std::vector<size_t>{}; };
  return o;
}

bool overlap(int64_t a, int64_t a_bytes, int64_t b, int64_t b_bytes) { return a < b + b_bytes && b < a + a_bytes; }

TEST(BufferAssignment, ValuesAliveTogetherNeverShareBytesAndDeadOnesAreReused) {
  HloBuilder b("chain");
  const int x = b.parameter({256}, DType::kFloat32);  // 1 KiB values
  const int e1 = b.unary(HloOpcode::kExp, x);          // live until m1
  const int e2 = b.unary(HloOpcode::kNegate, x);       // live until m1
  const int m1 = b.binary(HloOpcode::kMultiply, e1, e2);
  const int e3 = b.unary(HloOpcode::kExp, m1);  // e1 and e2 are dead here
  const int out = b.binary(HloOpcode::kAdd, e3, x);
  const BufferAssignment a = assign_buffers(b.build({out}), plain_options());
  for (int id : {e1, e2, m1, e3}) ASSERT_GE(a.offset[static_cast<size_t>(id)], 0) << id;
  EXPECT_EQ(a.offset[static_cast<size_t>(x)], -1) << "a parameter is made at run time";
  EXPECT_EQ(a.offset[static_cast<size_t>(out)], -1) << "an output outlives the execution";
  EXPECT_TRUE(a.outlives[static_cast<size_t>(out)]);
  EXPECT_FALSE(a.outlives[static_cast<size_t>(m1)]);
  const auto at = [&](int id) { return a.offset[static_cast<size_t>(id)]; };
  EXPECT_FALSE(overlap(at(e1), 1024, at(e2), 1024));
  EXPECT_FALSE(overlap(at(e1), 1024, at(m1), 1024));
  EXPECT_FALSE(overlap(at(e2), 1024, at(m1), 1024));
  EXPECT_FALSE(overlap(at(m1), 1024, at(e3), 1024));
  // Four 1 KiB values, at most three alive at once: e3 takes a dead one's slot.
  EXPECT_EQ(a.arena_bytes, 3 * 1024);
  EXPECT_EQ(a.unpacked_bytes, 4 * 1024);
  EXPECT_EQ(a.arena_values, 4);
}

TEST(BufferAssignment, AViewIsOneBufferWithItsOperandAndAnOutputViewKeepsBothOut) {
  HloBuilder b("views");
  const int x = b.parameter({4, 8}, DType::kFloat32);
  const int e = b.unary(HloOpcode::kExp, x);
  const int r = b.reshape(e, {32});  // returned: e must outlive the execution too
  const int inner = b.unary(HloOpcode::kNegate, x);
  const int r2 = b.reshape(inner, {32});  // not returned: inner is in the arena
  const int out = b.unary(HloOpcode::kExp, r2);
  const BufferAssignment a = assign_buffers(b.build({r, out}), plain_options());
  EXPECT_EQ(a.offset[static_cast<size_t>(e)], -1);
  EXPECT_EQ(a.offset[static_cast<size_t>(r)], -1);
  ASSERT_GE(a.offset[static_cast<size_t>(inner)], 0);
  EXPECT_EQ(a.offset[static_cast<size_t>(r2)], a.offset[static_cast<size_t>(inner)]);
}

// A multi-output fusion of e1 and e2 (both read here for the last time)
// writing e1 * e2 and e1 + e2: its elements are the get-tuple-elements'
// buffers, alive from the fusion on, so they never take the bytes of an
// operand the kernel is still reading, unless computed in place over it.
HloModule multi_output_module() {
  HloBuilder f("fused_computation");
  const int p0 = f.parameter({256}, DType::kFloat32);
  const int p1 = f.parameter({256}, DType::kFloat32);
  auto computation = std::make_shared<HloModule>(f.build({f.binary(HloOpcode::kMultiply, p0, p1), f.binary(HloOpcode::kAdd, p0, p1)}));
  HloBuilder b("multi_output");
  const int x = b.parameter({256}, DType::kFloat32);
  const int e1 = b.unary(HloOpcode::kExp, x);
  const int e2 = b.unary(HloOpcode::kNegate, x);
  const int fusion = b.fusion(computation, {e1, e2}, FusionKind::kLoop);
  const int g0 = b.get_tuple_element(fusion, 0);
  const int g1 = b.get_tuple_element(fusion, 1);
  return b.build({b.binary(HloOpcode::kAdd, g0, g1)});  // ids: x 0, e1 1, e2 2, fusion 3, g0 4, g1 5
}

TEST(BufferAssignment, MultiOutputFusionElementsNeverOverlapOperandsItStillReads) {
  const HloModule m = multi_output_module();
  ASSERT_TRUE(is_multi_output_fusion(m.at(3)));
  const BufferAssignment a = assign_buffers(m, plain_options());
  const auto at = [&](int id) { return a.offset[static_cast<size_t>(id)]; };
  for (int id : {1, 2, 4, 5}) ASSERT_GE(at(id), 0) << id;
  for (int element : {4, 5}) {
    for (int operand : {1, 2}) EXPECT_FALSE(overlap(at(element), 1024, at(operand), 1024)) << element << " over " << operand;
  }
  EXPECT_FALSE(overlap(at(4), 1024, at(5), 1024));
  EXPECT_EQ(a.arena_bytes, 4 * 1024);

  // Each element in place over the operand of its position: no new bytes.
  BufferAssignmentOptions in_place = plain_options();
  in_place.in_place_candidates = [](const HloInstruction& in) {
    return in.opcode == HloOpcode::kGetTupleElement ? std::vector<size_t>{static_cast<size_t>(in.tuple_index)} : std::vector<size_t>{};
  };
  const BufferAssignment b = assign_buffers(m, in_place);
  EXPECT_EQ(b.in_place_operand[4], 0);
  EXPECT_EQ(b.in_place_operand[5], 1);
  EXPECT_EQ(b.offset[4], b.offset[1]);
  EXPECT_EQ(b.offset[5], b.offset[2]);
  EXPECT_EQ(b.arena_bytes, 2 * 1024);
}

TEST(BufferAssignment, InPlaceOnlyOverAnOperandReadHereForTheLastTime) {
  HloBuilder b("in_place");
  const int x = b.parameter({64}, DType::kFloat32);
  const int e = b.unary(HloOpcode::kExp, x);
  const int first = b.binary(HloOpcode::kAdd, e, x);      // e is read again below: not in place
  const int second = b.binary(HloOpcode::kMultiply, e, first);  // e's last use: in place over e
  const int third = b.binary(HloOpcode::kAdd, x, second);  // over x? a parameter: never
  BufferAssignmentOptions o = plain_options();
  o.in_place_candidates = [](const HloInstruction& in) {
    return in.opcode == HloOpcode::kAdd || in.opcode == HloOpcode::kMultiply ? std::vector<size_t>{0} : std::vector<size_t>{};
  };
  const BufferAssignment a = assign_buffers(b.build({third}), o);
  EXPECT_EQ(a.in_place_operand[static_cast<size_t>(first)], -1);
  EXPECT_EQ(a.in_place_operand[static_cast<size_t>(second)], 0);
  EXPECT_EQ(a.offset[static_cast<size_t>(second)], a.offset[static_cast<size_t>(e)]);
  EXPECT_EQ(a.in_place_operand[static_cast<size_t>(third)], -1);
}

TEST(BufferAssignment, NeverInPlaceOverAnOperandAnotherOperandViews) {
  // multiply(e, reshape(e)): both read e's bytes (the second through a view,
  // at other indices), so writing over e would corrupt what is still to be read.
  HloBuilder b("view_operand");
  const int x = b.parameter({8, 8}, DType::kFloat32);
  const int e = b.unary(HloOpcode::kExp, x);
  const int t = b.reshape(e, {64});
  const int flat = b.reshape(b.unary(HloOpcode::kNegate, x), {64});
  const int m = b.binary(HloOpcode::kMultiply, flat, t);
  const int out = b.unary(HloOpcode::kExp, m);
  BufferAssignmentOptions o = plain_options();
  o.in_place_candidates = [](const HloInstruction& in) {
    return in.opcode == HloOpcode::kMultiply ? std::vector<size_t>{0, 1} : std::vector<size_t>{};
  };
  const BufferAssignment a = assign_buffers(b.build({out}), o);
  // Operand 0 (flat) is its own buffer: in place over it is fine; over t never.
  EXPECT_EQ(a.in_place_operand[static_cast<size_t>(m)], 0);
  HloBuilder c("same_buffer");
  const int y = c.parameter({64}, DType::kFloat32);
  const int ey = c.unary(HloOpcode::kExp, y);
  const int view = c.reshape(ey, {8, 8});
  const int back = c.reshape(view, {64});
  const int both = c.binary(HloOpcode::kMultiply, ey, back);
  const int result = c.unary(HloOpcode::kExp, both);
  const BufferAssignment a2 = assign_buffers(c.build({result}), o);
  EXPECT_EQ(a2.in_place_operand[static_cast<size_t>(both)], -1);
}

TEST(BufferAssignment, AnOutputIsNeverComputedOverAnIntermediate) {
  // The output's storage is made at run time (over a donated argument where
  // the backend can): taking the intermediate's bytes would pull it out of the arena.
  HloBuilder b("output_in_place");
  const int x = b.parameter({64}, DType::kFloat32);
  const int e = b.unary(HloOpcode::kExp, x);
  const int out = b.binary(HloOpcode::kAdd, e, x);
  BufferAssignmentOptions o = plain_options();
  o.in_place_candidates = [](const HloInstruction& in) { return in.opcode == HloOpcode::kAdd ? std::vector<size_t>{0} : std::vector<size_t>{}; };
  const BufferAssignment a = assign_buffers(b.build({out}), o);
  EXPECT_EQ(a.in_place_operand[static_cast<size_t>(out)], -1);
  EXPECT_GE(a.offset[static_cast<size_t>(e)], 0);
}

TEST(BufferAssignment, RunTimeStorageStaysOutOfTheArena) {
  HloBuilder b("external");
  const int x = b.parameter({16}, DType::kFloat32);
  const int s = b.all_reduce(x, ReduceKind::kAdd, {});
  const int e = b.unary(HloOpcode::kExp, s);
  BufferAssignmentOptions o = plain_options();
  o.storage = [](const HloInstruction& in) {
    return in.opcode == HloOpcode::kParameter || in.opcode == HloOpcode::kAllReduce ? OutputStorage::kExternal : OutputStorage::kArena;
  };
  const BufferAssignment a = assign_buffers(b.build({e}), o);
  EXPECT_EQ(a.offset[static_cast<size_t>(s)], -1);
  EXPECT_EQ(a.arena_bytes, 0);
}

// fc2(gelu(fc1(x))) trained with AdamW on the cpu backend.
TEST(BufferAssignmentCpu, ATrainingLoopAllocatesItsArenaOnceAndTheSameBuffersEveryStep) {
  testing::CpuBackendScope cpu;
  nn::Linear fc1(32, 64, 0.5), fc2(64, 8, 0.5);
  optim::AdamW optimizer({{{fc1.weight, fc1.bias, fc2.weight, fc2.bias}, 0.01}}, {1e-3, 0.9, 0.999, 1e-8, 0.0});
  std::vector<int64_t> allocations_per_step, misses_per_step, intermediates_per_step, arenas_after_step;
  for (int step = 0; step < 7; ++step) {
    std::vector<float> v(16 * 32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.3 * static_cast<double>(i + static_cast<size_t>(step))));
    const int64_t before = runtime::counter_value("BufferAllocations");
    const int64_t misses_before = runtime::counter_value("BufferCacheMisses");
    const int64_t intermediates_before = runtime::counter_value("IntermediateAllocations");
    Tensor y = fc2.forward(gelu(fc1.forward(from_vector(v, {16, 32}))));
    mean(mul(y, y)).backward();
    optimizer.step();
    optimizer.zero_grad();
    lazy::mark_step();
    lazy::wait_device_ops();
    allocations_per_step.push_back(runtime::counter_value("BufferAllocations") - before);
    misses_per_step.push_back(runtime::counter_value("BufferCacheMisses") - misses_before);
    intermediates_per_step.push_back(runtime::counter_value("IntermediateAllocations") - intermediates_before);
    arenas_after_step.push_back(runtime::counter_value("ArenaAllocations"));
  }
  // From step 3 the one cached step graph runs: the same buffers each time,
  // every one a block the caching allocator kept from an earlier step (none
  // from the system), and no new arena.
  for (size_t step = 3; step < 7; ++step) {
    EXPECT_EQ(allocations_per_step[step], allocations_per_step[2]) << "step " << step;
    EXPECT_GT(allocations_per_step[step], 0) << "step " << step;
    EXPECT_EQ(misses_per_step[step], 0) << "step " << step;
    EXPECT_EQ(arenas_after_step[step], arenas_after_step[2]) << "step " << step;
  }
  // Those are the step's input and the outputs it keeps (y and the
  // gradients; the new parameters and moments are donated and updated in
  // place): no intermediate is allocated apart from the arena.
  for (size_t step = 0; step < 7; ++step) EXPECT_EQ(intermediates_per_step[step], 0) << "step " << step;
  EXPECT_GT(arenas_after_step[6], 0);
}

}  // namespace
}  // namespace lazytrain::hlo
