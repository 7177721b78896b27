// nn::checkpoint and the models' gradient checkpointing (nn/checkpoint.h):
// the same loss and gradients as without it, dropout included (the generator is
// replayed) and under autocast; the recomputation really runs (more dot FLOPs,
// not merged away by CSE), and it runs late: the step graph, executed in its
// order with every value freed after its last use, holds fewer bytes at once.
#include "nn/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "../support/backend_scope.h"
#include "backend/cpu/cpu_pipeline.h"
#include "backend/registry.h"
#include "hlo/hlo_instruction.h"
#include "hlo/passes/hlo_pass.h"
#include "hlo/passes/memory_scheduler.h"
#include "lazy/lazy_api.h"
#include "models/bert.h"
#include "models/gpt2.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"
#include "tensor/autocast.h"
#include "tensor/ops.h"

namespace lazytrain {
namespace {

models::BertConfig tiny_bert() {
  models::BertConfig c;
  c.update_from_string("vocab_size=120,hidden_size=32,num_hidden_layers=4,num_attention_heads=2,intermediate_size=128,max_position_embeddings=64");
  return c;  // dropout 0.1 on hidden states and attention probabilities
}

struct Batch {
  Tensor ids, mask, labels;
};

Batch batch() {
  std::vector<int64_t> ids, mask, labels;
  for (int64_t i = 0; i < 4 * 24; ++i) {
    ids.push_back(5 + (i * 37) % 110);
    mask.push_back(i % 24 < 20 ? 1 : 0);
    labels.push_back(i % 5 == 0 ? (i * 11) % 120 : -100);
  }
  return {from_vector(ids, {4, 24}), from_vector(mask, {4, 24}), from_vector(labels, {4, 24})};
}

struct StepResult {
  double loss = 0;
  std::map<std::string, std::vector<float>> grads;
  int64_t dot_flops = 0;
};

// One training step (seeded dropout) of a fresh tiny BERT, with or without
// checkpointing; `bf16` runs the forward under autocast.
StepResult bert_step(bool checkpointing, bool bf16 = false) {
  manual_seed(7);
  models::BertForMaskedLM model(tiny_bert());
  model.train();
  if (checkpointing) model.gradient_checkpointing_enable();
  const Batch b = batch();
  Tensor loss;
  {
    AutocastGuard autocast(bf16, DType::kBFloat16);
    loss = model.forward(b.ids, b.mask, b.labels).loss;
  }
  const int64_t flops = runtime::counter_value("ExecutedDotFlops");
  loss.backward();
  std::vector<Tensor> live;
  for (const auto& [name, p] : model.named_parameters()) live.push_back(p.grad());
  live.push_back(loss);
  lazy::mark_step();
  StepResult r;
  r.loss = loss.item();
  r.dot_flops = runtime::counter_value("ExecutedDotFlops") - flops;
  for (const auto& [name, p] : model.named_parameters()) r.grads[name] = p.grad().to_vector<float>();
  return r;
}

void expect_same_step(const StepResult& got, const StepResult& want, double tolerance) {
  EXPECT_NEAR(got.loss, want.loss, tolerance * std::abs(want.loss));
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (const auto& [name, w] : want.grads) {
    const std::vector<float>& g = got.grads.at(name);
    ASSERT_EQ(g.size(), w.size()) << name;
    double scale = 0;
    for (float v : w) scale = std::max(scale, static_cast<double>(std::abs(v)));
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(g[i], w[i], tolerance * scale + 1e-9) << name << "[" << i << "]";
  }
}

TEST(GradientCheckpointing, GivesTheLossAndGradientsOfThePlainStepWithDropout) {
  const StepResult plain = bert_step(false);
  const StepResult checkpointed = bert_step(true);
  expect_same_step(checkpointed, plain, 1e-5);
  EXPECT_GT(plain.grads.size(), 30u);
}

TEST(GradientCheckpointing, RecomputesUnderTheForwardsAutocast) {
  const StepResult plain = bert_step(false, true);
  const StepResult checkpointed = bert_step(true, true);
  const StepResult f32 = bert_step(false, false);
  expect_same_step(checkpointed, plain, 1e-5);
  EXPECT_NE(plain.loss, f32.loss);  // autocast engaged (the recomputation too, or the gradients would differ)
}

// The layers' forward runs twice: the step's dot FLOPs on the CPU backend grow
// by exactly the encoder layers' forward dots (CSE did not merge the
// recomputation with the forward).
TEST(GradientCheckpointing, RecomputationRunsEveryLayersForwardAgain) {
  testing::CpuBackendScope cpu;  // its passes include CSE
  const StepResult plain = bert_step(false);
  const StepResult checkpointed = bert_step(true);
  expect_same_step(checkpointed, plain, 1e-5);
  // Per layer and row (4 x 24 rows, hidden 32, intermediate 128, seq 24):
  // Q, K, V, output 4 * 32 * 32 + FFN 2 * 32 * 128 multiply-adds, and the
  // attention's QK^T and PV 2 * 24 * 32; FLOPs are 2 per multiply-add.
  const int64_t rows = 4 * 24, layers = 4;
  const int64_t per_row = 4 * 32 * 32 + 2 * 32 * 128 + 2 * 24 * 32;
  EXPECT_EQ(checkpointed.dot_flops - plain.dot_flops, 2 * rows * per_row * layers);
}

// A compiler that keeps the last module it compiled (the interpreter runs it).
class CapturingCompiler : public backend::Compiler {
 public:
  explicit CapturingCompiler(std::shared_ptr<hlo::HloModule> into) : into_(std::move(into)), inner_(backend::make_compiler("interpreter")) {}
  std::string name() const override { return "interpreter"; }
  std::unique_ptr<backend::Executable> compile(hlo::HloModule module) override {
    *into_ = module;
    return inner_->compile(std::move(module));
  }

 private:
  std::shared_ptr<hlo::HloModule> into_;
  std::unique_ptr<backend::Compiler> inner_;
};

int64_t step_peak_bytes(bool checkpointing) {
  auto module = std::make_shared<hlo::HloModule>();
  const bool was_cpu = lazy::compiler().name() == "cpu";
  lazy::set_compiler(std::make_unique<CapturingCompiler>(module));
  manual_seed(7);
  models::BertConfig c = tiny_bert();
  c.update_from_string("num_hidden_layers=8,intermediate_size=256");
  models::BertForMaskedLM model(c);
  model.train();
  if (checkpointing) model.gradient_checkpointing_enable();
  // The whole training step: forward, backward, clipping and AdamW in one graph.
  optim::AdamW optimizer({{model.parameters(), 0.01}}, {1e-3, 0.9, 0.999, 1e-8, 0.0});
  const Batch b = batch();
  model.forward(b.ids, b.mask, b.labels).loss.backward();
  optim::clip_grad_norm_(model.parameters(), 1.0);
  optimizer.step();
  optimizer.zero_grad();
  lazy::mark_step();
  lazy::set_compiler(backend::make_compiler(was_cpu ? "cpu" : "interpreter"));
  // As the CPU backend runs it: after its passes (CSE, fusion, the memory scheduler).
  hlo::run_passes(*module, backend::cpu::cpu_pass_pipeline());
  return hlo::peak_live_bytes(*module);
}

TEST(GradientCheckpointing, TheStepGraphHoldsFewerBytesAtOnce) {
  const int64_t plain = step_peak_bytes(false);
  const int64_t checkpointed = step_peak_bytes(true);
  ASSERT_GT(plain, 0);
  // 8 layers: the plain step keeps every layer's activations until its
  // backward; the checkpointed one keeps the layers' inputs and one layer's
  // (with the memory scheduler running each weight gradient early: without it
  // the optimizer's reads put them all after the input-gradient chain).
  EXPECT_LT(static_cast<double>(checkpointed), 0.6 * static_cast<double>(plain)) << checkpointed << " vs " << plain << " bytes";
}

TEST(GradientCheckpointing, Gpt2BlocksGiveTheSameGradients) {
  auto step = [](bool checkpointing) {
    manual_seed(3);
    models::GPT2Config c;
    c.vocab_size = 90;
    c.n_positions = 32;
    c.n_embd = 32;
    c.n_layer = 3;
    c.n_head = 2;
    models::GPT2LMHeadModel model(c);
    model.train();
    if (checkpointing) model.gradient_checkpointing_enable();
    std::vector<int64_t> tokens;
    for (int64_t i = 0; i < 4 * 24; ++i) tokens.push_back((i * 37) % 90);
    const Tensor ids = from_vector(tokens, {4, 24});
    Tensor loss = model.forward(ids, Tensor(), ids).loss;
    loss.backward();
    StepResult r;
    r.loss = loss.item();
    for (const auto& [name, p] : model.named_parameters()) r.grads[name] = p.grad().to_vector<float>();
    return r;
  };
  expect_same_step(step(true), step(false), 1e-5);
}

// The op itself: x's value and gradient; `after` gets no gradient; two equal
// barriers are not merged by the CPU backend's CSE (both run: two copies' worth).
TEST(OptimizationBarrier, PassesXAndItsGradient) {
  const Tensor x = from_vector(std::vector<float>{1, -2, 3}, {3}).requires_grad_(true);
  const Tensor after = from_vector(std::vector<float>{5, 6}, {2}).requires_grad_(true);
  const Tensor y = optimization_barrier(x, after);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, -2, 3}));
  sum(mul(y, y)).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, -4, 6}));
  EXPECT_FALSE(after.grad().defined());
}

TEST(GradientCheckpointing, WithoutGradModeItIsThePlainCall) {
  const Tensor x = from_vector(std::vector<float>{1, 2, 3}, {3}).requires_grad_(true);
  NoGradGuard no_grad;
  int calls = 0;
  const Tensor y = nn::checkpoint([&](const Tensor& in) { ++calls; return mul(in, 2.0); }, x);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

}  // namespace
}  // namespace lazytrain
