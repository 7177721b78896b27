// A tiny BERT masked LM trained data-parallel, shared by the in-process
// replica tests (tests/distributed/replicas_test.cpp) and the MPI test program
// (tests/distributed/mpi_replicas_main.cpp): every replica trains on rows
// [ordinal * B/W, (ordinal + 1) * B/W) of each step's global batch of B = 8,
// so W replicas at B/W make the update of one replica at B.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "distributed/xla_model.h"
#include "distributed/zero_redundancy_optimizer.h"
#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "tensor/ops.h"

namespace lazytrain::testing_support {

inline constexpr int64_t kTinyVocab = 40;
inline constexpr int64_t kTinySeqLen = 8;
inline constexpr int64_t kTinyGlobalBatch = 8;

inline models::BertConfig tiny_bert_config() {
  models::BertConfig c;
  c.update_from_string("vocab_size=40,hidden_size=16,num_hidden_layers=1,num_attention_heads=2,intermediate_size=24,max_position_embeddings=16");
  c.hidden_dropout_prob = 0;
  c.attention_probs_dropout_prob = 0;
  return c;
}

// Rows [begin, end) of step `step`'s global batch of token ids (every token is
// also a label, so each replica's mean loss has equally many terms and the mean
// of the replicas' gradients is the gradient of the whole batch).
inline std::vector<int64_t> tiny_batch_rows(int step, int64_t begin, int64_t end, uint64_t salt = 0) {
  std::mt19937_64 rng(1000 + static_cast<uint64_t>(step) + salt * 7919);
  std::vector<int64_t> ids;
  for (int64_t r = 0; r < kTinyGlobalBatch; ++r) {
    for (int64_t t = 0; t < kTinySeqLen; ++t) {
      const int64_t id = 5 + static_cast<int64_t>(rng() % (kTinyVocab - 5));
      if (r >= begin && r < end) ids.push_back(id);
    }
  }
  return ids;
}

inline std::vector<std::vector<float>> parameter_values(models::MaskedLMModel& model) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : model.parameters()) out.push_back(p.to_vector<float>());
  return out;
}

// The largest |a - b| over all parameters, relative to max(1, |b|).
inline double max_parameter_difference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double worst = 0;
  for (size_t p = 0; p < a.size(); ++p) {
    for (size_t k = 0; k < a[p].size(); ++k) {
      worst = std::max(worst, std::abs(static_cast<double>(a[p][k]) - b[p][k]) / std::max(1.0, std::abs(static_cast<double>(b[p][k]))));
    }
  }
  return worst;
}

struct TinyRunOptions {
  int steps = 20;
  double max_grad_norm = 0;     // > 0: reduce_gradients, clip, step
  bool different_data = false;  // each replica the whole batch of its own stream
  bool sharded = false;         // distributed::ZeroRedundancyAdamW (it clips itself)
  // SPMD (issue 34): set shard_batch, and this thread traces each step's whole
  // batch once for every device of the job; shard_model lays the parameters
  // out, shard_batch each input; the optimizer steps without
  // reduce_gradients (the compiler inserts the reductions).
  std::function<void(models::MaskedLMModel& model)> shard_model;
  std::function<void(Tensor& input)> shard_batch;
  std::function<void(int step, models::MaskedLMModel& model)> after_step;
  std::function<void(int step, models::MaskedLMModel& model, optim::AdamW& optimizer)> after_step_optimizer;
};

// Trains this thread's replica (its current device) for `o.steps` steps and
// returns its parameters.
inline std::vector<std::vector<float>> train_tiny_replica(const TinyRunOptions& o) {
  const int64_t world = distributed::world_size(), me = distributed::ordinal();
  manual_seed(42);
  auto model = models::AutoModelForMaskedLM::from_config(tiny_bert_config());
  const bool spmd = o.shard_batch != nullptr;
  if (o.shard_model) {
    lazy::mark_step();
    o.shard_model(*model);
  }
  optim::AdamWOptions adam;
  adam.lr = 1e-2;
  std::unique_ptr<optim::AdamW> owned =
      o.sharded ? std::make_unique<distributed::ZeroRedundancyAdamW>(std::vector<optim::ParamGroup>{{model->parameters(), 0.01}}, adam, o.max_grad_norm)
                : std::make_unique<optim::AdamW>(std::vector<optim::ParamGroup>{{model->parameters(), 0.01}}, adam);
  optim::AdamW& optimizer = *owned;
  const int64_t rows = o.different_data || spmd ? kTinyGlobalBatch : kTinyGlobalBatch / world;
  for (int step = 0; step < o.steps; ++step) {
    const int64_t begin = o.different_data || spmd ? 0 : rows * me;
    Tensor input_ids = from_vector(tiny_batch_rows(step, begin, begin + rows, o.different_data ? static_cast<uint64_t>(me) : 0), {rows, kTinySeqLen});
    Tensor attention = ones({rows, kTinySeqLen}, DType::kInt64);
    if (spmd) {
      o.shard_batch(input_ids);
      o.shard_batch(attention);
    }
    model->forward(input_ids, attention, input_ids).loss.backward();
    if (spmd) {
      optimizer.step();
    } else if (o.sharded) {
      optimizer.step();
    } else if (o.max_grad_norm > 0) {
      distributed::reduce_gradients(optimizer);
      optim::clip_grad_norm_(model->parameters(), o.max_grad_norm);
      optimizer.step();
    } else {
      distributed::optimizer_step(optimizer);
    }
    optimizer.zero_grad();
    lazy::mark_step();
    if (o.after_step) o.after_step(step, *model);
    if (o.after_step_optimizer) o.after_step_optimizer(step, *model, optimizer);
  }
  return parameter_values(*model);
}

}  // namespace lazytrain::testing_support
