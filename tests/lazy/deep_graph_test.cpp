// Graphs of any depth: a chain of a million ops is recorded, hashed, printed,
// lowered, run, differentiated and freed without recursing in its depth (the
// stack stays constant), and a graph past the size bound gets one warning.
#include <gtest/gtest.h>

#include <string>

#include "../support/backend_scope.h"
#include "backend/compiler.h"
#include "hlo/hlo_builder.h"
#include "backend/cpu/cpu_pipeline.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

constexpr long kMillion = 1000000;

using testing::InterpreterScope;

TEST(DeepGraph, MillionOpChainIsHashedPrintedAndFreed) {
  Tensor x = zeros({4});
  for (long i = 0; i < kMillion; ++i) x = x + 0.5;
  // zeros(): a fill node and its constant; then one add per iteration, all
  // reading the same cached 0.5 (device data).
  lazy::GraphSignature sig = lazy::graph_signature({x.ir_value().get()});
  EXPECT_EQ(sig.post_order.size(), static_cast<size_t>(kMillion + 3));
  EXPECT_EQ(sig.parameters.size(), 1u);
  const std::string ir = lazy::dump_ir({x.ir_value().get()});
  const std::string tail = "  %1000002 = f32[4]{0} aten::add(%1000001, %2)\n  %1000002 = ROOT.output(0)\n}\n";
  ASSERT_GT(ir.size(), tail.size());
  EXPECT_EQ(ir.substr(ir.size() - tail.size()), tail);
  const std::string head =
      "IR {\n  %0 = f32[] prim::Constant(), value=0\n  %1 = f32[4]{0} aten::full(%0)\n  %2 = f32[] xla::device_data(), device=cpu:0\n"
      "  %3 = f32[4]{0} aten::add(%1, %2)\n";
  EXPECT_EQ(ir.substr(0, head.size()), head);
  x = Tensor();  // frees the chain: a million nested destructors before the fix
}

TEST(DeepGraph, MillionOpChainRunsAndWarnsOnce) {
  InterpreterScope interpreter;
  lazy::set_graph_size_warning(lazy::kDefaultGraphSizeWarning);
  const int64_t compiles = runtime::counter_value("UncachedCompile");
  Tensor x = zeros({4});
  // Two ops per iteration, reading the cached 0.5 and 0.25: a million ops.
  for (long i = 0; i < kMillion / 2; ++i) x = x * 0.5 + 0.25;  // converges to 0.5
  ::testing::internal::CaptureStderr();
  const std::vector<float> values = x.to_vector<float>();
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(values, (std::vector<float>{0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(runtime::counter_value("UncachedCompile"), compiles + 1);
  EXPECT_NE(warning.find("warning: [mark_step] one graph has 1000004 IR nodes (more than 50000): mark_step() is probably missing"),
            std::string::npos)
      << warning;
  EXPECT_EQ(warning.find('\n'), warning.size() - 1) << "one line: " << warning;
  // Once per process (until the bound is set again).
  Tensor y = zeros({4});
  for (long i = 0; i < 60000; ++i) y = y + 1.0;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{60000, 60000, 60000, 60000}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(DeepGraph, WarningBoundIsConfigurable) {
  InterpreterScope interpreter;
  lazy::set_graph_size_warning(20);
  Tensor small = zeros({2});
  for (int i = 0; i < 5; ++i) small = small + 1.0;  // 12 nodes: no warning
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(small.to_vector<float>(), (std::vector<float>{5, 5}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  Tensor large = zeros({2});
  for (int i = 0; i < 20; ++i) large = large + 1.0;  // 42 nodes
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(large.to_vector<float>(), (std::vector<float>{20, 20}));
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("one graph has 42 IR nodes (more than 20)"), std::string::npos);
  lazy::set_graph_size_warning(0);  // 0: never
  Tensor again = zeros({2});
  for (int i = 0; i < 30; ++i) again = again + 1.0;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(again.to_vector<float>(), (std::vector<float>{30, 30}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  lazy::set_graph_size_warning(lazy::kDefaultGraphSizeWarning);
}

TEST(DeepGraph, BackwardThroughAMillionOpChain) {
  InterpreterScope interpreter;
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  w.requires_grad_();
  Tensor y = w;
  for (long i = 0; i < kMillion; ++i) y = y + 0.5;
  sum(y).backward();  // walks a million GradFns
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
  // A second chain with its autograd history dropped without backward(): a
  // million nested GradFn destructors before the fix.
  Tensor z = w;
  for (long i = 0; i < kMillion; ++i) z = z * 1.5;
  EXPECT_TRUE(z.requires_grad());
  z = Tensor();
}

// The CPU backend's passes (fusion grew its groups recursively) on a chain far
// deeper than the stack allows recursion for, without the compiler step.
TEST(DeepGraph, HloPipelineOnAQuarterMillionInstructionChain) {
  hlo::HloBuilder b("chain");
  const int x = b.parameter({8}, DType::kFloat32);
  const int half = b.parameter({}, DType::kFloat32);
  const int halves = b.broadcast(half, {8}, {});  // read by every add
  int y = x;
  constexpr long kAdds = 250000;
  for (long i = 0; i < kAdds; ++i) y = b.binary(hlo::HloOpcode::kAdd, y, halves);
  hlo::HloModule m = b.build({y});
  for (const auto& pass : backend::cpu::cpu_pass_pipeline()) pass->run(m);
  // Fusion cuts the chain into kernels of at most 512 instructions.
  size_t fusions = 0, largest = 0;
  for (const hlo::HloInstruction& in : m.instructions) {
    if (in.opcode != hlo::HloOpcode::kFusion) continue;
    ++fusions;
    largest = std::max(largest, in.fused_computation->instructions.size());
  }
  EXPECT_GE(fusions, static_cast<size_t>(kAdds / 512));
  EXPECT_LE(largest, 512u + 64u);  // members plus the fusion's parameters and root tuple
  EXPECT_FALSE(m.to_string().empty());
}

// Generated kernels for a chain longer than one fusion holds: several kernels, right values.
TEST(DeepGraph, CpuBackendRunsAChainOfSeveralFusions) {
  testing::CpuBackendScope cpu;
  Tensor x = zeros({16});
  for (int i = 0; i < 1500; ++i) x = x * 0.5 + 0.25;
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(16, 0.5f));
}

}  // namespace
}  // namespace lazytrain
