#include "optim/lr_scheduler.h"

#include <algorithm>

namespace lazytrain::optim {

double linear_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps) {
  if (step < warmup_steps) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  return std::max(0.0, static_cast<double>(total_steps - step) / static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps)));
}

}  // namespace lazytrain::optim
