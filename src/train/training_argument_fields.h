// The training arguments, declared once: each line of
// LAZYTRAIN_TRAINING_ARGUMENTS is one field of TrainingArguments (C++ type,
// member name, default, how Hugging Face names and carries it, the CLI's help),
// and everything else is derived from the list: the struct's members, to_json
// and from_json (training_args.json), the CLI's flags (apps/training_flags.cpp)
// and the fields of Python's TrainingArguments dataclass (python/src/trainer.cpp
// hands the list to python/lazytrain/trainer/training_args.py).
//
// Adding a training argument is one line here (plus its check in
// TrainingArguments::validate() when it has a range).
//
// Types: bool (a CLI flag), int64_t, uint64_t, double, std::string,
// std::optional<int64_t | bool> (unset: JSON null, Python None),
// std::vector<std::string> (a CLI option taking 1 to 8 values; JSON takes a
// string too). Defaults and help text must hold no top-level comma (the
// preprocessor would split them): write {"a"} or a string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lazytrain::train {

// How a field is named and carried besides its member name and type.
// Written as `plain` or `plain.hf_name("x").cli_required()`.
struct ArgumentSpec {
  const char* hf_name_ = nullptr;         // JSON key and Python field when not the member's name
  const char* alias_ = nullptr;           // another name Hugging Face takes: read from JSON, a CLI flag, a Python field
  bool null_when_empty_ = false;          // a string whose unset value is "": JSON null, Python None
  bool json_list_ = false;                // written as a list of options ([] or [value], HF's fsdp); read from a string or a list
  bool cli_required_ = false;             // the CLI requires the flag
  bool cli_non_negative_ = false;         // CLI::NonNegativeNumber
  const char* cli_choices_ = nullptr;     // CLI::IsMember over these space-separated values
  const char* python_default_ = nullptr;  // Python's default (a string) when not the C++ one

  constexpr ArgumentSpec hf_name(const char* name) const { return with([&](ArgumentSpec& s) { s.hf_name_ = name; }); }
  constexpr ArgumentSpec alias(const char* name) const { return with([&](ArgumentSpec& s) { s.alias_ = name; }); }
  constexpr ArgumentSpec null_when_empty() const { return with([](ArgumentSpec& s) { s.null_when_empty_ = true; }); }
  constexpr ArgumentSpec json_list() const { return with([](ArgumentSpec& s) { s.json_list_ = true; }); }
  constexpr ArgumentSpec cli_required() const { return with([](ArgumentSpec& s) { s.cli_required_ = true; }); }
  constexpr ArgumentSpec cli_non_negative() const { return with([](ArgumentSpec& s) { s.cli_non_negative_ = true; }); }
  constexpr ArgumentSpec cli_choices(const char* values) const { return with([&](ArgumentSpec& s) { s.cli_choices_ = values; }); }
  constexpr ArgumentSpec python_default(const char* value) const { return with([&](ArgumentSpec& s) { s.python_default_ = value; }); }

 private:
  template <typename Change>
  constexpr ArgumentSpec with(Change change) const {
    ArgumentSpec s = *this;
    change(s);
    return s;
  }
};

inline constexpr ArgumentSpec plain{};

// X(type, member, default, spec, help), in Python's field order (HF's where it has the field).
// clang-format off
#define LAZYTRAIN_TRAINING_ARGUMENTS(X) \
  X(std::string, output_dir, "", plain.cli_required().python_default("trainer_output"), "Where to write the model, checkpoints, metrics and logs") \
  X(bool, overwrite_output_dir, false, plain, "Start over in a non-empty --output_dir instead of resuming from its newest checkpoint (nothing in it is deleted; files are overwritten as training writes them)") \
  X(bool, do_train, false, plain, "Run training") \
  X(bool, do_eval, false, plain, "Run evaluation on the validation set") \
  /* eval_strategy is HF's newer name */ \
  X(std::string, evaluation_strategy, "no", plain.alias("eval_strategy"), "When to evaluate during training: no, steps (every --eval_steps) or epoch") \
  X(int64_t, per_device_train_batch_size, 8, plain, "Batch size for training") \
  X(int64_t, per_device_eval_batch_size, 8, plain, "Batch size for evaluation") \
  /* each micro-batch's loss is divided by the number of micro-batches in its step */ \
  X(int64_t, gradient_accumulation_steps, 1, plain, "Micro-batches whose gradients are summed before each optimizer step") \
  X(double, learning_rate, 5e-5, plain, "Initial learning rate for AdamW") \
  X(double, weight_decay, 0.0, plain, "Weight decay for AdamW (not on biases and LayerNorm weights)") \
  X(double, adam_beta1, 0.9, plain, "AdamW beta1") \
  X(double, adam_beta2, 0.999, plain, "AdamW beta2") \
  X(double, adam_epsilon, 1e-8, plain, "AdamW epsilon") \
  X(double, max_grad_norm, 1.0, plain, "Max gradient norm (0 disables clipping)") \
  /* fractional: ceil(epochs * updates per epoch) steps */ \
  X(double, num_train_epochs, 3.0, plain, "Total number of training epochs (may be fractional)") \
  X(int64_t, max_steps, -1, plain, "If > 0: total number of optimizer steps (overrides num_train_epochs)") \
  /* transformers.SchedulerType's names */ \
  X(std::string, lr_scheduler_type, "linear", plain, "linear, cosine, constant or constant_with_warmup") \
  X(double, warmup_ratio, 0.0, plain, "Warm-up over this share of the steps (when --warmup_steps is 0)") \
  X(int64_t, warmup_steps, 0, plain, "Linear warm-up over this many steps") \
  /* empty: resolve() sets <output_dir>/runs/<date>_<hostname> */ \
  X(std::string, logging_dir, "", plain.null_when_empty(), "TensorBoard log directory (default: <output_dir>/runs/<date>_<host>)") \
  X(int64_t, logging_steps, 500, plain, "Log every X optimizer steps") \
  /* unset: logging_steps (resolve()) */ \
  X(std::optional<int64_t>, eval_steps, std::nullopt, plain, "Evaluate every X steps (default: --logging_steps)") \
  X(std::string, save_strategy, "steps", plain, "When to save a checkpoint: no, steps (every --save_steps) or epoch") \
  X(int64_t, save_steps, 500, plain, "Save a checkpoint-<step> every X steps") \
  X(std::optional<int64_t>, save_total_limit, std::nullopt, plain, "Keep at most this many checkpoints, removing the oldest (default: all)") \
  X(bool, load_best_model_at_end, false, plain, "At the end, load the checkpoint with the best --metric_for_best_model (and never remove it)") \
  /* empty: "loss" when load_best_model_at_end (resolve()) */ \
  X(std::string, metric_for_best_model, "", plain.null_when_empty(), "Metric to compare checkpoints by (default: loss)") \
  /* unset: false for a metric ending in "loss" (resolve()) */ \
  X(std::optional<bool>, greater_is_better, std::nullopt, plain, "Whether a larger metric is better (default: false for a loss)") \
  /* "all" becomes "tensorboard" (resolve()), the one integration lazytrain has */ \
  X(std::vector<std::string>, report_to, {"all"}, plain, "Where to report logs: all, tensorboard or none") \
  X(std::string, resume_from_checkpoint, "", plain.null_when_empty(), "A checkpoint-<step> directory, or 'latest' (the newest complete one in --output_dir), to resume training from") \
  X(bool, dataloader_drop_last, false, plain, "Drop the last incomplete training batch (default: pad it to the batch size; padding rows carry no loss)") \
  X(uint64_t, seed, 42, plain.cli_non_negative(), "Random seed (initialisation, shuffling, masking, dropout)") \
  X(bool, metrics_debug, false, plain.hf_name("tpu_metrics_debug"), "Print the metrics report (compile and execute times) at the end") \
  /* lazy/execution_mode.h */ \
  X(std::string, execution_mode, "lazy", plain.cli_choices("lazy debug_eager strict_eager fused_eager"), "How ops run: lazy (one graph a step), fused_eager (chunks compiled fused), strict_eager (each op alone, asynchronous) or debug_eager (each op alone, waited for: errors at the op)") \
  /* torch.autograd.set_detect_anomaly: every op runs alone */ \
  X(bool, detect_anomaly, false, plain, "Check every op's result for NaN/Inf and name the op's file and line (slow: ops run one by one)") \
  /* lazy/recompile_reasons.h */ \
  X(bool, debug_recompiles, false, plain, "Print why each graph compiled after the first step (the input or op that changed)") \
  /* lazy/step_analysis.h */ \
  X(bool, debug_graphs, false, plain, "Print one line a step: compiles, executions, host transfers and the reads that forced them") \
  X(bool, disable_tqdm, false, plain, "Do not print the progress bar") \
  /* torch.autocast('cpu', dtype=torch.bfloat16) semantics (tensor/autocast.h) */ \
  X(bool, bf16, false, plain, "bf16 mixed precision (torch.autocast on CPU): matmuls in bf16, weights and optimizer state in f32") \
  /* the model's gradient_checkpointing_enable() (nn/checkpoint.h) */ \
  X(bool, gradient_checkpointing, false, plain, "Recompute each transformer layer's activations during backward instead of keeping them: less memory, about one more forward per step") \
  X(int64_t, dataloader_num_workers, 0, plain, "Threads that collate batches (0: the loader thread)") \
  /* the DeviceLoader's queues (PyTorch/XLA's MpDeviceLoader arguments) */ \
  X(int64_t, loader_prefetch_size, 8, plain, "Host batches the DeviceLoader prepares ahead") \
  X(int64_t, device_prefetch_size, 4, plain, "Device batches the DeviceLoader transfers ahead") \
  /* xla_spawn.py's --num_cores: replicas of distributed::spawn; threads are divided among them */ \
  X(int64_t, num_cores, 1, plain, "Data-parallel replicas in this process (cpu:0..N-1, a thread each; as xla_spawn.py --num_cores); per_device_train_batch_size is per replica. Under mpirun, each process runs this many") \
  /* runtime/thread_budget.h */ \
  X(int64_t, num_threads, 0, plain, "Compute threads of this process (torch.set_num_threads); 0: the CPUs it may use (affinity mask and cgroup CPU quota; OMP_NUM_THREADS when set). --num_cores replicas divide them") \
  X(double, collective_timeout, 300.0, plain, "Seconds a replica waits for the others at a gradient exchange or rendezvous before failing, naming the missing one") \
  /* ZeRO stage 1: distributed::ZeroRedundancyAdamW */ \
  X(bool, sharded_optimizer, false, plain, "With several replicas, shard the AdamW state (ZeRO stage 1): each keeps 1/N of it; gradients are reduce-scattered and parameters all-gathered") \
  /* HF's fsdp (issue 34; distributed/spmd.h); "": data parallelism by replicas */ \
  X(std::string, fsdp, "", plain.json_list(), "full_shard: one SPMD program over the --num_cores devices (of every process), every parameter and its optimizer state split over them (FSDPv2), each batch too; per_device_train_batch_size is per device") \
  /* transformers 4.51's tp_size; mesh axes "data" and "model" (distributed/spmd.h megatron_plan); 1: none */ \
  X(int64_t, tp_size, 1, plain, "Tensor parallelism: one SPMD program over every device, a mesh of (devices / tp_size) x tp_size: Megatron's layout and vocabulary-parallel loss over tp_size devices, the batch over the rest")
// clang-format on

// One field as the derived forms see it.
struct TrainingArgumentField {
  const char* member;  // the C++ member's name, and the CLI's first flag
  const char* help;
  ArgumentSpec spec;

  // The JSON key and Python field name (Hugging Face's).
  const char* key() const { return spec.hf_name_ ? spec.hf_name_ : member; }
  // Whether a JSON key names this field (the member, HF's name or the alias).
  bool named(const std::string& name) const {
    return name == member || name == key() || (spec.alias_ && name == spec.alias_);
  }
  // CLI11's names: "--member[,--hf_name][,--alias]".
  std::string cli_names() const {
    std::string names = std::string("--") + member;
    if (spec.hf_name_) names += std::string(",--") + spec.hf_name_;
    if (spec.alias_) names += std::string(",--") + spec.alias_;
    return names;
  }
};

// visit(const TrainingArgumentField&, member&) for every field, in the list's
// order. `Args` is TrainingArguments or const TrainingArguments.
template <typename Args, typename Visitor>
void for_each_training_argument(Args& args, Visitor&& visit) {
#define LAZYTRAIN_VISIT_ARGUMENT(type, member, default_value, spec, help) visit(TrainingArgumentField{#member, help, spec}, args.member);
  LAZYTRAIN_TRAINING_ARGUMENTS(LAZYTRAIN_VISIT_ARGUMENT)
#undef LAZYTRAIN_VISIT_ARGUMENT
}

}  // namespace lazytrain::train
