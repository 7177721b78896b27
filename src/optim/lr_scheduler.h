// Learning-rate schedules, as PyTorch's torch.optim.lr_scheduler.LambdaLR and
// transformers' get_linear_schedule_with_warmup.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "optim/adamw.h"

namespace lazytrain::optim {

// Multiplier of the base learning rate at `step` (0-based optimizer steps):
// step / warmup while warming up, then linear decay to 0 at total_steps.
double linear_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps);

// LambdaLR: the optimizer's learning rate is base_lr * lr_lambda(last_epoch),
// where base_lr is the optimizer's rate when the scheduler is made and
// last_epoch counts step() calls (0 at first, as PyTorch applies lambda(0) on
// construction). The optimizer must outlive the scheduler.
class LambdaLR {
 public:
  LambdaLR(AdamW& optimizer, std::function<double(int64_t step)> lr_lambda);
  // Advances one optimizer step and sets the new rate.
  void step();
  // The rate of each parameter group now (one rate for all groups here).
  std::vector<double> get_last_lr() const;
  int64_t last_epoch() const { return last_epoch_; }

 private:
  AdamW& optimizer_;
  std::function<double(int64_t)> lr_lambda_;
  double base_lr_;
  int64_t last_epoch_ = 0;
};

// transformers.get_linear_schedule_with_warmup: linear_schedule_with_warmup as a LambdaLR.
LambdaLR get_linear_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps);

}  // namespace lazytrain::optim
