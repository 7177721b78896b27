// `lazytrain generate`: text generation from a GPT-2 or Llama directory (Hugging Face's
// text-generation pipeline over model.generate; src/models/generation.h),
// printing each prompt with its continuation, or with --json the pipeline's
// [{"generated_text": ...}] per prompt.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/script_utils.h"
#include "backend/registry.h"
#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "data/unicode_text.h"
#include "models/auto_model.h"
#include "models/generation.h"
#include "train/json_file.h"
#include "train/model_io.h"

namespace lazytrain::apps {

namespace fs = std::filesystem;

void add_generate_command(CLI::App& app, GenerateOptions& o) {
  CLI::App* c = app.add_subcommand("generate", "Continue prompts with a GPT-2 or Llama model (greedy or sampled), as Hugging Face's text-generation pipeline");
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  c->add_option("--model", o.model, "A GPT-2 or Llama directory: config.json, model.safetensors and the tokenizer's files (run_clm's output)")->required();
  c->add_option("--prompt", o.prompts, "A text to continue; repeat for a batch (left-padded together)")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--max_new_tokens", o.max_new_tokens, "Tokens to generate after the prompt (fewer when every sequence ends with the eos token)");
  c->add_flag("--do_sample", o.do_sample, "Sample the next token instead of taking the most likely one");
  c->add_option("--temperature", o.temperature, "Divide the logits by this before sampling (> 0)");
  c->add_option("--top_k", o.top_k, "Sample among the k most likely tokens (0: all)");
  c->add_option("--top_p", o.top_p, "Sample among the most likely tokens whose probability reaches top_p (nucleus; 1: all)");
  c->add_option("--num_return_sequences", o.num_return_sequences, "Sequences per prompt (needs --do_sample)");
  c->add_option("--seed", o.seed, "Seed of the sampling generator")->check(CLI::NonNegativeNumber);
  CLI::Option* json = c->add_flag("--json", o.json, "Print Hugging Face's pipeline output: a list of {\"generated_text\": ...} per prompt");
  c->add_flag("--return_tensors", o.return_tensors,
              "With --json: print {\"generated_token_ids\": [...]} (the prompt's and the new ids) instead of the text, as the pipeline's return_tensors=True")
      ->needs(json);
  c->add_option("--backend", o.backend, "Compiler backend: cpu (generated kernels) or interpreter (reference)")
      ->check(CLI::IsMember(backend::backend_names()));
}

int generate(const GenerateOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.model, ec)) throw Error("[generate] --model '" + o.model + "' does not exist or is not a directory");
  for (const char* file : {"config.json", "model.safetensors"}) {
    if (!fs::is_regular_file(o.model + "/" + file, ec)) {
      throw Error("[generate] --model '" + o.model + "' holds no " + file + " (expected a GPT-2 or Llama directory written by `lazytrain run_clm`)");
    }
  }
  configure_backend(o.backend, "", "");
  const models::CausalLMConfig config = models::AutoModelForCausalLM::config_from_file(o.model + "/config.json");
  const bool gpt2 = config.json.at("model_type") == "gpt2";
  const std::unique_ptr<data::Tokenizer> tokenizer =
      gpt2 ? data::AutoTokenizer::from_pretrained(o.model, "gpt2") : data::AutoTokenizer::from_files(o.model);
  models::GenerationConfig g;
  g.max_new_tokens = o.max_new_tokens;
  g.do_sample = o.do_sample;
  g.temperature = o.temperature;
  g.top_k = o.top_k;
  g.top_p = o.top_p;
  g.num_return_sequences = o.num_return_sequences;
  g.seed = o.seed;
  std::vector<std::vector<int64_t>> prompt_ids;
  for (size_t i = 0; i < o.prompts.size(); ++i) {
    if (const size_t at = data::unicode::find_invalid_utf8(o.prompts[i]); at != data::unicode::kValidUtf8) {
      throw Error("[generate] --prompt " + std::to_string(i + 1) + " is not valid UTF-8 (byte " + std::to_string(at) + "); prompts are text");
    }
    prompt_ids.push_back(tokenizer->encode(o.prompts[i], /*add_special_tokens=*/true));
  }

  const std::shared_ptr<models::CausalLMModel> model = models::AutoModelForCausalLM::from_config(config.json);
  const std::string weights = o.model + "/model.safetensors";
  const std::string warning = train::load_safetensors_into(*model, weights).warning(weights);
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  model->eval();
  const auto start = std::chrono::steady_clock::now();
  const models::GenerateOutput out = models::generate(*model, prompt_ids, g);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<std::vector<std::string>> texts(o.prompts.size()), id_lists(o.prompts.size());
  size_t tokens = 0;
  for (size_t r = 0; r < out.sequences.size(); ++r) {
    const size_t prompt = r / static_cast<size_t>(g.num_return_sequences);
    // Byte-level tokens may end inside a character: decoded as Python's errors="replace" (HF's GPT2Tokenizer).
    texts[prompt].push_back(o.prompts[prompt] +
                            data::unicode::replace_invalid_utf8(tokenizer->decode(out.sequences[r], /*skip_special_tokens=*/true)));
    std::vector<int64_t> all = prompt_ids[prompt];
    all.insert(all.end(), out.sequences[r].begin(), out.sequences[r].end());
    id_lists[prompt].push_back(nlohmann::json(all).dump());
    // New tokens up to the sequence's eos; in a batch, ended rows are padded (HF's pad_token_id, else eos).
    const auto eos = std::find(out.sequences[r].begin(), out.sequences[r].end(), config.limits.eos_token_id.value_or(-1));
    tokens += static_cast<size_t>(eos - out.sequences[r].begin()) + (eos == out.sequences[r].end() ? 0 : 1);
  }
  if (o.json) {
    std::string json = "[";
    for (size_t p = 0; p < texts.size(); ++p) {
      std::string list = "[";
      for (size_t k = 0; k < texts[p].size(); ++k) {
        list += (k ? ", " : "") + (o.return_tensors ? "{\"generated_token_ids\": " + id_lists[p][k] + "}"
                                                    : "{\"generated_text\": " + train::dump_json(texts[p][k]) + "}");
      }
      json += (p ? ", " : "") + list + "]";
    }
    std::printf("%s\n", (texts.size() == 1 ? json.substr(1) : json + "]").c_str());
  } else {
    for (size_t p = 0; p < texts.size(); ++p) {
      for (size_t k = 0; k < texts[p].size(); ++k) {
        if (p + k > 0) std::printf("\n");
        std::printf("%s\n", texts[p][k].c_str());
      }
    }
  }
  std::fprintf(stderr,
               "[generate] %zu sequence(s), %zu new tokens in %.2f s (%.1f tokens/s, compiling included); prompt bucket %lld, "
               "KV cache %lld slots, %zu graph(s) run\n",
               out.sequences.size(), tokens, seconds, static_cast<double>(tokens) / seconds, static_cast<long long>(out.prompt_bucket),
               static_cast<long long>(out.cache_capacity), out.graphs.size());
  return 0;
}

}  // namespace lazytrain::apps
