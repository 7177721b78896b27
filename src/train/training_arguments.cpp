#include "train/training_arguments.h"

#include "core/error.h"

namespace lazytrain::train {

void TrainingArguments::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw Error("[TrainingArguments] " + what);
  };
  require(!output_dir.empty(), "--output_dir is required");
  require(per_device_train_batch_size > 0, "--per_device_train_batch_size must be positive");
  require(per_device_eval_batch_size > 0, "--per_device_eval_batch_size must be positive");
  require(dataloader_num_workers >= 0 && dataloader_num_workers <= 64, "--dataloader_num_workers must be between 0 and 64");
  require(loader_prefetch_size >= 1 && device_prefetch_size >= 1, "--loader_prefetch_size and --device_prefetch_size must be at least 1");
  require(learning_rate >= 0, "--learning_rate must be non-negative");
  require(weight_decay >= 0, "--weight_decay must be non-negative");
  require(max_grad_norm >= 0, "--max_grad_norm must be non-negative");
  require(num_train_epochs > 0 || max_steps > 0, "--num_train_epochs or --max_steps must be positive");
  require(warmup_steps >= 0, "--warmup_steps must be non-negative");
  require(logging_steps > 0, "--logging_steps must be positive");
  require(adam_beta1 >= 0 && adam_beta1 < 1 && adam_beta2 >= 0 && adam_beta2 < 1, "--adam_beta1/--adam_beta2 must be in [0, 1)");
  require(adam_epsilon >= 0, "--adam_epsilon must be non-negative");
}

}  // namespace lazytrain::train
