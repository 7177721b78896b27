// CSE: duplicated instructions (and whole duplicated subgraphs) merge into the
// first; instructions differing in any attribute, parameters, rng-bit-generator
// and fusions of different computations stay apart. Values are compared through
// the interpreter before and after.
#include "hlo/passes/cse.h"

#include <gtest/gtest.h>

#include <algorithm>
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

bool run_and_compare(HloModule& m, bool expect_changed = true, double rtol = 0) { return run_pass_and_compare<Cse>(m, expect_changed, rtol); }

// An f32 constant [n] holding i * scale at element i, in a buffer of its own.
int ramp(HloBuilder& b, int64_t n, float scale = 1.0f) {
  Literal lit({n}, DType::kFloat32);
  for (int64_t i = 0; i < n; ++i) lit.data<float>()[i] = static_cast<float>(i) * scale;
  return b.constant(lit);
}

TEST(Cse, MergesDuplicatedSubgraphs) {
  HloBuilder b("dup");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int y = b.parameter({2, 3}, DType::kFloat32);
  auto subgraph = [&] { return b.unary(HloOpcode::kExp, b.binary(HloOpcode::kAdd, x, b.transpose(b.transpose(y, {1, 0}), {1, 0}))); };
  int first = subgraph();
  int second = subgraph();
  HloModule m = b.build({first, second, b.binary(HloOpcode::kMultiply, first, second)});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kAdd), 1);
  EXPECT_EQ(count(m, HloOpcode::kExp), 1);
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 2);
  // Both outputs now name one instruction; the product multiplies it by itself.
  EXPECT_EQ(m.at(m.root).operands[0], m.at(m.root).operands[1]);
  EXPECT_EQ(output(m, 2).operands[0], output(m, 2).operands[1]);
  EXPECT_EQ(m.at(m.root).operands.size(), 3u);
}

TEST(Cse, MergesEqualConstantsByTheirBytes) {
  HloBuilder b("constants");
  int x = b.parameter({4}, DType::kFloat32);
  int a = b.binary(HloOpcode::kMultiply, x, ramp(b, 4));
  int c = b.binary(HloOpcode::kMultiply, x, ramp(b, 4));        // same bytes, another buffer
  int d = b.binary(HloOpcode::kMultiply, x, ramp(b, 4, 2.0f));  // other bytes
  int s = b.binary(HloOpcode::kAdd, b.full(1.0, {4}, DType::kFloat32), b.full(1.0, {4}, DType::kFloat32));
  int t = b.binary(HloOpcode::kAdd, b.scalar(1.0, DType::kFloat32), b.scalar(1.0, DType::kFloat32));
  int u = b.binary(HloOpcode::kAdd, b.scalar(1.0, DType::kInt32), b.scalar(1.0, DType::kInt32));  // f32 1 and s32 1 stay apart
  HloModule m = b.build({a, c, d, s, t, u});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kMultiply), 2);
  EXPECT_EQ(count(m, HloOpcode::kConstant), 4);  // ramp, 2·ramp, f32 1, s32 1
  EXPECT_EQ(count(m, HloOpcode::kBroadcast), 1);
  EXPECT_EQ(output(m, 3).operands[0], output(m, 3).operands[1]);
}

TEST(Cse, KeepsInstructionsWithDifferentAttributes) {
  HloBuilder b("attributes");
  int x = b.parameter({2, 3, 4}, DType::kFloat32);
  int m2 = b.parameter({4, 4}, DType::kFloat32);
  std::vector<int> outs = {
      b.transpose(x, {1, 0, 2}), b.transpose(x, {2, 1, 0}),
      b.slice(x, {0, 0, 0}, {2, 3, 2}, {1, 1, 1}), b.slice(x, {0, 0, 2}, {2, 3, 4}, {1, 1, 1}),
      b.slice(x, {0, 0, 0}, {2, 3, 4}, {1, 1, 2}),
      b.compare(m2, b.transpose(m2, {1, 0}), ComparisonDirection::kLt),
      b.compare(m2, b.transpose(m2, {1, 0}), ComparisonDirection::kGt),
      b.reduce(x, {2}, ReduceKind::kAdd), b.reduce(x, {2}, ReduceKind::kMax), b.reduce(x, {1}, ReduceKind::kAdd),
      b.broadcast(m2, {4, 4, 2}, {0, 1}), b.broadcast(m2, {4, 2, 4}, {0, 2}),
      b.dot(m2, m2, {{}, {}, {1}, {0}}), b.dot(m2, m2, {{}, {}, {0}, {0}}), b.dot(m2, m2, {{}, {}, {1}, {1}}),
      b.reshape(x, {6, 4}), b.reshape(x, {4, 6}),
      b.convert(x, DType::kBFloat16), b.convert(x, DType::kFloat16),
      b.iota({3, 4}, DType::kInt32, 0), b.iota({3, 4}, DType::kInt32, 1),
      b.binary(HloOpcode::kSubtract, m2, b.transpose(m2, {1, 0})),
      b.binary(HloOpcode::kSubtract, b.transpose(m2, {1, 0}), m2),  // operand order matters
  };
  HloModule m = b.build(outs);
  run_and_compare(m);  // the repeated transpose(m2) merges; nothing else does
  EXPECT_EQ(count(m, HloOpcode::kTranspose), 3);
  std::vector<int> roots = m.at(m.root).operands;
  std::sort(roots.begin(), roots.end());
  EXPECT_EQ(std::unique(roots.begin(), roots.end()), roots.end()) << m.to_string();
}

TEST(Cse, NeverMergesParametersOrRandomBits) {
  HloBuilder b("random");
  int x = b.parameter({4}, DType::kFloat32);
  int y = b.parameter({4}, DType::kFloat32);
  int seed = b.parameter({}, DType::kInt64);
  int r1 = b.rng_bit_generator(seed, {8});
  int r2 = b.rng_bit_generator(seed, {8});
  HloModule m = b.build({x, y, r1, r2});
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(count(m, HloOpcode::kParameter), 3);
  EXPECT_EQ(count(m, HloOpcode::kRngBitGenerator), 2);
}

TEST(Cse, MergesFusionsOnlyOfTheSameComputation) {
  auto negate_computation = [] {
    HloBuilder f("fused_negate");
    return std::make_shared<const HloModule>(f.build({f.unary(HloOpcode::kNegate, f.parameter({3}, DType::kFloat32))}));
  };
  std::shared_ptr<const HloModule> shared = negate_computation();
  HloBuilder b("fusions");
  int x = b.parameter({3}, DType::kFloat32);
  int f1 = b.fusion(shared, {x}, FusionKind::kLoop);
  int f2 = b.fusion(shared, {x}, FusionKind::kLoop);
  int f3 = b.fusion(negate_computation(), {x}, FusionKind::kLoop);  // equal text, another computation
  HloModule m = b.build({f1, f2, f3});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kFusion), 2);
  EXPECT_EQ(m.at(m.root).operands[0], m.at(m.root).operands[1]);
  EXPECT_NE(m.at(m.root).operands[0], m.at(m.root).operands[2]);
}

TEST(Cse, ReportsNoChangeWithoutDuplicates) {
  HloBuilder b("plain");
  int x = b.parameter({2, 3}, DType::kFloat32);
  HloModule m = b.build({b.unary(HloOpcode::kExp, x), b.unary(HloOpcode::kLog, x)});
  std::string text = m.to_string();
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(m.to_string(), text);
}

}  // namespace
}  // namespace lazytrain::hlo
