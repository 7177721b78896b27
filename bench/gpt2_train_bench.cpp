// bench_gpt2_train: training-step throughput of GPT2LMHeadModel (bench/README.md).
//
// GPT-2 124M from Hugging Face's config.json (../shared/data/gpt2/config.json;
// --config_overrides for others), random token batches (no padding, labels =
// input_ids, shifted inside the model), N warm-up plus M timed steps of forward /
// backward / clip_grad_norm_(1.0) / AdamW (weight decay 0.01 except biases and
// LayerNorm weights, the Trainer's groups) / zero_grad / mark_step / loss.item().
// --bf16 runs the forward under autocast. Prints what bench_support.h's
// time_training_steps prints, ending with
//   RESULT bench=gpt2_train model=gpt2 backend=cpu batch=4 seq=64 dtype=f32 ... tokens_per_s=...
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "backend/registry.h"
#include "core/error.h"
#include "lazy/graph_executor.h"
#include "models/gpt2.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "tensor/autocast.h"
#include "train/trainer.h"

using namespace lazytrain;

namespace {

struct Options : bench::StepFlags {
  std::string config = "../shared/data/gpt2/config.json";
  Options() {
    batch_size = 4;
    seq_len = 64;
    warmup = 2;
    steps = 5;
  }
};

const char* kUsage =
    "usage: bench_gpt2_train [--config CONFIG_JSON] [--config_overrides k=v,...] [--backend interpreter|cpu]\n"
    "                        [--batch_size B] [--seq_len S] [--warmup N] [--steps M] [--bf16] [--seed N] [--gradient_checkpointing]\n"
    "  --config defaults to ../shared/data/gpt2/config.json (GPT-2 124M), relative to the repository root\n";

[[noreturn]] void usage_error(const std::string& message) { bench::usage_error("bench_gpt2_train", kUsage, message); }

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_step_flags(argc, argv, "bench_gpt2_train", kUsage, o, [&](const std::string& flag, const std::string& value) {
    if (flag != "--config") return false;
    o.config = value;
    return true;
  });
  return o;
}

// Matmul FLOPs of one training step per token, 3x the forward (PaLM's 6N + 12 L E S
// with N the non-embedding matmul parameters plus the tied lm_head). Forward per token:
//   per layer: c_attn 2·3E², attention c_proj 2E², c_fc and mlp c_proj 2·2·E·I,
//              scores QKᵀ and P·V 2·2·S·E (the whole S x S, causal mask included)
//   lm_head 2EV.
double train_flops_per_token(const models::GPT2Config& c, int64_t seq) {
  const double E = static_cast<double>(c.n_embd), I = static_cast<double>(c.inner_size());
  const double L = static_cast<double>(c.n_layer), V = static_cast<double>(c.vocab_size), S = static_cast<double>(seq);
  return 3 * (L * (8 * E * E + 4 * E * I + 4 * S * E) + 2 * E * V);
}

int run(const Options& o) {
  models::GPT2Config config = models::GPT2Config::from_json_file(o.config);
  if (!o.config_overrides.empty()) config.update_from_string(o.config_overrides);
  config.validate("bench_gpt2_train");
  if (o.seq_len > config.n_positions) usage_error("--seq_len is larger than n_positions " + std::to_string(config.n_positions));
  const double flops_per_token = train_flops_per_token(config, o.seq_len);
  std::printf("bench_gpt2_train: GPT-2 (n_embd %lld, n_layer %lld, n_head %lld, vocab %lld) from %s, batch %lld x seq %lld, backend %s, "
              "%s, %d warm-up + %d timed steps\n",
              static_cast<long long>(config.n_embd), static_cast<long long>(config.n_layer), static_cast<long long>(config.n_head),
              static_cast<long long>(config.vocab_size), o.config.c_str(), static_cast<long long>(o.batch_size),
              static_cast<long long>(o.seq_len), o.backend.c_str(), o.bf16 ? "bf16" : "f32", o.warmup, o.steps);

  lazy::GraphExecutor::get().set_compiler(backend::make_compiler(o.backend));
  manual_seed(o.seed);
  models::GPT2LMHeadModel model(config);
  model.train();
  if (o.gradient_checkpointing) model.gradient_checkpointing_enable();
  train::DecayGroups groups = train::split_weight_decay(model);
  optim::AdamW optimizer({{groups.decay, 0.01}, {groups.no_decay, 0.0}}, {1e-4, 0.9, 0.999, 1e-8, 0.0});
  const std::vector<Tensor> params = model.parameters();
  int64_t n_params = 0;
  for (const Tensor& p : params) n_params += p.numel();
  std::printf("parameters: %lld, training FLOPs/token (matmuls): %.4g\n", static_cast<long long>(n_params), flops_per_token);

  // A few distinct batches of random tokens, made before timing.
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int64_t> token(0, config.vocab_size - 1);
  std::vector<std::vector<int64_t>> batches(4);
  for (auto& b : batches) {
    b.resize(static_cast<size_t>(o.batch_size * o.seq_len));
    for (int64_t& t : b) t = token(rng);
  }

  auto step = [&](int i) {
    const std::vector<int64_t>& b = batches[static_cast<size_t>(i) % batches.size()];
    const Tensor ids = from_vector(b, {o.batch_size, o.seq_len});
    Tensor loss;
    {
      AutocastGuard autocast(o.bf16, DType::kBFloat16);  // --bf16: torch.autocast('cpu', dtype=torch.bfloat16)
      loss = model.forward(ids, Tensor(), ids).loss;
    }
    return bench::finish_training_step(loss, params, optimizer);
  };

  const std::string prefix = "bench=gpt2_train model=gpt2 backend=" + o.backend + " batch=" + std::to_string(o.batch_size) +
                             " seq=" + std::to_string(o.seq_len) + " dtype=" + (o.bf16 ? "bf16" : "f32");
  const bench::TrainingRun run{prefix, o.batch_size * o.seq_len, flops_per_token, o.warmup, o.steps};
  bench::time_training_steps(run, step);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_gpt2_train: %s\n", e.what());
    return 1;
  }
}
