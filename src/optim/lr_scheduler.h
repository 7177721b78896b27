// Learning-rate schedules: PyTorch's torch.optim.lr_scheduler.LambdaLR and the
// schedules of Hugging Face transformers (optimization.py: get_*_schedule*,
// get_scheduler), whose multipliers are in optim/schedules.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "optim/adamw.h"
#include "optim/schedules.h"

namespace lazytrain::optim {

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
  // The rate each group had when the scheduler was made (or was loaded).
  std::vector<double> base_lrs() const;

  // The state as JSON with the keys of PyTorch 1.13's LambdaLR.state_dict()
  // that carry meaning (what a Trainer writes as scheduler.json):
  //   {"base_lrs": [lr, ...], "last_epoch": k, "_step_count": k + 1, "_last_lr": [lr, ...]}
  // one entry per parameter group. Doubles are written by nlohmann::json with
  // enough digits to read back bit for bit.
  nlohmann::json state_dict() const;
  // Restores state_dict()'s keys (other keys, such as PyTorch's "verbose" or
  // "lr_lambdas", are ignored) and sets the optimizer's rate to "_last_lr", so
  // the next step() continues the schedule where the saved run was. The lambda
  // is not part of the state: make the scheduler with the same schedule first.
  // Throws Error naming `source` and the key, before changing anything, when a
  // key is missing or mistyped, a list's length is not the number of parameter
  // groups, its rates differ between groups (one rate here), a rate is negative
  // or not finite, last_epoch < 0, or _step_count != last_epoch + 1.
  void load_state_dict(const nlohmann::json& state, const std::string& source = "scheduler state");

 private:
  AdamW& optimizer_;
  std::function<double(int64_t)> lr_lambda_;
  double base_lr_;
  int64_t last_epoch_ = 0;
};

// transformers.get_linear_schedule_with_warmup: linear_schedule_with_warmup as a LambdaLR.
LambdaLR get_linear_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps);
// transformers.get_cosine_schedule_with_warmup: cosine_schedule_with_warmup as a LambdaLR.
LambdaLR get_cosine_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps,
                                         double num_cycles = 0.5);
// transformers.get_constant_schedule: the factor 1 at every step.
LambdaLR get_constant_schedule(AdamW& optimizer);
// transformers.get_constant_schedule_with_warmup: constant_schedule_with_warmup as a LambdaLR.
LambdaLR get_constant_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps);

// The names get_scheduler accepts: transformers.SchedulerType's values that
// lazytrain has, in this order: linear, cosine, constant, constant_with_warmup.
const std::vector<std::string>& scheduler_type_names();

// transformers.get_scheduler (what TrainingArguments.lr_scheduler_type picks):
//   "linear"               get_linear_schedule_with_warmup(warmup, training)
//   "cosine"               get_cosine_schedule_with_warmup(warmup, training, 0.5)
//   "constant"             get_constant_schedule (both step counts unused)
//   "constant_with_warmup" get_constant_schedule_with_warmup(warmup)
// Throws Error for any other name, listing the valid ones:
//   [get_scheduler] unknown scheduler type 'cosin'; expected one of: linear, cosine, constant, constant_with_warmup
LambdaLR get_scheduler(const std::string& name, AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps);

}  // namespace lazytrain::optim
