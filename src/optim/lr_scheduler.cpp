#include "optim/lr_scheduler.h"

#include <algorithm>

namespace lazytrain::optim {

double linear_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps) {
  if (step < warmup_steps) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  return std::max(0.0, static_cast<double>(total_steps - step) / static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps)));
}

LambdaLR::LambdaLR(AdamW& optimizer, std::function<double(int64_t)> lr_lambda)
    : optimizer_(optimizer), lr_lambda_(std::move(lr_lambda)), base_lr_(optimizer.lr()) {
  optimizer_.set_lr(base_lr_ * lr_lambda_(0));
}

void LambdaLR::step() {
  ++last_epoch_;
  optimizer_.set_lr(base_lr_ * lr_lambda_(last_epoch_));
}

std::vector<double> LambdaLR::get_last_lr() const {
  return std::vector<double>(optimizer_.param_groups().size(), optimizer_.lr());
}

LambdaLR get_linear_schedule_with_warmup(AdamW& optimizer, int64_t num_warmup_steps, int64_t num_training_steps) {
  return LambdaLR(optimizer, [num_warmup_steps, num_training_steps](int64_t step) {
    return linear_schedule_with_warmup(step, num_warmup_steps, num_training_steps);
  });
}

}  // namespace lazytrain::optim
