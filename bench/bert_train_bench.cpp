// bench_bert_train: training-step throughput of BertForMaskedLM (bench/README.md).
//
// Builds models::BertForMaskedLM from a models::BertConfig (bert-tiny, bert-mini,
// bert-base or overrides), feeds random token batches and runs N warm-up plus M
// timed steps of forward (the MLM head on the labelled rows, or with --lm_head all
// on every token) / backward / clip_grad_norm_(1.0) / AdamW / zero_grad /
// mark_step / loss.item(), the step of src/train/trainer.cpp. Prints tokens/s, the
// ExecuteTime share of the timed steps, the compile time of the first step
// (CompileTime), recompiles after warm-up, the process CPU time per step, peak
// resident memory (VmHWM) and the
// model's training FLOPs per token (for MFU), then one machine-readable line:
//   RESULT bench=bert_train model=bert-tiny backend=cpu dtype=f32 ... tokens_per_s=...
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "backend/registry.h"
#include "core/error.h"
#include "data/labelled_positions.h"
#include "lazy/lazy_api.h"
#include "models/bert.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/execution_queue.h"
#include "runtime/metrics.h"
#include "runtime/thread_budget.h"
#include "tensor/autocast.h"
#include "train/trainer.h"

using namespace lazytrain;

namespace {

struct Options : bench::StepFlags {
  std::string model = "bert-tiny";
  // labelled: the LM head on the labelled rows only (MaskedLMModel::forward_labelled,
  // as run_mlm trains); all: on every token, as Hugging Face's BertForMaskedLM.
  std::string lm_head = "labelled";
  std::string attn_implementation = "eager";  // BertConfig's default
  Options() {
    seq_len = 128;
    warmup = 3;
    steps = 10;  // batch_size 0: 8 for tiny/mini, 4 for base
  }
};

const char* kUsage =
    "usage: bench_bert_train [--model bert-tiny|bert-mini|bert-base|bert-large] [--config_overrides k=v,...]\n"
    "                        [--backend interpreter|cpu] [--batch_size B] [--seq_len S]\n"
    "                        [--warmup N] [--steps M] [--bf16] [--seed N] [--lm_head labelled|all]\n"
    "                        [--gradient_checkpointing] [--no_roofline] [--attn_implementation eager|sdpa]\n";

[[noreturn]] void usage_error(const std::string& message) { bench::usage_error("bench_bert_train", kUsage, message); }

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_step_flags(argc, argv, "bench_bert_train", kUsage, o, [&](const std::string& flag, const std::string& value) {
    if (flag == "--model") o.model = value;
    else if (flag == "--lm_head") o.lm_head = value;
    else if (flag == "--attn_implementation") o.attn_implementation = value;
    else return false;
    return true;
  });
  if (o.lm_head != "labelled" && o.lm_head != "all") usage_error("--lm_head must be labelled or all, got '" + o.lm_head + "'");
  return o;
}

// The sizes of the issues (Turc et al. 2019 for tiny/mini; bert-base-uncased; bert-large-uncased), vocab 30522.
models::BertConfig make_config(const Options& o) {
  models::BertConfig c;  // defaults = bert-base-uncased
  if (o.model == "bert-tiny") {
    c.update_from_string("hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512");
  } else if (o.model == "bert-mini") {
    c.update_from_string("hidden_size=256,num_hidden_layers=4,num_attention_heads=4,intermediate_size=1024");
  } else if (o.model == "bert-large") {
    c.update_from_string("hidden_size=1024,num_hidden_layers=24,num_attention_heads=16,intermediate_size=4096");
  } else if (o.model != "bert-base") {
    usage_error("--model must be bert-tiny, bert-mini, bert-base or bert-large, got '" + o.model + "'");
  }
  if (!o.config_overrides.empty()) c.update_from_string(o.config_overrides);
  c.attn_implementation = o.attn_implementation;
  c.validate("bench_bert_train");
  return c;
}

// Matmul FLOPs of one training step per token: 3x the forward (backward computes
// the input and the weight gradient of every matmul). Forward per token:
//   per layer: Q, K, V, attention output 4·2H², FFN 2·2HI, scores QKᵀ and P·V 2·2SH
//   MLM head: transform 2H², tied decoder 2HV.
// Embeddings, LayerNorm, softmax, GELU, the loss and AdamW are not counted (as in MFU).
// `head_rows` is the share of tokens the MLM head's FLOPs are counted on: 1 for
// --lm_head all, the labelled share for --lm_head labelled (not the padded
// capacity it computes: padding is not useful work).
double train_flops_per_token(const models::BertConfig& c, int64_t seq, double head_rows) {
  const double H = static_cast<double>(c.hidden_size), I = static_cast<double>(c.intermediate_size);
  const double L = static_cast<double>(c.num_hidden_layers), V = static_cast<double>(c.vocab_size);
  const double S = static_cast<double>(seq);
  const double forward = L * (8 * H * H + 4 * H * I + 4 * S * H) + head_rows * (2 * H * H + 2 * H * V);
  return 3 * forward;
}

// The share of positions random_batch labels, as BERT's masking selects them.
constexpr double kMaskProbability = 0.15;

struct HostBatch {
  std::vector<int64_t> input_ids, attention_mask, labels;
};

// Random tokens in [1000, vocab) (past BERT's special tokens), no padding, 15% of
// positions labelled (at least one), as a masked-LM batch after collation.
HostBatch random_batch(std::mt19937_64& rng, int64_t batch, int64_t seq, int64_t vocab) {
  HostBatch b;
  const size_t n = static_cast<size_t>(batch * seq);
  const int64_t low = vocab > 2000 ? 1000 : 0;
  std::uniform_int_distribution<int64_t> token(low, vocab - 1);
  std::bernoulli_distribution masked(kMaskProbability);
  b.input_ids.resize(n);
  b.attention_mask.assign(n, 1);
  b.labels.assign(n, -100);
  for (size_t i = 0; i < n; ++i) {
    b.input_ids[i] = token(rng);
    if (masked(rng)) b.labels[i] = b.input_ids[i];
  }
  b.labels[0] = b.input_ids[0];
  return b;
}

int run(const Options& o) {
  const models::BertConfig config = make_config(o);
  const int64_t batch = o.batch_size > 0 ? o.batch_size : (o.model == "bert-base" || o.model == "bert-large" ? 4 : 8);
  std::printf("bench_bert_train: %s (hidden %lld, layers %lld, heads %lld, intermediate %lld, vocab %lld), batch %lld x seq %lld, "
              "backend %s, %s, %d warm-up + %d timed steps\n",
              o.model.c_str(), static_cast<long long>(config.hidden_size), static_cast<long long>(config.num_hidden_layers),
              static_cast<long long>(config.num_attention_heads), static_cast<long long>(config.intermediate_size),
              static_cast<long long>(config.vocab_size), static_cast<long long>(batch), static_cast<long long>(o.seq_len),
              o.backend.c_str(), o.bf16 ? "bf16" : "f32", o.warmup, o.steps);
  std::printf("compute threads: %d (%s), OpenMP waiting %s\n", runtime::threads_per_execution(),
              runtime::default_thread_budget().reason.c_str(), runtime::omp_wait_policy().c_str());
  const std::string common = "bench=bert_train model=" + o.model + " attn=" + o.attn_implementation + " backend=" + o.backend + " batch=" + std::to_string(batch) +
                             " seq=" + std::to_string(o.seq_len) + " lm_head=" + o.lm_head +
                             " gradient_checkpointing=" + (o.gradient_checkpointing ? "1" : "0");

  lazy::set_compiler(backend::make_compiler(o.backend));
  manual_seed(o.seed);
  models::BertForMaskedLM model(config);
  model.train();
  if (o.gradient_checkpointing) model.gradient_checkpointing_enable();
  // The Trainer's groups: no weight decay for biases and LayerNorm weights.
  train::DecayGroups groups = train::split_weight_decay(model);
  optim::AdamW optimizer({{groups.decay, 0.01}, {groups.no_decay, 0.0}}, {1e-4, 0.9, 0.999, 1e-8, 0.0});
  const std::vector<Tensor> params = model.parameters();
  int64_t n_params = 0;
  for (const Tensor& p : params) n_params += p.numel();
  std::printf("parameters: %lld\n", static_cast<long long>(n_params));

  // A few distinct batches, made before timing (the collator is not measured).
  std::mt19937_64 rng(o.seed);
  std::vector<HostBatch> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(random_batch(rng, batch, o.seq_len, config.vocab_size));
  // The head's useful rows: the labelled ones (mean over the batches), not the
  // padded capacity lazytrain computes, so that MFU counts only needed work.
  std::vector<data::LabelledPositions> labelled;
  double labelled_rows = 0;
  for (const HostBatch& b : batches) {
    labelled.push_back(data::labelled_positions(b.labels, kMaskProbability));
    labelled_rows += static_cast<double>(std::count_if(b.labels.begin(), b.labels.end(), [](int64_t l) { return l != -100; }));
  }
  labelled_rows /= static_cast<double>(batches.size());
  const double tokens = static_cast<double>(batch * o.seq_len);
  const double head_rows = o.lm_head == "labelled" ? labelled_rows : tokens;
  const double flops_per_token = train_flops_per_token(config, o.seq_len, head_rows / tokens);
  std::printf("MLM head on %s rows of %lld (%.1f labelled on average), training FLOPs/token (matmuls, labelled rows): %.4g\n",
              o.lm_head == "labelled" ? std::to_string(labelled.front().positions.size()).c_str() : "all", static_cast<long long>(batch * o.seq_len),
              labelled_rows, flops_per_token);

  auto step = [&](int i) {
    const HostBatch& b = batches[static_cast<size_t>(i) % batches.size()];
    const data::LabelledPositions& l = labelled[static_cast<size_t>(i) % batches.size()];
    const int64_t k = static_cast<int64_t>(l.positions.size());
    Tensor loss;
    {
      // --bf16: the forward under autocast, as torch.autocast('cpu', dtype=torch.bfloat16).
      AutocastGuard autocast(o.bf16, DType::kBFloat16);
      const Tensor input_ids = from_vector(b.input_ids, {batch, o.seq_len}), attention_mask = from_vector(b.attention_mask, {batch, o.seq_len});
      loss = o.lm_head == "all" ? model.forward(input_ids, attention_mask, from_vector(b.labels, {batch, o.seq_len})).loss
                                : model.forward_labelled(input_ids, attention_mask, from_vector(l.positions, {k}), from_vector(l.labels, {k})).loss;
    }
    return bench::finish_training_step(loss, params, optimizer);
  };

  bench::TrainingRun run{common + " dtype=" + (o.bf16 ? "bf16" : "f32"), batch * o.seq_len, flops_per_token, o.warmup, o.steps};
  run.roofline = o.roofline;
  bench::time_training_steps(run, step);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_bert_train: %s\n", e.what());
    return 1;
  }
}
