// TrainingArguments: the Hugging Face Trainer's arguments (names and defaults of
// transformers.TrainingArguments, 4.3x) that lazytrain implements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazytrain::train {

struct TrainingArguments {
  std::string output_dir;
  bool overwrite_output_dir = false;
  bool do_train = false;
  bool do_eval = false;
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  // Micro-batches whose gradients are summed before one optimizer step; each
  // micro-batch's loss is divided by the number of micro-batches in its step.
  int64_t gradient_accumulation_steps = 1;
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  double num_train_epochs = 3.0;  // fractional allowed: ceil(epochs * updates per epoch) steps
  int64_t max_steps = -1;         // > 0 overrides num_train_epochs
  // linear, cosine, constant, constant_with_warmup (transformers.SchedulerType).
  std::string lr_scheduler_type = "linear";
  double warmup_ratio = 0.0;  // of the total steps, used when warmup_steps is 0
  int64_t warmup_steps = 0;
  std::string logging_dir;  // empty: <output_dir>/runs/<date>_<hostname> (resolved by resolve())
  int64_t logging_steps = 500;
  // "no", "steps" (every eval_steps) or "epoch". HF's newer name eval_strategy is an alias.
  std::string evaluation_strategy = "no";
  std::optional<int64_t> eval_steps;  // unset: logging_steps
  std::string save_strategy = "steps";  // "no", "steps" or "epoch"
  int64_t save_steps = 500;
  std::optional<int64_t> save_total_limit;  // unset: keep every checkpoint
  bool load_best_model_at_end = false;
  std::string metric_for_best_model;          // unset: "loss" when load_best_model_at_end
  std::optional<bool> greater_is_better;      // unset: false for a metric ending in "loss"
  std::vector<std::string> report_to = {"all"};  // "all", "tensorboard" or "none"
  std::string resume_from_checkpoint;           // a checkpoint directory, or "latest"
  bool dataloader_drop_last = false;
  uint64_t seed = 42;
  bool metrics_debug = false;  // alias --tpu_metrics_debug: print the metrics report
  // How ops run (lazy/execution_mode.h): lazy, debug_eager, strict_eager or fused_eager.
  std::string execution_mode = "lazy";
  // torch.autograd.set_detect_anomaly: each op's result is checked, and the
  // first NaN/Inf names the op and the line that called it (every op runs alone: slow).
  bool detect_anomaly = false;
  // Print why each graph compiled after the first step (lazy/recompile_reasons.h).
  bool debug_recompiles = false;
  // One line a step: compiles, executions, host transfers and the reads that forced them (lazy/step_analysis.h).
  bool debug_graphs = false;
  bool disable_tqdm = false;
  // bf16 mixed precision: the forward and the loss run under
  // torch.autocast('cpu', dtype=torch.bfloat16) semantics (tensor/autocast.h);
  // weights, gradients and optimizer state stay f32.
  bool bf16 = false;
  // Recompute each transformer layer's activations during backward instead of
  // keeping them (the model's gradient_checkpointing_enable(); nn/checkpoint.h):
  // less memory, one more forward of the layers per step.
  bool gradient_checkpointing = false;
  // Threads that collate batches (0: the DeviceLoader's loader thread does it).
  int64_t dataloader_num_workers = 0;
  // DeviceLoader queues (PyTorch/XLA's MpDeviceLoader arguments).
  int64_t loader_prefetch_size = 8;
  int64_t device_prefetch_size = 4;
  // Data parallelism (xla_spawn.py's --num_cores): replicas in this process,
  // one device and thread each (distributed::spawn); under mpirun every
  // process runs as many. Threads are divided among them.
  int64_t num_cores = 1;
  // Compute threads of this process (torch.set_num_threads; --num_threads).
  // 0: the CPUs it may use (affinity mask and cgroup quota, or
  // OMP_NUM_THREADS; runtime/thread_budget.h). Replicas divide them.
  int64_t num_threads = 0;
  // Seconds a replica waits at a collective or rendezvous for the others
  // before failing with the missing replica's name.
  double collective_timeout = 300.0;
  // ZeRO stage 1 with several replicas: each keeps the AdamW state of 1/N of
  // every parameter (distributed::ZeroRedundancyAdamW); the same updates.
  bool sharded_optimizer = false;
  // Hugging Face's fsdp: "full_shard" trains one SPMD program over the
  // --num_cores devices of every process (issue 34; distributed/spmd.h): every
  // parameter split along its largest dimension over all of them (FSDPv2), each
  // batch of per_device_train_batch_size x devices rows split the same way.
  // "": data parallelism by replicas.
  std::string fsdp;
  // Hugging Face's tp_size (transformers 4.51's TrainingArguments): above 1,
  // one SPMD program over every device of the job laid out as a mesh of
  // (devices / tp_size) x tp_size, axes "data" and "model": Megatron's plan
  // with its vocabulary-parallel loss over "model" (distributed/spmd.h
  // megatron_plan), each batch of per_device_train_batch_size x
  // (devices / tp_size) rows split over "data". 1: no tensor parallelism.
  int64_t tp_size = 1;

  // Throws Error "[TrainingArguments] --name ..." naming the argument for a
  // value out of range or arguments that disagree (as HF's __post_init__:
  // load_best_model_at_end needs save and evaluation strategies that match, and
  // save_steps a multiple of eval_steps).
  void validate() const;
  bool uses_fsdp() const { return !fsdp.empty(); }
  bool uses_tensor_parallel() const { return tp_size > 1; }
  // One SPMD program over every device (--fsdp or --tp_size), not replicas.
  bool uses_spmd() const { return uses_fsdp() || uses_tensor_parallel(); }
  // HF's __post_init__ defaults: do_eval when evaluation_strategy is not "no",
  // eval_steps = logging_steps, metric_for_best_model = "loss",
  // greater_is_better, logging_dir, report_to "all" → "tensorboard". Idempotent.
  void resolve();

  int64_t resolved_eval_steps() const { return eval_steps.value_or(logging_steps); }
  // "eval_" + metric_for_best_model unless it already starts with "eval_".
  std::string best_metric_key() const;
  bool reports_to_tensorboard() const;

  // Every value as TrainingArguments.to_json_string() writes it
  // (training_args.json): unset optionals as null.
  nlohmann::json to_json() const;
  // The arguments of a to_json() object (training_args.json, or Python's
  // TrainingArguments): every key optional, missing ones keep their defaults;
  // "eval_strategy" is evaluation_strategy's newer name. Throws Error naming
  // `source` and the key for an unknown key or a value of the wrong type. Not
  // validated (validate()).
  static TrainingArguments from_json(const nlohmann::json& json, const std::string& source);
};

}  // namespace lazytrain::train
