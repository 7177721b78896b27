#include "data/data_collator.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "data/tokenizer.h"

namespace lazytrain::data {
namespace {

constexpr const char* kOp = "[DataCollatorForLanguageModeling] ";
constexpr int64_t kIgnoreIndex = -100;

}  // namespace

DataCollatorForLanguageModeling::DataCollatorForLanguageModeling(const Tokenizer& tokenizer,
                                                                 DataCollatorOptions options)
    : DataCollatorForLanguageModeling(tokenizer.collator_tokens(), options) {}

DataCollatorForLanguageModeling::DataCollatorForLanguageModeling(CollatorTokens tokens,
                                                                 DataCollatorOptions options)
    : tokens_(std::move(tokens)), options_(options), rng_(options.seed) {
  if (!(options_.mlm_probability >= 0.0 && options_.mlm_probability <= 1.0)) {
    throw Error(std::string(kOp) + "mlm_probability is " + std::to_string(options_.mlm_probability) +
                ": expected a probability in [0, 1]");
  }
  if (options_.pad_to_multiple_of < 0) {
    throw Error(std::string(kOp) + "pad_to_multiple_of is " + std::to_string(options_.pad_to_multiple_of) +
                ": expected 0 (off) or a positive multiple");
  }
  if (tokens_.vocab_size < 1) {
    throw Error(std::string(kOp) + "vocab_size is " + std::to_string(tokens_.vocab_size) +
                ": expected a positive vocabulary size");
  }
  if (options_.mlm && tokens_.mask_token_id < 0) {
    throw Error(std::string(kOp) + "no mask token: expected a mask_token_id for masked language modeling");
  }
}

Batch DataCollatorForLanguageModeling::operator()(std::span<const Example> examples, uint64_t stream) const {
  DataCollatorForLanguageModeling own = *this;
  // splitmix64 of (seed, stream): well-separated generator seeds for consecutive batches.
  uint64_t z = options_.seed * 0x9e3779b97f4a7c15ull + stream + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  own.rng_.seed(z ^ (z >> 31));
  return own(examples);
}

double DataCollatorForLanguageModeling::uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int64_t DataCollatorForLanguageModeling::random_token() {
  // Lemire's multiply-shift: deterministic on every platform, unlike std distributions.
  const auto n = static_cast<unsigned __int128>(tokens_.vocab_size);
  return static_cast<int64_t>((static_cast<unsigned __int128>(rng_()) * n) >> 64);
}

Batch DataCollatorForLanguageModeling::operator()(std::span<const Example> examples) {
  if (examples.empty()) throw Error(std::string(kOp) + "empty batch: expected at least one example");
  std::size_t longest = 0;
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const Example& ex = examples[i];
    const std::size_t n = ex.input_ids.size();
    if ((!ex.attention_mask.empty() && ex.attention_mask.size() != n) ||
        (!ex.special_tokens_mask.empty() && ex.special_tokens_mask.size() != n)) {
      throw Error(std::string(kOp) + "example " + std::to_string(i) + " has " + std::to_string(n) +
                  " input_ids but " + std::to_string(ex.attention_mask.size()) + " attention_mask and " +
                  std::to_string(ex.special_tokens_mask.size()) +
                  " special_tokens_mask entries: expected equal lengths (or empty masks)");
    }
    longest = std::max(longest, n);
  }
  if (longest == 0) throw Error(std::string(kOp) + "every example is empty: expected input_ids");
  if (options_.pad_to_multiple_of > 0) {
    const auto m = static_cast<std::size_t>(options_.pad_to_multiple_of);
    longest = (longest + m - 1) / m * m;
  }

  Batch batch;
  batch.batch_size = static_cast<int64_t>(examples.size());
  batch.num_examples = batch.batch_size;
  batch.seq_len = static_cast<int64_t>(longest);
  const std::size_t total = examples.size() * longest;
  batch.input_ids.assign(total, tokens_.pad_token_id);
  batch.attention_mask.assign(total, 0);
  batch.labels.assign(total, kIgnoreIndex);
  std::vector<uint8_t> special(total, 1);

  for (std::size_t b = 0; b < examples.size(); ++b) {
    const Example& ex = examples[b];
    for (std::size_t t = 0; t < ex.input_ids.size(); ++t) {
      const std::size_t k = b * longest + t;
      const int64_t id = ex.input_ids[t];
      batch.input_ids[k] = id;
      batch.attention_mask[k] = ex.attention_mask.empty() ? 1 : ex.attention_mask[t];
      special[k] = ex.special_tokens_mask.empty()
                       ? std::count(tokens_.special_ids.begin(), tokens_.special_ids.end(), id) > 0
                       : ex.special_tokens_mask[t] != 0;
    }
  }

  if (!options_.mlm) {
    for (std::size_t k = 0; k < total; ++k) {
      const int64_t id = batch.input_ids[k];
      const bool padding = options_.pad_labels_by_id ? id == tokens_.pad_token_id : batch.attention_mask[k] == 0;
      batch.labels[k] = padding ? kIgnoreIndex : id;
    }
    return batch;
  }

  batch.mlm_probability = options_.mlm_probability;
  for (std::size_t k = 0; k < total; ++k) {
    if (special[k]) continue;
    if (!(uniform() < options_.mlm_probability)) continue;
    batch.labels[k] = batch.input_ids[k];
    if (uniform() < 0.8) {
      batch.input_ids[k] = tokens_.mask_token_id;
    } else if (uniform() < 0.5) {
      batch.input_ids[k] = random_token();
    }
  }
  return batch;
}

void pad_batch_rows(Batch& batch, int64_t rows, int64_t pad_token_id) {
  check(batch.batch_size <= rows, "pad_batch_rows",
        "the batch has " + std::to_string(batch.batch_size) + " rows, more than the " + std::to_string(rows) + " asked for");
  const auto extra = static_cast<size_t>((rows - batch.batch_size) * batch.seq_len);
  batch.input_ids.insert(batch.input_ids.end(), extra, pad_token_id);
  batch.attention_mask.insert(batch.attention_mask.end(), extra, 0);
  batch.labels.insert(batch.labels.end(), extra, -100);
  batch.batch_size = rows;
}

}  // namespace lazytrain::data
