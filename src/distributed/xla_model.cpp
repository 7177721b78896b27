#include "distributed/xla_model.h"

#include <cstdio>

#include "core/error.h"
#include "runtime/collectives.h"
#include "runtime/device.h"
#include "tensor/lowering.h"
#include "tensor/ops.h"

namespace lazytrain::distributed {

namespace {

using detail::LoweringContext;
using detail::Node;

hlo::ReduceKind reduce_kind(ReduceType type) {
  switch (type) {
    case ReduceType::kSum: return hlo::ReduceKind::kAdd;
    case ReduceType::kMul: return hlo::ReduceKind::kMul;
    case ReduceType::kMin: return hlo::ReduceKind::kMin;
    case ReduceType::kMax: return hlo::ReduceKind::kMax;
  }
  return hlo::ReduceKind::kAdd;
}

// Replica groups as node attributes: flattened, plus the group size (0: all replicas).
std::vector<lazy::Attr> group_attrs(const ReplicaGroups& groups) {
  std::vector<int64_t> flat;
  for (const auto& g : groups) flat.insert(flat.end(), g.begin(), g.end());
  return {{"groups", flat}, {"group_size", static_cast<int64_t>(groups.empty() ? 0 : groups[0].size())}};
}

ReplicaGroups groups_of(const Node& n) {
  const std::vector<int64_t>& flat = n.ints_attr("groups");
  const int64_t size = n.int_attr("group_size");
  ReplicaGroups groups;
  for (size_t i = 0; size > 0 && i < flat.size(); i += static_cast<size_t>(size)) {
    groups.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(i), flat.begin() + static_cast<std::ptrdiff_t>(i) + size);
  }
  return groups;
}

// The size of the group holding every replica's groups (all replicas when none are named).
int64_t group_size(const ReplicaGroups& groups) { return groups.empty() ? world_size() : static_cast<int64_t>(groups[0].size()); }

// x * scale in the lowering (a literal: the scale is part of the graph, as in PyTorch/XLA).
hlo::XlaOp scaled(hlo::XlaOp x, double scale) { return scale == 1.0 ? x : x * scale; }

std::string reduce_type_name(ReduceType type) {
  switch (type) {
    case ReduceType::kSum: return "sum";
    case ReduceType::kMul: return "mul";
    case ReduceType::kMin: return "min";
    case ReduceType::kMax: return "max";
  }
  return "sum";
}

}  // namespace

// In SPMD mode (runtime::spmd_mode) a process is one participant: its one
// tracing thread stands for all of its devices (PyTorch/XLA's SPMD world size
// is the process count).
int world_size() { return runtime::spmd_mode() ? runtime::replica_world().num_processes : runtime::replica_world().world_size(); }

int ordinal() { return runtime::spmd_mode() ? runtime::replica_world().process_rank : runtime::global_ordinal(runtime::current_device()); }

int local_ordinal() {
  if (runtime::spmd_mode()) return 0;
  const int global = ordinal();
  return global - runtime::replica_world().global_ordinal(0);
}

namespace {
void refuse_in_spmd(const std::string& what) {
  check(!runtime::spmd_mode(), what,
        "inside an SPMD program (use_spmd): the compiler inserts the collectives the layouts need; lay tensors out with mark_sharding instead");
}
}  // namespace

bool is_master_ordinal(bool local) { return (local ? local_ordinal() : ordinal()) == 0; }

void rendezvous(const std::string& tag) { runtime::host_rendezvous(tag); }

double mesh_reduce(const std::string& tag, double value, const std::function<double(const std::vector<double>&)>& reduce_fn) {
  return reduce_fn(runtime::host_all_gather(tag, {value}));
}

void master_print(const std::string& text) {
  if (!is_master_ordinal(false)) return;
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

Tensor all_reduce(ReduceType type, const Tensor& x, double scale, const ReplicaGroups& groups) {
  refuse_in_spmd("xm.all_reduce");
  std::vector<lazy::Attr> attrs = group_attrs(groups);
  attrs.push_back({"reduce_type", static_cast<int64_t>(type)});
  attrs.push_back({"scale", scale});
  attrs.push_back({"reduce", reduce_type_name(type)});
  // PyTorch/XLA's IR name for its all-reduce node.
  return detail::make_op("xla::cross_replica_sum", {x.detach()}, x.shape(), x.dtype(), std::move(attrs), +[](LoweringContext& c, const Node& n) {
    const hlo::XlaOp r = hlo::all_reduce(detail::operand(c, n, 0), reduce_kind(static_cast<ReduceType>(n.int_attr("reduce_type"))), groups_of(n));
    return scaled(r, n.double_attr("scale")).id();
  });
}

std::vector<Tensor> all_reduce(ReduceType type, const std::vector<Tensor>& xs, double scale, const ReplicaGroups& groups,
                               double bucket_cap_mb) {
  check(bucket_cap_mb > 0, "all_reduce", "bucket_cap_mb must be > 0, got " + std::to_string(bucket_cap_mb));
  const int64_t cap = static_cast<int64_t>(bucket_cap_mb * 1024 * 1024);
  NoGradGuard no_grad;
  std::vector<Tensor> out(xs.size());
  // Buckets of consecutive tensors of one dtype, up to the cap in bytes.
  size_t begin = 0;
  while (begin < xs.size()) {
    size_t end = begin + 1;
    int64_t bytes = xs[begin].numel() * itemsize(xs[begin].dtype());
    while (end < xs.size() && xs[end].dtype() == xs[begin].dtype() && bytes + xs[end].numel() * itemsize(xs[end].dtype()) <= cap) {
      bytes += xs[end].numel() * itemsize(xs[end].dtype());
      ++end;
    }
    if (end - begin == 1) {
      out[begin] = all_reduce(type, xs[begin], scale, groups);
    } else {
      std::vector<Tensor> flat;
      for (size_t i = begin; i < end; ++i) flat.push_back(reshape(xs[i], {xs[i].numel()}));
      Tensor reduced = all_reduce(type, cat(flat, 0), scale, groups);
      int64_t offset = 0;
      for (size_t i = begin; i < end; ++i) {
        out[i] = reshape(slice(reduced, 0, offset, offset + xs[i].numel()), xs[i].shape());
        offset += xs[i].numel();
      }
    }
    begin = end;
  }
  return out;
}

Tensor all_gather(const Tensor& x, int64_t dim, const ReplicaGroups& groups) {
  refuse_in_spmd("xm.all_gather");
  check(dim >= 0 && dim < x.dim(), "all_gather", "dim " + std::to_string(dim) + " is out of range for " + shape_str(x.shape()));
  ReplicaGroups explicit_groups = groups;
  if (explicit_groups.empty()) {  // HLO all-gather names its groups: all replicas
    explicit_groups.emplace_back();
    for (int r = 0; r < world_size(); ++r) explicit_groups[0].push_back(r);
  }
  Shape shape = x.shape();
  shape[static_cast<size_t>(dim)] *= group_size(explicit_groups);
  std::vector<lazy::Attr> attrs = group_attrs(explicit_groups);
  attrs.push_back({"dim", dim});
  return detail::make_op("xla::all_gather", {x.detach()}, shape, x.dtype(), std::move(attrs), +[](LoweringContext& c, const Node& n) {
    return hlo::all_gather(detail::operand(c, n, 0), n.int_attr("dim"), groups_of(n)).id();
  });
}

Tensor reduce_scatter(ReduceType type, const Tensor& x, double scale, int64_t scatter_dim, int64_t shard_count,
                      const ReplicaGroups& groups) {
  refuse_in_spmd("xm.reduce_scatter");
  check(scatter_dim >= 0 && scatter_dim < x.dim(), "reduce_scatter",
        "scatter_dim " + std::to_string(scatter_dim) + " is out of range for " + shape_str(x.shape()));
  ReplicaGroups explicit_groups = groups;
  if (explicit_groups.empty()) {
    explicit_groups.emplace_back();
    for (int r = 0; r < world_size(); ++r) explicit_groups[0].push_back(r);
  }
  check(shard_count == group_size(explicit_groups), "reduce_scatter",
        "shard_count " + std::to_string(shard_count) + " differs from the replica group size " + std::to_string(group_size(explicit_groups)));
  Shape shape = x.shape();
  check(shape[static_cast<size_t>(scatter_dim)] % shard_count == 0, "reduce_scatter",
        "dimension " + std::to_string(scatter_dim) + " of " + shape_str(shape) + " does not split into " + std::to_string(shard_count) + " shards");
  shape[static_cast<size_t>(scatter_dim)] /= shard_count;
  std::vector<lazy::Attr> attrs = group_attrs(explicit_groups);
  attrs.push_back({"reduce_type", static_cast<int64_t>(type)});
  attrs.push_back({"scale", scale});
  attrs.push_back({"dim", scatter_dim});
  return detail::make_op("xla::reduce_scatter", {x.detach()}, shape, x.dtype(), std::move(attrs), +[](LoweringContext& c, const Node& n) {
    const hlo::XlaOp r = hlo::reduce_scatter(detail::operand(c, n, 0), reduce_kind(static_cast<ReduceType>(n.int_attr("reduce_type"))),
                                             n.int_attr("dim"), groups_of(n));
    return scaled(r, n.double_attr("scale")).id();
  });
}

std::vector<bool> grads_on_any_replica(const std::vector<Tensor>& params) {
  std::vector<double> mine;
  mine.reserve(params.size());
  for (const Tensor& p : params) mine.push_back(p.grad().defined() ? 1.0 : 0.0);
  // Every replica's flags, in ordinal order (the tag also checks that each passed as many).
  const std::vector<double> all = runtime::host_all_gather("xm.reduce_gradients", mine);
  std::vector<bool> any(params.size(), false);
  for (size_t k = 0; k < all.size(); ++k) any[k % params.size()] = any[k % params.size()] || all[k] != 0.0;
  return any;
}

void reduce_gradients(const std::vector<Tensor>& all_params, double bucket_cap_mb) {
  const int replicas = world_size();
  if (replicas == 1 || runtime::spmd_mode() || all_params.empty()) return;  // SPMD: the compiler reduces what the layouts need
  const std::vector<bool> any = grads_on_any_replica(all_params);
  NoGradGuard no_grad;
  std::vector<Tensor> params, grads;
  for (size_t i = 0; i < all_params.size(); ++i) {
    if (!any[i]) continue;
    const Tensor& p = all_params[i];
    Tensor g = p.grad();
    if (!g.defined()) {
      runtime::DeviceGuard on_parameter_device(p.device());
      g = zeros(p.shape(), p.dtype());  // unused here: counts as zeros in the mean
    }
    params.push_back(p);
    grads.push_back(g);
  }
  if (grads.empty()) return;
  std::vector<Tensor> reduced = all_reduce(ReduceType::kSum, grads, 1.0 / replicas, {}, bucket_cap_mb);
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(reduced[i]);
}

void reduce_gradients(optim::AdamW& optimizer, double bucket_cap_mb) {
  std::vector<Tensor> params;
  for (const auto& group : optimizer.param_groups()) params.insert(params.end(), group.params.begin(), group.params.end());
  reduce_gradients(params, bucket_cap_mb);
}

void optimizer_step(optim::AdamW& optimizer, double bucket_cap_mb) {
  reduce_gradients(optimizer, bucket_cap_mb);
  optimizer.step();
}

}  // namespace lazytrain::distributed
