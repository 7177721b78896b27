// DotEpilogueFusion: a bias (and a residual) after an f32 dot become one kOutput
// fusion; anything else stays. Values are compared through the interpreter (which
// runs the fused computation) before and after; the CPU backend's oneDNN
// epilogue is compared with the interpreter in tests/backend/differential_test.cpp.
#include "backend/cpu/dot_epilogue_fusion.h"

#include <gtest/gtest.h>

#include "../../support/hlo_pass_test_util.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using namespace testing;
using backend::cpu::dot_epilogue_of;
using backend::cpu::DotEpilogueFusion;

bool run_and_compare(HloModule& m, bool expect_changed = true) { return run_pass_and_compare<DotEpilogueFusion>(m, expect_changed, 0); }

// nn.Linear on [batch, seq, in]: reshape to 2-D, dot with W^T, reshape back, add the bias.
struct Linear {
  HloBuilder b{"linear"};
  int x = b.parameter({2, 3, 4}, DType::kFloat32);
  int w = b.parameter({5, 4}, DType::kFloat32);
  int bias = b.parameter({5}, DType::kFloat32);
  int product = b.reshape(b.matmul(b.reshape(x, {6, 4}), b.transpose(w, {1, 0})), {2, 3, 5});
  int biased = b.binary(HloOpcode::kAdd, product, b.broadcast(bias, {2, 3, 5}, {2}));
};

TEST(DotEpilogueFusion, LinearBiasFoldsIntoTheDot) {
  Linear l;
  HloModule m = l.b.build({l.biased});
  run_and_compare(m);
  EXPECT_EQ(count(m, HloOpcode::kDot), 0);
  EXPECT_EQ(count(m, HloOpcode::kAdd), 0);
  const HloInstruction& f = output(m, 0);
  ASSERT_EQ(f.opcode, HloOpcode::kFusion);
  EXPECT_EQ(f.fusion_kind, FusionKind::kOutput);
  auto epilogue = dot_epilogue_of(f);
  ASSERT_TRUE(epilogue);
  EXPECT_TRUE(epilogue->bias);
  EXPECT_FALSE(epilogue->residual);
  EXPECT_EQ(f.shape, (Shape{2, 3, 5}));
}

TEST(DotEpilogueFusion, ResidualAddJoinsTheBias) {
  Linear l;
  int residual = l.b.parameter({2, 3, 5}, DType::kFloat32);
  HloModule m = l.b.build({l.b.binary(HloOpcode::kAdd, residual, l.biased)});
  run_and_compare(m);
  const HloInstruction& f = output(m, 0);
  ASSERT_EQ(f.opcode, HloOpcode::kFusion);
  auto epilogue = dot_epilogue_of(f);
  ASSERT_TRUE(epilogue);
  EXPECT_TRUE(epilogue->residual);
  EXPECT_EQ(f.operands.size(), 4u);
  EXPECT_EQ(count(m, HloOpcode::kAdd), 0);
}

TEST(DotEpilogueFusion, LeavesSharedProductsBf16AndOtherBroadcastsAlone) {
  HloBuilder b("no");
  int x = b.parameter({3, 4}, DType::kFloat32);
  int w = b.parameter({4, 5}, DType::kFloat32);
  int bias = b.parameter({5}, DType::kFloat32);
  int column = b.parameter({3}, DType::kFloat32);
  int shared = b.matmul(x, w);  // also an output: the dot has two users
  int a = b.binary(HloOpcode::kAdd, shared, b.broadcast(bias, {3, 5}, {1}));
  int by_row = b.binary(HloOpcode::kAdd, b.matmul(x, w), b.broadcast(column, {3, 5}, {0}));  // not along the last dim
  int xb = b.parameter({3, 4}, DType::kBFloat16);
  int wb = b.parameter({4, 5}, DType::kBFloat16);
  int bb = b.parameter({5}, DType::kBFloat16);
  int in_bf16 = b.binary(HloOpcode::kAdd, b.matmul(xb, wb), b.broadcast(bb, {3, 5}, {1}));
  HloModule m = b.build({shared, a, by_row, in_bf16});
  run_and_compare(m, false);
  EXPECT_EQ(count(m, HloOpcode::kFusion), 0);
  EXPECT_EQ(count(m, HloOpcode::kDot), 3);  // CSE would merge two; this pass does not
}

}  // namespace
}  // namespace lazytrain::hlo
