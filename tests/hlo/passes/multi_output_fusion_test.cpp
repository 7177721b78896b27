// MultiOutputFusion: which loop fusions are merged into one multi-output
// fusion (siblings reading one array, a producer whose value is also an
// output with its consumer) and which are not (other element counts or
// shapes, a merge that would make a cycle). Modules are fused by
// InstructionFusion first, as in the CPU pipeline; values are compared
// through the interpreter before and after. The backend rules are the CPU's.
#include "hlo/passes/multi_output_fusion.h"

#include <gtest/gtest.h>

#include "../../support/hlo_pass_test_util.h"
#include "backend/cpu/cpu_fusion.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_serialization.h"

namespace lazytrain::hlo {
namespace {

using namespace testing;

// `m` after InstructionFusion, as the multi-output pass finds it.
HloModule fused(HloModule m) {
  backend::cpu::CpuInstructionFusion().run(m);
  return m;
}

bool run_and_compare(HloModule& m, bool expect_changed = true) {
  return run_pass_and_compare<backend::cpu::CpuMultiOutputFusion>(m, expect_changed, 0);
}

std::vector<const HloInstruction*> fusions(const HloModule& m) {
  std::vector<const HloInstruction*> out;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode == HloOpcode::kFusion) out.push_back(&in);
  }
  return out;
}

// Operands that are arrays (scalar constants, which fusions read from outside, left out).
int array_operands(const HloModule& m, const HloInstruction& fusion) {
  return static_cast<int>(std::count_if(fusion.operands.begin(), fusion.operands.end(), [&](int o) { return !m.at(o).shape.empty(); }));
}

int scalar(HloBuilder& b, double v, const Shape& shape) { return b.full(v, shape, DType::kFloat32); }

// AdamW's moments: m' = 0.9 m + 0.1 g and v' = 0.999 v + 0.001 g g both read
// the gradient g; one loop reads m, v and g once and writes both.
TEST(MultiOutputFusion, SiblingsReadingOneArrayBecomeOneFusion) {
  const Shape s = {16, 8};
  HloBuilder b("moments");
  int m = b.parameter(s, DType::kFloat32);
  int v = b.parameter(s, DType::kFloat32);
  int g = b.parameter(s, DType::kFloat32);
  int m1 = b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kMultiply, m, scalar(b, 0.9, s)), b.binary(HloOpcode::kMultiply, g, scalar(b, 0.1, s)));
  int gg = b.binary(HloOpcode::kMultiply, g, g);
  int v1 = b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kMultiply, v, scalar(b, 0.999, s)), b.binary(HloOpcode::kMultiply, gg, scalar(b, 0.001, s)));
  HloModule module = fused(b.build({m1, v1}));
  ASSERT_EQ(fusions(module).size(), 2u) << module.to_string();
  run_and_compare(module);
  auto f = fusions(module);
  ASSERT_EQ(f.size(), 1u) << module.to_string();
  EXPECT_TRUE(is_multi_output_fusion(*f[0]));
  EXPECT_EQ(array_operands(module, *f[0]), 3) << module.to_string();  // m, v and g, g once
  EXPECT_EQ(fusion_outputs(*f[0]).size(), 2u);
  EXPECT_EQ(count(module, HloOpcode::kGetTupleElement), 2);
  EXPECT_EQ(output(module, 0).opcode, HloOpcode::kGetTupleElement);
  EXPECT_EQ(output(module, 0).tuple_index, 0);
  EXPECT_EQ(output(module, 1).tuple_index, 1);
  // XLA's text form: a tuple shape and `index=`.
  const std::string text = module.to_string();
  EXPECT_NE(text.find("(f32[16,8]{1,0}, f32[16,8]{1,0}) fusion("), std::string::npos) << text;
  EXPECT_NE(text.find("get-tuple-element((f32[16,8]{1,0}, f32[16,8]{1,0}) %fusion."), std::string::npos) << text;
  EXPECT_NE(text.find(", index=1"), std::string::npos) << text;
  // The compile cache's serialized form keeps the elements and their indices.
  const HloModule back = deserialize_module(serialize_module(module));
  EXPECT_EQ(back.to_string(), text);
  EXPECT_EQ(output(back, 1).tuple_index, 1);
}

// a = exp(x) is a step output and read by b = tanh(a) * y: one loop writes
// both, b computed from a without reading it back.
TEST(MultiOutputFusion, ProducerThatIsAlsoAnOutputJoinsItsConsumer) {
  const Shape s = {8, 32};
  HloBuilder b("producer_consumer");
  int x = b.parameter(s, DType::kFloat32);
  int y = b.parameter(s, DType::kFloat32);
  int a = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kExp, x), scalar(b, 0.5, s));
  int c = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kTanh, a), y);
  HloModule module = fused(b.build({a, c}));
  ASSERT_EQ(fusions(module).size(), 2u) << module.to_string();
  run_and_compare(module);
  auto f = fusions(module);
  ASSERT_EQ(f.size(), 1u) << module.to_string();
  EXPECT_EQ(fusion_outputs(*f[0]).size(), 2u);
  EXPECT_EQ(array_operands(module, *f[0]), 2) << module.to_string();  // x and y; a is not read back
  EXPECT_EQ(count(*f[0]->fused_computation, HloOpcode::kExp), 1);
}

// Loop fusions reading one array but looping over other element counts (a
// broadcast of it) or another shape of the same count (a reshape of it) stay
// apart: the CPU kernel has one iteration space.
TEST(MultiOutputFusion, NothingMergedWhenShapesDiffer) {
  HloBuilder b("shapes");
  int g = b.parameter({4, 8}, DType::kFloat32);
  int a = b.parameter({4, 8}, DType::kFloat32);
  int c = b.parameter({2, 4, 8}, DType::kFloat32);
  int d = b.parameter({8, 4}, DType::kFloat32);
  int same = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kTanh, g), a);
  int wider = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kTanh, b.broadcast(g, {2, 4, 8}, {1, 2})), c);
  int transposed_count = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kSine, b.reshape(g, {8, 4})), d);
  HloModule module = fused(b.build({same, wider, transposed_count}));
  ASSERT_EQ(fusions(module).size(), 3u) << module.to_string();
  run_and_compare(module, false);
  EXPECT_EQ(count(module, HloOpcode::kGetTupleElement), 0);
}

// a = tanh(x) x feeds a dot whose result feeds b = exp(dot) x. Both read x,
// but one fusion computing a and b would need the dot's result, which needs
// a: a cycle, so they stay apart.
TEST(MultiOutputFusion, NothingMergedWhenMergingWouldMakeACycle) {
  const Shape s = {8, 8};
  HloBuilder b("cycle");
  int x = b.parameter(s, DType::kFloat32);
  int w = b.parameter(s, DType::kFloat32);
  int a = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kTanh, x), x);
  int d = b.matmul(a, w);
  int c = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kExp, d), x);
  HloModule module = fused(b.build({a, c}));
  ASSERT_EQ(fusions(module).size(), 2u) << module.to_string();
  run_and_compare(module, false);
}

// Siblings whose merge is legal sit on both sides of a path that is not:
// x feeds f1 and f3; f1 -> dot -> f2 reads x too. f1 and f3 merge, f2 stays
// apart, and the module still computes the same values.
TEST(MultiOutputFusion, MergesAroundAPathThatWouldMakeACycle) {
  const Shape s = {8, 8};
  HloBuilder b("partial");
  int x = b.parameter(s, DType::kFloat32);
  int w = b.parameter(s, DType::kFloat32);
  int f1 = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kTanh, x), x);
  int f2 = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kExp, b.matmul(f1, w)), x);
  int f3 = b.binary(HloOpcode::kAdd, b.unary(HloOpcode::kSine, x), w);
  HloModule module = fused(b.build({f1, f2, f3}));
  ASSERT_EQ(fusions(module).size(), 3u) << module.to_string();
  run_and_compare(module);
  EXPECT_EQ(fusions(module).size(), 2u) << module.to_string();
  EXPECT_EQ(count(module, HloOpcode::kGetTupleElement), 2);
}

}  // namespace
}  // namespace lazytrain::hlo
