#include "pipelines/fill_mask.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "data/auto_tokenizer.h"
#include "models/auto_model.h"
#include "tensor/tensor.h"
#include "train/json_file.h"
#include "train/model_io.h"

namespace lazytrain::pipelines {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOp = "[fill_mask] ";

// The mask tokens of the model families lazytrain knows, to say which one an
// input used when it is not this tokenizer's.
const char* const kKnownMaskTokens[] = {"[MASK]", "<mask>"};

// Batches are padded to a multiple of this length (pad_to_multiple_of).
constexpr int64_t kLengthMultiple = 8;

// The longest input (special tokens included) the model's position embeddings
// take: RoBERTa's positions start after the padding id (create_position_ids_from_input_ids).
int64_t max_input_length(const models::BertConfig& c) {
  return c.model_type == "roberta" ? c.max_position_embeddings - c.pad_token_id - 1 : c.max_position_embeddings;
}

std::string quoted_input(const std::string& text, size_t index) {
  constexpr size_t kShown = 80;
  return "input " + std::to_string(index + 1) + " \"" + (text.size() > kShown ? text.substr(0, kShown) + "..." : text) + "\"";
}

}  // namespace

FillMaskPipeline::FillMaskPipeline(std::shared_ptr<models::MaskedLMModel> model, std::shared_ptr<const data::Tokenizer> tokenizer)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)) {
  if (!model_ || !tokenizer_) throw Error(std::string(kOp) + "a model and a tokenizer are required");
  if (tokenizer_->vocab_size() > model_->config().vocab_size) {
    throw Error(std::string(kOp) + "the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                " tokens but the model's vocab_size is " + std::to_string(model_->config().vocab_size));
  }
  model_->eval();
}

FillMaskPipeline FillMaskPipeline::from_pretrained(const std::string& model_dir) {
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) {
    throw Error(std::string(kOp) + "model directory '" + model_dir + "' does not exist or is not a directory");
  }
  const std::string config_file = model_dir + "/config.json";
  const std::string weights_file = model_dir + "/model.safetensors";
  for (const std::string& file : {config_file, weights_file}) {
    if (!fs::is_regular_file(file, ec)) {
      throw Error(std::string(kOp) + "'" + model_dir + "' holds no " + fs::path(file).filename().string() +
                  " (expected a model directory written by `lazytrain run_mlm`: config.json, model.safetensors and the tokenizer)");
    }
  }
  models::BertConfig config = models::BertConfig::from_json_file(config_file);
  config.validate("'" + config_file + "'");
  std::shared_ptr<const data::Tokenizer> tokenizer = data::AutoTokenizer::from_pretrained(model_dir, config.model_type);
  std::shared_ptr<models::MaskedLMModel> model = models::AutoModelForMaskedLM::from_config(config);
  train::load_safetensors_into(*model, weights_file);
  return FillMaskPipeline(std::move(model), std::move(tokenizer));
}

std::vector<FillMaskResult> FillMaskPipeline::operator()(const std::vector<std::string>& texts, const FillMaskOptions& options) const {
  const int64_t vocab = model_->config().vocab_size;
  if (options.top_k < 1 || options.top_k > vocab) {
    throw Error(std::string(kOp) + "top_k must be between 1 and the vocabulary size " + std::to_string(vocab) + ", got " +
                std::to_string(options.top_k));
  }
  if (options.batch_size < 1) throw Error(std::string(kOp) + "batch_size must be at least 1, got " + std::to_string(options.batch_size));
  // Every input is checked before anything runs.
  const std::string mask = tokenizer_->mask_token();
  const int64_t max_length = max_input_length(model_->config());
  std::vector<std::vector<int64_t>> ids(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    ids[i] = tokenizer_->encode(texts[i]);
    if (std::count(ids[i].begin(), ids[i].end(), tokenizer_->mask_token_id()) == 0) {
      std::string why = std::string(kOp) + quoted_input(texts[i], i) + " has no mask token " + mask + " (this " +
                        model_->config().model_type + " model's tokenizer marks the word to predict with " + mask;
      for (const char* other : kKnownMaskTokens) {
        if (other != mask && texts[i].find(other) != std::string::npos) why += std::string(", not ") + other;
      }
      throw Error(why + ")");
    }
    if (static_cast<int64_t>(ids[i].size()) > max_length) {
      throw Error(std::string(kOp) + quoted_input(texts[i], i) + " has " + std::to_string(ids[i].size()) +
                  " tokens; this model takes at most " + std::to_string(max_length) + " (max_position_embeddings " +
                  std::to_string(model_->config().max_position_embeddings) + ")");
    }
  }
  // One batch shape [rows, longest] per batch; every batch but a lone one has
  // batch_size rows (the last one is filled up), so a file compiles few graphs.
  const auto batch = static_cast<size_t>(options.batch_size);
  const int64_t rows = static_cast<int64_t>(std::min(batch, texts.size()));
  std::vector<FillMaskResult> results;
  results.reserve(texts.size());
  for (size_t begin = 0; begin < texts.size(); begin += batch) {
    const size_t end = std::min(begin + batch, texts.size());
    std::vector<FillMaskResult> part = run_batch({ids.begin() + begin, ids.begin() + end}, rows, options.top_k);
    std::move(part.begin(), part.end(), std::back_inserter(results));
  }
  return results;
}

std::vector<FillMaskResult> FillMaskPipeline::run_batch(const std::vector<std::vector<int64_t>>& ids, int64_t rows, int64_t top_k) const {
  // The longest input, rounded up to a multiple of kLengthMultiple (within the
  // model's positions): batches of similar lengths share one compiled graph.
  int64_t length = 0;
  for (const auto& row : ids) length = std::max(length, static_cast<int64_t>(row.size()));
  length = std::min((length + kLengthMultiple - 1) / kLengthMultiple * kLengthMultiple,
                    std::max(length, max_input_length(model_->config())));
  // Rows past the inputs repeat the first input; their outputs are not read.
  std::vector<int64_t> input_ids(rows * length, tokenizer_->pad_token_id()), attention_mask(rows * length, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& row = ids[static_cast<size_t>(r) < ids.size() ? r : 0];
    std::copy(row.begin(), row.end(), input_ids.begin() + r * length);
    std::fill_n(attention_mask.begin() + r * length, row.size(), 1);
  }
  std::vector<float> logits, probs;
  {
    NoGradGuard no_grad;
    Tensor out = model_->forward(from_vector(input_ids, {rows, length}), from_vector(attention_mask, {rows, length})).logits;
    Tensor p = out.softmax(-1);
    logits = out.to_vector<float>();  // one execution computes both
    probs = p.to_vector<float>();
  }
  const int64_t vocab = model_->config().vocab_size;
  std::vector<FillMaskResult> results(ids.size());
  for (size_t r = 0; r < ids.size(); ++r) {
    FillMaskResult& result = results[r];
    result.input_ids = ids[r];
    for (size_t s = 0; s < ids[r].size(); ++s) {
      if (ids[r][s] == tokenizer_->mask_token_id()) result.mask_positions.push_back(static_cast<int64_t>(s));
    }
    for (size_t m = 0; m < result.mask_positions.size(); ++m) {
      const size_t row = (r * static_cast<size_t>(length) + static_cast<size_t>(result.mask_positions[m])) * static_cast<size_t>(vocab);
      result.mask_logits.emplace_back(logits.begin() + row, logits.begin() + row + vocab);
      const float* p = probs.data() + row;
      std::vector<int64_t> order(static_cast<size_t>(vocab));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                        [p](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
      std::vector<FillMaskPrediction>& ranked = result.predictions.emplace_back();
      for (int64_t k = 0; k < top_k; ++k) ranked.push_back(prediction(result, m, order[k], p[order[k]]));
    }
  }
  return results;
}

FillMaskPrediction FillMaskPipeline::prediction(const FillMaskResult& result, size_t mask, int64_t token, float score) const {
  std::vector<int64_t> filled;
  filled.reserve(result.input_ids.size());
  for (size_t s = 0; s < result.input_ids.size(); ++s) {
    const int64_t id = static_cast<int64_t>(s) == result.mask_positions[mask] ? token : result.input_ids[s];
    if (id != tokenizer_->pad_token_id()) filled.push_back(id);
  }
  const int64_t one[] = {token};
  return {score, token, tokenizer_->decode(one, false), tokenizer_->decode(filled, result.mask_positions.size() == 1)};
}

std::string fill_mask_json(const std::vector<FillMaskResult>& results) {
  auto ranked = [](const std::vector<FillMaskPrediction>& predictions) {
    std::string out = "[";
    for (size_t k = 0; k < predictions.size(); ++k) {
      const FillMaskPrediction& p = predictions[k];
      out += (k ? ", " : "") + std::string("{\"score\": ") + train::dump_json(p.score) + ", \"token\": " + std::to_string(p.token) +
             ", \"token_str\": " + train::dump_json(p.token_str) + ", \"sequence\": " + train::dump_json(p.sequence) + "}";
    }
    return out + "]";
  };
  auto one = [&](const FillMaskResult& r) {
    if (r.predictions.size() == 1) return ranked(r.predictions[0]);
    std::string out = "[";
    for (size_t m = 0; m < r.predictions.size(); ++m) out += (m ? ", " : "") + ranked(r.predictions[m]);
    return out + "]";
  };
  if (results.size() == 1) return one(results[0]);
  std::string out = "[";
  for (size_t i = 0; i < results.size(); ++i) out += (i ? ", " : "") + one(results[i]);
  return out + "]";
}

}  // namespace lazytrain::pipelines
