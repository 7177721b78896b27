// Learning-rate schedules, as transformers' get_linear_schedule_with_warmup.
#pragma once

#include <cstdint>

namespace lazytrain::optim {

// Multiplier of the base learning rate at `step` (0-based optimizer steps):
// step / warmup while warming up, then linear decay to 0 at total_steps.
double linear_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps);

}  // namespace lazytrain::optim
