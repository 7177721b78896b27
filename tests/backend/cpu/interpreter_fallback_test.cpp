// Interpreter fallbacks of the CPU backend (backend/cpu/cpu_executable.h): a
// fusion the kernel emitter cannot generate runs on the interpreter, and each
// run counts InterpreterFallback and InterpreterFallback.<fusion>, with one
// line on stderr per kind of fusion; the training steps of BERT and GPT-2 run
// none (the benchmarks fail when one does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/cpu_pipeline.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/registry.h"
#include "hlo/hlo_builder.h"
#include "hlo/passes/hlo_pass.h"
#include "lazy/lazy_api.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"
#include "../../support/backend_scope.h"
#include "../../support/test_buffers.h"
#include "tensor/autocast.h"
#include "tensor/ops.h"

namespace lazytrain {
namespace {

using hlo::HloOpcode;

// x / y + x on s64[8]: the fusion pass makes one loop fusion of the integer
// divide and the add, which the emitter refuses (an integer division by zero
// must raise, as the interpreter's does).
hlo::HloModule integer_division_module(const std::string& name) {
  hlo::HloBuilder b(name);
  const int x = b.parameter({8}, DType::kInt64);
  const int y = b.parameter({8}, DType::kInt64);
  const int q = b.binary(HloOpcode::kDivide, x, y);
  return b.build({b.binary(HloOpcode::kAdd, q, x)});
}

// The fusion instructions of `module` after the CPU backend's passes.
std::vector<std::string> fusion_names(hlo::HloModule module) {
  hlo::run_passes(module, backend::cpu::cpu_pass_pipeline());
  std::vector<std::string> names;
  for (const auto& in : module.instructions) {
    if (in.opcode == HloOpcode::kFusion) names.push_back(in.name());
  }
  return names;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(InterpreterFallback, AFusionTheEmitterRefusesIsCountedPerRunAndNamedOnce) {
  const std::vector<std::string> fusions = fusion_names(integer_division_module("fallback_probe"));
  ASSERT_EQ(fusions.size(), 1u) << "the divide and the add should form one loop fusion";
  const std::string counter = "InterpreterFallback." + fusions[0];
  runtime::reset_metrics();
  auto compiler = backend::make_compiler("cpu");
  ::testing::internal::CaptureStderr();
  auto executable = compiler->compile(integer_division_module("fallback_a"));
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(said, "runs on the interpreter"), 1u) << said;
  EXPECT_NE(said.find(fusions[0] + " of fallback_a"), std::string::npos) << said;
  EXPECT_NE(said.find("integer division"), std::string::npos) << said;
  EXPECT_NE(said.find("counted as " + counter), std::string::npos) << said;
  EXPECT_EQ(runtime::counter_value("InterpreterFallback"), 0);  // counted when it runs

  const std::vector<int64_t> x = {7, -7, 9, 100, 0, 5, -12, 3}, y = {2, 2, -4, 7, 3, 5, 5, -2};
  std::vector<int64_t> expected;  // XLA's integer divide truncates toward zero
  for (size_t i = 0; i < x.size(); ++i) expected.push_back(x[i] / y[i] + x[i]);
  for (int run = 1; run <= 3; ++run) {
    std::vector<runtime::Buffer> out = executable->execute({testing::buffer<int64_t>({8}, DType::kInt64, x), testing::buffer<int64_t>({8}, DType::kInt64, y)});
    EXPECT_EQ(testing::values<int64_t>(out[0]), expected);
    EXPECT_EQ(runtime::counter_value("InterpreterFallback"), run);
    EXPECT_EQ(runtime::counter_value(counter), run);
  }
  // In the report (full and short, as PyTorch/XLA's aten:: fallback counters).
  EXPECT_NE(runtime::metrics_report().find("Counter: " + counter + "\n  Value: 3\n"), std::string::npos);
  EXPECT_NE(runtime::short_metrics_report({}, {}).find("Counter: InterpreterFallback\n  Value: 3\n"), std::string::npos);

  // The same kind of fusion in another graph: counted, not said again.
  ::testing::internal::CaptureStderr();
  auto again = compiler->compile(integer_division_module("fallback_b"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  again->execute({testing::buffer<int64_t>({8}, DType::kInt64, x), testing::buffer<int64_t>({8}, DType::kInt64, y)});
  EXPECT_EQ(runtime::counter_value("InterpreterFallback"), 4);
}

TEST(InterpreterFallback, TheEmitterSaysWhyItRefuses) {
  hlo::HloModule module = integer_division_module("why");
  hlo::run_passes(module, backend::cpu::cpu_pass_pipeline());
  for (const auto& in : module.instructions) {
    if (in.opcode != HloOpcode::kFusion) continue;
    std::string why;
    EXPECT_FALSE(backend::cpu::emit_fusion_kernel(in, "k", &why).has_value());
    EXPECT_EQ(why.rfind("divide.", 0), 0u) << why;  // names the fused instruction
    EXPECT_NE(why.find("is an integer division"), std::string::npos) << why;
  }
}

// Steps of BERT and GPT-2 training (forward, backward, clipping, AdamW,
// mark_step, a loss read), f32 and bf16 autocast: every fusion is generated.
template <typename Forward>
void expect_training_steps_generate_every_fusion(nn::Module& model, const Forward& forward, const std::string& what) {
  for (const bool bf16 : {false, true}) {
    optim::AdamWOptions options;
    options.lr = 1e-3;
    optim::AdamW optimizer({{model.parameters(), 0.01}}, options);
    runtime::reset_metrics();
    for (int step = 0; step < 2; ++step) {
      Tensor loss;
      {
        AutocastGuard autocast(bf16, DType::kBFloat16);
        loss = forward();
      }
      loss.backward();
      optim::clip_grad_norm_(model.parameters(), 1.0);
      optimizer.step();
      optimizer.zero_grad();
      lazy::mark_step();
      EXPECT_TRUE(std::isfinite(loss.item())) << what;
    }
    EXPECT_GT(runtime::counter_value("UncachedCompile"), 0) << what;
    EXPECT_EQ(runtime::counter_value("InterpreterFallback"), 0) << what << (bf16 ? " bf16" : " f32") << "\n" << runtime::metrics_report();
  }
}

TEST(InterpreterFallback, BertAndGpt2TrainingStepsRunNone) {
  lazytrain::testing::CpuBackendScope cpu;
  manual_seed(7);
  const int64_t batch = 2, seq = 8;
  std::vector<int64_t> ids, labels;
  for (int64_t i = 0; i < batch * seq; ++i) {
    ids.push_back(5 + (i * 7) % 30);
    labels.push_back(i % 3 == 0 ? ids.back() : -100);
  }
  const Tensor input_ids = from_vector(ids, {batch, seq});
  const Tensor attention_mask = ones({batch, seq}, DType::kInt64);

  models::BertConfig bert_config;
  bert_config.update_from_string("vocab_size=40,hidden_size=16,num_hidden_layers=2,num_attention_heads=2,intermediate_size=32,max_position_embeddings=16");
  models::BertForMaskedLM bert(bert_config);
  bert.train();
  const Tensor mlm_labels = from_vector(labels, {batch, seq});
  expect_training_steps_generate_every_fusion(bert, [&] { return bert.forward(input_ids, attention_mask, mlm_labels).loss; }, "BertForMaskedLM");

  models::GPT2Config gpt2_config;
  gpt2_config.update_from_string("vocab_size=40,n_positions=16,n_embd=16,n_layer=2,n_head=2");
  models::GPT2LMHeadModel gpt2(gpt2_config);
  gpt2.train();
  expect_training_steps_generate_every_fusion(gpt2, [&] { return gpt2.forward(input_ids, attention_mask, input_ids).loss; }, "GPT2LMHeadModel");
}

}  // namespace
}  // namespace lazytrain
