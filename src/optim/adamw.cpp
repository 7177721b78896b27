#include "optim/adamw.h"

#include <cmath>
#include <optional>

#include "core/error.h"
#include "lazy/lazy_tensor.h"
#include "lazy/sharded_data.h"

namespace lazytrain::optim {

void AdamWOptions::validate(const std::string& op) const {
  check(std::isfinite(lr) && lr >= 0, op, "Invalid learning rate: " + std::to_string(lr));
  check(std::isfinite(eps) && eps >= 0, op, "Invalid epsilon value: " + std::to_string(eps));
  check(beta1 >= 0 && beta1 < 1, op, "Invalid beta parameter at index 0: " + std::to_string(beta1));
  check(beta2 >= 0 && beta2 < 1, op, "Invalid beta parameter at index 1: " + std::to_string(beta2));
}

Tensor laid_out_like(Tensor moment, const Tensor& param) {
  const std::optional<hlo::HloSharding>& layout = param.impl()->sharding_spec();
  if (!layout || !layout->is_tiled()) return moment;
  moment.impl()->set_sharding_spec(layout);
  moment.impl()->set_ir_value(lazy::make_device_data(lazy::ShardedData::split_locally(moment.ir_value()->data(), *layout), moment.device()));
  return moment;
}

namespace {

// A zero moment of `p`, laid out as `p` is. (The whole zeros exist on the host
// and one device for a moment before they are cut.)
Tensor zero_moment(const Tensor& p) {
  runtime::DeviceGuard on_parameter_device(p.device());  // the moments live with their parameter
  std::vector<uint8_t> zero_bytes(static_cast<size_t>(p.numel() * itemsize(p.dtype())), 0);
  return laid_out_like(from_buffer(zero_bytes.data(), p.shape(), p.dtype()), p);
}

}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : groups_(std::move(groups)), options_(options) {
  options_.validate("AdamW");
  // State is made here, not at the first step (PyTorch makes it lazily), so that
  // step 1 and step 2 record the same graph and the loop compiles once.
  for (const auto& g : groups_) {
    state_.emplace_back();
    for (const Tensor& p : g.params) state_.back().push_back({zero_moment(p), zero_moment(p)});
    steps_.emplace_back(g.params.size(), 0);
  }
}

AdamW::StepScalars AdamW::step_scalars(int64_t step) const {
  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, t);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, t));
  // Values that change between steps: device data, so the graph hash is stable.
  return {scalar_tensor(options_.lr / bias_correction1), scalar_tensor(bias_correction2_sqrt)};
}

AdamW::Updated AdamW::update(const Tensor& param, const Tensor& grad, const State& state, double weight_decay, const Tensor& decay,
                             const StepScalars& scalars) const {
  Tensor decayed = weight_decay != 0.0 ? mul(param, decay) : param;
  // torch's exp_avg.lerp_(grad, 1 - beta1): exp_avg + (1 - beta1) * (grad - exp_avg), in that order, so this
  // step and the Python AdamW (python/lazytrain/optim/adamw.py) agree with torch's to the bit.
  Tensor m = add(state.exp_avg, mul(sub(grad, state.exp_avg), 1.0 - options_.beta1));
  Tensor v = add(mul(state.exp_avg_sq, options_.beta2), mul(grad, grad), 1.0 - options_.beta2);
  Tensor denom = add(div(sqrt(v), scalars.bias_correction2_sqrt), options_.eps);
  return {sub(decayed, mul(div(m, denom), scalars.step_size)), m, v};
}

void AdamW::step() {
  NoGradGuard no_grad;
  ++step_;
  std::optional<runtime::DeviceGuard> on_parameter_device;
  for (const auto& group : groups_) {
    if (!group.params.empty() && !on_parameter_device) on_parameter_device.emplace(group.params[0].device());
  }
  std::map<int64_t, StepScalars> scalars;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup& group = groups_[gi];
    Tensor decay = scalar_tensor(1.0 - options_.lr * group.weight_decay);
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      Tensor g = p.grad();
      if (!g.defined()) continue;
      State& s = state_[gi][i];
      Updated u = update(p.detach(), g, s, group.weight_decay, decay, advance(gi, i, scalars));
      p.set_data(u.param);
      s.exp_avg.set_data(u.exp_avg);
      s.exp_avg_sq.set_data(u.exp_avg_sq);
    }
  }
}

const AdamW::StepScalars& AdamW::advance(size_t group, size_t index, std::map<int64_t, StepScalars>& cache) {
  const int64_t t = ++steps_[group][index];
  auto it = cache.find(t);
  if (it == cache.end()) it = cache.emplace(t, step_scalars(t)).first;
  return it->second;
}

int64_t AdamW::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& group : state_) {
    for (const State& s : group) bytes += (s.exp_avg.numel() + s.exp_avg_sq.numel()) * itemsize(s.exp_avg.dtype());
  }
  return bytes;
}

void AdamW::zero_grad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) p.set_grad(Tensor());
  }
}

}  // namespace lazytrain::optim
