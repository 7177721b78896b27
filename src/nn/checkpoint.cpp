#include "nn/checkpoint.h"

#include "tensor/autocast.h"
#include "tensor/autograd.h"
#include "tensor/ops.h"

namespace lazytrain::nn {

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input) {
  if (!is_grad_enabled() || !input.requires_grad()) return fn(input);
  const RngState rng = get_rng_state();
  const bool autocast = is_autocast_enabled();
  const DType autocast_type = autocast_dtype();
  Tensor out;
  {
    NoGradGuard no_grad;
    out = fn(input);
  }
  auto recompute_backward = [fn, rng, autocast, autocast_type, saved = input.detach()](const Tensor& grad_output) {
    // The recomputation reads its input through a barrier on the incoming
    // gradient: computed after it (late, while the backward is here), never
    // merged with the forward's own computation.
    Tensor x = optimization_barrier(saved, grad_output).detach();
    x.requires_grad_(true);
    const RngState now = get_rng_state();
    set_rng_state(rng);
    Tensor y;
    {
      EnableGradGuard grad;
      AutocastGuard cast(autocast, autocast_type);
      y = fn(x);
    }
    set_rng_state(now);
    autograd::run_backward(y, grad_output);
    return std::vector<Tensor>{x.grad()};
  };
  return autograd::record(out, "CheckpointFunctionBackward", {input}, recompute_backward);
}

}  // namespace lazytrain::nn
