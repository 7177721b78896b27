// AdamWState's JSON form and AdamW::state_dict / load_state_dict (optim/adamw.h).
#include "optim/adamw_state.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "lazy/lazy_api.h"
#include "optim/adamw.h"

namespace lazytrain::optim {
namespace {

const nlohmann::json& key(const nlohmann::json& j, const std::string& name, const std::string& where, const std::string& source) {
  auto it = j.find(name);
  check(it != j.end(), "AdamWState", source + ": " + where + " has no key '" + name + "'");
  return *it;
}

double number(const nlohmann::json& j, const std::string& name, const std::string& where, const std::string& source) {
  const nlohmann::json& v = key(j, name, where, source);
  check(v.is_number(), "AdamWState", source + ": " + where + "'s '" + name + "' is " + v.dump() + ", expected a number");
  return v.get<double>();
}

// Each parameter of `groups`, group by group, with its name from `names`
// (matched by identity). Throws Error naming `op` for a parameter without a name.
std::vector<std::vector<std::string>> names_of(const std::vector<ParamGroup>& groups, const NamedTensors& names, const std::string& op) {
  std::map<const TensorImpl*, const std::string*> by_tensor;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : names) {
    check(seen.insert(name).second, op, "the name '" + name + "' is listed twice");
    if (tensor.defined()) by_tensor.emplace(tensor.impl().get(), &name);
  }
  std::vector<std::vector<std::string>> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    out.emplace_back();
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor& p = groups[g].params[i];
      auto it = by_tensor.find(p.impl().get());
      check(it != by_tensor.end(), op,
            "parameter " + std::to_string(i) + " of group " + std::to_string(g) + " (" + torch_name(p.dtype()) + shape_str(p.shape()) +
                ") has no name in the list given; expected every optimized parameter in it (model.named_parameters())");
      out.back().push_back(*it->second);
    }
  }
  return out;
}

std::string list_str(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return "[" + s + "]";
}

}  // namespace

nlohmann::json AdamWState::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : param_groups) {
    groups.push_back({{"params", g.params}, {"lr", g.lr}, {"betas", {g.beta1, g.beta2}}, {"eps", g.eps}, {"weight_decay", g.weight_decay},
                      {"steps", g.steps}});
  }
  return {{"step", step}, {"param_groups", groups}};
}

AdamWState AdamWState::from_json(const nlohmann::json& j, const std::string& source) {
  check(j.is_object(), "AdamWState", source + ": expected a JSON object with 'step' and 'param_groups'");
  AdamWState s;
  const nlohmann::json& step = key(j, "step", "the state", source);
  check(step.is_number_integer() && step.get<int64_t>() >= 0, "AdamWState", source + ": 'step' is " + step.dump() + ", expected an integer >= 0");
  s.step = step.get<int64_t>();
  const nlohmann::json& groups = key(j, "param_groups", "the state", source);
  check(groups.is_array(), "AdamWState", source + ": 'param_groups' is " + groups.dump() + ", expected a list");
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string where = "param_groups[" + std::to_string(g) + "]";
    check(groups[g].is_object(), "AdamWState", source + ": " + where + " is not an object");
    AdamWParamGroupState group;
    const nlohmann::json& params = key(groups[g], "params", where, source);
    check(params.is_array(), "AdamWState", source + ": " + where + "'s 'params' is not a list of names");
    for (const auto& p : params) {
      check(p.is_string(), "AdamWState", source + ": " + where + "'s 'params' holds " + p.dump() + ", expected parameter names");
      group.params.push_back(p.get<std::string>());
    }
    group.lr = number(groups[g], "lr", where, source);
    const nlohmann::json& betas = key(groups[g], "betas", where, source);
    check(betas.is_array() && betas.size() == 2 && betas[0].is_number() && betas[1].is_number(), "AdamWState",
          source + ": " + where + "'s 'betas' is " + betas.dump() + ", expected [beta1, beta2]");
    group.beta1 = betas[0].get<double>();
    group.beta2 = betas[1].get<double>();
    group.eps = number(groups[g], "eps", where, source);
    group.weight_decay = number(groups[g], "weight_decay", where, source);
    if (auto it = groups[g].find("steps"); it != groups[g].end()) {
      check(it->is_array() && it->size() == group.params.size(), "AdamWState",
            source + ": " + where + "'s 'steps' is " + it->dump() + ", expected one step count per parameter");
      for (const auto& t : *it) {
        check(t.is_number_integer() && t.get<int64_t>() >= 0, "AdamWState",
              source + ": " + where + "'s 'steps' holds " + t.dump() + ", expected integers >= 0");
        group.steps.push_back(t.get<int64_t>());
      }
    } else {
      group.steps.assign(group.params.size(), s.step);  // written before per-parameter counts were kept
    }
    s.param_groups.push_back(std::move(group));
  }
  return s;
}

AdamWStateDict AdamW::state_dict(const NamedTensors& names) const {
  const std::vector<std::vector<std::string>> group_names = names_of(groups_, names, "AdamW.state_dict");
  // One graph per device for moments still pending (none right after mark_step).
  std::map<runtime::Device, std::vector<lazy::LazyTensor*>> pending;
  for (const auto& group : state_) {
    for (const State& s : group) {
      for (const Tensor* t : {&s.exp_avg, &s.exp_avg_sq}) {
        if (t->impl()->has_pending_ir()) pending[t->device()].push_back(t->impl().get());
      }
    }
  }
  for (const auto& [device, tensors] : pending) lazy::sync(tensors);

  AdamWStateDict out;
  out.state.step = step_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    out.state.param_groups.push_back(
        {group_names[g], options_.lr, options_.beta1, options_.beta2, options_.eps, groups_[g].weight_decay, steps_[g]});
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      out.tensors[group_names[g][i] + ".exp_avg"] = state_[g][i].exp_avg.to_literal();
      out.tensors[group_names[g][i] + ".exp_avg_sq"] = state_[g][i].exp_avg_sq.to_literal();
    }
  }
  return out;
}

void AdamW::load_state_dict(const AdamWStateDict& state_dict, const NamedTensors& names) {
  const std::string op = "AdamW.load_state_dict";
  const std::vector<std::vector<std::string>> group_names = names_of(groups_, names, op);
  const AdamWState& st = state_dict.state;
  check(st.step >= 0, op, "step is " + std::to_string(st.step) + ", expected >= 0");
  check(st.param_groups.size() == groups_.size(), op,
        "the state has " + std::to_string(st.param_groups.size()) + " parameter groups, this optimizer " + std::to_string(groups_.size()));
  AdamWOptions options = options_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const AdamWParamGroupState& saved = st.param_groups[g];
    const std::string where = "param_groups[" + std::to_string(g) + "]";
    check(saved.params == group_names[g], op,
          where + " holds " + list_str(saved.params) + ", this optimizer's group holds " + list_str(group_names[g]) +
              "; expected the same parameters in the same order (a checkpoint of another model or grouping?)");
    if (g == 0) {
      options.lr = saved.lr;
      options.beta1 = saved.beta1;
      options.beta2 = saved.beta2;
      options.eps = saved.eps;
      options.validate(op);
    }
    check(saved.lr == options.lr && saved.beta1 == options.beta1 && saved.beta2 == options.beta2 && saved.eps == options.eps, op,
          where + "'s lr, betas or eps differ from param_groups[0]'s; expected one of each for every group (AdamW here has one)");
    check(std::isfinite(saved.weight_decay), op, where + "'s weight_decay is not finite");
    check(saved.steps.empty() || saved.steps.size() == saved.params.size(), op,
          where + " has " + std::to_string(saved.steps.size()) + " step counts for " + std::to_string(saved.params.size()) + " parameters");
    for (int64_t t : saved.steps) check(t >= 0, op, where + " has a step count " + std::to_string(t) + ", expected >= 0");
  }
  // Every moment present with its parameter's dtype and shape, and nothing else.
  std::set<std::string> expected;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Tensor& p = groups_[g].params[i];
      for (const char* moment : {".exp_avg", ".exp_avg_sq"}) {
        const std::string name = group_names[g][i] + moment;
        expected.insert(name);
        auto it = state_dict.tensors.find(name);
        check(it != state_dict.tensors.end(), op, "the state has no tensor '" + name + "'");
        const Literal& lit = it->second;
        check(lit.defined() && lit.dtype() == p.dtype() && lit.shape() == p.shape(), op,
              "tensor '" + name + "' is " + (lit.defined() ? torch_name(lit.dtype()) + shape_str(lit.shape()) : std::string("empty")) +
                  ", expected " + torch_name(p.dtype()) + shape_str(p.shape()) + " (its parameter's dtype and shape)");
      }
    }
  }
  for (const auto& [name, lit] : state_dict.tensors) {
    check(expected.count(name) > 0, op, "unexpected tensor '" + name + "': not a moment of this optimizer's parameters");
  }

  // Valid: assign.
  step_ = st.step;
  options_ = options;
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].weight_decay = st.param_groups[g].weight_decay;
    // No counts (a state made in code): every parameter at the optimizer's step.
    steps_[g] = st.param_groups[g].steps.empty() ? std::vector<int64_t>(groups_[g].params.size(), st.step) : st.param_groups[g].steps;
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      runtime::DeviceGuard on_parameter_device(groups_[g].params[i].device());
      State& s = state_[g][i];
      const Literal& m = state_dict.tensors.at(group_names[g][i] + ".exp_avg");
      const Literal& v = state_dict.tensors.at(group_names[g][i] + ".exp_avg_sq");
      // In the parameter's layout, as the moments were made (one step graph after a resume too).
      const Tensor& p = groups_[g].params[i];
      s.exp_avg.set_data(laid_out_like(from_buffer(m.raw(), m.shape(), m.dtype()), p));
      s.exp_avg_sq.set_data(laid_out_like(from_buffer(v.raw(), v.shape(), v.dtype()), p));
    }
  }
}

}  // namespace lazytrain::optim
