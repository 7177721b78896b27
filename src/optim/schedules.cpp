#include "optim/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lazytrain::optim {
namespace {

// The warm-up ramp shared by every schedule: step / max(1, warmup).
double warmup_factor(int64_t step, int64_t warmup_steps) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
}

}  // namespace

double linear_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps) {
  if (step < warmup_steps) return warmup_factor(step, warmup_steps);
  return std::max(0.0, static_cast<double>(total_steps - step) / static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps)));
}

double cosine_schedule_with_warmup(int64_t step, int64_t warmup_steps, int64_t total_steps, double num_cycles) {
  if (step < warmup_steps) return warmup_factor(step, warmup_steps);
  const double progress =
      static_cast<double>(step - warmup_steps) / static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  // Evaluated in Python's order (π · cycles · 2 · progress, left to right) so the
  // double result is the one transformers computes.
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress)));
}

double constant_schedule_with_warmup(int64_t step, int64_t warmup_steps) {
  if (step < warmup_steps) return warmup_factor(step, warmup_steps);
  return 1.0;
}

}  // namespace lazytrain::optim
