// Learning-rate multipliers of Hugging Face transformers' schedules
// (transformers/optimization.py, v4.x): the factor LambdaLR applies to the base
// learning rate at optimizer step `step` (0-based; step 0 is the rate before the
// first update). Plain functions of integers, so a schedule's values can be
// checked without an optimizer.
#pragma once

#include <cstdint>

namespace lazytrain::optim {

// get_linear_schedule_with_warmup:
//   step < warmup:  step / max(1, warmup)
//   otherwise:      max(0, (total - step) / max(1, total - warmup))
double linear_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps);

// get_cosine_schedule_with_warmup (num_cycles = 0.5: one half cosine down to 0):
//   step < warmup:  step / max(1, warmup)
//   otherwise:      progress = (step - warmup) / max(1, total - warmup)
//                   max(0, 0.5 · (1 + cos(π · num_cycles · 2 · progress)))
double cosine_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps, double num_cycles = 0.5);

// get_constant_schedule_with_warmup:
//   step < warmup:  step / max(1, warmup);  otherwise 1
// (get_constant_schedule is the factor 1 at every step.)
double constant_schedule_with_warmup(int64_t step, int64_t warmup_steps);

}  // namespace lazytrain::optim
