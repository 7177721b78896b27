// AdamW with PyTorch 1.13's semantics (torch.optim.AdamW, single-tensor path):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + eps)
// (Loshchilov & Hutter, "Decoupled Weight Decay Regularization").
//
// The update is recorded lazily into the step's graph. The learning rate and the
// bias corrections change every step, so they enter the graph as device data,
// never as constants: a training loop compiles once.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace lazytrain::optim {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

// Parameters sharing one weight decay (the Trainer makes two groups: decay and
// no decay for biases and LayerNorm weights).
struct ParamGroup {
  std::vector<Tensor> params;
  double weight_decay = 0.0;
};

class AdamW {
 public:
  // Throws Error for lr < 0, eps < 0, betas outside [0, 1).
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options);

  // One update of every parameter that has a grad(); parameters without one are
  // skipped (their state is untouched), as PyTorch does.
  void step();
  // Drops every gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }
  int64_t step_count() const { return step_; }

  // State of parameter i of group g (zeros before its first step).
  Tensor exp_avg(size_t group, size_t index) const { return state_[group][index].exp_avg; }
  Tensor exp_avg_sq(size_t group, size_t index) const { return state_[group][index].exp_avg_sq; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

 private:
  struct State {
    Tensor exp_avg, exp_avg_sq;
  };
  std::vector<ParamGroup> groups_;
  AdamWOptions options_;
  std::vector<std::vector<State>> state_;
  int64_t step_ = 0;
};

}  // namespace lazytrain::optim
