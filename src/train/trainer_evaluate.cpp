// Trainer::evaluate: every evaluation example counted, as Hugging Face's
// evaluation_loop with run_mlm.py's compute_metrics (accuracy of the argmax
// over the masked tokens).
#include <chrono>
#include <set>
#include <cmath>

#include "core/error.h"
#include "lazy/graph_executor.h"
#include "runtime/collectives.h"
#include "tensor/ops.h"
#include "train/trainer.h"

namespace lazytrain::train {

namespace {

double round4(double v) { return std::round(v * 1e4) / 1e4; }

// One batch's sums on the device, read together: [loss, masked tokens predicted
// right, masked tokens] (the last two 0 when there are no logits).
Tensor batch_sums(const ModelOutput& out, const Tensor& batch_labels) {
  const Tensor& labels = out.labels.defined() ? out.labels : batch_labels;
  Tensor loss = to_dtype(out.loss, DType::kFloat32);
  if (!out.logits.defined()) return cat({reshape(loss, {1}), zeros({2}, DType::kFloat32)});
  const Tensor masked = ne(labels, -100.0);
  const Tensor right = logical_and(eq(argmax(out.logits, -1), labels), masked);
  return cat({reshape(loss, {1}), reshape(sum(to_dtype(right, DType::kFloat32)), {1}), reshape(sum(to_dtype(masked, DType::kFloat32)), {1})});
}

}  // namespace

std::map<std::string, double> Trainer::evaluate() {
  const int64_t examples = dataset_size(false);
  if (examples == 0) throw Error("[Trainer] the evaluation set is empty");
  model_.eval();
  NoGradGuard no_grad;
  // Evaluation's graphs are not training graphs (train_graph_count): recording pauses.
  struct PausedRecording {
    runtime::Device device = runtime::current_device();
    std::set<uint64_t>* saved = lazy::GraphExecutor::get().record_graphs(device, nullptr);
    ~PausedRecording() { lazy::GraphExecutor::get().record_graphs(device, saved); }
  } paused;
  const auto start = std::chrono::steady_clock::now();
  double weighted_loss = 0.0, right = 0.0, masked = 0.0;
  int64_t counted_examples = 0, batches = 0;
  bool have_logits = false;
  {
    // As in train(): each batch's sums are read after the next batch was traced.
    struct Pending {
      Tensor sums;
      int64_t examples;
    };
    std::optional<Pending> pending;
    auto read = [&](const Pending& p) {
      const std::vector<float> v = p.sums.to_vector<float>();
      weighted_loss += static_cast<double>(v[0]) * static_cast<double>(p.examples);
      counted_examples += p.examples;
      right += v[1];
      masked += v[2];
    };
    DeviceLoader device_loader = make_device_loader(false, 0, 0);
    while (std::optional<distributed::DeviceBatch> batch = device_loader.next()) {
      ++batches;
      if (!batch->has_labels) continue;  // nothing masked: no loss to average
      const ModelOutput out = compute_loss(*batch);
      have_logits = have_logits || out.logits.defined();
      Tensor sums = batch_sums(out, batch->labels);
      if (pending) read(*std::exchange(pending, std::nullopt));
      pending = Pending{sums, batch->num_examples};
    }  // the last next() launched the last batch
    if (pending) read(*pending);
  }
  if (replicas_ > 1) {
    // Every replica evaluated its part of the set: the sums over all of them.
    const std::vector<double> all = runtime::host_all_gather(
        "Trainer.evaluate", {weighted_loss, static_cast<double>(counted_examples), right, masked, static_cast<double>(batches), have_logits ? 1.0 : 0.0});
    weighted_loss = right = masked = 0.0;
    counted_examples = batches = 0;
    for (size_t r = 0; r < all.size(); r += 6) {
      weighted_loss += all[r];
      counted_examples += static_cast<int64_t>(all[r + 1]);
      right += all[r + 2];
      masked += all[r + 3];
      batches = std::max(batches, static_cast<int64_t>(all[r + 4]));  // the replicas ran side by side
      have_logits = have_logits || all[r + 5] > 0;
    }
  }
  if (counted_examples == 0) {
    throw Error("[Trainer] no evaluation batch has a masked token; use larger batches or a larger --mlm_probability");
  }
  model_.train();
  const double runtime = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Hugging Face repeats each batch's mean loss once per example, then averages.
  const double eval_loss = weighted_loss / static_cast<double>(counted_examples);
  std::map<std::string, double> metrics = {{"eval_loss", eval_loss},
                                           {"eval_samples", static_cast<double>(examples)},
                                           {"eval_runtime", round4(runtime)},
                                           {"eval_samples_per_second", round4(static_cast<double>(examples) / runtime)},
                                           {"eval_steps_per_second", round4(static_cast<double>(batches) / runtime)}};
  if (have_logits && masked > 0) metrics["eval_accuracy"] = right / masked;
  nlohmann::json entry;
  for (const auto& [key, value] : metrics) {
    if (key != "eval_samples") entry[key] = value;
  }
  log(entry, state_.global_step, state_.epoch);
  metrics["perplexity"] = std::exp(eval_loss);
  if (state_.global_step > 0) metrics["epoch"] = round4(state_.epoch);  // an evaluation alone has no epoch, as in Hugging Face
  return metrics;
}

}  // namespace lazytrain::train
