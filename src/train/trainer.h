// Trainer: the Hugging Face Trainer's loop on lazy tensors. Each step records
// forward, backward, gradient clipping and the AdamW update into one graph and
// cuts it with mark_step(); with static batch shapes the step compiles once.
//
// Output files in args.output_dir, as Hugging Face writes them:
// trainer_state.json (log_history), train_results.json, eval_results.json,
// all_results.json, config.json + model.safetensors (save_model), metrics_report.txt.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/data_collator.h"
#include "data/data_loader.h"
#include "distributed/device_batch.h"
#include "distributed/parallel_loader.h"
#include "data/example.h"
#include "nn/module.h"
#include "train/progress_bar.h"
#include "train/training_arguments.h"

namespace lazytrain::train {

// Computes the mean loss of one collated batch (a 0-d float tensor).
using LossFn = std::function<Tensor(const distributed::DeviceBatch& batch)>;
// A one-pass stream of examples (nullopt at the end), e.g. a TFRecordDataset.
using ExampleStream = std::function<std::optional<data::Example>()>;
// Opens the stream of one epoch.
using ExampleStreamFactory = std::function<ExampleStream(uint64_t epoch)>;

class Trainer {
 public:
  // `train_dataset`/`eval_dataset` may be empty when not used. Examples of one
  // dataset must all have the same length (static shapes).
  Trainer(nn::Module& model, TrainingArguments args, LossFn loss_fn, std::vector<data::Example> train_dataset,
          std::vector<data::Example> eval_dataset, std::function<data::DataCollatorForLanguageModeling()> make_collator);

  // Streams the training (or evaluation) examples instead of taking them from
  // the in-memory dataset: `size` examples per epoch (for the epoch count),
  // batched in stream order (the stream shuffles, as tf.data does).
  void stream_train_dataset(ExampleStreamFactory factory, int64_t size);
  void stream_eval_dataset(ExampleStreamFactory factory, int64_t size);

  // Trains for args.max_steps (or num_train_epochs); returns train metrics
  // (train_loss, train_runtime, train_samples_per_second, train_steps_per_second, epoch).
  // Throws Error when the dataset has fewer examples than one batch, or when the
  // loss becomes NaN or infinite (naming the step).
  std::map<std::string, double> train();
  // Mean loss over the eval set (last partial batch dropped, so shapes stay
  // static); returns eval_loss, perplexity = exp(eval_loss), eval_runtime, ...
  std::map<std::string, double> evaluate();

  // Hugging Face's Trainer.training_step: the loss of one batch (under autocast
  // when args.bf16) and its backward; returns the loss (0-d, detached, not read).
  Tensor training_step(const distributed::DeviceBatch& batch);

  // Writes trainer_state.json.
  void save_state() const;
  int64_t global_step() const { return global_step_; }
  const nlohmann::json& log_history() const { return log_history_; }

 private:
  using DeviceLoader = distributed::DeviceLoader<data::Batch, distributed::DeviceBatch>;
  // A traced step whose loss is read after the next step was traced.
  struct StepLoss {
    Tensor loss;
    bool counted;  // the batch had a masked token
    int64_t step;
    double epoch;
    double learning_rate;  // the scheduler's rate after this step, as Hugging Face logs it
  };
  // Loss sums of one train() call.
  struct RunTotals {
    double total_loss = 0.0, interval_loss = 0.0;
    int64_t counted_steps = 0, interval_steps = 0;
  };

  // args.max_steps, or num_train_epochs of `per_epoch` batches; Error when the
  // dataset is smaller than one batch or the count is absurd.
  int64_t resolve_max_steps(int64_t per_epoch);
  // Reads a step's loss (waiting for its execution), adds it to the totals,
  // advances the progress bar and logs every args.logging_steps steps.
  void finish_step(const StepLoss& step, ProgressBar& bar);
  void log_training_loss(const StepLoss& step, ProgressBar& bar);
  std::map<std::string, double> train_metrics(double runtime);
  DeviceLoader make_device_loader(bool training, uint64_t epoch);
  // Runs `call`, naming training step `step` in an execution error it throws.
  template <typename Call>
  auto in_step(int64_t step, Call&& call);

  // Batches of `dataset` (the last partial one dropped), collated by workers
  // with per-batch randomness (data::DataLoader).
  data::DataLoader<data::Batch> make_loader(const std::vector<data::Example>& dataset, int64_t batch_size, bool shuffle);
  distributed::DeviceLoaderOptions device_loader_options() const;
  // The host batches of one epoch (the last partial batch dropped): from the
  // in-memory dataset through a DataLoader, or from the stream.
  std::function<std::optional<data::Batch>()> host_batches(bool training, uint64_t epoch);
  int64_t dataset_size(bool training) const;
  void log(nlohmann::json entry, int64_t step, double epoch);

  nn::Module& model_;
  TrainingArguments args_;
  // The loss of one batch: loss_fn_ under autocast when args_.bf16 (the backward
  // runs outside it, as in PyTorch).
  Tensor compute_loss(const distributed::DeviceBatch& batch);
  LossFn loss_fn_;
  std::vector<data::Example> train_dataset_, eval_dataset_;
  ExampleStreamFactory train_stream_, eval_stream_;
  int64_t train_stream_size_ = 0, eval_stream_size_ = 0;
  std::function<data::DataCollatorForLanguageModeling()> make_collator_;
  int64_t global_step_ = 0;
  int64_t max_steps_ = 0;
  double epochs_ = 0.0;
  int64_t skipped_batches_ = 0;
  double epoch_ = 0.0;
  RunTotals run_;
  nlohmann::json log_history_ = nlohmann::json::array();
};

// Parameters split as the Trainer does: weight decay for all but biases and
// LayerNorm weights (names ending in "bias" or containing "LayerNorm.weight").
struct DecayGroups {
  std::vector<Tensor> decay, no_decay;
};
DecayGroups split_weight_decay(const nn::Module& model);

}  // namespace lazytrain::train
