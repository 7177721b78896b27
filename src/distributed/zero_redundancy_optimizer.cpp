#include "distributed/zero_redundancy_optimizer.h"

#include <optional>
#include <vector>

#include "core/error.h"
#include "distributed/xla_model.h"
#include "lazy/lazy_api.h"
#include "tensor/ops.h"

namespace lazytrain::distributed {

namespace {

// `t` flattened and padded with zeros to `padded` elements.
Tensor flat_padded(const Tensor& t, int64_t padded) {
  Tensor flat = reshape(t, {t.numel()});
  if (padded == t.numel()) return flat;
  return cat({flat, zeros({padded - t.numel()}, t.dtype())}, 0);
}

}  // namespace

ZeroRedundancyAdamW::ZeroRedundancyAdamW(std::vector<optim::ParamGroup> groups, optim::AdamWOptions options, double max_grad_norm)
    : AdamW(std::move(groups), options), world_(world_size()), rank_(ordinal()), max_grad_norm_(max_grad_norm) {
  check(max_grad_norm >= 0, "ZeroRedundancyAdamW", "max_grad_norm must be >= 0, got " + std::to_string(max_grad_norm));
  // Only this replica's shard of each moment.
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Tensor& p = groups_[g].params[i];
      runtime::DeviceGuard on_parameter_device(p.device());
      // Device data, as AdamW's moments: the first step's graph is the later steps' graph.
      const std::vector<uint8_t> zero_bytes(static_cast<size_t>(shard_size(p) * itemsize(p.dtype())), 0);
      state_[g][i] = {from_buffer(zero_bytes.data(), {shard_size(p)}, p.dtype()), from_buffer(zero_bytes.data(), {shard_size(p)}, p.dtype())};
    }
  }
}

Tensor ZeroRedundancyAdamW::shard_of(const Tensor& full) const {
  const int64_t s = (full.numel() + world_ - 1) / world_;
  return slice(flat_padded(full, s * world_), 0, rank_ * s, (rank_ + 1) * s);
}

Tensor ZeroRedundancyAdamW::gather(const Tensor& shard, const Shape& shape) const {
  return reshape(slice(all_gather(shard, 0), 0, 0, numel(shape)), shape);
}

void ZeroRedundancyAdamW::step() {
  NoGradGuard no_grad;
  ++step_;
  struct Work {
    size_t group, index;
    Tensor grad_shard;
  };
  std::vector<Work> work;
  std::optional<runtime::DeviceGuard> on_parameter_device;
  // A parameter with a gradient on some replicas only is zeros on the others,
  // so every replica runs the same reduce-scatters (xla_model.h reduce_gradients).
  std::vector<Tensor> all_params;
  for (const auto& group : groups_) all_params.insert(all_params.end(), group.params.begin(), group.params.end());
  const std::vector<bool> any = world_ > 1 ? grads_on_any_replica(all_params) : std::vector<bool>();
  size_t flat_index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i, ++flat_index) {
      const Tensor& p = groups_[g].params[i];
      Tensor grad = p.grad();
      if (!grad.defined() && !(world_ > 1 && any[flat_index])) continue;
      if (!on_parameter_device) on_parameter_device.emplace(p.device());
      if (!grad.defined()) grad = zeros(p.shape(), p.dtype());
      const int64_t s = shard_size(p);
      work.push_back({g, i, reduce_scatter(ReduceType::kSum, flat_padded(grad, s * world_), 1.0 / static_cast<double>(world_), 0, world_)});
    }
  }
  if (work.empty()) return;
  if (max_grad_norm_ > 0) {
    Tensor local_sq;
    for (const Work& w : work) {
      Tensor sq = sum(mul(w.grad_shard, w.grad_shard));
      local_sq = local_sq.defined() ? add(local_sq, sq) : sq;
    }
    grad_norm_ = sqrt(all_reduce(ReduceType::kSum, local_sq));
    Tensor coef = minimum(div(full({}, max_grad_norm_), add(grad_norm_, 1e-6)), full({}, 1.0));
    for (Work& w : work) w.grad_shard = mul(w.grad_shard, coef);
  }
  std::map<int64_t, StepScalars> scalars;
  std::vector<Tensor> decay(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) decay[g] = scalar_tensor(1.0 - options_.lr * groups_[g].weight_decay);
  for (const Work& w : work) {
    const Tensor& p = groups_[w.group].params[w.index];
    State& s = state_[w.group][w.index];
    Updated u = update(shard_of(p.detach()), w.grad_shard, s, groups_[w.group].weight_decay, decay[w.group],
                       advance(w.group, w.index, scalars));
    s.exp_avg.set_data(u.exp_avg);
    s.exp_avg_sq.set_data(u.exp_avg_sq);
    p.set_data(gather(u.param, p.shape()));
  }
}

optim::AdamWStateDict ZeroRedundancyAdamW::state_dict(const optim::NamedTensors& names) const {
  // The full moments, gathered from every replica and computed in one graph here.
  ZeroRedundancyAdamW full = *this;  // the same groups and options; its state replaced below
  std::vector<lazy::LazyTensor*> pending;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Shape& shape = groups_[g].params[i].shape();
      runtime::DeviceGuard on_parameter_device(groups_[g].params[i].device());
      full.state_[g][i] = {gather(state_[g][i].exp_avg, shape), gather(state_[g][i].exp_avg_sq, shape)};
      pending.push_back(full.state_[g][i].exp_avg.impl().get());
      pending.push_back(full.state_[g][i].exp_avg_sq.impl().get());
    }
  }
  lazy::sync(pending);
  return full.AdamW::state_dict(names);
}

void ZeroRedundancyAdamW::load_state_dict(const optim::AdamWStateDict& state_dict, const optim::NamedTensors& names) {
  // AdamW checks and loads the full moments; this replica keeps its shards.
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Tensor& p = groups_[g].params[i];
      runtime::DeviceGuard on_parameter_device(p.device());
      state_[g][i] = {zeros(p.shape(), p.dtype()), zeros(p.shape(), p.dtype())};
    }
  }
  AdamW::load_state_dict(state_dict, names);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      runtime::DeviceGuard on_parameter_device(groups_[g].params[i].device());
      state_[g][i] = {shard_of(state_[g][i].exp_avg), shard_of(state_[g][i].exp_avg_sq)};
    }
  }
  lazy::mark_step();
}

}  // namespace lazytrain::distributed
