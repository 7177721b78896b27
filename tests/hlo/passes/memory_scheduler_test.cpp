// MemoryScheduler: the order it picks computes the same values with fewer
// bytes alive at once; parameters keep their numbers; a module already in a
// good order is left alone.
#include "hlo/passes/memory_scheduler.h"

#include <gtest/gtest.h>

#include "../../support/hlo_pass_test_util.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using namespace testing;

// The shape of a training step's backward as the lowering orders it when an
// optimizer reads the gradients: a forward chain of activations a_i, then the
// chain of input gradients g_i, and the weight gradients reduce(a_i * g_i)
// only at the end. Run in that order, all eight activations are alive at once;
// each weight gradient can run as soon as its g_i exists, freeing a_i.
// (The test util's random arguments make `half` anything; values are compared
// before and after, not checked against a formula.)
HloModule backward_like() {
  HloBuilder b("backward_like");
  const Shape s = {256, 256};
  const int x = b.parameter(s, DType::kFloat32);
  const int half = b.parameter({}, DType::kFloat32);
  std::vector<int> a;
  int h = x;
  for (int i = 0; i < 8; ++i) a.push_back(h = b.unary(HloOpcode::kTanh, h));
  std::vector<int> g;
  int chain = h;
  for (int i = 7; i >= 0; --i) {
    chain = b.binary(HloOpcode::kMultiply, chain, b.broadcast(half, s, {}));
    g.push_back(chain);
  }
  std::vector<int> outputs;
  for (int i = 0; i < 8; ++i) {
    outputs.push_back(b.reduce(b.binary(HloOpcode::kMultiply, a[static_cast<size_t>(i)], g[static_cast<size_t>(7 - i)]), {0, 1}, ReduceKind::kAdd));
  }
  return b.build(outputs);
}

TEST(MemoryScheduler, HoldsFewerBytesAndComputesTheSameValues) {
  HloModule m = backward_like();
  const int64_t before = peak_live_bytes(m);
  HloModule copy = m;
  ASSERT_TRUE(run_pass_and_compare<MemoryScheduler>(copy, true, 0));
  const int64_t after = peak_live_bytes(copy);
  // Every activation is alive when the backward chain starts, in any order.
  // Before, all eight gradients g_i join them (16 arrays of 256 KB and more);
  // after, each weight gradient frees its a_i as soon as g_i exists, so the
  // peak is that turn: 8 activations, one g and one product (10 arrays).
  const int64_t array = 256 * 256 * 4;
  EXPECT_GE(before, 16 * array);
  EXPECT_LE(after, 10 * array + 64) << before << " -> " << after;
  EXPECT_EQ(copy.instructions.size(), m.instructions.size());
  EXPECT_EQ(copy.num_parameters, m.num_parameters);
}

TEST(MemoryScheduler, LeavesAGoodOrderAlone) {
  HloBuilder b("chain");
  const int x = b.parameter({64}, DType::kFloat32);
  int y = x;
  for (int i = 0; i < 5; ++i) y = b.unary(HloOpcode::kTanh, y);
  HloModule m = b.build({y});
  MemoryScheduler pass;
  EXPECT_FALSE(pass.run(m));
}

TEST(MemoryScheduler, PeakLiveBytesCountsOutputsToTheEnd) {
  HloBuilder b("outputs");
  const int x = b.parameter({1024}, DType::kFloat32);
  const int y = b.unary(HloOpcode::kExp, x);   // an output: alive to the end
  const int z = b.unary(HloOpcode::kTanh, x);  // read once by w, then freed
  const int w = b.unary(HloOpcode::kNegate, z);
  HloModule m = b.build({y, w});
  EXPECT_EQ(peak_live_bytes(m), 3 * 4096);  // y, z and w alive when w is made
}

}  // namespace
}  // namespace lazytrain::hlo
