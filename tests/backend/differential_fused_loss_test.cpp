// The vocabulary-sized loss as the CPU backend compiles it (issue 14): the
// cross-entropy of an MLM/CLM head, logits = x W^T + b over a vocabulary of
// 5000 (rows longer than the online-softmax kernel's 2048-element chunks),
// forward and backward in one graph.
//
// - DifferentialFusedLoss.CrossEntropyMatchesTheInterpreter/<isa>: the loss and
//   the gradients of x, W and b from the CPU backend's generated kernels equal
//   the interpreter's, on AVX2 and (where the CPU has it) AVX-512 kernels.
// - DifferentialFusedLoss.TheLogitsAreReducedOnceAndNeverNormalised: the
//   optimized step holds one reduce over the vocabulary, a logaddexp with a
//   generated online-softmax kernel; besides the logits and their gradient no
//   [rows, vocabulary] value is materialised (no log-probabilities).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../support/kernel_isas.h"
#include "backend/cpu/cpu_pipeline.h"
#include "backend/cpu/kernel_emitter.h"
#include "hlo/passes/hlo_pass.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazytrain {
namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;
using runtime::Buffer;

constexpr int64_t kRows = 48, kHidden = 32, kVocab = 5000;

// Deterministic values in about [-scale, scale].
std::vector<float> values(int64_t n, int64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(seed));
  return v;
}

struct LossStep {
  HloModule module;
  std::vector<Buffer> arguments;
};

// cross_entropy(x W^T + b, target) and its gradients for x, W and b, lowered.
// A quarter of the targets are ignore_index; one row's logits peak in its last
// chunk, so the online sum is rescaled there.
LossStep loss_step() {
  Tensor x = from_vector(values(kRows * kHidden, 1, 1.0f), {kRows, kHidden}).requires_grad_();
  Tensor w = from_vector(values(kVocab * kHidden, 2, 0.5f), {kVocab, kHidden}).requires_grad_();
  std::vector<float> bias = values(kVocab, 3, 0.1f);
  bias[kVocab - 7] = 40.0f;
  Tensor b = from_vector(bias, {kVocab}).requires_grad_();
  std::vector<int64_t> target(kRows);
  for (int64_t i = 0; i < kRows; ++i) target[static_cast<size_t>(i)] = i % 4 == 1 ? -100 : (i * 997) % kVocab;
  Tensor loss = cross_entropy(add(matmul(x, transpose(w, 0, 1)), b), from_vector(target, {kRows}));
  loss.backward();
  std::vector<const lazy::Node*> outputs = {loss.ir_value().get(), x.grad().ir_value().get(), w.grad().ir_value().get(),
                                            b.grad().ir_value().get()};
  lazy::GraphSignature signature = lazy::graph_signature(outputs);
  LossStep step{lazy::lower_graph(signature, "fused_loss"), {}};
  for (const lazy::Node* p : signature.parameters) step.arguments.push_back(p->data());
  return step;
}

// sqrt(sum (a - b)^2) <= rtol * sqrt(sum b^2) + atol, per output.
void expect_close(const std::vector<Buffer>& got, const std::vector<Buffer>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const char* names[] = {"loss", "x.grad", "w.grad", "b.grad"};
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].numel(), want[k].numel()) << what << " " << names[k];
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      const double a = got[k].data<float>()[i], e = want[k].data<float>()[i];
      ASSERT_TRUE(std::isfinite(a)) << what << " " << names[k] << " element " << i;
      diff += (a - e) * (a - e);
      norm += e * e;
    }
    EXPECT_GT(norm, 0.0) << names[k] << " is all zeros: the test would prove nothing";
    EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm) + 1e-7) << what << " " << names[k];
  }
}

class DifferentialFusedLoss : public ::testing::TestWithParam<std::string> {};

TEST_P(DifferentialFusedLoss, CrossEntropyMatchesTheInterpreter) {
  const LossStep step = loss_step();
  const std::vector<Buffer> want = backend::make_compiler("interpreter")->compile(step.module)->execute(step.arguments);
  EXPECT_GT(want[0].data<float>()[0], 1.0f);  // a real loss
  expect_close(testing::cpu_compiler_for(GetParam())->compile(step.module)->execute(step.arguments), want, GetParam() + " kernels");
}

INSTANTIATE_TEST_SUITE_P(Differential, DifferentialFusedLoss, ::testing::ValuesIn(testing::kernel_isas()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(DifferentialFusedLossStructure, TheLogitsAreReducedOnceAndNeverNormalised) {
  HloModule m = loss_step().module;
  hlo::run_passes(m, backend::cpu::cpu_pass_pipeline());
  const Shape logits_shape = {kRows, kVocab};
  int row_reduces = 0, online_kernels = 0, materialised = 0;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode != HloOpcode::kParameter && in.shape == logits_shape) ++materialised;
    if (in.opcode != HloOpcode::kFusion) continue;
    for (const HloInstruction& f : in.fused_computation->instructions) {
      if (f.opcode != HloOpcode::kReduce || f.dimensions != std::vector<int64_t>{1}) continue;
      if (in.fused_computation->at(f.operands[0]).shape != logits_shape) continue;
      ++row_reduces;
      EXPECT_EQ(f.reduce_kind, hlo::ReduceKind::kLogAddExp) << m.to_string();
      const std::optional<std::string> kernel = backend::cpu::emit_fusion_kernel(in, "k");
      ASSERT_TRUE(kernel.has_value()) << in.fused_computation->to_string();
      // The running sum is rescaled to a new maximum (online softmax).
      online_kernels += kernel->find("s * Exp()(m - cm)") != std::string::npos;
    }
  }
  EXPECT_EQ(row_reduces, 1) << m.to_string();
  EXPECT_EQ(online_kernels, 1);
  // The logits (the dot with its bias) and their gradient; no log-softmax.
  EXPECT_LE(materialised, 2) << m.to_string();
}

}  // namespace
}  // namespace lazytrain
