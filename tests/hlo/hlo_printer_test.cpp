// HloModule::to_string prints XLA-style HLO text, and the builder's shortcuts
// (transpose folding, NumPy broadcasting, dead-code removal) produce the
// instructions they promise.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <string>

#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(HloPrinter, PrintsXlaStyleModule) {
  HloBuilder b("small");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int bias = b.parameter({3}, DType::kFloat32);
  int sum = b.binary(HloOpcode::kAdd, x, b.broadcast(bias, {2, 3}, {1}));
  int rows = b.reduce(sum, {1}, ReduceKind::kAdd);
  int positive = b.compare(rows, b.full(0.0, {2}, DType::kFloat32), ComparisonDirection::kGt);
  HloModule m = b.build({sum, rows, positive});
  const std::string text = m.to_string();
  const std::string expected =
      "HloModule small\n"
      "\n"
      "ENTRY %small (p0.0: f32[2,3]{1,0}, p1.1: f32[3]{0}) -> (f32[2,3]{1,0}, f32[2]{0}, pred[2]{0}) {\n"
      "  %parameter.0 = f32[2,3]{1,0} parameter(0)\n"
      "  %parameter.1 = f32[3]{0} parameter(1)\n"
      "  %broadcast.2 = f32[2,3]{1,0} broadcast(f32[3]{0} %parameter.1), dimensions={1}\n"
      "  %add.3 = f32[2,3]{1,0} add(f32[2,3]{1,0} %parameter.0, f32[2,3]{1,0} %broadcast.2)\n"
      "  %constant.4 = f32[] constant(0)\n"
      "  %reduce.5 = f32[2]{0} reduce(f32[2,3]{1,0} %add.3, f32[] %constant.4), dimensions={1}, to_apply=%add\n"
      "  %constant.6 = f32[] constant(0)\n"
      "  %broadcast.7 = f32[2]{0} broadcast(f32[] %constant.6), dimensions={}\n"
      "  %compare.8 = pred[2]{0} compare(f32[2]{0} %reduce.5, f32[2]{0} %broadcast.7), direction=GT\n"
      "  ROOT %tuple.9 = (f32[2,3]{1,0}, f32[2]{0}, pred[2]{0}) tuple(f32[2,3]{1,0} %add.3, f32[2]{0} %reduce.5, "
      "pred[2]{0} %compare.8)\n"
      "}\n";
  EXPECT_EQ(text, expected);
  EXPECT_TRUE(contains(text, "ROOT %tuple"));
  EXPECT_TRUE(contains(text, "f32[2,3]{1,0} add("));
}

TEST(HloPrinter, PrintsAttributesOfEachKind) {
  HloBuilder b("attrs");
  int x = b.parameter({4, 6}, DType::kFloat32);
  int seed = b.parameter({}, DType::kInt64);
  int idx = b.parameter({2}, DType::kInt64);
  int w = b.parameter({6, 5}, DType::kFloat32);
  int s = b.slice(x, {1, 0}, {4, 6}, {2, 3});
  int t = b.transpose(x, {1, 0});
  int i = b.iota({3, 2}, DType::kInt32, 1);
  int r = b.rng_bit_generator(seed, {8});
  int g = b.gather(x, idx);
  int d = b.dot(x, w, {{}, {}, {1}, {0}});
  int m2 = b.reduce(x, {0}, ReduceKind::kMax);
  int c = b.convert(x, DType::kBFloat16);
  HloModule m = b.build({s, t, i, r, g, d, m2, c});
  const std::string text = m.to_string();
  EXPECT_TRUE(contains(text, "f32[2,2]{1,0} slice(f32[4,6]{1,0} %parameter.0), slice={[1:4:2], [0:6:3]}")) << text;
  EXPECT_TRUE(contains(text, "f32[6,4]{1,0} transpose(f32[4,6]{1,0} %parameter.0), dimensions={1,0}")) << text;
  EXPECT_TRUE(contains(text, "s32[3,2]{1,0} iota(), iota_dimension=1")) << text;
  EXPECT_TRUE(contains(text, "s32[8]{0} rng-bit-generator(s64[] %parameter.1), algorithm=rng_philox")) << text;
  EXPECT_TRUE(contains(text, "f32[2,6]{1,0} gather(f32[4,6]{1,0} %parameter.0, s64[2]{0} %parameter.2)")) << text;
  EXPECT_TRUE(contains(text, "f32[4,5]{1,0} dot(f32[4,6]{1,0} %parameter.0, f32[6,5]{1,0} %parameter.3), lhs_batch_dims={}, "
                             "lhs_contracting_dims={1}, rhs_batch_dims={}, rhs_contracting_dims={0}")) << text;
  EXPECT_TRUE(contains(text, "to_apply=%maximum")) << text;
  EXPECT_TRUE(contains(text, "constant(-inf)")) << text;
  EXPECT_TRUE(contains(text, "bf16[4,6]{1,0} convert(f32[4,6]{1,0} %parameter.0)")) << text;
  EXPECT_TRUE(contains(text, "ENTRY %attrs (p0.0: f32[4,6]{1,0}, p1.1: s64[], p2.2: s64[2]{0}, p3.3: f32[6,5]{1,0})")) << text;
}

TEST(HloBuilder, MatmulFoldsMinorTransposesIntoTheDot) {
  HloBuilder b("mm");
  int a = b.parameter({2, 4, 3}, DType::kFloat32);  // used as [2, 3, 4] via transpose
  int w = b.parameter({2, 5, 4}, DType::kFloat32);  // used as [2, 4, 5] via transpose
  int d = b.matmul(b.transpose(a, {0, 2, 1}), b.transpose(w, {0, 2, 1}));
  EXPECT_EQ(b.shape(d), (Shape{2, 3, 5}));
  HloModule m = b.build({d});
  // The transposes are folded and then dropped as dead code.
  ASSERT_EQ(m.instructions.size(), 4u) << m.to_string();
  const HloInstruction& dot = m.at(2);
  ASSERT_EQ(dot.opcode, HloOpcode::kDot);
  EXPECT_EQ(dot.operands, (std::vector<int>{0, 1}));
  EXPECT_EQ(dot.dot.lhs_batch_dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(dot.dot.lhs_contracting_dimensions, (std::vector<int64_t>{1}));
  EXPECT_EQ(dot.dot.rhs_contracting_dimensions, (std::vector<int64_t>{2}));
}

TEST(HloBuilder, MatmulKeepsNonMinorTransposes) {
  HloBuilder b("mm");
  int a = b.parameter({3, 2, 4}, DType::kFloat32);
  int w = b.parameter({2, 4, 5}, DType::kFloat32);
  int d = b.matmul(b.transpose(a, {1, 0, 2}), w);  // swaps batch and m: not foldable
  HloModule m = b.build({d});
  EXPECT_EQ(m.at(2).opcode, HloOpcode::kTranspose) << m.to_string();
  EXPECT_EQ(m.at(3).dot.lhs_contracting_dimensions, (std::vector<int64_t>{2}));
}

TEST(HloBuilder, BroadcastToRightAlignsAndDropsUnitDims) {
  HloBuilder b("bt");
  int x = b.parameter({3, 1}, DType::kFloat32);
  int y = b.broadcast_to(x, {2, 3, 4});
  HloModule m = b.build({y});
  ASSERT_EQ(m.instructions.size(), 4u) << m.to_string();
  EXPECT_EQ(m.at(1).opcode, HloOpcode::kReshape);
  EXPECT_EQ(m.at(1).shape, (Shape{3}));
  EXPECT_EQ(m.at(2).opcode, HloOpcode::kBroadcast);
  EXPECT_EQ(m.at(2).dimensions, (std::vector<int64_t>{1}));
  EXPECT_EQ(m.at(2).shape, (Shape{2, 3, 4}));
  HloBuilder b2("bad");
  EXPECT_THROW(b2.broadcast_to(b2.parameter({3, 2}, DType::kFloat32), {3, 4}), Error);
}

TEST(HloBuilder, NoOpShortcutsEmitNothing) {
  HloBuilder b("noop");
  int x = b.parameter({2, 3}, DType::kFloat32);
  EXPECT_EQ(b.convert(x, DType::kFloat32), x);
  EXPECT_EQ(b.reshape(x, {2, 3}), x);
  EXPECT_EQ(b.transpose(x, {0, 1}), x);
  EXPECT_EQ(b.broadcast_to(x, {2, 3}), x);
}

TEST(HloBuilder, ReduceInitValuesAreTheIdentities) {
  HloBuilder b("init");
  int f = b.parameter({3}, DType::kFloat32);
  int i = b.parameter({3}, DType::kInt32);
  int p = b.parameter({3}, DType::kBool);
  auto init_of = [&](int reduce) { return b.at(b.at(reduce).operands[1]).literal; };
  EXPECT_EQ(*init_of(b.reduce(f, {0}, ReduceKind::kMax)).data<float>(), -INFINITY);
  EXPECT_EQ(*init_of(b.reduce(f, {0}, ReduceKind::kMin)).data<float>(), INFINITY);
  EXPECT_EQ(*init_of(b.reduce(f, {0}, ReduceKind::kMul)).data<float>(), 1.0f);
  EXPECT_EQ(*init_of(b.reduce(i, {0}, ReduceKind::kMax)).data<int32_t>(), INT32_MIN);
  EXPECT_EQ(*init_of(b.reduce(i, {0}, ReduceKind::kMin)).data<int32_t>(), INT32_MAX);
  EXPECT_EQ(*init_of(b.reduce(p, {0}, ReduceKind::kMax)).data<uint8_t>(), 0);  // or: false
  EXPECT_EQ(*init_of(b.reduce(p, {0}, ReduceKind::kMin)).data<uint8_t>(), 1);  // and: true
}

}  // namespace
}  // namespace lazytrain::hlo
