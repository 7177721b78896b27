#include "models/generation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "core/error.h"
#include "lazy/lazy_api.h"
#include "runtime/device.h"

namespace lazytrain::models {

namespace {

constexpr const char* kOp = "[generate] ";
constexpr int64_t kSmallestBucket = 16;
constexpr float kMasked = std::numeric_limits<float>::lowest();  // HF's finfo(float32).min

int64_t next_power_of_two(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

void validate(const GenerationMixin& model, const std::vector<std::vector<int64_t>>& prompts, const GenerationConfig& g) {
  const GenerationLimits c = model.generation_limits();
  auto fail = [](const std::string& why) { throw Error(kOp + why); };
  if (model.generation_module().is_training()) fail("the model is in training mode (dropout on); call eval() first");
  if (prompts.empty()) fail("no prompt given");
  if (g.max_new_tokens < 1) fail("max_new_tokens must be at least 1, got " + std::to_string(g.max_new_tokens));
  if (!(g.temperature > 0)) fail("temperature must be a strictly positive float, got " + std::to_string(g.temperature));
  if (g.top_k < 0) fail("top_k must be a non-negative integer, got " + std::to_string(g.top_k));
  if (!(g.top_p >= 0 && g.top_p <= 1)) fail("top_p must be a float between 0 and 1, got " + std::to_string(g.top_p));
  if (g.num_return_sequences < 1) fail("num_return_sequences must be at least 1, got " + std::to_string(g.num_return_sequences));
  if (!g.do_sample && g.num_return_sequences > 1) {
    fail("greedy search returns one sequence a prompt; num_return_sequences " + std::to_string(g.num_return_sequences) +
         " needs do_sample (as Hugging Face's generate)");
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string which = "prompt " + std::to_string(i + 1);
    if (prompts[i].empty()) fail(which + " is empty (" + c.model_name + " needs at least one token to continue)");
    for (int64_t id : prompts[i]) {
      if (id < 0 || id >= c.vocab_size) fail(which + " holds token id " + std::to_string(id) + ", outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    }
    const int64_t total = static_cast<int64_t>(prompts[i].size()) + g.max_new_tokens;
    if (total > c.max_positions) {
      fail(which + " has " + std::to_string(prompts[i].size()) + " tokens; with max_new_tokens " + std::to_string(g.max_new_tokens) +
           " that is " + std::to_string(total) + " positions, more than the model's " + c.max_positions_field + " " +
           std::to_string(c.max_positions));
    }
  }
}

// The rows' state on the host: the padded prompt columns and what was made.
struct Rows {
  int64_t count = 0, bucket = 0, capacity = 0;
  std::vector<int64_t> padding;  // left padding of each row
  std::vector<std::vector<int64_t>> generated;
  std::vector<bool> finished;
};

}  // namespace

int64_t greedy_token(const std::vector<float>& logits) {
  return std::max_element(logits.begin(), logits.end()) - logits.begin();  // the first maximum, as torch.argmax
}

std::vector<double> sampling_probabilities(const std::vector<float>& logits, const GenerationConfig& g) {
  const auto v = static_cast<int64_t>(logits.size());
  std::vector<double> scores(logits.begin(), logits.end());
  const double minus_inf = -std::numeric_limits<double>::infinity();
  for (double s : scores) {
    if (std::isnan(s) || s == std::numeric_limits<double>::infinity()) {
      throw Error(std::string(kOp) + "the logits hold inf or NaN (" + std::to_string(s) + "); the model's output is not a distribution");
    }
  }
  if (g.temperature != 1.0) {
    // In double: logits / 1e-40 overflow f32 (HF's multinomial then raises on inf and NaN);
    // here they stay finite down to temperatures of about 1e-300 and sample as greedy would.
    for (double& s : scores) s /= g.temperature;
    for (double s : scores) {
      if (s == std::numeric_limits<double>::infinity()) {
        throw Error(std::string(kOp) + "temperature " + std::to_string(g.temperature) + " makes the scores overflow (" + std::to_string(s) +
                    "); use a larger temperature, or greedy search (no do_sample)");
      }
    }
  }
  if (g.top_k > 0 && g.top_k < v) {  // TopKLogitsWarper: below the k-th largest goes
    std::vector<double> sorted = scores;
    std::nth_element(sorted.begin(), sorted.begin() + (g.top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[static_cast<size_t>(g.top_k - 1)];
    for (double& s : scores) s = s < kth ? minus_inf : s;
  }
  auto softmax = [&](const std::vector<double>& x) {
    const double max = *std::max_element(x.begin(), x.end());
    std::vector<double> p(x.size());
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) sum += p[i] = x[i] == minus_inf ? 0.0 : std::exp(x[i] - max);
    for (double& q : p) q /= sum;
    return p;
  };
  if (g.top_p < 1.0) {  // TopPLogitsWarper: ascending order; drop while the cumulative probability <= 1 - top_p
    std::vector<int64_t> order(static_cast<size_t>(v));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
    const std::vector<double> p = softmax(scores);
    double cumulative = 0;
    for (int64_t i = 0; i + 1 < v; ++i) {  // the last (most probable) token always stays
      cumulative += p[order[i]];
      if (cumulative <= 1.0 - g.top_p) scores[order[i]] = minus_inf;
    }
  }
  return softmax(scores);
}

GenerateOutput generate(const GenerationMixin& model, const std::vector<std::vector<int64_t>>& prompts, const GenerationConfig& g) {
  validate(model, prompts, g);
  const GenerationLimits c = model.generation_limits();
  const int64_t eos = g.eos_token_id.value_or(c.eos_token_id.value_or(-1));  // -1: no token ends a sequence
  const int64_t pad = g.pad_token_id.value_or(c.pad_token_id.value_or(eos));
  // What padding columns and finished rows feed the model: masked out, any valid id does.
  const int64_t fed_pad = pad >= 0 && pad < c.vocab_size ? pad : 0;

  Rows rows;
  rows.count = static_cast<int64_t>(prompts.size()) * g.num_return_sequences;
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
  rows.bucket = next_power_of_two(std::max(kSmallestBucket, longest));
  rows.capacity = next_power_of_two(rows.bucket + g.max_new_tokens);
  rows.generated.resize(static_cast<size_t>(rows.count));
  rows.finished.assign(static_cast<size_t>(rows.count), false);
  const int64_t n = rows.count, p_len = rows.bucket, cap = rows.capacity;

  // The prefill: left-padded prompts, positions from 0 at each row's first token,
  // bias [n, 1, P, P]: a query sees the keys at or before it that are not padding.
  std::vector<int64_t> input_ids(static_cast<size_t>(n * p_len), fed_pad), positions(static_cast<size_t>(n * p_len), 0);
  std::vector<float> bias(static_cast<size_t>(n * p_len * p_len), kMasked);
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<int64_t>& prompt = prompts[static_cast<size_t>(r / g.num_return_sequences)];
    const int64_t padding = p_len - static_cast<int64_t>(prompt.size());
    rows.padding.push_back(padding);
    for (int64_t j = 0; j < p_len; ++j) {
      if (j >= padding) {
        input_ids[r * p_len + j] = prompt[j - padding];
        positions[r * p_len + j] = j - padding;
      }
      for (int64_t k = padding; k <= j; ++k) bias[(r * p_len + j) * p_len + k] = 0.0f;
    }
  }

  GenerateOutput out;
  out.prompt_bucket = p_len;
  out.cache_capacity = cap;
  const runtime::Device device = model.generation_device();
  runtime::DeviceGuard on_model_device(device);
  std::set<uint64_t>* outer = lazy::record_graphs(device, &out.graphs);
  try {
    NoGradGuard no_grad;
    std::mt19937_64 generator(g.seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<LayerKVCache> cache = model.new_cache(n, cap);
    Tensor logits = model.forward_cached(from_vector(input_ids, {n, p_len}), from_vector(positions, {n, p_len}),
                                         from_vector(bias, {n, 1, p_len, p_len}), cache, CacheWrite{});
    const auto vocab = static_cast<size_t>(c.vocab_size);
    for (int64_t t = 0; t < g.max_new_tokens; ++t) {
      const std::vector<float> values = logits.to_vector<float>();  // runs the step (and the cache update with it)
      std::vector<int64_t> next(static_cast<size_t>(n), fed_pad);
      for (int64_t r = 0; r < n; ++r) {
        if (rows.finished[r]) {
          rows.generated[r].push_back(pad);
          continue;
        }
        const std::vector<float> row(values.begin() + static_cast<std::ptrdiff_t>(r * vocab), values.begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
        int64_t token;
        if (g.do_sample) {
          const std::vector<double> probs = sampling_probabilities(row, g);
          double u = uniform(generator), cumulative = 0;
          token = static_cast<int64_t>(vocab) - 1;
          for (size_t i = 0; i < vocab; ++i) {
            cumulative += probs[i];
            if (probs[i] > 0 && u < cumulative) {
              token = static_cast<int64_t>(i);
              break;
            }
          }
          while (probs[static_cast<size_t>(token)] == 0 && token > 0) --token;  // rounding left u past the sum
        } else {
          token = greedy_token(row);
        }
        rows.generated[r].push_back(token);
        next[r] = token;
        if (token == eos) rows.finished[r] = true;
      }
      if (t + 1 == g.max_new_tokens || std::all_of(rows.finished.begin(), rows.finished.end(), [](bool f) { return f; })) break;
      // A decode step: the new tokens go to slot P + t; each row sees its real
      // prompt columns and everything made since, itself included.
      const int64_t slot = p_len + t;
      std::vector<int64_t> step_positions(static_cast<size_t>(n));
      std::vector<float> step_bias(static_cast<size_t>(n * cap), kMasked);
      for (int64_t r = 0; r < n; ++r) {
        step_positions[r] = slot - rows.padding[r];
        std::fill(step_bias.begin() + r * cap + rows.padding[r], step_bias.begin() + r * cap + slot + 1, 0.0f);
      }
      logits = model.forward_cached(from_vector(next, {n, 1}), from_vector(step_positions, {n, 1}), from_vector(step_bias, {n, 1, 1, cap}),
                                    cache, CacheWrite{scalar_tensor(static_cast<double>(slot), DType::kInt64)});
    }
  } catch (...) {
    lazy::record_graphs(device, outer);
    throw;
  }
  lazy::record_graphs(device, outer);
  out.sequences = std::move(rows.generated);
  return out;
}

}  // namespace lazytrain::models
