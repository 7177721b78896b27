// ConstantFolding: instructions over constants become constants (or splats)
// with the values the interpreter computes; what must not fold (parameters,
// rng, iota, scalar broadcasts, big results, evaluation errors) stays. Each test
// compares interpreter results before and after on random inputs.
#include "hlo/passes/constant_folding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/compiler.h"
#include "core/error.h"
#include "core/half.h"
#include "../../support/hlo_pass_test_util.h"
#include "hlo/evaluator/hlo_evaluator.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;

using namespace testing;

bool run_and_compare(HloModule& m, bool expect_changed = true, double rtol = 0) { return run_pass_and_compare<ConstantFolding>(m, expect_changed, rtol); }

// An f32 constant holding 0.25 * (i - n/2) at element i (distinct, exact values).
int ramp(HloBuilder& b, const Shape& shape) {
  Literal lit(shape, DType::kFloat32);
  for (int64_t i = 0; i < lit.numel(); ++i) lit.data<float>()[i] = 0.25f * static_cast<float>(i - lit.numel() / 2);
  return b.constant(lit);
}

int s64_constant(HloBuilder& b, const std::vector<int64_t>& values) {
  Literal lit({static_cast<int64_t>(values.size())}, DType::kInt64);
  std::memcpy(lit.mutable_raw(), values.data(), values.size() * sizeof(int64_t));
  return b.constant(lit);
}

TEST(ConstantFolding, FoldsChainsOfConstantArithmetic) {
  HloBuilder b("chain");
  int x = b.parameter({4, 8}, DType::kFloat32);
  int c = ramp(b, {4, 8});
  int folded = b.unary(HloOpcode::kExp, b.binary(HloOpcode::kAdd, c, b.transpose(ramp(b, {8, 4}), {1, 0})));
  HloModule m = b.build({b.binary(HloOpcode::kMultiply, x, folded)});
  run_and_compare(m);
  // parameter, one constant, multiply, tuple.
  ASSERT_EQ(m.instructions.size(), 4u) << m.to_string();
  const HloInstruction& mul = output(m, 0);
  EXPECT_EQ(mul.opcode, HloOpcode::kMultiply);
  EXPECT_EQ(m.at(mul.operands[1]).opcode, HloOpcode::kConstant);
  EXPECT_EQ(m.at(mul.operands[1]).shape, (Shape{4, 8}));
}

TEST(ConstantFolding, FoldsDotReduceAndDataMovement) {
  HloBuilder b("shapes");
  int a = ramp(b, {3, 5});
  int w = ramp(b, {5, 2});
  int d = b.dot(a, w, {{}, {}, {1}, {0}});
  int r = b.reduce(ramp(b, {4, 6}), {1}, ReduceKind::kMax);
  int s = b.slice(ramp(b, {6, 6}), {1, 0}, {5, 6}, {2, 3});
  int cat = b.concatenate({ramp(b, {2, 3}), ramp(b, {1, 3})}, 0);
  int g = b.gather(ramp(b, {4, 3}), s64_constant(b, {3, 0, 0}));
  int cmp = b.compare(ramp(b, {5}), b.reshape(ramp(b, {1, 5}), {5}), ComparisonDirection::kGe);
  int cv = b.convert(ramp(b, {2, 2}), DType::kBFloat16);
  HloModule m = b.build({d, r, s, cat, g, cmp, cv});
  run_and_compare(m);
  for (size_t k = 0; k < 7; ++k) EXPECT_EQ(output(m, k).opcode, HloOpcode::kConstant) << k;
  EXPECT_EQ(m.instructions.size(), 8u) << m.to_string();
}

TEST(ConstantFolding, SplatsFoldToABroadcastWhateverTheirSize) {
  HloBuilder b("splat");
  int x = b.parameter({64, 64}, DType::kFloat32);
  int two = b.full(2.0, {64, 64}, DType::kFloat32);
  int three = b.full(3.0, {64, 64}, DType::kFloat32);
  int six = b.binary(HloOpcode::kMultiply, two, three);                     // 4096 elements
  int root = b.unary(HloOpcode::kSqrt, b.full(16.0, {}, DType::kFloat32));  // a scalar stays a scalar
  int moved = b.transpose(b.reshape(b.full(5.0, {8, 512}, DType::kFloat32), {64, 64}), {1, 0});
  HloModule m = b.build({b.binary(HloOpcode::kAdd, x, six), root, moved});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kMultiply), 0);
  EXPECT_EQ(count(m, HloOpcode::kSqrt), 0);
  EXPECT_EQ(count(m, HloOpcode::kReshape), 0);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 0);
  const HloInstruction& six_now = m.at(output(m, 0).operands[1]);
  ASSERT_EQ(six_now.opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(m.at(six_now.operands[0]).literal.data<float>()[0], 6.0f);
  ASSERT_EQ(output(m, 1).opcode, HloOpcode::kConstant);
  EXPECT_EQ(output(m, 1).literal.data<float>()[0], 4.0f);
  ASSERT_EQ(output(m, 2).opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(output(m, 2).shape, (Shape{64, 64}));
}

TEST(ConstantFolding, LeavesScalarBroadcastsAlone) {
  HloBuilder b("broadcast");
  int x = b.parameter({4, 4}, DType::kFloat32);
  HloModule m = b.build({b.full(1.0, {4, 4}, DType::kFloat32), b.binary(HloOpcode::kAdd, x, b.full(2.0, {4, 4}, DType::kFloat32))});
  std::string text = m.to_string();
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(m.to_string(), text);
}

TEST(ConstantFolding, FoldsUpToTheSizeLimit) {
  HloBuilder b("limit");
  int small = b.unary(HloOpcode::kNegate, ramp(b, {ConstantFolding::kMaxFoldedElements}));
  int big = b.unary(HloOpcode::kNegate, ramp(b, {ConstantFolding::kMaxFoldedElements + 1}));
  // A non-splat broadcast to a big result stays; to a small one it folds.
  int big_broadcast = b.broadcast(ramp(b, {4}), {300, 4}, {1});
  int small_broadcast = b.broadcast(ramp(b, {4}), {3, 4}, {1});
  HloModule m = b.build({small, big, big_broadcast, small_broadcast});
  run_and_compare(m);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kConstant);
  EXPECT_EQ(output(m, 1).opcode, HloOpcode::kNegate);
  EXPECT_EQ(output(m, 2).opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(output(m, 3).opcode, HloOpcode::kConstant);
}

TEST(ConstantFolding, DoesNotEvaluateHugeOperands) {
  HloBuilder b("huge");
  // Small results, but the second sums a splat of 2^21 elements: left for run time.
  int small = b.reduce(b.full(0.5, {64, 64}, DType::kFloat32), {0, 1}, ReduceKind::kAdd);
  int huge = b.reduce(b.full(0.5, {2048, 1024}, DType::kFloat32), {0, 1}, ReduceKind::kAdd);
  HloModule m = b.build({small, huge});
  run_and_compare(m);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kConstant);
  EXPECT_EQ(output(m, 0).literal.data<float>()[0], 2048.0f);
  EXPECT_EQ(output(m, 1).opcode, HloOpcode::kReduce);
}

TEST(ConstantFolding, NeverFoldsParametersRngOrIota) {
  HloBuilder b("random");
  int seed_param = b.parameter({}, DType::kInt64);
  int from_param = b.rng_bit_generator(seed_param, {8});
  int from_constant = b.rng_bit_generator(b.scalar(42, DType::kInt64), {8});
  int iota = b.iota({4, 3}, DType::kInt32, 1);
  HloModule m = b.build({from_param, from_constant, iota, seed_param});
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(count(m, HloOpcode::kRngBitGenerator), 2);
  EXPECT_EQ(count(m, HloOpcode::kIota), 1);
  EXPECT_EQ(count(m, HloOpcode::kParameter), 1);
}

TEST(ConstantFolding, LeavesInstructionsThatFailForRunTime) {
  HloBuilder b("errors");
  int out_of_range = b.gather(ramp(b, {4, 3}), s64_constant(b, {1, 9}));
  HloModule m = b.build({out_of_range});
  EXPECT_FALSE(ConstantFolding().run(m));
  EXPECT_EQ(count(m, HloOpcode::kGather), 1);
  EXPECT_THROW(run(m, {}), Error);  // the error still comes, when the module runs

  HloBuilder d("divide");
  int q = d.binary(HloOpcode::kDivide, d.scalar(7, DType::kInt32), d.scalar(0, DType::kInt32));
  HloModule dm = d.build({q});
  EXPECT_FALSE(ConstantFolding().run(dm));
  EXPECT_EQ(count(dm, HloOpcode::kDivide), 1);
  EXPECT_THROW(run(dm, {}), Error);
}

TEST(ConstantFolding, FoldsOnlyWhereEveryOperandIsKnown) {
  HloBuilder b("mixed");
  int x = b.parameter({2, 4}, DType::kFloat32);
  int known = b.binary(HloOpcode::kSubtract, ramp(b, {2, 4}), b.full(1.0, {2, 4}, DType::kFloat32));
  int unknown = b.binary(HloOpcode::kSubtract, x, ramp(b, {2, 4}));
  int sel = b.select(b.compare(x, known, ComparisonDirection::kLt), known, unknown);
  HloModule m = b.build({sel});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kSubtract), 1);
  EXPECT_EQ(count(m, HloOpcode::kSelect), 1);
  EXPECT_EQ(count(m, HloOpcode::kCompare), 1);
}

TEST(ConstantFolding, FoldsOtherDTypes) {
  HloBuilder b("dtypes");
  int h = b.binary(HloOpcode::kMultiply, b.convert(ramp(b, {6}), DType::kBFloat16), b.convert(ramp(b, {6}), DType::kBFloat16));
  int i = b.binary(HloOpcode::kAdd, s64_constant(b, {1, 2, 3}), s64_constant(b, {10, 20, 30}));
  int p = b.unary(HloOpcode::kNot, b.compare(s64_constant(b, {1, 2, 3}), s64_constant(b, {3, 2, 1}), ComparisonDirection::kEq));
  HloModule m = b.build({h, i, p});
  run_and_compare(m);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(output(m, k).opcode, HloOpcode::kConstant) << k;
  EXPECT_EQ(output(m, 1).literal.data<int64_t>()[2], 33);
  EXPECT_EQ(output(m, 2).literal.data<uint8_t>()[1], 0);
  EXPECT_EQ(output(m, 2).literal.data<uint8_t>()[0], 1);
}

// Folding evaluates through HloEvaluator on host Literals, no backend: each
// folded constant holds exactly, bit for bit, what the evaluator computes for
// the unfolded module (a dot summed in double, exp through SLEEF, bf16 rounding).
TEST(ConstantFolding, FoldsThroughTheHloEvaluator) {
  HloBuilder b("evaluator");
  Literal thirds({3, 4}, DType::kFloat32);
  for (int64_t i = 0; i < thirds.numel(); ++i) thirds.data<float>()[i] = 1.0f / static_cast<float>(3 + i);
  int t = b.constant(thirds);
  int d = b.dot(t, b.transpose(t, {1, 0}), {{}, {}, {1}, {0}});  // sums that round
  int e = b.unary(HloOpcode::kExp, t);
  int h = b.convert(b.binary(HloOpcode::kMultiply, t, t), DType::kBFloat16);
  int r = b.reduce(e, {1}, ReduceKind::kAdd);
  HloModule m = b.build({d, e, h, r});
  const std::vector<Literal> expected = HloEvaluator().evaluate(m, {});
  EXPECT_TRUE(ConstantFolding().run(m));
  ASSERT_EQ(m.instructions.size(), 5u) << m.to_string();  // four constants and the tuple
  for (size_t k = 0; k < expected.size(); ++k) {
    ASSERT_EQ(output(m, k).opcode, HloOpcode::kConstant) << k;
    EXPECT_TRUE(output(m, k).literal == expected[k]) << k;
  }
  // And they are the values themselves: row 0 · row 0, summed in double and rounded once.
  double square = 0;
  for (int p = 0; p < 4; ++p) square += static_cast<double>(thirds.data<float>()[p]) * thirds.data<float>()[p];
  EXPECT_EQ(output(m, 0).literal.data<float>()[0], static_cast<float>(square));
  EXPECT_EQ(output(m, 1).literal.data<float>()[0], expected[1].data<float>()[0]);
  EXPECT_NEAR(output(m, 1).literal.data<float>()[0], std::exp(1.0f / 3.0f), 1e-6);
}

}  // namespace
}  // namespace lazytrain::hlo
