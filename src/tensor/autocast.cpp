#include "tensor/autocast.h"

#include "core/error.h"
#include "tensor/ops.h"

namespace lazytrain {

namespace {
thread_local bool autocast_enabled = false;
thread_local DType autocast_lower_dtype = DType::kBFloat16;
}  // namespace

AutocastGuard::AutocastGuard(bool enabled, DType dtype) : previous_enabled_(autocast_enabled), previous_dtype_(autocast_lower_dtype) {
  check(dtype == DType::kBFloat16 || dtype == DType::kFloat16, "autocast",
        "expected dtype bfloat16 or float16, got " + torch_name(dtype));
  autocast_enabled = enabled;
  autocast_lower_dtype = dtype;
}

AutocastGuard::~AutocastGuard() {
  autocast_enabled = previous_enabled_;
  autocast_lower_dtype = previous_dtype_;
}

bool is_autocast_enabled() { return autocast_enabled; }
DType autocast_dtype() { return autocast_lower_dtype; }

Tensor autocast_to_lower(const Tensor& x) {
  if (!autocast_enabled || !x.defined() || x.dtype() != DType::kFloat32) return x;
  return to_dtype(x, autocast_lower_dtype);
}

Tensor autocast_to_float(const Tensor& x) {
  if (!autocast_enabled || !x.defined() || (x.dtype() != DType::kBFloat16 && x.dtype() != DType::kFloat16)) return x;
  return to_dtype(x, DType::kFloat32);
}

}  // namespace lazytrain
