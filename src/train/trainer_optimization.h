// The optimizer and learning-rate schedule of one Trainer::train() call
// (Hugging Face's create_optimizer_and_scheduler), and their checkpoint files:
// optimizer.safetensors (the AdamW moments under "<parameter>.exp_avg" /
// "<parameter>.exp_avg_sq", the step and hyper-parameters in the
// "__metadata__" entry "optimizer_state") and scheduler.json (LambdaLR.state_dict()).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/adamw.h"
#include "optim/lr_scheduler.h"
#include "train/trainer.h"
#include "train/training_arguments.h"

namespace lazytrain::train {

struct TrainerOptimization {
  std::vector<Tensor> params;
  std::unique_ptr<optim::AdamW> optimizer;  // a distributed::ZeroRedundancyAdamW when `sharded`
  std::unique_ptr<optim::LambdaLR> scheduler;
  bool sharded = false;  // the optimizer exchanges the gradients and clips them itself
};

// AdamW over the decay / no-decay groups (split_weight_decay) — sharded over
// the replicas (distributed::ZeroRedundancyAdamW, clipping at
// args.max_grad_norm) with args.sharded_optimizer and more than one — and
// get_scheduler(args.lr_scheduler_type) with warmup_steps, or
// ceil(warmup_ratio * max_steps) when warmup_steps is 0 (TrainingArguments.get_warmup_steps).
TrainerOptimization make_optimization(nn::Module& model, const TrainingArguments& args, int64_t max_steps);

// Writes <dir>/optimizer.safetensors (from `state`: opt.optimizer->state_dict(),
// which every replica computes when the optimizer is sharded) and <dir>/scheduler.json.
void save_optimization(const TrainerOptimization& opt, const optim::AdamWStateDict& state, const std::string& dir);
// Restores both files (checked in full before anything is assigned). Throws
// Error naming the file and tensor or key for a missing file, a moment of
// another name or shape, or other hyper-parameters than this run's.
void load_optimization(TrainerOptimization& opt, const nn::Module& model, const std::string& dir);

// Loads <dir>/model.safetensors into `model` (train/model_io.h).
void load_model_weights(nn::Module& model, const std::string& dir);

}  // namespace lazytrain::train
