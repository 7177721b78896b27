// AdamW with PyTorch's semantics (torch.optim.AdamW, single-tensor path):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + eps)
// where t counts the steps that updated this parameter (torch's per-parameter
// state["step"]): a parameter whose first gradient comes late gets t = 1 then.
// (Loshchilov & Hutter, "Decoupled Weight Decay Regularization").
//
// The update is recorded lazily into the step's graph. The learning rate and the
// bias corrections change every step, so they enter the graph as device data,
// never as constants: a training loop compiles once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "optim/adamw_state.h"
#include "tensor/tensor.h"

namespace lazytrain::optim {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;

  // Throws Error "[op] Invalid ..." (PyTorch's wording) for lr < 0, eps < 0 or
  // a beta outside [0, 1), or any of them not finite.
  void validate(const std::string& op) const;
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
  virtual ~AdamW() = default;

  // One update of every parameter that has a grad(); parameters without one are
  // skipped (their state is untouched), as PyTorch does.
  virtual void step();
  // Drops every gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }
  // The number of step() calls.
  int64_t step_count() const { return step_; }
  // The number of updates of parameter i of group g (torch's state["step"]).
  int64_t param_step(size_t group, size_t index) const { return steps_[group][index]; }

  // State of parameter i of group g (zeros before its first step).
  Tensor exp_avg(size_t group, size_t index) const { return state_[group][index].exp_avg; }
  Tensor exp_avg_sq(size_t group, size_t index) const { return state_[group][index].exp_avg_sq; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Bytes of optimizer state this replica holds (the moments).
  int64_t state_bytes() const;

  // ---- checkpoints (optim/adamw_state.h; implemented in adamw_state.cpp) ----
  // The state to save: the step count, each group's hyper-parameters with its
  // parameters' names, and every moment as a host Literal under
  // "<name>.exp_avg" / "<name>.exp_avg_sq", bit for bit. `names` gives every
  // parameter of this optimizer its name (model.named_parameters()). Reads the
  // moments from the device: call after lazy::mark_step(); pending moments are
  // synced first (one graph per device). Throws Error when a parameter has no
  // name in `names` (naming its group, index and shape) or a name is listed twice.
  virtual AdamWStateDict state_dict(const NamedTensors& names) const;
  // Restores a state_dict() (torch.optim.Optimizer.load_state_dict): the step
  // count, lr, betas, eps and each group's weight_decay, and the moments as
  // device data on each parameter's device, so that training continues exactly
  // as the saved run would have. Everything is checked before anything is
  // assigned (no partial load); Error (naming the tensor or key) when: a
  // parameter has no name in `names`; the groups differ in number or in their
  // parameters' names and order; the groups' lr, betas or eps differ (AdamW
  // here has one of each) or are invalid (as the constructor checks); a moment
  // is missing, has another dtype or shape than its parameter, or a tensor is
  // not one of this optimizer's moments.
  virtual void load_state_dict(const AdamWStateDict& state_dict, const NamedTensors& names);

 protected:
  struct State {
    Tensor exp_avg, exp_avg_sq;
  };
  // The step's changing numbers as device data on the current device:
  // lr / (1 - beta1^t) and sqrt(1 - beta2^t) for a parameter's step count t.
  struct StepScalars {
    Tensor step_size, bias_correction2_sqrt;
  };
  StepScalars step_scalars(int64_t t) const;
  // Counts one more update of parameter i of group g and returns its scalars,
  // made once per distinct count in one step() (`cache`).
  const StepScalars& advance(size_t group, size_t index, std::map<int64_t, StepScalars>& cache);
  // One AdamW update of `param` (detached) with gradient `grad` and moments
  // `state`, for a group of weight decay `weight_decay` (`decay` = 1 - lr * wd
  // as device data, unused when wd is 0): the new parameter and moments.
  struct Updated {
    Tensor param, exp_avg, exp_avg_sq;
  };
  Updated update(const Tensor& param, const Tensor& grad, const State& state, double weight_decay, const Tensor& decay,
                 const StepScalars& scalars) const;

  std::vector<ParamGroup> groups_;
  AdamWOptions options_;
  std::vector<std::vector<State>> state_;
  std::vector<std::vector<int64_t>> steps_;  // per parameter, as state_
  int64_t step_ = 0;
};

// `moment`, a whole value of `param`'s shape, laid out as `param` is (SPMD,
// issue 34: cut into the tiles of the devices that hold param's); returned
// unchanged when param is whole. AdamW's moments are made and loaded so, so
// that every step reads one layout and the loop compiles one step graph.
Tensor laid_out_like(Tensor moment, const Tensor& param);

}  // namespace lazytrain::optim
