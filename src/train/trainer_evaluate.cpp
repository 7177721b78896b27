// Trainer::evaluate: every evaluation example counted, as Hugging Face's
// evaluation_loop. Metrics come from compute_metrics over the predictions of
// every example; without it, from the loss function's logits, the accuracy of
// the argmax over the labelled tokens (run_mlm.py's and run_clm.py's
// compute_metrics), counted on the device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "lazy/lazy_api.h"
#include "runtime/collectives.h"
#include "tensor/ops.h"
#include "train/trainer.h"

namespace lazytrain::train {

namespace {

double round4(double v) { return std::round(v * 1e4) / 1e4; }

// One batch's sums on the device, read together: [loss, labelled tokens
// predicted right, labelled tokens] (the last two 0 without logits or with
// compute_metrics).
Tensor batch_sums(const ModelOutput& out, const Tensor& labels, bool count_accuracy) {
  Tensor loss = to_dtype(out.loss, DType::kFloat32);
  if (!count_accuracy || !out.logits.defined() || !labels.defined()) return cat({reshape(loss, {1}), zeros({2}, DType::kFloat32)});
  const Tensor masked = ne(labels, -100.0);
  const Tensor right = logical_and(eq(argmax(out.logits, -1), labels), masked);
  return cat({reshape(loss, {1}), reshape(sum(to_dtype(right, DType::kFloat32)), {1}), reshape(sum(to_dtype(masked, DType::kFloat32)), {1})});
}

// The first `rows` rows of `a` (a batch's examples without its padding rows).
Literal first_rows(const Literal& a, int64_t rows) {
  if (a.shape().empty() || a.shape()[0] == rows) return a;
  Shape shape = a.shape();
  const int64_t row_bytes = a.nbytes() / shape[0];
  shape[0] = rows;
  Literal out(shape, a.dtype());
  if (rows > 0) std::memcpy(out.mutable_raw(), a.raw(), static_cast<size_t>(rows * row_bytes));
  return out;
}

// Literals through host_all_gather (doubles): [dtype, rank, dims..., values...].
std::vector<double> encode(const Literal& a) {
  std::vector<double> out = {static_cast<double>(static_cast<int>(a.dtype())), static_cast<double>(a.shape().size())};
  for (int64_t d : a.shape()) out.push_back(static_cast<double>(d));
  for (int64_t i = 0; i < a.numel(); ++i) {
    switch (a.dtype()) {
      case DType::kInt64: out.push_back(static_cast<double>(a.data<int64_t>()[i])); break;
      case DType::kInt32: out.push_back(a.data<int32_t>()[i]); break;
      case DType::kFloat32: out.push_back(a.data<float>()[i]); break;
      default: throw Error("[Trainer] compute_metrics with replicas takes int64, int32 or float32 predictions, got " + torch_name(a.dtype()));
    }
  }
  return out;
}

Literal decode(const std::vector<double>& v, size_t& at) {
  const auto dtype = static_cast<DType>(static_cast<int>(v[at++]));
  const auto rank = static_cast<size_t>(v[at++]);
  Shape shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(static_cast<int64_t>(v[at++]));
  Literal a(shape, dtype);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = v[at++];
    if (dtype == DType::kInt64) a.data<int64_t>()[i] = static_cast<int64_t>(x);
    if (dtype == DType::kInt32) a.data<int32_t>()[i] = static_cast<int32_t>(x);
    if (dtype == DType::kFloat32) a.data<float>()[i] = static_cast<float>(x);
  }
  return a;
}

// Every replica's batches (batch k of the one-replica evaluation is on replica
// k % W, its i-th), in the one-replica order.
std::vector<Literal> gather_batches(const std::string& tag, const std::vector<Literal>& mine, int replicas) {
  std::vector<double> flat = {static_cast<double>(mine.size())};
  for (const Literal& a : mine) {
    const std::vector<double> e = encode(a);
    flat.insert(flat.end(), e.begin(), e.end());
  }
  const std::vector<double> sizes = runtime::host_all_gather(tag + ".size", {static_cast<double>(flat.size())});
  const auto width = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  flat.resize(width, 0.0);
  const std::vector<double> all = runtime::host_all_gather(tag, flat);
  std::vector<std::vector<Literal>> per_replica(static_cast<size_t>(replicas));
  for (size_t r = 0; r < per_replica.size(); ++r) {
    size_t at = r * width;
    const auto count = static_cast<size_t>(all[at++]);
    for (size_t i = 0; i < count; ++i) per_replica[r].push_back(decode(all, at));
  }
  std::vector<Literal> ordered;
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (const std::vector<Literal>& batches : per_replica) {
      if (i < batches.size()) {
        ordered.push_back(batches[i]);
        any = true;
      }
    }
    if (!any) return ordered;
  }
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
    std::set<uint64_t>* saved = lazy::record_graphs(device, nullptr);
    ~PausedRecording() { lazy::record_graphs(device, saved); }
  } paused;
  const auto start = std::chrono::steady_clock::now();
  double weighted_loss = 0.0, right = 0.0, masked = 0.0;
  int64_t counted_examples = 0, batches = 0;
  bool have_logits = false;
  // compute_metrics: every batch's predictions and labels, its examples' rows only.
  std::vector<Literal> predictions, label_ids;
  {
    // As in train(): each batch's values are read after the next batch was traced.
    struct Pending {
      Tensor sums, predictions, labels;
      int64_t examples;
    };
    std::optional<Pending> pending;
    auto read = [&](const Pending& p) {
      const std::vector<float> v = p.sums.to_vector<float>();
      weighted_loss += static_cast<double>(v[0]) * static_cast<double>(p.examples);
      counted_examples += p.examples;
      right += v[1];
      masked += v[2];
      if (p.predictions.defined()) {
        predictions.push_back(first_rows(p.predictions.to_literal(), p.examples));
        label_ids.push_back(first_rows(p.labels.to_literal(), p.examples));
      }
    };
    DeviceLoader device_loader = make_device_loader(false, 0, 0);
    while (std::optional<distributed::DeviceBatch> batch = device_loader.next()) {
      ++batches;
      if (!batch->has_labels) continue;  // nothing labelled: no loss to average
      const ModelOutput out = compute_loss(*batch);
      have_logits = have_logits || out.logits.defined();
      const Tensor labels = out.labels.defined() ? out.labels : batch->contains("labels") ? (*batch)["labels"] : Tensor();
      Pending p{batch_sums(out, labels, !compute_metrics_), Tensor(), Tensor(), batch->num_examples};
      if (compute_metrics_) {
        // Hugging Face's label_ids: the batch's own labels (the loss function's
        // may be another layout, e.g. the labelled rows only).
        const Tensor label_ids = batch->contains("labels") ? (*batch)["labels"] : labels;
        if (!out.logits.defined() || !label_ids.defined()) {
          throw Error("[Trainer] compute_metrics needs the model's logits and the batch's labels; the loss function gave " +
                      std::string(out.logits.defined() ? "no labels" : "no logits"));
        }
        p.predictions = preprocess_logits_ ? preprocess_logits_(out.logits, label_ids) : out.logits;
        p.labels = label_ids;
      }
      if (pending) read(*std::exchange(pending, std::nullopt));
      pending = std::move(p);
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
    if (compute_metrics_) {
      predictions = gather_batches("Trainer.evaluate.predictions", predictions, replicas_);
      label_ids = gather_batches("Trainer.evaluate.label_ids", label_ids, replicas_);
    }
  }
  if (counted_examples == 0) {
    throw Error("[Trainer] no evaluation batch has a label (a masked token); use larger batches or a larger --mlm_probability");
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
  if (compute_metrics_) {
    std::vector<int64_t> rows;
    for (const Literal& p : predictions) rows.push_back(p.shape().empty() ? 1 : p.shape()[0]);
    const EvalPrediction prediction{concat_rows(predictions, rows), concat_rows(label_ids, rows)};
    for (const auto& [key, value] : compute_metrics_(prediction)) metrics[key.starts_with("eval_") ? key : "eval_" + key] = value;
  } else if (have_logits && masked > 0) {
    metrics["eval_accuracy"] = right / masked;
  }
  nlohmann::json entry;
  for (const auto& [key, value] : metrics) {
    if (key != "eval_samples") entry[key] = value;
  }
  log(entry, state_.global_step, state_.epoch);
  metrics["perplexity"] = std::exp(eval_loss);
  if (state_.global_step > 0) metrics["epoch"] = round4(state_.epoch);  // an evaluation alone has no epoch, as in Hugging Face
  callback([&](TrainerCallback& c, auto&... a) { c.on_evaluate(a..., metrics); });
  return metrics;
}

}  // namespace lazytrain::train
