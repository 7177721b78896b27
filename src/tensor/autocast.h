// Automatic mixed precision, as torch.autocast('cpu', dtype=torch.bfloat16):
// inside an enabled AutocastGuard, matrix products (matmul, linear) cast their
// floating inputs to the autocast dtype and produce it (oneDNN accumulates in
// f32), while layer_norm, softmax, log_softmax and cross_entropy cast their input
// to f32 and compute in f32. Every other op runs in its inputs' promoted dtype,
// so parameters (master weights), their gradients and the optimizer state stay
// f32: a gradient reaching an f32 tensor through a cast is cast back to f32.
//
// The state is per thread, like PyTorch's. Backward runs outside the guard and
// replays the casts recorded in the forward.
#pragma once

#include "core/dtype.h"
#include "tensor/tensor.h"

namespace lazytrain {

class AutocastGuard {
 public:
  // `dtype` must be bf16 or f16 (Error otherwise).
  explicit AutocastGuard(bool enabled, DType dtype = DType::kBFloat16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool previous_enabled_;
  DType previous_dtype_;
};

bool is_autocast_enabled();
// The lower-precision dtype of the innermost guard (bf16 by default).
DType autocast_dtype();

// Under autocast: an f32 tensor cast to the autocast dtype; otherwise (or for
// non-f32 tensors, or undefined ones) `x` itself.
Tensor autocast_to_lower(const Tensor& x);
// Under autocast: a bf16/f16 tensor cast to f32; otherwise `x` itself.
Tensor autocast_to_float(const Tensor& x);

}  // namespace lazytrain
