#include "data/batch_encode.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "core/error.h"

namespace lazytrain::data {

namespace {

constexpr int64_t kTextsPerChunk = 16;

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

int default_encode_threads(int64_t num_texts) {
  const int64_t chunks = (num_texts + kTextsPerChunk - 1) / kTextsPerChunk;
  return static_cast<int>(std::clamp<int64_t>(chunks, 1, usable_cpus()));
}

SpecialTokensLayout special_tokens_layout(const Tokenizer& tokenizer) {
  // A sentinel id that no vocabulary holds marks where the sequence goes.
  const int64_t sentinel[] = {-1};
  const std::vector<int64_t> wrapped = tokenizer.build_inputs_with_special_tokens(sentinel);
  const auto at = std::find(wrapped.begin(), wrapped.end(), -1);
  const int64_t before = at - wrapped.begin();
  return {before, static_cast<int64_t>(wrapped.size()) - before - 1};
}

std::vector<std::vector<int64_t>> encode_batch(const Tokenizer& tokenizer, std::span<const std::string> texts,
                                               const BatchEncodeOptions& options) {
  if (options.num_threads < 0) {
    throw Error("[encode_batch] num_threads must be 0 (one per CPU) or positive, got " + std::to_string(options.num_threads));
  }
  const int64_t num_special = options.add_special_tokens ? tokenizer.num_special_tokens_to_add() : 0;
  if (options.max_length && *options.max_length < num_special) {
    throw Error("[encode_batch] max_length " + std::to_string(*options.max_length) + " leaves no room for the " +
                std::to_string(num_special) + " special tokens added to each text: expected max_length >= " +
                std::to_string(num_special));
  }
  const int64_t n = static_cast<int64_t>(texts.size());
  std::vector<std::vector<int64_t>> out(texts.size());
  std::vector<std::exception_ptr> errors(texts.size());
  const auto encode_one = [&](int64_t i) {
    try {
      std::vector<int64_t> ids = tokenizer.encode(texts[i], false);
      if (options.max_length && static_cast<int64_t>(ids.size()) + num_special > *options.max_length) {
        ids.resize(static_cast<size_t>(*options.max_length - num_special));
      }
      out[i] = options.add_special_tokens ? tokenizer.build_inputs_with_special_tokens(ids) : std::move(ids);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::atomic<int64_t> next_chunk{0};
  const auto worker = [&] {
    for (int64_t begin; (begin = next_chunk.fetch_add(1) * kTextsPerChunk) < n;) {
      for (int64_t i = begin; i < std::min(n, begin + kTextsPerChunk); ++i) encode_one(i);
    }
  };
  const int threads = options.num_threads > 0 ? options.num_threads : default_encode_threads(n);
  {
    std::vector<std::jthread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
  }  // the jthreads join here
  for (int64_t i = 0; i < n; ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const std::exception& e) {
      throw Error("[encode_batch] text " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace lazytrain::data
