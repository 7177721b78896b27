#include "train/trainer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/error.h"
#include "distributed/xla_model.h"
#include "distributed/zero_redundancy_optimizer.h"
#include "lazy/execution_mode.h"
#include "lazy/lazy_api.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "runtime/collectives.h"
#include "runtime/execution_queue.h"
#include "runtime/thread_budget.h"
#include "tensor/autocast.h"
#include "train/checkpoint.h"
#include "train/json_file.h"
#include "train/tensorboard.h"
#include "train/trainer_optimization.h"

namespace lazytrain::train {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
double round4(double v) { return std::round(v * 1e4) / 1e4; }
}  // namespace

DecayGroups split_weight_decay(const nn::Module& model) {
  DecayGroups groups;
  for (const auto& [name, p] : model.named_parameters()) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string dotted = "." + lower + ".";
    const bool norm = lower.find("layernorm") != std::string::npos || lower.find("rmsnorm") != std::string::npos ||
                      dotted.find(".norm.") != std::string::npos || dotted.find("_norm.") != std::string::npos;
    const bool no_decay = name.ends_with("bias") || name.find("LayerNorm.weight") != std::string::npos || norm;
    (no_decay ? groups.no_decay : groups.decay).push_back(p);
  }
  return groups;
}

Trainer::Trainer(nn::Module& model, TrainingArguments args, LossFn loss_fn, data::TrainerDataset train_dataset,
                 data::TrainerDataset eval_dataset)
    : model_(model), args_(std::move(args)), loss_fn_(std::move(loss_fn)), train_dataset_(std::move(train_dataset)),
      eval_dataset_(std::move(eval_dataset)) {
  args_.validate();
  args_.resolve();
  state_.logging_steps = args_.logging_steps;
  state_.eval_steps = args_.resolved_eval_steps();
  state_.save_steps = args_.save_steps;
  state_.train_batch_size = args_.per_device_train_batch_size;
  if (args_.uses_spmd()) {
    // SPMD (issue 34): one thread traces for every device; the replica API counts processes.
    if (!runtime::spmd_mode()) distributed::spmd::use_spmd(static_cast<int>(args_.num_cores));
    const int devices = runtime::replica_world().world_size();
    std::vector<int64_t> ids(static_cast<size_t>(devices));
    for (int i = 0; i < devices; ++i) ids[static_cast<size_t>(i)] = i;
    if (args_.uses_fsdp()) {
      spmd_ = distributed::spmd::ShardingSpec{distributed::spmd::Mesh(ids, {devices}, {"fsdp"}), {{"fsdp"}}};
    } else {
      check(devices % args_.tp_size == 0, "Trainer",
            "--tp_size " + std::to_string(args_.tp_size) + " does not divide the job's " + std::to_string(devices) +
                " devices (--num_cores x processes): the mesh is (devices / tp_size) x tp_size");
      spmd_ = distributed::spmd::ShardingSpec{distributed::spmd::Mesh(ids, {devices / args_.tp_size, args_.tp_size}, {"data", "model"}), {{"data"}}};
    }
  }
  replicas_ = distributed::world_size();
  replica_ = distributed::ordinal();
  state_.is_world_process_zero = is_master();
  // --num_threads of a process without replica threads (spawn divides it among them).
  if (args_.num_threads > 0 && runtime::replica_world().local_replicas == 1) {
    runtime::set_threads_per_execution(static_cast<int>(args_.num_threads));
  }
  // Hugging Face's default callbacks: the progress bar and printed logs, and the reporting integrations.
  callbacks_.push_back(std::make_shared<ProgressCallback>());
  if (args_.reports_to_tensorboard()) callbacks_.push_back(std::make_shared<TensorBoardCallback>());
}

Trainer::Trainer(nn::Module& model, TrainingArguments args, LossFn loss_fn, std::vector<data::Example> train_dataset,
                 std::vector<data::Example> eval_dataset, std::function<data::DataCollatorForLanguageModeling()> make_collator)
    : Trainer(model, std::move(args), std::move(loss_fn), data::TrainerDataset::from_examples(std::move(train_dataset), make_collator()),
              data::TrainerDataset::from_examples(std::move(eval_dataset), make_collator())) {
  make_collator_ = std::move(make_collator);
}

Trainer::~Trainer() = default;

ModelOutput Trainer::compute_loss(const distributed::DeviceBatch& batch) {
  AutocastGuard autocast(args_.bf16, DType::kBFloat16);
  return loss_fn_(batch);
}

void Trainer::log(nlohmann::json entry, int64_t step, double epoch) {
  entry["epoch"] = round4(epoch);
  entry["step"] = step;
  state_.log_history.push_back(std::move(entry));
  callback([&](TrainerCallback& c, auto&... a) { c.on_log(a..., state_.log_history.back()); });
}

void Trainer::stream_train_dataset(ExampleStreamFactory factory, int64_t size) {
  check(static_cast<bool>(make_collator_), "Trainer", "stream_train_dataset needs a Trainer made with a collator");
  train_dataset_ = data::TrainerDataset::from_stream(std::move(factory), size, make_collator_());
}

void Trainer::stream_eval_dataset(ExampleStreamFactory factory, int64_t size) {
  check(static_cast<bool>(make_collator_), "Trainer", "stream_eval_dataset needs a Trainer made with a collator");
  eval_dataset_ = data::TrainerDataset::from_stream(std::move(factory), size, make_collator_());
}

data::FeedOptions Trainer::feed_options(bool training) {
  data::FeedOptions options;
  options.training = training;
  options.batch_size = (training ? args_.per_device_train_batch_size : args_.per_device_eval_batch_size) * devices_per_batch();
  options.drop_last = training && args_.dataloader_drop_last;
  options.seed = args_.seed;
  // Under --fsdp or --tp_size every process reads the whole global batch (PyTorch/XLA's
  // SPMD default) and keeps its devices' rows of it.
  options.replicas = spmd_ ? 1 : replicas_;
  options.replica = spmd_ ? 0 : replica_;
  // Workers beyond the CPUs the compute threads leave would only take CPU time
  // from them; they also yield to them when both want a CPU (issue 15).
  options.num_workers = runtime::bounded_data_workers(static_cast<int>(args_.dataloader_num_workers), runtime::threads_per_execution());
  if (options.num_workers < args_.dataloader_num_workers && !workers_capped_noted_) {
    workers_capped_noted_ = true;
    std::fprintf(stderr, "[Trainer] --dataloader_num_workers %lld: %d worker(s), what %d CPU(s) leave beside %d compute thread(s)\n",
                 static_cast<long long>(args_.dataloader_num_workers), options.num_workers, runtime::available_cpus(),
                 runtime::threads_per_execution());
  }
  options.worker_init_fn = [](int) { runtime::yield_to_compute_threads(); };
  return options;
}

int64_t Trainer::batches_per_epoch(bool training) const {
  data::FeedOptions options;
  options.training = training;
  options.batch_size = (training ? args_.per_device_train_batch_size : args_.per_device_eval_batch_size) * devices_per_batch();
  options.drop_last = training && args_.dataloader_drop_last;
  // Under --fsdp or --tp_size every process reads the whole global batch (PyTorch/XLA's
  // SPMD default) and keeps its devices' rows of it.
  options.replicas = spmd_ ? 1 : replicas_;
  options.replica = spmd_ ? 0 : replica_;
  return data::batches_per_epoch(dataset(training), options);
}

int64_t Trainer::micro_batches_per_epoch() const { return batches_per_epoch(true); }

int64_t Trainer::updates_per_epoch() const {
  const int64_t k = args_.gradient_accumulation_steps;
  return (micro_batches_per_epoch() + k - 1) / k;  // the last step of an epoch may have fewer micro-batches
}

int64_t Trainer::resolve_max_steps() {
  if (micro_batches_per_epoch() == 0) {
    throw Error("[Trainer] the training set has " + std::to_string(dataset_size(true)) + " examples, fewer than one batch of " +
                std::to_string(args_.per_device_train_batch_size) + " (with --dataloader_drop_last)");
  }
  if (args_.max_steps > 0) return args_.max_steps;
  const double steps = std::ceil(args_.num_train_epochs * static_cast<double>(updates_per_epoch()));
  if (!(steps >= 1 && steps <= 1e12)) {
    throw Error("[Trainer] --num_train_epochs " + std::to_string(args_.num_train_epochs) + " gives " + std::to_string(steps) +
                " steps; expected between 1 and 1e12");
  }
  return static_cast<int64_t>(steps);
}

Tensor Trainer::accumulate_micro_batch(const distributed::DeviceBatch& batch, StepLoss& step, double mean_scale) {
  ModelOutput out = compute_loss(batch);
  if (!out.labels.defined()) {
    (mean_scale == 1.0 ? out.loss : mul(out.loss, scalar_tensor(mean_scale))).backward();
    return out.loss.detach();
  }
  // The tokens the loss is the mean of (labels other than -100), counted on the device.
  const Tensor count = sum(to_dtype(ne(out.labels, -100.0), DType::kFloat32));
  mul(out.loss, count).backward();
  Tensor loss = out.loss.detach();
  if (batch.has_labels) {  // (without a label the mean is 0/0: nothing to add)
    const Tensor token_sum = mul(loss, count);
    step.token_loss_sum = step.token_loss_sum.defined() ? add(step.token_loss_sum, token_sum) : token_sum;
  }
  step.token_count = step.token_count.defined() ? add(step.token_count, count) : count;
  return loss;
}

void Trainer::scale_gradients_by_tokens(const std::vector<Tensor>& params, const Tensor& local_tokens) const {
  NoGradGuard no_grad;
  const Tensor tokens = replicas_ > 1 ? distributed::all_reduce(distributed::ReduceType::kSum, local_tokens) : local_tokens;
  const Tensor scale = div(full({}, static_cast<double>(replicas_)), maximum(tokens, full({}, 1.0)));
  for (const Tensor& p : params) {
    if (p.grad().defined()) p.set_grad(mul(p.grad(), scale));
  }
}

Tensor Trainer::training_step(const distributed::DeviceBatch& batch, double scale) {
  Tensor loss = compute_loss(batch).loss;
  // The scale is device data: the step of an epoch's last, shorter accumulation compiles nothing new.
  (scale == 1.0 ? loss : mul(loss, scalar_tensor(scale))).backward();
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

// An op that fails while a step is traced (an eager mode's execution error,
// --detect_anomaly's NaN) is named with the training step it was in.
template <typename Call>
auto Trainer::traced_step(int64_t step, Call&& call) {
  try {
    return call();
  } catch (const lazy::ExecutionError& e) {
    throw lazy::ExecutionError("[Trainer] training step " + std::to_string(step) + ": " + e.what());
  } catch (const Error& e) {
    if (lazy::execution_mode() == lazy::ExecutionMode::kLazy && !lazy::detect_anomaly()) throw;
    throw Error("[Trainer] training step " + std::to_string(step) + ": " + e.what());
  }
}

void Trainer::finish_step(const StepLoss& s) {
  // The step's loss: its labelled tokens' mean (by micro-batch means for a loss function without labels).
  double sum = 0.0, losses = 0.0;
  if (s.token_count.defined()) {
    if (s.token_loss_sum.defined()) sum = in_step(s.step, [&] { return s.token_loss_sum.item(); });
    losses = s.losses.empty() ? 0.0 : in_step(s.step, [&] { return s.token_count.item(); });
  } else {
    for (const Tensor& loss : s.losses) sum += in_step(s.step, [&] { return loss.item(); });
    losses = static_cast<double>(s.losses.size());
  }
  double labelled = static_cast<double>(s.losses.size());  // micro-batches with a label
  double micro_batches = static_cast<double>(s.micro_batches);
  double tokens = static_cast<double>(s.tokens), examples = static_cast<double>(s.examples);
  if (replicas_ > 1) {
    // The step's figures over every replica (the token mean over all their micro-batches).
    const std::vector<double> all =
        runtime::host_all_gather("Trainer.step_loss", {sum, losses, labelled, micro_batches, tokens, examples});
    sum = losses = labelled = micro_batches = tokens = examples = 0.0;
    for (size_t r = 0; r < all.size(); r += 6) {
      sum += all[r];
      losses += all[r + 1];
      labelled += all[r + 2];
      micro_batches += all[r + 3];
      tokens += all[r + 4];
      examples += all[r + 5];
    }
  }
  trained_samples_ += static_cast<int64_t>(examples);
  // A batch without a masked token has loss 0/0 and zero gradients; Hugging
  // Face filters such losses from the logs (logging_nan_inf_filter).
  skipped_batches_ += static_cast<int64_t>(micro_batches - labelled);
  const bool counted = losses > 0;
  const double value = counted ? sum / losses : 0.0;
  if (counted && !std::isfinite(value)) {
    throw Error("[Trainer] the loss became " + std::to_string(value) + " at step " + std::to_string(s.step) +
                "; lower --learning_rate or check the data");
  }
  // Clipping's norm covers every gradient: one non-finite gradient makes it so.
  if (s.grad_norm.defined()) {
    const double norm = in_step(s.step, [&] { return s.grad_norm.item(); });
    if (!std::isfinite(norm)) {
      throw Error("[Trainer] training step " + std::to_string(s.step) + ": the gradients' norm is " + std::to_string(norm) +
                  " (a gradient holds NaN or infinite values); lower --learning_rate or check the data");
    }
  }
  run_.interval_tokens += static_cast<int64_t>(tokens);
  if (counted) {
    run_.total_loss += value;
    ++run_.counted_steps;
    run_.interval_loss += value;
    ++run_.interval_steps;
  }
  state_.step_loss = value;
  callback([](TrainerCallback& c, auto&... a) { c.on_step_end(a...); });
  if (s.step % args_.logging_steps == 0) log_training_loss(s);
}

void Trainer::log_training_loss(const StepLoss& s) {
  const double mean = run_.interval_loss / static_cast<double>(std::max<int64_t>(1, run_.interval_steps));
  nlohmann::json entry = {{"loss", round4(mean)}, {"learning_rate", s.learning_rate}};
  if (s.grad_norm.defined()) entry["grad_norm"] = in_step(s.step, [&] { return s.grad_norm.item(); });
  // Input tokens (padding rows left out) per second since the last log line.
  const double now = seconds_since(train_start_);
  if (now > run_.interval_start) entry["tokens_per_second"] = round4(static_cast<double>(run_.interval_tokens) / (now - run_.interval_start));
  log(entry, s.step, s.epoch);
  run_.interval_loss = 0.0;
  run_.interval_steps = 0;
  run_.interval_tokens = 0;
  run_.interval_start = now;
}

}  // namespace lazytrain::train

namespace lazytrain::train {

std::map<std::string, double> Trainer::train(const std::string& resume_from_checkpoint) {
  // A metric the evaluation cannot give is an error now, not at the first evaluation.
  static const std::vector<std::string> kEvalMetrics = {"eval_loss", "eval_accuracy", "eval_runtime", "eval_samples_per_second",
                                                        "eval_steps_per_second"};
  if (!args_.metric_for_best_model.empty() &&
      std::find(kEvalMetrics.begin(), kEvalMetrics.end(), args_.best_metric_key()) == kEvalMetrics.end()) {
    throw Error("[Trainer] --metric_for_best_model '" + args_.metric_for_best_model +
                "' is not an evaluation metric; expected loss, accuracy, runtime, samples_per_second or steps_per_second");
  }
  state_.max_steps = resolve_max_steps();
  if (replicas_ > 1 && !train_dataset_.streamed()) {
    // Every replica must train on the same examples (under mpirun each process read its own files).
    const nlohmann::json data = data_state();
    const double size = data["train_samples"].get<double>(), crc = data.value("train_data_crc32c", -1.0);
    const std::vector<double> all = runtime::host_all_gather("Trainer.training_data", {size, crc});
    for (size_t r = 0; r < all.size(); r += 2) {
      if (all[r] != size || all[r + 1] != crc) {
        throw Error("[Trainer] replica " + std::to_string(r / 2) + "'s training data (" + std::to_string(static_cast<int64_t>(all[r])) +
                    " examples, CRC32C " + std::to_string(static_cast<uint32_t>(all[r + 1])) + ") differs from replica " +
                    std::to_string(replica_) + "'s (" + std::to_string(static_cast<int64_t>(size)) + ", CRC32C " +
                    std::to_string(static_cast<uint32_t>(crc)) + "); every process must read the same training files");
      }
    }
  }
  const int64_t per_epoch = micro_batches_per_epoch();
  const int64_t k = args_.gradient_accumulation_steps;
  state_.num_train_epochs = std::ceil(static_cast<double>(state_.max_steps) / static_cast<double>(updates_per_epoch()));
  // The layout first: AdamW's moments start in their parameter's (one step graph from the first step on),
  // and a checkpoint's values load into it.
  if (spmd_) shard_parameters();
  TrainerOptimization opt = make_optimization(model_, args_, state_.max_steps);
  if (replicas_ > 1 && is_master()) {
    std::fprintf(stderr, "[Trainer] %d replicas; AdamW state on each: %.2f MB%s\n", replicas_,
                 static_cast<double>(opt.optimizer->state_bytes()) / 1e6, opt.sharded ? " (sharded, ZeRO stage 1)" : "");
  }
  if (!resume_from_checkpoint.empty()) load_checkpoint(resume_from_checkpoint, opt);
  sort_out_existing_checkpoints(resume_from_checkpoint);
  model_.train();
  run_ = RunTotals{};
  trained_samples_ = 0;
  train_graphs_.clear();
  // Every graph training runs is recorded (evaluate() pauses the recording).
  // The recording stops when the loop ends, and also when train() throws: the
  // set belongs to this Trainer, and a later graph of the process (a Python
  // session goes on after a caught error) must not write into it.
  struct GraphRecording {
    runtime::Device device = runtime::current_device();
    bool active = true;
    void stop() {
      if (std::exchange(active, false)) lazy::record_graphs(device, nullptr);
    }
    ~GraphRecording() { stop(); }
  } recording;
  lazy::record_graphs(recording.device, &train_graphs_);
  control_ = TrainerControl{};
  callback([](TrainerCallback& c, auto&... a) { c.on_train_begin(a...); });
  first_step_ = state_.global_step;
  train_start_ = std::chrono::steady_clock::now();
  // Where the run starts: HF's steps_trained_in_current_epoch, in micro-batches.
  const int64_t start_epoch = state_.global_step / updates_per_epoch();
  int64_t start_batch = (state_.global_step % updates_per_epoch()) * k;
  // Each iteration launches the step traced before (DeviceLoader::next calls
  // mark_step), traces the next one while it runs, and only then reads its loss,
  // so tracing overlaps execution and the device is free again when the next
  // mark_step comes (the wait is in reading the loss: TransferFromDeviceTime).
  std::optional<StepLoss> pending;
  bool traced_unlaunched = false;
  for (int64_t epoch = start_epoch; state_.global_step < state_.max_steps && !control_.should_training_stop; ++epoch) {
    callback([](TrainerCallback& c, auto&... a) { c.on_epoch_begin(a...); });
    DeviceLoader device_loader = make_device_loader(true, static_cast<uint64_t>(epoch), start_batch);
    StepLoss step{};
    for (int64_t micro = start_batch; state_.global_step < state_.max_steps && !control_.should_training_stop; ++micro) {
      std::optional<distributed::DeviceBatch> batch =
          in_step(pending ? pending->step : state_.global_step + 1, [&] { return device_loader.next(); });
      traced_unlaunched = false;
      if (!batch) break;
      // This micro-batch's optimizer step and how many micro-batches it has (fewer for an epoch's last).
      const int64_t first = micro / k * k;
      const int64_t in_step_count = std::min(k, per_epoch - first);
      Tensor loss = traced_step(state_.global_step + 1, [&] { return accumulate_micro_batch(*batch, step, 1.0 / static_cast<double>(in_step_count)); });
      if (batch->has_labels) step.losses.push_back(loss);
      ++step.micro_batches;
      step.tokens += batch->num_tokens;
      step.examples += batch->num_examples;
      if (micro + 1 - first < in_step_count) continue;  // accumulate: the gradients stay, nothing else is traced
      if (step.token_count.defined()) traced_step(state_.global_step + 1, [&] { scale_gradients_by_tokens(opt.params, step.token_count); });
      if (opt.sharded) {
        // Reduce-scatter, clip by the global norm, update the shard, all-gather: the optimizer's own.
        opt.optimizer->step();
        if (args_.max_grad_norm > 0) step.grad_norm = static_cast<distributed::ZeroRedundancyAdamW&>(*opt.optimizer).grad_norm();
      } else {
        // The replicas' mean gradients (nothing with one replica), so clipping sees the global norm.
        distributed::reduce_gradients(*opt.optimizer);
        if (args_.max_grad_norm > 0) step.grad_norm = optim::clip_grad_norm_(opt.params, args_.max_grad_norm);
        opt.optimizer->step();
      }
      opt.scheduler->step();
      opt.optimizer->zero_grad();
      if (pending) finish_step(*std::exchange(pending, std::nullopt));  // the step running since next()
      ++state_.global_step;
      state_.epoch = static_cast<double>(epoch) + static_cast<double>(micro + 1) / static_cast<double>(per_epoch);
      step.step = state_.global_step;
      step.epoch = state_.epoch;
      step.learning_rate = opt.scheduler->get_last_lr()[0];
      pending = std::exchange(step, StepLoss{});
      traced_unlaunched = true;
      const bool epoch_end = micro + 1 == per_epoch;
      maybe_evaluate_and_save(epoch_end, pending, opt);
      if (!pending) traced_unlaunched = false;
      if (epoch_end) callback([](TrainerCallback& c, auto&... a) { c.on_epoch_end(a...); });
    }
    start_batch = 0;
  }
  if (traced_unlaunched) in_step(state_.global_step, [] { lazy::mark_step(); });  // max_steps ended the loop before next() launched it
  if (pending) finish_step(*pending);
  // The trained model is saved next (by the caller): never with NaN or infinite weights.
  check_parameters_finite("the model was not saved");
  if (skipped_batches_ > 0 && is_master()) {
    std::fprintf(stderr, "note: %lld training batch%s had no masked token (loss undefined) and %s left out of the loss\n",
                 static_cast<long long>(skipped_batches_), skipped_batches_ == 1 ? "" : "es", skipped_batches_ == 1 ? "was" : "were");
  }
  recording.stop();
  if (is_master()) {
    const lazy::ExecutionMode mode = lazy::detect_anomaly() ? lazy::ExecutionMode::kDebugEager : lazy::execution_mode();
    if (mode == lazy::ExecutionMode::kStrictEager || mode == lazy::ExecutionMode::kDebugEager) {
      std::fprintf(stderr, "[Trainer] training ran its ops one by one (%s): each kind of op compiled once; --debug_graphs counts them a step\n",
                   lazy::execution_mode_name(mode).c_str());
    } else {
      std::fprintf(stderr, "[Trainer] training ran %zu distinct graph%s (--debug_recompiles says why each after the first step compiled)\n",
                   train_graphs_.size(), train_graphs_.size() == 1 ? "" : "s");
    }
  }
  if (args_.load_best_model_at_end && !state_.best_model_checkpoint.empty()) {
    if (is_master()) std::fprintf(stderr, "Loading best model from %s (score: %g).\n", state_.best_model_checkpoint.c_str(), state_.best_metric.value_or(0.0));
    load_model_weights(model_, state_.best_model_checkpoint);
  }
  std::map<std::string, double> metrics = train_metrics(seconds_since(train_start_));
  callback([](TrainerCallback& c, auto&... a) { c.on_train_end(a...); });
  return metrics;
}

void Trainer::maybe_evaluate_and_save(bool epoch_end, std::optional<StepLoss>& pending, TrainerOptimization& opt) {
  const int64_t step = state_.global_step;
  const bool evaluate_now = (args_.evaluation_strategy == "steps" && step % args_.resolved_eval_steps() == 0) ||
                            (args_.evaluation_strategy == "epoch" && epoch_end);
  // As Hugging Face's DefaultFlowCallback, the steps strategy also saves at max_steps.
  const bool save_now = (args_.save_strategy == "steps" && (step % args_.save_steps == 0 || step >= state_.max_steps)) ||
                        (args_.save_strategy == "epoch" && epoch_end);
  if (!evaluate_now && !save_now) return;
  // Launch and finish the step first, so its loss is logged before the evaluation, as Hugging Face orders them.
  in_step(step, [] { lazy::mark_step(); });
  finish_step(*std::exchange(pending, std::nullopt));
  if (evaluate_now) {
    std::map<std::string, double> metrics = evaluate();
    if (save_now) update_best(metrics);
  }
  if (save_now) save_checkpoint(opt);
}

std::map<std::string, double> Trainer::train_metrics(double runtime) {
  std::map<std::string, double> metrics = {
      {"train_loss", run_.total_loss / static_cast<double>(std::max<int64_t>(1, run_.counted_steps))},
      {"train_runtime", round4(runtime)},
      {"train_samples", static_cast<double>(dataset_size(true))},
      {"train_samples_per_second", round4(static_cast<double>(trained_samples_) / runtime)},
      {"train_steps_per_second", round4(static_cast<double>(state_.global_step - first_step_) / runtime)},
      {"epoch", round4(state_.epoch)}};
  log({{"train_loss", metrics["train_loss"]}, {"train_runtime", metrics["train_runtime"]},
       {"train_samples_per_second", metrics["train_samples_per_second"]}, {"train_steps_per_second", metrics["train_steps_per_second"]}},
      state_.global_step, state_.epoch);
  return metrics;
}

Trainer::DeviceLoader Trainer::make_device_loader(bool training, uint64_t epoch, int64_t start_batch) {
  // Under --fsdp or --tp_size each batch is cut into the devices' rows on the loader's transfer thread.
  const std::optional<distributed::spmd::ShardingSpec> layout = spmd_;
  return DeviceLoader(data::epoch_feed(dataset(training), feed_options(training), epoch, start_batch),
                      [layout](data::NamedBatch&& b) {
                        distributed::DeviceBatch batch = distributed::to_device(b);
                        return layout ? distributed::spmd::shard_batch(std::move(batch), *layout) : batch;
                      },
                      device_loader_options());
}

void Trainer::shard_parameters() {
  const distributed::spmd::Mesh& mesh = spmd_->mesh;
  if (args_.uses_fsdp()) {
    // FSDPv2: every parameter split over all devices (the optimizer state follows from the first step).
    const int split = distributed::spmd::shard_parameters_fsdp(model_, mesh, "fsdp");
    if (is_master()) {
      std::fprintf(stderr, "[Trainer] fsdp full_shard over %lld devices: %d of %zu parameters split\n", static_cast<long long>(mesh.size()), split,
                   model_.parameters().size());
    }
    return;
  }
  // Megatron: attention and MLP split by heads and features, the embeddings and LM head by vocabulary.
  int split = 0;
  try {
    split = distributed::spmd::parallelize_module(model_, mesh, distributed::spmd::megatron_plan(/*vocab_parallel=*/true), "model");
  } catch (const Error& e) {
    throw Error("[Trainer] --tp_size " + std::to_string(args_.tp_size) +
                " lays the model out with Megatron's plan for the built-in models (BERT, RoBERTa, GPT-2, Llama); for another, "
                "call parallelize_module with its own plan and leave tp_size at 1: " + std::string(e.what()));
  }
  if (is_master()) {
    std::fprintf(stderr, "[Trainer] tensor parallel over %lld x %lld devices (data x model): %d of %zu parameters split\n",
                 static_cast<long long>(mesh.mesh_shape()[0]), static_cast<long long>(mesh.mesh_shape()[1]), split, model_.parameters().size());
  }
}

int64_t Trainer::devices_per_batch() const { return spmd_ ? spmd_->mesh.mesh_shape()[0] : 1; }

distributed::DeviceLoaderOptions Trainer::device_loader_options() const {
  distributed::DeviceLoaderOptions options;
  options.loader_prefetch_size = static_cast<int>(args_.loader_prefetch_size);
  options.device_prefetch_size = static_cast<int>(args_.device_prefetch_size);
  return options;
}

void Trainer::save_state() const {
  if (!is_master()) return;
  write_json_file(args_.output_dir + "/trainer_state.json", state_.to_json());
  write_json_file(args_.output_dir + "/training_args.json", args_.to_json());
}

}  // namespace lazytrain::train
