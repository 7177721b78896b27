#include "apps/training_flags.h"

namespace lazytrain::apps {

void add_training_arguments(CLI::App& c, train::TrainingArguments& t) {
  c.add_option("--output_dir", t.output_dir, "Where to write the model, checkpoints, metrics and logs")->required();
  c.add_flag("--overwrite_output_dir", t.overwrite_output_dir,
             "Start over in a non-empty --output_dir instead of resuming from its newest checkpoint (nothing in it is deleted; files are overwritten as training writes them)");
  c.add_flag("--do_train", t.do_train, "Run training");
  c.add_flag("--do_eval", t.do_eval, "Run evaluation on the validation set");
  c.add_option("--per_device_train_batch_size", t.per_device_train_batch_size, "Batch size for training");
  c.add_option("--per_device_eval_batch_size", t.per_device_eval_batch_size, "Batch size for evaluation");
  c.add_option("--gradient_accumulation_steps", t.gradient_accumulation_steps,
               "Micro-batches whose gradients are summed before each optimizer step");
  c.add_option("--learning_rate", t.learning_rate, "Initial learning rate for AdamW");
  c.add_option("--weight_decay", t.weight_decay, "Weight decay for AdamW (not on biases and LayerNorm weights)");
  c.add_option("--adam_beta1", t.adam_beta1, "AdamW beta1");
  c.add_option("--adam_beta2", t.adam_beta2, "AdamW beta2");
  c.add_option("--adam_epsilon", t.adam_epsilon, "AdamW epsilon");
  c.add_option("--max_grad_norm", t.max_grad_norm, "Max gradient norm (0 disables clipping)");
  c.add_option("--num_train_epochs", t.num_train_epochs, "Total number of training epochs (may be fractional)");
  c.add_option("--max_steps", t.max_steps, "If > 0: total number of optimizer steps (overrides num_train_epochs)");
  c.add_option("--lr_scheduler_type", t.lr_scheduler_type, "linear, cosine, constant or constant_with_warmup");
  c.add_option("--warmup_ratio", t.warmup_ratio, "Warm-up over this share of the steps (when --warmup_steps is 0)");
  c.add_option("--warmup_steps", t.warmup_steps, "Linear warm-up over this many steps");
  c.add_option("--logging_dir", t.logging_dir, "TensorBoard log directory (default: <output_dir>/runs/<date>_<host>)");
  c.add_option("--logging_steps", t.logging_steps, "Log every X optimizer steps");
  c.add_option("--evaluation_strategy,--eval_strategy", t.evaluation_strategy,
               "When to evaluate during training: no, steps (every --eval_steps) or epoch");
  c.add_option("--eval_steps", t.eval_steps, "Evaluate every X steps (default: --logging_steps)");
  c.add_option("--save_strategy", t.save_strategy, "When to save a checkpoint: no, steps (every --save_steps) or epoch");
  c.add_option("--save_steps", t.save_steps, "Save a checkpoint-<step> every X steps");
  c.add_option("--save_total_limit", t.save_total_limit, "Keep at most this many checkpoints, removing the oldest (default: all)");
  c.add_flag("--load_best_model_at_end", t.load_best_model_at_end,
             "At the end, load the checkpoint with the best --metric_for_best_model (and never remove it)");
  c.add_option("--metric_for_best_model", t.metric_for_best_model, "Metric to compare checkpoints by (default: loss)");
  c.add_option("--greater_is_better", t.greater_is_better, "Whether a larger metric is better (default: false for a loss)");
  c.add_option("--report_to", t.report_to, "Where to report logs: all, tensorboard or none")
      ->expected(1, 8)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c.add_option("--resume_from_checkpoint", t.resume_from_checkpoint,
               "A checkpoint-<step> directory, or 'latest' (the newest complete one in --output_dir), to resume training from");
  c.add_flag("--dataloader_drop_last", t.dataloader_drop_last,
             "Drop the last incomplete training batch (default: pad it to the batch size; padding rows carry no loss)");
  c.add_option("--seed", t.seed, "Random seed (initialisation, shuffling, masking, dropout)")->check(CLI::NonNegativeNumber);
  c.add_flag("--metrics_debug,--tpu_metrics_debug", t.metrics_debug, "Print the metrics report (compile and execute times) at the end");
  c.add_option("--execution_mode", t.execution_mode,
               "How ops run: lazy (one graph a step), fused_eager (chunks compiled fused), strict_eager (each op alone, "
               "asynchronous) or debug_eager (each op alone, waited for: errors at the op)")
      ->check(CLI::IsMember({"lazy", "debug_eager", "strict_eager", "fused_eager"}));
  c.add_flag("--detect_anomaly", t.detect_anomaly, "Check every op's result for NaN/Inf and name the op's file and line (slow: ops run one by one)");
  c.add_flag("--debug_recompiles", t.debug_recompiles, "Print why each graph compiled after the first step (the input or op that changed)");
  c.add_flag("--debug_graphs", t.debug_graphs, "Print one line a step: compiles, executions, host transfers and the reads that forced them");
  c.add_flag("--disable_tqdm", t.disable_tqdm, "Do not print the progress bar");
  c.add_option("--dataloader_num_workers", t.dataloader_num_workers, "Threads that collate batches (0: the loader thread)");
  c.add_option("--loader_prefetch_size", t.loader_prefetch_size, "Host batches the DeviceLoader prepares ahead");
  c.add_option("--device_prefetch_size", t.device_prefetch_size, "Device batches the DeviceLoader transfers ahead");
  c.add_option("--num_cores", t.num_cores,
               "Data-parallel replicas in this process (cpu:0..N-1, a thread each; as xla_spawn.py --num_cores); "
               "per_device_train_batch_size is per replica. Under mpirun, each process runs this many");
  c.add_option("--num_threads", t.num_threads,
               "Compute threads of this process (torch.set_num_threads); 0: the CPUs it may use (affinity mask and "
               "cgroup CPU quota; OMP_NUM_THREADS when set). --num_cores replicas divide them");
  c.add_flag("--sharded_optimizer", t.sharded_optimizer,
             "With several replicas, shard the AdamW state (ZeRO stage 1): each keeps 1/N of it; gradients are "
             "reduce-scattered and parameters all-gathered");
  c.add_option("--fsdp", t.fsdp,
               "full_shard: one SPMD program over the --num_cores devices (of every process), every parameter and its "
               "optimizer state split over them (FSDPv2), each batch too; per_device_train_batch_size is per device");
  c.add_option("--tp_size", t.tp_size,
               "Tensor parallelism: one SPMD program over every device, a mesh of (devices / tp_size) x tp_size: "
               "Megatron's layout and vocabulary-parallel loss over tp_size devices, the batch over the rest");
  c.add_option("--collective_timeout", t.collective_timeout,
               "Seconds a replica waits for the others at a gradient exchange or rendezvous before failing, naming the missing one");
  c.add_flag("--bf16", t.bf16, "bf16 mixed precision (torch.autocast on CPU): matmuls in bf16, weights and optimizer state in f32");
  c.add_flag("--gradient_checkpointing", t.gradient_checkpointing,
             "Recompute each transformer layer's activations during backward instead of keeping them: less memory, "
             "about one more forward per step");
}

}  // namespace lazytrain::apps
