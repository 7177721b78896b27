// The state of an AdamW optimizer as a checkpoint holds it, in Hugging Face's
// terms (the Trainer's optimizer.pt is torch.optim.AdamW.state_dict(): "state"
// with each parameter's exp_avg / exp_avg_sq, "param_groups" with lr, betas, eps,
// weight_decay). lazytrain names the tensors by the parameters' names instead of
// PyTorch's indices, so a checkpoint can be read and checked by name:
//   "<parameter name>.exp_avg", "<parameter name>.exp_avg_sq"
// and keeps the hyper-parameters and the step count in a JSON-able AdamWState.
//
// These are host values (Literals): the Trainer turns them into files
// (optimizer.safetensors: one train::TensorRecord per Literal, dtype
// safetensors_name(literal.dtype()), shape literal.shape(), bytes literal.raw();
// the AdamWState's to_json() in its metadata or a JSON file beside it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/literal.h"
#include "tensor/tensor.h"

namespace lazytrain::optim {

// Parameters with their names, as nn::Module::named_parameters() returns them.
// An optimizer finds each of its parameters in the list by identity
// (Tensor::is_same); entries for tensors it does not hold are ignored.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// One parameter group, as an entry of torch.optim.AdamW.state_dict()["param_groups"]
// (params: the parameters' names, in the group's order, instead of indices).
struct AdamWParamGroupState {
  std::vector<std::string> params;
  double lr = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  // Each parameter's update count (torch's state[i]["step"]), in params' order.
  std::vector<int64_t> steps;

  bool operator==(const AdamWParamGroupState&) const = default;
};

// The hyper-parameters and the step count (the number of step() calls); each
// parameter's own count, which sets its bias corrections 1 − β^t, is in its group.
struct AdamWState {
  int64_t step = 0;
  std::vector<AdamWParamGroupState> param_groups;

  bool operator==(const AdamWState&) const = default;

  // {"step": 3, "param_groups": [{"params": ["dense.weight", ...], "lr": 0.001,
  //   "betas": [0.9, 0.999], "eps": 1e-08, "weight_decay": 0.01, "steps": [3, ...]}, ...]}
  // (PyTorch's param_groups keys). Doubles read back bit for bit. A group
  // without "steps" (a checkpoint written before they were kept) reads as
  // every parameter at "step".
  nlohmann::json to_json() const;
  // The inverse of to_json(); throws Error naming `source` and the key when a
  // key is missing or has the wrong type, or step < 0.
  static AdamWState from_json(const nlohmann::json& j, const std::string& source);
};

// Everything AdamW::load_state_dict needs: the JSON-able part and the moments,
// two per parameter ("<name>.exp_avg", "<name>.exp_avg_sq"), each with the
// parameter's shape and dtype (f32 for f32 parameters).
struct AdamWStateDict {
  AdamWState state;
  std::map<std::string, Literal> tensors;
};

}  // namespace lazytrain::optim
