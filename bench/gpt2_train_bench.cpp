// bench_gpt2_train: training-step throughput of GPT2LMHeadModel, or with
// --model_type llama of LlamaForCausalLM (bench/README.md).
//
// GPT-2 124M from Hugging Face's config.json (../shared/data/gpt2/config.json;
// --config_overrides for others), or a Llama config.json (bench/smollm2_135m_config.json:
// SmolLM2-135M's shape), random token batches (no padding, labels =
// input_ids, shifted inside the model), N warm-up plus M timed steps of forward /
// backward / clip_grad_norm_(1.0) / AdamW (weight decay 0.01 except biases and
// LayerNorm weights, the Trainer's groups) / zero_grad / mark_step / loss.item().
// --bf16 runs the forward under autocast. Prints what bench_support.h's
// time_training_steps prints, ending with
//   RESULT bench=gpt2_train model=gpt2 backend=cpu batch=4 seq=64 dtype=f32 ... tokens_per_s=...
// (model=llama with --model_type llama).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "backend/registry.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "models/gpt2_config.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "tensor/autocast.h"
#include "train/trainer.h"

using namespace lazytrain;

namespace {

struct Options : bench::StepFlags {
  std::string config = "../shared/data/gpt2/config.json";
  std::string model_type = "gpt2";
  std::string attn_implementation;  // empty: the config's default (GPT2Config: sdpa; Llama: always sdpa)
  Options() {
    batch_size = 4;
    seq_len = 64;
    warmup = 2;
    steps = 5;
  }
};

const char* kUsage =
    "usage: bench_gpt2_train [--model_type gpt2|llama] [--config CONFIG_JSON] [--config_overrides k=v,...] [--backend interpreter|cpu]\n"
    "                        [--batch_size B] [--seq_len S] [--warmup N] [--steps M] [--bf16] [--seed N] [--gradient_checkpointing] [--no_roofline]\n"
    "                        [--attn_implementation eager|sdpa]\n"
    "  --config defaults to ../shared/data/gpt2/config.json (GPT-2 124M), relative to the repository root;\n"
    "  --model_type llama takes a Llama config.json (bench/smollm2_135m_config.json: SmolLM2-135M's shape)\n";

[[noreturn]] void usage_error(const std::string& message) { bench::usage_error("bench_gpt2_train", kUsage, message); }

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_step_flags(argc, argv, "bench_gpt2_train", kUsage, o, [&](const std::string& flag, const std::string& value) {
    if (flag == "--config") {
      o.config = value;
    } else if (flag == "--model_type") {
      if (value != "gpt2" && value != "llama") usage_error("--model_type must be gpt2 or llama, got '" + value + "'");
      o.model_type = value;
    } else if (flag == "--attn_implementation") {
      o.attn_implementation = value;
    } else {
      return false;
    }
    return true;
  });
  return o;
}

// Matmul FLOPs of one training step per token, 3x the forward (PaLM's 6N + 12 L E S
// with N the non-embedding matmul parameters plus the tied lm_head). Forward per token:
//   per layer: c_attn 2·3E², attention c_proj 2E², c_fc and mlp c_proj 2·2·E·I,
//              scores QKᵀ and P·V 2·2·S·E (the whole S x S, causal mask included)
//   lm_head 2EV.
double gpt2_train_flops_per_token(const nlohmann::json& c, int64_t seq) {
  const double E = c.at("n_embd").get<double>(), I = c.at("n_inner").is_null() ? 4 * E : c.at("n_inner").get<double>();
  const double L = c.at("n_layer").get<double>(), V = c.at("vocab_size").get<double>(), S = static_cast<double>(seq);
  return 3 * (L * (8 * E * E + 4 * E * I + 4 * S * E) + 2 * E * V);
}

// Llama's, the same way (A = num_attention_heads x head_dim, G = num_key_value_heads x head_dim):
//   per layer: q_proj 2EA, k_proj and v_proj 2·2EG, o_proj 2AE, gate/up/down 3·2EI,
//              scores and P·V 2·2·S·A; lm_head 2EV (tied or not).
double llama_train_flops_per_token(const nlohmann::json& c, int64_t seq) {
  const double E = c.at("hidden_size").get<double>(), I = c.at("intermediate_size").get<double>();
  const double heads = c.at("num_attention_heads").get<double>();
  const double kv = c.at("num_key_value_heads").is_null() ? heads : c.at("num_key_value_heads").get<double>();
  const double D = c.at("head_dim").is_null() ? E / heads : c.at("head_dim").get<double>();
  const double A = heads * D, G = kv * D;
  const double L = c.at("num_hidden_layers").get<double>(), V = c.at("vocab_size").get<double>(), S = static_cast<double>(seq);
  return 3 * (L * (4 * E * A + 4 * E * G + 6 * E * I + 4 * S * A) + 2 * E * V);
}

int run(const Options& o) {
  nlohmann::json file = models::AutoModelForCausalLM::config_from_file(o.config, o.model_type).json;
  if (file.at("model_type") != o.model_type) {
    usage_error("--config " + o.config + " is a " + file.at("model_type").get<std::string>() + " config, not --model_type " + o.model_type);
  }
  if (!o.attn_implementation.empty()) {
    if (o.model_type == "llama" && o.attn_implementation != "sdpa") usage_error("Llama's attention is sdpa only");
    file["attn_implementation"] = o.attn_implementation;  // as from_pretrained(..., attn_implementation=...)
  }
  models::CausalLMConfig config = models::AutoModelForCausalLM::config_from_json(file, o.model_type, o.config_overrides, "bench_gpt2_train");
  // to_json leaves attn_implementation out (transformers never saves it): carry it to the model.
  if (!o.attn_implementation.empty() && o.model_type == "gpt2") config.json["attn_implementation"] = o.attn_implementation;
  const int64_t positions = config.limits.max_positions;
  if (o.seq_len > positions) usage_error("--seq_len is larger than " + config.limits.max_positions_field + " " + std::to_string(positions));
  const bool llama = o.model_type == "llama";
  const double flops_per_token = llama ? llama_train_flops_per_token(config.json, o.seq_len) : gpt2_train_flops_per_token(config.json, o.seq_len);
  const nlohmann::json& c = config.json;
  std::printf("bench_gpt2_train: %s (hidden %lld, layers %lld, heads %lld, vocab %lld) from %s, batch %lld x seq %lld, backend %s, "
              "%s, %d warm-up + %d timed steps\n",
              llama ? "Llama" : "GPT-2", c.at(llama ? "hidden_size" : "n_embd").get<long long>(),
              c.at(llama ? "num_hidden_layers" : "n_layer").get<long long>(), c.at(llama ? "num_attention_heads" : "n_head").get<long long>(),
              c.at("vocab_size").get<long long>(), o.config.c_str(), static_cast<long long>(o.batch_size), static_cast<long long>(o.seq_len),
              o.backend.c_str(), o.bf16 ? "bf16" : "f32", o.warmup, o.steps);

  lazy::set_compiler(backend::make_compiler(o.backend));
  manual_seed(o.seed);
  const std::shared_ptr<models::CausalLMModel> model_ptr = models::AutoModelForCausalLM::from_config(config.json);
  models::CausalLMModel& model = *model_ptr;
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
  std::uniform_int_distribution<int64_t> token(0, config.limits.vocab_size - 1);
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

  const std::string attn = o.model_type == "gpt2" ? config.json.value("attn_implementation", models::GPT2Config().attn_implementation) : "sdpa";
  const std::string prefix = "bench=gpt2_train model=" + o.model_type + " attn=" + attn + " backend=" + o.backend + " batch=" + std::to_string(o.batch_size) +
                             " seq=" + std::to_string(o.seq_len) + " dtype=" + (o.bf16 ? "bf16" : "f32");
  bench::TrainingRun run{prefix, o.batch_size * o.seq_len, flops_per_token, o.warmup, o.steps};
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
    std::fprintf(stderr, "bench_gpt2_train: %s\n", e.what());
    return 1;
  }
}
