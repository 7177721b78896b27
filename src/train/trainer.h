// Trainer: the Hugging Face Trainer's loop on lazy tensors. Each optimizer step
// records forward, backward, gradient clipping and the AdamW update into one
// graph and cuts it with mark_step(); with static batch shapes the step
// compiles once (with gradient accumulation: one graph for the first
// micro-batch of a step, one for the middle ones, one for the last).
//
// The batch is a name -> Tensor mapping (distributed::DeviceBatch) made from a
// data::TrainerDataset, whose collate function is any callable: the loss
// function (LossFn) takes that mapping, so the Trainer takes any model. What
// it reports goes through callbacks (train/trainer_callback.h): the progress
// bar and log lines (ProgressCallback) and TensorBoard (TensorBoardCallback)
// are added by default; evaluation metrics come from compute_metrics
// (train/eval_prediction.h), or, without one, the masked-token accuracy of
// the loss function's logits, counted on the device.
//
// Output files in args.output_dir, as Hugging Face writes them:
// checkpoint-<step>/ (train/checkpoint.h), trainer_state.json (log_history),
// train_results.json, eval_results.json, all_results.json, config.json +
// model.safetensors (save_model), training_args.json, metrics_report.txt, and
// TensorBoard event files in args.logging_dir.
//
// Data parallelism: a Trainer made on each replica (distributed::spawn, or one
// process each under mpirun) trains on that replica's DistributedSampler share
// of every epoch (a stream: its TFRecord shards, at most as many batches as the
// shortest replica's share); the gradients are averaged over the replicas
// inside the step's graph (distributed::reduce_gradients) before clipping and
// the update, so every replica holds the same parameters. The logged loss is
// the mean over every replica's micro-batches; evaluation gives batch k of the
// one-replica evaluation (the same examples and masks) to replica k % world_size
// and sums their counts, so it equals one replica's evaluation. Only the master ordinal writes files and logs; the others
// wait for each checkpoint at a rendezvous.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/data_collator.h"
#include "data/example.h"
#include "data/trainer_dataset.h"
#include "distributed/device_batch.h"
#include "distributed/spmd.h"
#include "distributed/parallel_loader.h"
#include "nn/module.h"
#include "train/eval_prediction.h"
#include "train/trainer_callback.h"
#include "train/trainer_state.h"
#include "train/training_arguments.h"

namespace lazytrain::train {

struct TrainerOptimization;  // the optimizer and scheduler of one train() call

// What the loss function gives for one collated batch: the mean loss (0-d
// float) and, when the model has them, the logits [B, S, V], from which the
// evaluation counts accuracy (argmax against labels that are not -100): the
// batch's labels, or `labels` when given ([B, S'] matching logits [B, S', V]:
// a causal LM's next tokens, run_clm.py's shifted compute_metrics).
struct ModelOutput {
  Tensor loss;
  Tensor logits;
  Tensor labels;
  // Implicit, so a loss function may return just the loss tensor.
  ModelOutput(Tensor loss_ = Tensor(), Tensor logits_ = Tensor(), Tensor labels_ = Tensor())
      : loss(std::move(loss_)), logits(std::move(logits_)), labels(std::move(labels_)) {}
};
using LossFn = std::function<ModelOutput(const distributed::DeviceBatch& batch)>;
using data::ExampleStream;
using data::ExampleStreamFactory;

class Trainer {
 public:
  // `train_dataset`/`eval_dataset` may be empty when not used. Batches of one
  // dataset should have one shape (static shapes: one compiled step; a few
  // shapes compile a few graphs). The arguments are resolved
  // (TrainingArguments::resolve) and validated: Error otherwise. Adds
  // ProgressCallback, and TensorBoardCallback when args report to tensorboard.
  Trainer(nn::Module& model, TrainingArguments args, LossFn loss_fn, data::TrainerDataset train_dataset,
          data::TrainerDataset eval_dataset = {});
  // In-memory examples collated by the collator `make_collator` makes (its
  // per-batch-number draws).
  Trainer(nn::Module& model, TrainingArguments args, LossFn loss_fn, std::vector<data::Example> train_dataset,
          std::vector<data::Example> eval_dataset, std::function<data::DataCollatorForLanguageModeling()> make_collator);
  ~Trainer();

  // Streams the training (or evaluation) examples instead of taking them from
  // the in-memory dataset: `size` examples per epoch (for the epoch count),
  // batched in stream order (the stream shuffles, as tf.data does), collated by
  // the constructor's `make_collator` (Error for a Trainer made without one).
  void stream_train_dataset(ExampleStreamFactory factory, int64_t size);
  void stream_eval_dataset(ExampleStreamFactory factory, int64_t size);
  // The examples evaluate() reads from now on (Hugging Face's
  // evaluate(eval_dataset=...)); training state and the model are kept.
  void set_eval_dataset(data::TrainerDataset eval_dataset) { eval_dataset_ = std::move(eval_dataset); }

  // Hugging Face's add_callback: called after the Trainer's own callbacks.
  void add_callback(std::shared_ptr<TrainerCallback> callback) { callbacks_.push_back(std::move(callback)); }
  // Hugging Face's compute_metrics and preprocess_logits_for_metrics: evaluate()
  // reads every batch's (preprocessed) logits and labels and reports what
  // `compute_metrics` makes of them, each key prefixed with "eval_".
  void set_compute_metrics(ComputeMetricsFn compute_metrics, PreprocessLogitsFn preprocess = nullptr) {
    compute_metrics_ = std::move(compute_metrics);
    preprocess_logits_ = std::move(preprocess);
  }

  // The model's config.json, written into every checkpoint and compared with a
  // checkpoint's own when resuming (a different config is an Error).
  void set_model_config(nlohmann::json config) { model_config_ = std::move(config); }
  // Called with each checkpoint's staging directory, to add files the Trainer
  // does not know (the tokenizer's).
  void on_save(std::function<void(const std::string& dir)> save_files) { save_extra_files_ = std::move(save_files); }
  // A directory this run read its starting weights from (--model_name_or_path):
  // when it is a checkpoint of --output_dir, save_total_limit never removes it,
  // and train() refuses to start when a save would replace it.
  void keep_checkpoint(const std::string& dir) { read_checkpoints_.push_back(dir); }

  // Trains for args.max_steps (or num_train_epochs) optimizer steps, evaluating
  // and saving checkpoints as the strategies say; returns train metrics
  // (train_loss, train_runtime, train_samples_per_second,
  // train_steps_per_second, train_samples, epoch). `resume_from_checkpoint`
  // (a checkpoint directory, see resolve_checkpoint) restores the model,
  // optimizer, scheduler, RNG and data position, and skips the batches already
  // trained on, so the run reaches the parameters an uninterrupted one would.
  // Throws Error when the dataset has no batch, when the checkpoint is
  // incomplete or was made for another config, batch size or dataset, or when
  // the loss becomes NaN or infinite (naming the step).
  std::map<std::string, double> train(const std::string& resume_from_checkpoint = "");
  // Loss and accuracy over every evaluation example: the last partial batch is
  // padded to the batch size with rows that carry no loss. As Hugging Face:
  // eval_loss = the batch losses weighted by their examples; eval_accuracy =
  // masked tokens predicted right / masked tokens (when the loss function gives
  // logits); perplexity = exp(eval_loss); eval_samples, eval_runtime, ...
  std::map<std::string, double> evaluate();

  // Hugging Face's Trainer.training_step: the loss of one batch (under autocast
  // when args.bf16) times `scale` and its backward; returns the unscaled loss
  // (0-d, detached, not read).
  Tensor training_step(const distributed::DeviceBatch& batch, double scale = 1.0);

  // Writes trainer_state.json (and training_args.json) into output_dir.
  void save_state() const;
  int64_t global_step() const { return state_.global_step; }
  const nlohmann::json& log_history() const { return state_.log_history; }
  const TrainerState& state() const { return state_; }
  const TrainingArguments& args() const { return args_; }
  nn::Module& model() const { return model_; }
  // Whether this replica is the master ordinal (the one that writes files).
  bool is_world_process_zero() const { return is_master(); }

 private:
  using DeviceLoader = distributed::DeviceLoader<data::NamedBatch, distributed::DeviceBatch>;
  // A traced optimizer step whose losses are read after the next step was traced.
  struct StepLoss {
    std::vector<Tensor> losses;  // one per micro-batch with a masked token
    // Gradient accumulation by tokens (Hugging Face's num_items_in_batch): the
    // sum of the labelled tokens' losses and their count over the step's
    // micro-batches (0-d f32, on the device); undefined when the loss function
    // gives no labels (then the micro-batches' mean losses are averaged).
    Tensor token_loss_sum, token_count;
    int64_t micro_batches = 0;   // of the step, counted or not
    int64_t tokens = 0;          // input tokens of its examples (padding rows left out)
    int64_t examples = 0;        // examples (padding rows left out)
    Tensor grad_norm;            // before clipping; undefined without clipping
    int64_t step;
    double epoch;
    double learning_rate;  // the scheduler's rate after this step, as Hugging Face logs it
  };
  // Loss sums of one train() call.
  struct RunTotals {
    double total_loss = 0.0, interval_loss = 0.0;
    int64_t counted_steps = 0, interval_steps = 0;
    int64_t interval_tokens = 0;
    double interval_start = 0.0;  // seconds since train() began
  };

  // One micro-batch of an accumulated step: its loss (the mean over its
  // labelled tokens) times their count is backwarded, and the sums and counts
  // added to `step`; scale_gradients_by_tokens() then divides the accumulated
  // gradients by the step's count over every replica, so K micro-batches give
  // the gradient of one batch K times as large (Hugging Face's semantics since
  // transformers 4.46, PR #34191). A loss function without labels falls back
  // to backwarding loss * `mean_scale`. Returns the detached mean loss.
  Tensor accumulate_micro_batch(const distributed::DeviceBatch& batch, StepLoss& step, double mean_scale);
  // Multiplies every gradient by world_size / max(1, tokens over all replicas),
  // so that the replicas' mean (reduce_gradients) is the token mean.
  void scale_gradients_by_tokens(const std::vector<Tensor>& params, const Tensor& local_tokens) const;

  // Micro-batches and optimizer steps of one epoch.
  int64_t micro_batches_per_epoch() const;
  int64_t updates_per_epoch() const;
  int64_t resolve_max_steps();
  // Reads a step's losses (waiting for its execution), adds them to the totals,
  // advances the progress bar and logs every args.logging_steps steps.
  void finish_step(const StepLoss& step);
  void log_training_loss(const StepLoss& step);
  // After optimizer step `step` was traced: evaluates and saves as the
  // strategies say (launching and finishing the step first).
  void maybe_evaluate_and_save(bool epoch_end, std::optional<StepLoss>& pending, TrainerOptimization& opt);
  // Calls `hook(callback, args, state, control)` on every callback in order.
  template <typename Hook>
  void callback(Hook&& hook) {
    for (const std::shared_ptr<TrainerCallback>& c : callbacks_) hook(*c, std::as_const(args_), std::as_const(state_), control_);
  }
  void save_checkpoint(TrainerOptimization& opt);
  // Throws Error naming the step and the first parameter (in named_parameters
  // order) holding a NaN or an infinity: nothing non-finite is ever saved, and
  // a diverged run stops instead of training on. Every replica checks its own
  // copy (they are equal), so all of them stop together.
  void check_parameters_finite(const std::string& when) const;
  // At the start of train(): which checkpoints of --output_dir are an older
  // run's (foreign_checkpoints_), and an Error when this run would save over a
  // checkpoint it read its starting weights from.
  void sort_out_existing_checkpoints(const std::string& resumed_from);
  // Whether this run saves a checkpoint at `step` (save_strategy, save_steps, max_steps).
  bool saves_at(int64_t step) const;
  void load_checkpoint(const std::string& dir, TrainerOptimization& opt);
  void update_best(const std::map<std::string, double>& eval_metrics);
  // data_state.json: what fixes the data order, and the position in it.
  nlohmann::json data_state() const;
  std::map<std::string, double> train_metrics(double runtime);
  DeviceLoader make_device_loader(bool training, uint64_t epoch, int64_t start_batch);
  // Runs `call`, naming training step `step` in an execution error it throws.
  template <typename Call>
  auto in_step(int64_t step, Call&& call);

  // How this replica batches the training or evaluation set (data::epoch_feed).
  data::FeedOptions feed_options(bool training);
  const data::TrainerDataset& dataset(bool training) const { return training ? train_dataset_ : eval_dataset_; }
  int64_t dataset_size(bool training) const { return dataset(training).size; }
  int64_t batches_per_epoch(bool training) const;
  bool is_master() const { return replica_ == 0; }
  distributed::DeviceLoaderOptions device_loader_options() const;
  // Appends `entry` with its step and epoch to the log history (and TensorBoard).
  void log(nlohmann::json entry, int64_t step, double epoch);
  // The loss of one batch: loss_fn_ under autocast when args_.bf16 (the backward
  // runs outside it, as in PyTorch).
  ModelOutput compute_loss(const distributed::DeviceBatch& batch);

  nn::Module& model_;
  TrainingArguments args_;
  LossFn loss_fn_;
  data::TrainerDataset train_dataset_, eval_dataset_;
  std::function<data::DataCollatorForLanguageModeling()> make_collator_;  // for stream_*_dataset
  std::vector<std::shared_ptr<TrainerCallback>> callbacks_;
  TrainerControl control_;
  ComputeMetricsFn compute_metrics_;
  PreprocessLogitsFn preprocess_logits_;
  nlohmann::json model_config_;
  std::function<void(const std::string&)> save_extra_files_;
  std::vector<std::string> read_checkpoints_;  // never rotated away (keep_checkpoint, the resumed checkpoint)
  // Checkpoints of --output_dir that an older run left (--overwrite_output_dir,
  // or past the step this run resumed from): never counted nor removed by
  // save_total_limit; one this run saves over becomes its own.
  std::vector<std::string> foreign_checkpoints_;
  TrainerState state_;
  int64_t skipped_batches_ = 0;
  // Hashes of the graphs this train() call ran (lazy::record_graphs;
  // bounded dynamic shapes: one per bucket of sequence lengths), reported at its end.
  std::set<uint64_t> train_graphs_;
  // Runs `call` (tracing a training step); an Error of an eager mode or of
  // --detect_anomaly gets the step's number.
  template <typename Call>
  auto traced_step(int64_t step, Call&& call);
  int64_t trained_samples_ = 0;  // examples trained on by this train() call
 public:
  // Distinct training graphs the last train() ran.
  size_t train_graph_count() const { return train_graphs_.size(); }
 private:
  int64_t first_step_ = 0;       // global_step when this train() call began (> 0 when resumed)
  std::chrono::steady_clock::time_point train_start_;
  RunTotals run_;
  int replicas_ = 1, replica_ = 0;  // distributed::world_size() and ordinal() when the Trainer was made
  // --fsdp full_shard: the mesh of every device ("fsdp") and the batches' layout (rows split over it);
  // --tp_size N: the mesh ("data" x "model") and the batches' rows split over "data".
  std::optional<distributed::spmd::ShardingSpec> spmd_;
  // Lays the model's parameters out for --fsdp or --tp_size (once, before the first step).
  void shard_parameters();
  // Devices one batch feeds: the devices along the batch's axis under --fsdp
  // or --tp_size (each process reads the global batch), else 1 (a replica's).
  int64_t devices_per_batch() const;
  bool workers_capped_noted_ = false;  // the notice that --dataloader_num_workers was bounded, printed once
};

// Parameters split as the Trainer does: weight decay for all but biases and
// norm weights (names ending in "bias" or containing "LayerNorm.weight"; and,
// as transformers' get_decay_parameter_names, any whose lowercased name holds
// "layernorm" or "rmsnorm", or a component "norm" or ending "_norm": Llama's
// input_layernorm, post_attention_layernorm and model.norm).
struct DecayGroups {
  std::vector<Tensor> decay, no_decay;
};
DecayGroups split_weight_decay(const nn::Module& model);

}  // namespace lazytrain::train
