// Gradient clipping by global L2 norm (torch.nn.utils.clip_grad_norm_, PyTorch 1.13):
//   total = ‖(‖g_1‖, …, ‖g_n‖)‖;  g_i ← g_i · min(1, max_norm / (total + 1e-6))
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace lazytrain::optim {

// Scales the grads of `params` in place (lazily, no sync) and returns the total
// norm as a 0-d tensor. Parameters without a grad are skipped. Throws Error when
// max_norm <= 0.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

}  // namespace lazytrain::optim
