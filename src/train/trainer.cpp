#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <unistd.h>

#include "core/error.h"
#include "lazy/graph_executor.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "data/data_loader.h"
#include "distributed/parallel_loader.h"
#include "tensor/autocast.h"
#include "train/json_file.h"
#include "train/progress_bar.h"

namespace lazytrain::train {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
double round4(double v) { return std::round(v * 1e4) / 1e4; }
}  // namespace

Tensor Trainer::compute_loss(const distributed::DeviceBatch& batch) {
  AutocastGuard autocast(args_.bf16, DType::kBFloat16);
  return loss_fn_(batch);
}

DecayGroups split_weight_decay(const nn::Module& model) {
  DecayGroups groups;
  for (const auto& [name, p] : model.named_parameters()) {
    bool no_decay = name.ends_with("bias") || name.find("LayerNorm.weight") != std::string::npos;
    (no_decay ? groups.no_decay : groups.decay).push_back(p);
  }
  return groups;
}

Trainer::Trainer(nn::Module& model, TrainingArguments args, LossFn loss_fn, std::vector<data::Example> train_dataset,
                 std::vector<data::Example> eval_dataset, std::function<data::DataCollatorForLanguageModeling()> make_collator)
    : model_(model), args_(std::move(args)), loss_fn_(std::move(loss_fn)), train_dataset_(std::move(train_dataset)),
      eval_dataset_(std::move(eval_dataset)), make_collator_(std::move(make_collator)) {
  args_.validate();
}

void Trainer::log(nlohmann::json entry, int64_t step, double epoch) {
  entry["epoch"] = round4(epoch);
  entry["step"] = step;
  log_history_.push_back(std::move(entry));
}

data::DataLoader<data::Batch> Trainer::make_loader(const std::vector<data::Example>& dataset, int64_t batch_size, bool shuffle) {
  data::DataLoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = shuffle;
  options.seed = args_.seed;
  options.drop_last = true;  // static shapes: one compiled step
  options.num_workers = static_cast<int>(args_.dataloader_num_workers);
  auto collator = std::make_shared<data::DataCollatorForLanguageModeling>(make_collator_());
  return data::DataLoader<data::Batch>(dataset.size(), options, [&dataset, collator](const std::vector<size_t>& indices, uint64_t number) {
    std::vector<data::Example> examples;
    examples.reserve(indices.size());
    for (size_t i : indices) examples.push_back(dataset[i]);
    return (*collator)(examples, number);
  });
}

void Trainer::stream_train_dataset(ExampleStreamFactory factory, int64_t size) {
  train_stream_ = std::move(factory);
  train_stream_size_ = size;
}

void Trainer::stream_eval_dataset(ExampleStreamFactory factory, int64_t size) {
  eval_stream_ = std::move(factory);
  eval_stream_size_ = size;
}

int64_t Trainer::dataset_size(bool training) const {
  if (training) return train_stream_ ? train_stream_size_ : static_cast<int64_t>(train_dataset_.size());
  return eval_stream_ ? eval_stream_size_ : static_cast<int64_t>(eval_dataset_.size());
}

std::function<std::optional<data::Batch>()> Trainer::host_batches(bool training, uint64_t epoch) {
  const int64_t batch_size = training ? args_.per_device_train_batch_size : args_.per_device_eval_batch_size;
  const ExampleStreamFactory& factory = training ? train_stream_ : eval_stream_;
  if (factory) {
    struct Stream {
      ExampleStream next;
      data::DataCollatorForLanguageModeling collator;
      uint64_t number;
    };
    auto stream = std::make_shared<Stream>(Stream{factory(epoch), make_collator_(),
                                                  epoch * static_cast<uint64_t>(dataset_size(training) / batch_size)});
    return [stream, batch_size]() -> std::optional<data::Batch> {
      std::vector<data::Example> examples;
      while (static_cast<int64_t>(examples.size()) < batch_size) {
        std::optional<data::Example> ex = stream->next();
        if (!ex) return std::nullopt;  // a last partial batch is dropped (static shapes)
        examples.push_back(std::move(*ex));
      }
      return stream->collator(examples, stream->number++);
    };
  }
  // The epoch owns the collate function, so the loader need not outlive it.
  std::shared_ptr<data::DataLoader<data::Batch>::Epoch> e =
      make_loader(training ? train_dataset_ : eval_dataset_, batch_size, training).epoch(epoch);
  return [e] { return e->next(); };
}

int64_t Trainer::resolve_max_steps(int64_t per_epoch) {
  if (per_epoch == 0) {
    throw Error("[Trainer] the training set has " + std::to_string(dataset_size(true)) + " examples, fewer than one batch of " +
                std::to_string(args_.per_device_train_batch_size));
  }
  if (args_.max_steps > 0) return args_.max_steps;
  const double steps = std::ceil(args_.num_train_epochs * static_cast<double>(per_epoch));
  if (!(steps >= 1 && steps <= 1e12)) {
    throw Error("[Trainer] --num_train_epochs " + std::to_string(args_.num_train_epochs) + " gives " + std::to_string(steps) +
                " steps; expected between 1 and 1e12");
  }
  return static_cast<int64_t>(steps);
}

Tensor Trainer::training_step(const distributed::DeviceBatch& batch) {
  Tensor loss = compute_loss(batch);
  loss.backward();
  return loss.detach();
}

// A step's execution fails on the device and is reported at the next
// synchronising call (a mark_step in DeviceLoader::next, or reading its loss):
// name the training step it was.
template <typename Call>
auto Trainer::in_step(int64_t step, Call&& call) {
  try {
    return call();
  } catch (const lazy::ExecutionError& e) {
    throw lazy::ExecutionError("[Trainer] training step " + std::to_string(step) + ": " + e.what());
  }
}

void Trainer::finish_step(const StepLoss& s, ProgressBar& bar) {
  const double value = in_step(s.step, [&] { return s.loss.item(); });
  // A batch without a masked token has loss 0/0 and zero gradients; Hugging
  // Face filters such losses from the logs (logging_nan_inf_filter).
  if (!s.counted) ++skipped_batches_;
  if (s.counted && !std::isfinite(value)) {
    throw Error("[Trainer] the loss became " + std::to_string(value) + " at step " + std::to_string(s.step) +
                "; lower --learning_rate or check the data");
  }
  if (s.counted) {
    run_.total_loss += value;
    ++run_.counted_steps;
    run_.interval_loss += value;
    ++run_.interval_steps;
  }
  bar.update(s.step, value);
  if (s.step % args_.logging_steps == 0) log_training_loss(s, bar);
}

void Trainer::log_training_loss(const StepLoss& s, ProgressBar& bar) {
  const double mean = run_.interval_loss / static_cast<double>(std::max<int64_t>(1, run_.interval_steps));
  log({{"loss", round4(mean)}, {"learning_rate", s.learning_rate}}, s.step, s.epoch);
  bar.message(dump_json(log_history_.back()));
  run_.interval_loss = 0.0;
  run_.interval_steps = 0;
}

std::map<std::string, double> Trainer::train() {
  const int64_t per_epoch = dataset_size(true) / args_.per_device_train_batch_size;
  max_steps_ = resolve_max_steps(per_epoch);
  epochs_ = std::ceil(static_cast<double>(max_steps_) / static_cast<double>(per_epoch));
  DecayGroups groups = split_weight_decay(model_);
  optim::AdamW optimizer({{groups.decay, args_.weight_decay}, {groups.no_decay, 0.0}},
                         {args_.learning_rate, args_.adam_beta1, args_.adam_beta2, args_.adam_epsilon, 0.0});
  optim::LambdaLR lr_scheduler = optim::get_linear_schedule_with_warmup(optimizer, args_.warmup_steps, max_steps_);
  const std::vector<Tensor> params = model_.parameters();
  model_.train();
  run_ = RunTotals{};
  ProgressBar bar(max_steps_, args_.disable_tqdm);
  const auto start = std::chrono::steady_clock::now();
  // Each iteration launches the step traced before (DeviceLoader::next calls
  // mark_step), traces the next one while it runs, and only then reads its loss,
  // so tracing overlaps execution and the device is free again when the next
  // mark_step comes (the wait is in reading the loss: TransferFromDeviceTime).
  std::optional<StepLoss> pending;
  bool traced_unlaunched = false;
  for (uint64_t epoch = 0; global_step_ < max_steps_; ++epoch) {
    DeviceLoader device_loader = make_device_loader(true, epoch);
    for (size_t i = 0; global_step_ < max_steps_; ++i) {
      std::optional<distributed::DeviceBatch> batch = in_step(pending ? pending->step : global_step_, [&] { return device_loader.next(); });
      traced_unlaunched = false;
      if (!batch) break;
      Tensor loss = training_step(*batch);
      if (args_.max_grad_norm > 0) optim::clip_grad_norm_(params, args_.max_grad_norm);
      optimizer.step();
      lr_scheduler.step();
      optimizer.zero_grad();
      if (pending) finish_step(*std::exchange(pending, std::nullopt), bar);  // the step running since next()
      ++global_step_;
      epoch_ = static_cast<double>(epoch) + static_cast<double>(i + 1) / static_cast<double>(per_epoch);
      pending = StepLoss{loss, batch->has_labels, global_step_, epoch_, lr_scheduler.get_last_lr()[0]};
      traced_unlaunched = true;
    }
  }
  if (traced_unlaunched) in_step(global_step_, [] { lazy::mark_step(); });  // max_steps ended the loop before next() launched it
  if (pending) finish_step(*pending, bar);
  bar.finish();
  if (skipped_batches_ > 0) {
    std::fprintf(stderr, "note: %lld training batches had no masked token (loss undefined) and were left out of the loss\n",
                 static_cast<long long>(skipped_batches_));
  }
  return train_metrics(seconds_since(start));
}

std::map<std::string, double> Trainer::train_metrics(double runtime) {
  std::map<std::string, double> metrics = {
      {"train_loss", run_.total_loss / static_cast<double>(std::max<int64_t>(1, run_.counted_steps))},
      {"train_runtime", round4(runtime)},
      {"train_samples_per_second", round4(static_cast<double>(global_step_ * args_.per_device_train_batch_size) / runtime)},
      {"train_steps_per_second", round4(static_cast<double>(global_step_) / runtime)},
      {"epoch", round4(epoch_)}};
  log({{"train_loss", metrics["train_loss"]}, {"train_runtime", metrics["train_runtime"]},
       {"train_samples_per_second", metrics["train_samples_per_second"]}, {"train_steps_per_second", metrics["train_steps_per_second"]}},
      global_step_, epoch_);
  return metrics;
}

Trainer::DeviceLoader Trainer::make_device_loader(bool training, uint64_t epoch) {
  return DeviceLoader(host_batches(training, epoch), [](data::Batch&& b) { return distributed::to_device(b); }, device_loader_options());
}

std::map<std::string, double> Trainer::evaluate() {
  const int64_t eval_batches = dataset_size(false) / args_.per_device_eval_batch_size;
  if (eval_batches == 0) {
    throw Error("[Trainer] the evaluation set has " + std::to_string(dataset_size(false)) + " examples, fewer than one batch of " +
                std::to_string(args_.per_device_eval_batch_size));
  }
  model_.eval();
  NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  double total = 0.0;
  int64_t counted = 0;
  {
    // As in train(): each loss is read after the next step was traced.
    Tensor pending;
    DeviceLoader device_loader = make_device_loader(false, 0);
    while (std::optional<distributed::DeviceBatch> batch = device_loader.next()) {
      if (!batch->has_labels) continue;  // nothing masked: no loss to average
      Tensor loss = compute_loss(*batch);
      if (pending.defined()) total += pending.item();
      pending = loss;
      ++counted;
    }  // the last next() launched the last step
    if (pending.defined()) total += pending.item();
  }
  if (counted == 0) throw Error("[Trainer] no evaluation batch has a masked token; use larger batches or a larger --mlm_probability");
  model_.train();
  const double runtime = seconds_since(start);
  const double eval_loss = total / static_cast<double>(counted);
  const double samples = static_cast<double>(eval_batches * args_.per_device_eval_batch_size);
  std::map<std::string, double> metrics = {{"eval_loss", eval_loss},
                                           {"eval_runtime", round4(runtime)},
                                           {"eval_samples_per_second", round4(samples / runtime)},
                                           {"eval_steps_per_second", round4(static_cast<double>(eval_batches) / runtime)},
                                           {"epoch", round4(epoch_)}};
  nlohmann::json entry;
  for (const auto& [k, v] : metrics) if (k != "epoch") entry[k] = v;
  log(entry, global_step_, epoch_);
  metrics["perplexity"] = std::exp(eval_loss);
  return metrics;
}

distributed::DeviceLoaderOptions Trainer::device_loader_options() const {
  distributed::DeviceLoaderOptions options;
  options.loader_prefetch_size = static_cast<int>(args_.loader_prefetch_size);
  options.device_prefetch_size = static_cast<int>(args_.device_prefetch_size);
  return options;
}

void Trainer::save_state() const {
  nlohmann::json state = {{"best_metric", nullptr},
                          {"best_model_checkpoint", nullptr},
                          {"epoch", round4(epoch_)},
                          {"global_step", global_step_},
                          {"is_hyper_param_search", false},
                          {"is_local_process_zero", true},
                          {"is_world_process_zero", true},
                          {"log_history", log_history_},
                          {"logging_steps", args_.logging_steps},
                          {"max_steps", max_steps_},
                          {"num_train_epochs", epochs_},
                          {"train_batch_size", args_.per_device_train_batch_size},
                          {"total_flos", 0},
                          {"trial_name", nullptr},
                          {"trial_params", nullptr}};
  write_json_file(args_.output_dir + "/trainer_state.json", state);
}

}  // namespace lazytrain::train
