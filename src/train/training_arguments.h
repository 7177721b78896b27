// TrainingArguments: the Hugging Face Trainer's arguments (names and defaults of
// transformers.TrainingArguments) that lazytrain implements.
#pragma once

#include <cstdint>
#include <string>

namespace lazytrain::train {

struct TrainingArguments {
  std::string output_dir;
  bool overwrite_output_dir = false;
  bool do_train = false;
  bool do_eval = false;
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 8;
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  double num_train_epochs = 3.0;
  int64_t max_steps = -1;  // > 0 overrides num_train_epochs
  int64_t warmup_steps = 0;
  int64_t logging_steps = 500;
  uint64_t seed = 42;
  bool metrics_debug = false;  // alias --tpu_metrics_debug: print the metrics report
  bool disable_tqdm = false;
  // bf16 mixed precision: the forward and the loss run under
  // torch.autocast('cpu', dtype=torch.bfloat16) semantics (tensor/autocast.h);
  // weights, gradients and optimizer state stay f32.
  bool bf16 = false;
  // Threads that collate batches (0: the DeviceLoader's loader thread does it).
  int64_t dataloader_num_workers = 0;
  // DeviceLoader queues (PyTorch/XLA's MpDeviceLoader arguments).
  int64_t loader_prefetch_size = 8;
  int64_t device_prefetch_size = 4;

  // Throws Error naming the argument for a value out of range.
  void validate() const;
};

}  // namespace lazytrain::train
