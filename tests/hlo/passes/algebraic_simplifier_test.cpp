// AlgebraicSimplifier: each rewrite on a small module, checked for structure
// (which instructions are left) and for values (the interpreter gives the same
// results before and after on random inputs); and the rewrites that must not
// happen (x * 0 for floats, constants of another value).
#include "hlo/passes/algebraic_simplifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/compiler.h"
#include "core/half.h"
#include "../../support/hlo_pass_test_util.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;

using namespace testing;

bool run_and_compare(HloModule& m, bool expect_changed = true, double rtol = 0) { return run_pass_and_compare<AlgebraicSimplifier>(m, expect_changed, rtol); }

// An instruction the builder's helpers would not make (they skip no-ops):
// `op` of x with the given shape/dimensions/dtype, appended as is.
int raw(HloBuilder& b, HloOpcode op, int x, const Shape& shape, std::vector<int64_t> dimensions = {},
        DType dtype = DType::kFloat32) {
  HloInstruction in;
  in.opcode = op;
  in.shape = shape;
  in.dtype = dtype;
  in.dimensions = std::move(dimensions);
  return b.copy(in, {x});
}

// ---- tests ----

TEST(AlgebraicSimplifier, RemovesAdditiveAndMultiplicativeIdentities) {
  HloBuilder b("identities");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int zero = b.full(0.0, {2, 3}, DType::kFloat32);
  int one = b.full(1.0, {2, 3}, DType::kFloat32);
  int v = b.binary(HloOpcode::kAdd, x, zero);
  v = b.binary(HloOpcode::kAdd, zero, v);
  v = b.binary(HloOpcode::kSubtract, v, zero);
  v = b.binary(HloOpcode::kMultiply, v, one);
  v = b.binary(HloOpcode::kMultiply, one, v);
  v = b.binary(HloOpcode::kDivide, v, one);
  HloModule m = b.build({b.unary(HloOpcode::kExp, v)});
  run_and_compare(m);
  // parameter, exp, tuple: the constants went with the arithmetic.
  ASSERT_EQ(m.instructions.size(), 3u) << m.to_string();
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kExp);
  EXPECT_EQ(m.at(output(m, 0).operands[0]).opcode, HloOpcode::kParameter);
}

TEST(AlgebraicSimplifier, IdentitiesWorkOnScalarsIntegersAndFullConstants) {
  HloBuilder b("kinds");
  int s = b.parameter({}, DType::kFloat32);
  int i = b.parameter({4}, DType::kInt32);
  int h = b.parameter({4}, DType::kBFloat16);
  Literal zeros({4}, DType::kInt32);
  std::memset(zeros.mutable_raw(), 0, 16);
  int a = b.binary(HloOpcode::kAdd, s, b.scalar(0.0, DType::kFloat32));
  int c = b.binary(HloOpcode::kAdd, i, b.constant(zeros));  // a non-broadcast constant of zeros
  int d = b.binary(HloOpcode::kMultiply, h, b.full(1.0, {4}, DType::kBFloat16));
  HloModule m = b.build({a, c, d});
  run_and_compare(m);
  EXPECT_EQ(m.instructions.size(), 4u) << m.to_string();  // three parameters and the tuple
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(output(m, k).opcode, HloOpcode::kParameter);
}

TEST(AlgebraicSimplifier, KeepsArithmeticWithOtherConstants) {
  HloBuilder b("other");
  int x = b.parameter({2, 3}, DType::kFloat32);
  Literal mixed({3}, DType::kFloat32);
  for (int k = 0; k < 3; ++k) mixed.data<float>()[k] = k == 1 ? 1.0f : 0.0f;
  int outs[] = {
      b.binary(HloOpcode::kAdd, x, b.full(1e-30, {2, 3}, DType::kFloat32)),
      b.binary(HloOpcode::kMultiply, x, b.full(-1.0, {2, 3}, DType::kFloat32)),
      b.binary(HloOpcode::kSubtract, b.full(0.0, {2, 3}, DType::kFloat32), x),  // 0 - x is -x, not x
      b.binary(HloOpcode::kDivide, b.full(1.0, {2, 3}, DType::kFloat32), x),
      b.binary(HloOpcode::kAdd, x, b.broadcast(b.constant(mixed), {2, 3}, {1})),
  };
  HloModule m = b.build({outs[0], outs[1], outs[2], outs[3], outs[4]});
  size_t before = m.instructions.size();
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(m.instructions.size(), before);
}

TEST(AlgebraicSimplifier, FloatTimesZeroStaysIntegerTimesZeroIsZero) {
  HloBuilder b("zero");
  int x = b.parameter({4}, DType::kFloat32);
  int n = b.parameter({4}, DType::kInt64);
  int fz = b.binary(HloOpcode::kMultiply, x, b.full(0.0, {4}, DType::kFloat32));
  int iz = b.binary(HloOpcode::kMultiply, b.full(0.0, {4}, DType::kInt64), n);
  HloModule m = b.build({fz, iz});
  run_and_compare(m);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kMultiply);
  EXPECT_EQ(output(m, 1).opcode, HloOpcode::kBroadcast);  // the zero itself
  EXPECT_EQ(count(m, HloOpcode::kMultiply), 1);

  // The kept float product still turns inf and NaN into NaN.
  Buffer special({4}, DType::kFloat32);
  float values[] = {INFINITY, NAN, -2.0f, 0.0f};
  std::memcpy(special.raw(), values, sizeof(values));
  Buffer ints({4}, DType::kInt64);
  std::memset(ints.raw(), 0, 32);
  std::vector<Buffer> out = run(m, {special, ints});
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
  EXPECT_TRUE(std::isnan(out[0].data<float>()[1]));
}

TEST(AlgebraicSimplifier, NegateOfNegate) {
  HloBuilder b("negate");
  int x = b.parameter({5}, DType::kFloat32);
  int two = b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, x));
  int three = b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, x)));
  int four = b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, x))));
  HloModule m = b.build({two, three, four});
  run_and_compare(m);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kParameter);
  EXPECT_EQ(output(m, 1).opcode, HloOpcode::kNegate);
  EXPECT_EQ(output(m, 2).opcode, HloOpcode::kParameter);
  EXPECT_EQ(count(m, HloOpcode::kNegate), 1);  // three: the inner pair cancels, the outer negate stays
}

TEST(AlgebraicSimplifier, ConvertToSameDType) {
  HloBuilder b("convert");
  int x = b.parameter({3}, DType::kFloat32);
  int same = raw(b, HloOpcode::kConvert, x, {3}, {}, DType::kFloat32);
  int other = b.convert(x, DType::kBFloat16);
  HloModule m = b.build({b.unary(HloOpcode::kExp, same), other});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kConvert), 1);
  EXPECT_EQ(output(m, 1).dtype, DType::kBFloat16);
}

TEST(AlgebraicSimplifier, ReshapeChains) {
  HloBuilder b("reshape");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int flat = b.reshape(x, {6});
  int back = b.reshape(flat, {2, 3});             // reshape(reshape(x)) to x's shape → x
  int other = b.reshape(b.reshape(flat, {3, 2}), {1, 6});  // three reshapes → one
  int same = raw(b, HloOpcode::kReshape, x, {2, 3});       // to its own shape → x
  HloModule m = b.build({back, other, b.unary(HloOpcode::kExp, same)});
  run_and_compare(m);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kParameter);
  EXPECT_EQ(output(m, 1).opcode, HloOpcode::kReshape);
  EXPECT_EQ(output(m, 1).shape, (Shape{1, 6}));
  EXPECT_EQ(m.at(output(m, 1).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(m.at(output(m, 2).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(count(m, HloOpcode::kReshape), 1);
}

TEST(AlgebraicSimplifier, TransposeChains) {
  HloBuilder b("transpose");
  int x = b.parameter({2, 3, 4}, DType::kFloat32);
  int inverse = b.transpose(b.transpose(x, {1, 2, 0}), {2, 0, 1});  // composes to the identity
  int composed = b.transpose(b.transpose(x, {1, 0, 2}), {0, 2, 1});  // → {1, 2, 0}
  int identity = raw(b, HloOpcode::kTranspose, x, {2, 3, 4}, {0, 1, 2});
  HloModule m = b.build({inverse, composed, b.unary(HloOpcode::kExp, identity)});
  run_and_compare(m);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kParameter);
  ASSERT_EQ(output(m, 1).opcode, HloOpcode::kTranspose);
  EXPECT_EQ(output(m, 1).dimensions, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(m.at(output(m, 1).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 1);
}

TEST(AlgebraicSimplifier, TransposeOfADotSwapsItsOperands) {
  HloBuilder b("weight_grad");
  int x = b.parameter({6, 4}, DType::kFloat32);  // activations [tokens, in]
  int g = b.parameter({6, 5}, DType::kFloat32);  // output gradient [tokens, out]
  int grad = b.transpose(b.matmul(b.transpose(x, {1, 0}), g), {1, 0});  // [out, in]
  int p = b.parameter({2, 3, 4}, DType::kFloat32);
  int q = b.parameter({2, 4, 5}, DType::kFloat32);
  int batched = b.transpose(b.matmul(p, q), {0, 2, 1});
  HloModule m = b.build({grad, batched});
  run_and_compare(m, true, 1e-5);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 0);
  ASSERT_EQ(output(m, 0).opcode, HloOpcode::kDot);
  EXPECT_EQ(output(m, 0).shape, (Shape{5, 4}));
  EXPECT_EQ(output(m, 0).operands[0], 1);  // g first: (x^T g)^T = g^T x
  EXPECT_EQ(output(m, 1).shape, (Shape{2, 5, 3}));
}

TEST(AlgebraicSimplifier, TransposeOfADotWithOtherUsersStays) {
  HloBuilder b("shared_dot");
  int x = b.parameter({3, 4}, DType::kFloat32);
  int y = b.parameter({4, 5}, DType::kFloat32);
  int d = b.matmul(x, y);
  HloModule m = b.build({d, b.transpose(d, {1, 0})});
  run_and_compare(m, false);
  EXPECT_EQ(count(m, HloOpcode::kDot), 1);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 1);
}

// XLA's TransposeFolding: the matmul reads either layout, so a transposed
// operand (last two dims swapped, batch dims leading) becomes a moved
// contracting dim, also through autocast's convert.
TEST(AlgebraicSimplifier, DotFoldsTransposedOperandsThroughConverts) {
  HloBuilder b("folded");
  int x = b.parameter({4, 6}, DType::kFloat32);
  int w = b.parameter({5, 4}, DType::kFloat32);  // used as w^T: [4, 5]
  int lhs_folded = b.matmul(b.transpose(x, {1, 0}), b.parameter({4, 5}, DType::kFloat32));                     // [6, 5]
  int rhs_folded = b.matmul(b.parameter({3, 4}, DType::kFloat32), b.transpose(w, {1, 0}));                     // [3, 5]
  int bf16 = b.matmul(b.convert(b.parameter({3, 4}, DType::kFloat32), DType::kBFloat16),
                      b.convert(b.transpose(w, {1, 0}), DType::kBFloat16));                                    // [3, 5] bf16
  int p = b.parameter({2, 4, 3}, DType::kFloat32);
  int batched = b.matmul(b.transpose(p, {0, 2, 1}), b.parameter({2, 4, 5}, DType::kFloat32));                  // [2, 3, 5]
  HloModule m = b.build({lhs_folded, rhs_folded, bf16, batched});
  run_and_compare(m, true, 1e-2);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 0);
  EXPECT_EQ(output(m, 0).shape, (Shape{6, 5}));
  EXPECT_EQ(output(m, 0).dot.lhs_contracting_dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(output(m, 1).dot.rhs_contracting_dimensions, (std::vector<int64_t>{1}));
  EXPECT_EQ(output(m, 2).dtype, DType::kBFloat16);
  EXPECT_EQ(m.at(output(m, 2).operands[1]).opcode, HloOpcode::kConvert);  // convert(w), read as [n, k]
  EXPECT_EQ(output(m, 3).dot.lhs_contracting_dimensions, (std::vector<int64_t>{1}));
}

TEST(AlgebraicSimplifier, TransposesThatMoveBatchDimsStay) {
  HloBuilder b("kept");
  int p = b.parameter({4, 2, 3}, DType::kFloat32);
  int d = b.matmul(b.transpose(p, {1, 0, 2}), b.parameter({2, 3, 5}, DType::kFloat32));  // [2, 4, 5]: the batch dim moved
  HloModule m = b.build({d});
  run_and_compare(m, false);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 1);
}

// transpose(convert(dot)): autocast's f32 copy of a bf16 weight gradient.
TEST(AlgebraicSimplifier, TransposeOfAConvertedDotSwapsTheDotsOperands) {
  HloBuilder b("bf16_weight_grad");
  int x = b.convert(b.parameter({6, 4}, DType::kFloat32), DType::kBFloat16);
  int g = b.convert(b.parameter({6, 5}, DType::kFloat32), DType::kBFloat16);
  int grad = b.transpose(b.convert(b.matmul(b.transpose(x, {1, 0}), g), DType::kFloat32), {1, 0});  // [5, 4] f32
  HloModule m = b.build({grad});
  run_and_compare(m, true, 1e-2);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 0);
  ASSERT_EQ(output(m, 0).opcode, HloOpcode::kConvert);
  EXPECT_EQ(output(m, 0).shape, (Shape{5, 4}));
  EXPECT_EQ(m.at(output(m, 0).operands[0]).opcode, HloOpcode::kDot);
}

// add(scatter(0, i, u), y) = scatter(y, i, u): a tied embedding's gradient.
TEST(AlgebraicSimplifier, AddOfAScatterIntoZerosScattersIntoTheOtherOperand) {
  HloBuilder b("tied_grad");
  int y = b.parameter({7, 3}, DType::kFloat32);  // the lm_head's part
  Literal index_values({4}, DType::kInt64);
  const int64_t rows[] = {2, 5, 2, 0};  // row 2 twice
  std::memcpy(index_values.data<int64_t>(), rows, sizeof rows);
  int indices = b.constant(std::move(index_values));
  int updates = b.parameter({4, 3}, DType::kFloat32);
  int sum = b.binary(HloOpcode::kAdd, b.scatter_add(b.full(0.0, {7, 3}, DType::kFloat32), indices, updates), y);
  HloModule m = b.build({sum});
  run_and_compare(m, true, 1e-6);
  ASSERT_EQ(output(m, 0).opcode, HloOpcode::kScatter);
  EXPECT_EQ(m.at(output(m, 0).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(count(m, HloOpcode::kAdd), 0);
}

TEST(AlgebraicSimplifier, BroadcastChains) {
  HloBuilder b("broadcast");
  int x = b.parameter({3}, DType::kFloat32);
  int twice = b.broadcast(b.broadcast(x, {2, 3}, {1}), {4, 2, 3}, {1, 2});
  int spread = b.broadcast(b.broadcast(x, {3, 5}, {0}), {3, 2, 5}, {0, 2});
  int identity = raw(b, HloOpcode::kBroadcast, x, {3}, {0});
  HloModule m = b.build({twice, spread, b.unary(HloOpcode::kExp, identity)});
  run_and_compare(m);
  ASSERT_EQ(output(m, 0).opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(output(m, 0).dimensions, (std::vector<int64_t>{2}));
  EXPECT_EQ(m.at(output(m, 0).operands[0]).opcode, HloOpcode::kParameter);
  ASSERT_EQ(output(m, 1).opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(output(m, 1).dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(m.at(output(m, 2).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(count(m, HloOpcode::kBroadcast), 2);
}

TEST(AlgebraicSimplifier, SliceOfEverything) {
  HloBuilder b("slice");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int y = b.parameter({1, 4}, DType::kFloat32);
  int whole = b.slice(x, {0, 0}, {2, 3}, {1, 1});
  int strided_unit = b.slice(y, {0, 0}, {1, 4}, {3, 1});  // stride 3 over a size-1 dim keeps it all
  int part = b.slice(x, {0, 1}, {2, 3}, {1, 1});
  int skip = b.slice(x, {0, 0}, {2, 3}, {1, 2});
  HloModule m = b.build({b.unary(HloOpcode::kExp, whole), b.unary(HloOpcode::kExp, strided_unit), part, skip});
  run_and_compare(m);
  EXPECT_EQ(m.at(output(m, 0).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(m.at(output(m, 1).operands[0]).opcode, HloOpcode::kParameter);
  EXPECT_EQ(count(m, HloOpcode::kSlice), 2);
}

// gather(reshape(convert(y))) = convert(gather(reshape(y))): cross-entropy picks
// the target's logit from the f32 copy of bf16 logits; the gather reads the bf16
// logits instead, so the f32 copy need not be materialised for it.
TEST(AlgebraicSimplifier, GatherOfAConvertGathersFirst) {
  HloBuilder b("pick");
  int logits = b.parameter({4, 6}, DType::kBFloat16);
  int wide = b.convert(logits, DType::kFloat32);
  // Flat indices row * 6 + (row + 1): one per row.
  int rows = b.iota({4}, DType::kInt64, 0);
  int index = b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kMultiply, rows, b.full(7, {4}, DType::kInt64)), b.full(1, {4}, DType::kInt64));
  int picked = b.gather(b.reshape(wide, {24, 1}), index);
  int unreshaped = b.gather(wide, b.full(2, {3}, DType::kInt64));  // rows: gather(convert(y)) directly
  HloModule m = b.build({picked, b.unary(HloOpcode::kExp, wide), unreshaped});
  run_and_compare(m);
  for (int k : {0, 2}) {
    ASSERT_EQ(output(m, k).opcode, HloOpcode::kConvert) << m.to_string();
    EXPECT_EQ(output(m, k).dtype, DType::kFloat32);
    const HloInstruction& gather = m.at(output(m, k).operands[0]);
    ASSERT_EQ(gather.opcode, HloOpcode::kGather);
    EXPECT_EQ(gather.dtype, DType::kBFloat16) << "the gather reads the bf16 logits";
  }
  EXPECT_EQ(output(m, 0).shape, (Shape{4, 1}));
  EXPECT_EQ(output(m, 2).shape, (Shape{3, 6}));
}

TEST(AlgebraicSimplifier, RewritesCompose) {
  // exp(transpose(transpose(negate(negate(x + 0))) * 1)) → exp(x), and unused
  // parameters and the order of outputs survive.
  HloBuilder b("compose");
  int unused = b.parameter({7}, DType::kInt32);
  int x = b.parameter({2, 3}, DType::kFloat32);
  (void)unused;
  int v = b.binary(HloOpcode::kAdd, x, b.full(0.0, {2, 3}, DType::kFloat32));
  v = b.unary(HloOpcode::kNegate, b.unary(HloOpcode::kNegate, v));
  v = b.transpose(b.transpose(v, {1, 0}), {1, 0});
  v = b.binary(HloOpcode::kMultiply, v, b.full(1.0, {2, 3}, DType::kFloat32));
  HloModule m = b.build({b.unary(HloOpcode::kTanh, x), b.unary(HloOpcode::kExp, v)});
  run_and_compare(m);
  EXPECT_EQ(m.num_parameters, 2);
  ASSERT_EQ(m.instructions.size(), 5u) << m.to_string();  // 2 parameters, tanh, exp, tuple
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kTanh);
  EXPECT_EQ(output(m, 1).opcode, HloOpcode::kExp);
  EXPECT_EQ(m.at(output(m, 1).operands[0]).parameter_number, 1);
}

TEST(AlgebraicSimplifier, ReportsNoChangeOnASimpleModule) {
  HloBuilder b("plain");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int y = b.parameter({2, 3}, DType::kFloat32);
  HloModule m = b.build({b.binary(HloOpcode::kAdd, x, y)});
  std::string text = m.to_string();
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(m.to_string(), text);
}

}  // namespace
}  // namespace lazytrain::hlo
