#include "optim/clip_grad.h"

#include "core/error.h"

namespace lazytrain::optim {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  check(max_norm > 0, "clip_grad_norm_", "max_norm must be positive, got " + std::to_string(max_norm));
  NoGradGuard no_grad;
  Tensor total_sq;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    grads.push_back(g);
    Tensor sq = sum(mul(g, g));
    total_sq = total_sq.defined() ? add(total_sq, sq) : sq;
  }
  if (grads.empty()) return zeros({});
  runtime::DeviceGuard on_gradient_device(grads[0].device());
  Tensor total = sqrt(total_sq);
  Tensor coef = minimum(div(full({}, max_norm), add(total, 1e-6)), full({}, 1.0));
  for (size_t i = 0, j = 0; i < params.size(); ++i) {
    if (params[i].grad().defined()) params[i].set_grad(mul(grads[j++], coef));
  }
  return total;
}

}  // namespace lazytrain::optim
