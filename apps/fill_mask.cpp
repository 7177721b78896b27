// `lazytrain fill_mask`: Hugging Face's fill-mask pipeline on a model directory
// (src/pipelines/fill_mask.h), for one text or a file of lines, printed as a
// ranked list or, with --json, as the pipeline's output structure.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/commands.h"
#include "apps/script_utils.h"
#include "backend/registry.h"
#include "core/error.h"
#include "pipelines/fill_mask.h"

namespace lazytrain::apps {

namespace fs = std::filesystem;

void add_fill_mask_command(CLI::App& app, FillMaskOptions& o) {
  CLI::App* c = app.add_subcommand("fill_mask", "Predict the masked token of texts ([MASK] for BERT, <mask> for RoBERTa), as Hugging Face's fill-mask pipeline");
  c->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  c->add_option("--model", o.model, "A model directory written by run_mlm (config.json, model.safetensors, tokenizer)")->required();
  CLI::Option* text = c->add_option("--text", o.text, "One text holding the mask token");
  CLI::Option* file = c->add_option("--file", o.file, "A text file: each non-blank line is one input");
  text->excludes(file);
  c->add_option("--top_k", o.top_k, "Predictions per mask");
  c->add_option("--batch_size", o.batch_size, "Inputs per forward pass (padded to the longest of the batch, rounded up to a multiple of 8)");
  c->add_flag("--json", o.json, "Print the pipeline's output as JSON (score, token, token_str, sequence)");
  c->add_option("--execution_mode", o.execution_mode, "How ops run: lazy, fused_eager, strict_eager or debug_eager")
      ->check(CLI::IsMember({"lazy", "debug_eager", "strict_eager", "fused_eager"}));
  c->add_option("--backend", o.backend, "Compiler backend: cpu (generated kernels) or interpreter (reference)")
      ->check(CLI::IsMember(backend::backend_names()));
}

namespace {

// The non-blank lines of --file (a trailing \r dropped).
std::vector<std::string> read_inputs(const std::string& path) {
  require_file("fill_mask", path, "--file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("[fill_mask] --file '" + path + "' cannot be read");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);  // blank lines are no inputs
  }
  if (lines.empty()) throw Error("[fill_mask] --file '" + path + "' has no non-blank line");
  return lines;
}

void print_ranked(const std::vector<std::string>& texts, const std::vector<pipelines::FillMaskResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    std::printf("%s\n", texts[i].c_str());
    const auto& masks = results[i].predictions;
    for (size_t m = 0; m < masks.size(); ++m) {
      if (masks.size() > 1) std::printf("  mask %zu of %zu:\n", m + 1, masks.size());
      for (size_t k = 0; k < masks[m].size(); ++k) {
        const pipelines::FillMaskPrediction& p = masks[m][k];
        std::printf("  %zu. %.4f  %s  %s\n", k + 1, p.score, p.token_str.c_str(), p.sequence.c_str());
      }
    }
  }
}

}  // namespace

int fill_mask(const FillMaskOptions& o) {
  if (!o.text && o.file.empty()) throw Error("[fill_mask] give --text TEXT or --file FILE");
  if (o.text && o.text->find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error("[fill_mask] --text is empty; expected a text holding the model's mask token ([MASK] for BERT, <mask> for RoBERTa)");
  }
  if (o.top_k < 1) throw Error("[fill_mask] --top_k must be at least 1, got " + std::to_string(o.top_k));
  if (o.batch_size < 1) throw Error("[fill_mask] --batch_size must be at least 1, got " + std::to_string(o.batch_size));
  std::error_code ec;
  if (!fs::is_directory(o.model, ec)) throw Error("[fill_mask] --model '" + o.model + "' does not exist or is not a directory");
  const std::vector<std::string> texts = o.file.empty() ? std::vector<std::string>{*o.text} : read_inputs(o.file);
  configure_backend(o.backend, "", "");
  configure_execution(o.execution_mode, false, false, false);
  const pipelines::FillMaskPipeline pipeline = pipelines::FillMaskPipeline::from_pretrained(o.model);
  const int64_t vocab = pipeline.model().config().vocab_size;
  if (o.top_k > vocab) {
    throw Error("[fill_mask] --top_k " + std::to_string(o.top_k) + " is larger than the vocabulary of '" + o.model + "' (" +
                std::to_string(vocab) + " tokens)");
  }
  const std::vector<pipelines::FillMaskResult> results = pipeline(texts, {.top_k = o.top_k, .batch_size = o.batch_size});
  if (o.json) {
    std::printf("%s\n", pipelines::fill_mask_json(results).c_str());
  } else {
    print_ranked(texts, results);
  }
  return 0;
}

}  // namespace lazytrain::apps
