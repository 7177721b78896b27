#include "distributed/spmd.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/op_location.h"
#include "lazy/lazy_api.h"
#include "lazy/sharded_data.h"
#include "runtime/collectives.h"

namespace lazytrain::distributed::spmd {
namespace {

// require(), naming the user's line when a Python or C++ op scope knows it
// (core/op_location.h), as tensor ops' errors do.
void require(bool ok, const std::string& what, const std::string& message) {
  if (ok) return;
  if (const OpLocation* where = current_op_location()) throw Error(format_error(what, message, *where));
  throw Error("[" + what + "] " + message);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

}  // namespace

void use_spmd(int local_devices) {
  lazy::wait_device_ops();  // the device count changes between executions only
  runtime::set_local_replicas(local_devices);
  runtime::set_spmd_mode(true);
}

void reset_spmd() {
  lazy::wait_device_ops();
  runtime::set_local_replicas(1);
  runtime::set_spmd_mode(false);
}

Mesh::Mesh(std::vector<int64_t> device_ids, std::vector<int64_t> mesh_shape, std::vector<std::string> axis_names)
    : device_ids_(std::move(device_ids)), mesh_shape_(std::move(mesh_shape)), axis_names_(std::move(axis_names)) {
  for (int64_t axis_size : mesh_shape_) {
    require(axis_size >= 1, "Mesh", "mesh_shape " + shape_str(mesh_shape_) + " has an axis of " + std::to_string(axis_size) + " devices: expected sizes >= 1");
  }
  const int64_t cells = std::accumulate(mesh_shape_.begin(), mesh_shape_.end(), int64_t{1}, std::multiplies<>());
  require(!mesh_shape_.empty() && cells == size(), "Mesh",
        "mesh_shape " + shape_str(mesh_shape_) + " holds " + std::to_string(cells) + " devices, but device_ids has " + std::to_string(size()));
  const int world = runtime::replica_world().world_size();
  std::vector<int64_t> sorted = device_ids_;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    require(sorted[i] == static_cast<int64_t>(i) && static_cast<int64_t>(sorted.size()) == world, "Mesh",
          "device_ids must hold each of the job's " + std::to_string(world) + " devices (0 .. " + std::to_string(world - 1) +
              ") once: one SPMD program runs on all of them (the devices of a process: use_spmd(n), Python's lazytrain.runtime.use_spmd(n))");
  }
  if (axis_names_.empty()) {
    for (size_t d = 0; d < mesh_shape_.size(); ++d) axis_names_.push_back(std::to_string(d));
  }
  require(axis_names_.size() == mesh_shape_.size(), "Mesh",
        "axis_names has " + std::to_string(axis_names_.size()) + " names for a mesh of " + std::to_string(mesh_shape_.size()) + " dimensions");
  require(std::set<std::string>(axis_names_.begin(), axis_names_.end()).size() == axis_names_.size(), "Mesh", "axis_names repeat a name: " + join(axis_names_));
}

int64_t Mesh::axis_index(const std::string& name) const {
  const auto it = std::find(axis_names_.begin(), axis_names_.end(), name);
  require(it != axis_names_.end(), "Mesh", "no mesh axis named '" + name + "' (the axes are " + join(axis_names_) + ")");
  return it - axis_names_.begin();
}

hlo::HloSharding Mesh::sharding(const PartitionSpec& spec) const {
  // The mesh's grid transposed so that the axes each dimension uses come first,
  // in the dimensions' order, and the unused ones last (their devices hold copies).
  std::vector<int64_t> order, tile_dims;
  std::set<int64_t> used;
  for (const auto& axes : spec) {
    int64_t tiles = 1;
    for (const std::string& name : axes) {
      const int64_t axis = axis_index(name);
      require(used.insert(axis).second, "mark_sharding", "mesh axis '" + name + "' splits two dimensions: each axis may split one");
      order.push_back(axis);
      tiles *= mesh_shape_[static_cast<size_t>(axis)];
    }
    tile_dims.push_back(tiles);
  }
  int64_t copies = 1;
  for (size_t axis = 0; axis < mesh_shape_.size(); ++axis) {
    if (used.count(static_cast<int64_t>(axis))) continue;
    order.push_back(static_cast<int64_t>(axis));
    copies *= mesh_shape_[axis];
  }
  if (copies == size()) return hlo::HloSharding::replicate();
  // Read the grid in the new axis order (row-major).
  const size_t rank = mesh_shape_.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) strides[d] = strides[d + 1] * mesh_shape_[d + 1];
  std::vector<int64_t> devices, index(rank, 0);
  for (int64_t k = 0; k < size(); ++k) {
    int64_t position = 0;
    for (size_t i = 0; i < rank; ++i) position += index[i] * strides[static_cast<size_t>(order[i])];
    devices.push_back(device_ids_[static_cast<size_t>(position)]);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < mesh_shape_[static_cast<size_t>(order[i])]) break;
      index[i] = 0;
    }
  }
  if (copies > 1) tile_dims.push_back(copies);
  return hlo::HloSharding::tiled(std::move(tile_dims), std::move(devices), copies > 1);
}

Tensor mark_sharding(Tensor tensor, const Mesh& mesh, const PartitionSpec& spec, const std::string& op_name) {
  require(static_cast<int64_t>(spec.size()) == tensor.dim(), "mark_sharding",
        "partition_spec has " + std::to_string(spec.size()) + " entries for a tensor of " + std::to_string(tensor.dim()) + " dimensions " +
            shape_str(tensor.shape()) + ": give one per dimension (None for a whole one)");
  const hlo::HloSharding sharding = op_name.empty() ? mesh.sharding(spec) : mesh.sharding(spec).with_op_name(op_name);
  for (size_t d = 0; d < spec.size() && sharding.is_tiled(); ++d) {
    require(tensor.shape()[d] % sharding.tile_dims()[d] == 0, "mark_sharding",
          "dimension " + std::to_string(d) + " of " + shape_str(tensor.shape()) + " does not divide into " + std::to_string(sharding.tile_dims()[d]) +
              " tiles (mesh axes " + join(spec[d]) + "): lazytrain needs even tiles");
  }
  const lazy::NodePtr& value = tensor.ir_value();
  if (!sharding.is_tiled()) return clear_sharding(std::move(tensor));
  // The layout stays with the tensor: the values a step computes for it keep it.
  tensor.impl()->set_sharding_spec(sharding);
  if (value->is_device_data()) {
    // Data: cut it now (from the whole value: an earlier layout is assembled first).
    const runtime::Buffer& whole = value->data();
    tensor.impl()->set_ir_value(lazy::make_device_data(lazy::ShardedData::split_locally(whole, sharding), tensor.device()));
  } else {
    tensor.impl()->set_ir_value(lazy::make_custom_sharding(value, sharding));
  }
  return tensor;
}

Tensor clear_sharding(Tensor tensor) {
  const lazy::NodePtr value = tensor.ir_value();
  // Whole from now on: its later values too (in SPMD mode each is annotated so).
  tensor.impl()->set_sharding_spec(hlo::HloSharding::replicate());
  if (value->sharded_data()) {
    tensor.impl()->set_ir_value(lazy::make_device_data(value->data()));
  } else if (lazy::custom_sharding_of(*value)) {
    tensor.impl()->set_ir_value(value->operand(0));
  }
  return tensor;
}

hlo::HloSharding get_sharding(const Tensor& tensor) {
  const lazy::NodePtr& value = tensor.ir_value();
  if (value->sharded_data()) return value->sharded_data()->sharding();
  if (auto annotated = lazy::custom_sharding_of(*value)) return *annotated;
  return hlo::HloSharding::replicate();
}

Tensor ShardingSpec::apply(Tensor t) const {
  PartitionSpec fitted(spec.begin(), spec.begin() + std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(spec.size()), t.dim()));
  fitted.resize(static_cast<size_t>(t.dim()));
  return mark_sharding(std::move(t), mesh, fitted);
}

DeviceBatch shard_batch(DeviceBatch batch, const ShardingSpec& spec) {
  for (auto& [name, t] : batch.tensors) spec.apply(t);
  return batch;
}

PartitionSpec fsdp_partition_spec(const Shape& shape, const Mesh& mesh, const std::string& axis) {
  const int64_t parts = mesh.mesh_shape()[static_cast<size_t>(mesh.axis_index(axis))];
  PartitionSpec spec(shape.size());
  int64_t best = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] % parts == 0 && (best < 0 || shape[d] > shape[static_cast<size_t>(best)])) best = static_cast<int64_t>(d);
  }
  if (best >= 0) spec[static_cast<size_t>(best)] = {axis};
  return spec;
}

std::string fsdp_unit(const std::string& name) {
  for (size_t start = 0; start < name.size();) {
    const size_t end = std::min(name.find('.', start), name.size());
    const bool index = end > start && std::all_of(name.begin() + static_cast<std::ptrdiff_t>(start), name.begin() + static_cast<std::ptrdiff_t>(end),
                                                  [](char c) { return c >= '0' && c <= '9'; });
    if (index) return "fsdp/" + name.substr(0, end);
    start = end + 1;
  }
  return "fsdp";
}

int shard_parameters_fsdp(nn::Module& module, const Mesh& mesh, const std::string& axis) {
  int split = 0;
  for (auto& [name, p] : module.named_parameters()) {
    const PartitionSpec spec = fsdp_partition_spec(p.shape(), mesh, axis);
    mark_sharding(p, mesh, spec, fsdp_unit(name));
    split += std::any_of(spec.begin(), spec.end(), [](const auto& axes) { return !axes.empty(); });
  }
  return split;
}

int parallelize_module(nn::Module& model, const Mesh& mesh, const ParallelizePlan& plan, const std::string& axis) {
  const int64_t parts = mesh.mesh_shape()[static_cast<size_t>(mesh.axis_index(axis))];
  int split = 0;
  bool matched = false;
  for (auto& [name, p] : model.named_parameters()) {
    const size_t dot = name.rfind('.');
    const std::string path = name.substr(0, dot), leaf = name.substr(dot + 1);
    for (const PlanEntry& entry : plan) {
      if (path != entry.module && !path.ends_with("." + entry.module)) continue;
      matched = true;
      // The dimension to split: output features for colwise (weight and bias), input features for rowwise (weight only).
      int64_t d = -1;
      if (leaf == "weight" && p.dim() == 2) {
        const bool out_first = !entry.weight_in_out;
        d = (entry.style == ParallelStyle::kColwise) == out_first ? 0 : 1;
      } else if (leaf == "bias" && entry.style == ParallelStyle::kColwise) {
        d = 0;
      }
      if (d < 0) break;
      if (p.shape()[static_cast<size_t>(d)] % parts != 0) {
        // Megatron pads such a vocabulary to a multiple; lazytrain keeps the tensor whole and says so.
        std::fprintf(stderr, "warning: [parallelize_module] %s %s stays whole: dimension %lld (%lld) does not divide into %lld tiles of axis '%s'\n",
                     name.c_str(), shape_str(p.shape()).c_str(), static_cast<long long>(d), static_cast<long long>(p.shape()[static_cast<size_t>(d)]),
                     static_cast<long long>(parts), axis.c_str());
        break;
      }
      PartitionSpec spec(static_cast<size_t>(p.dim()));
      spec[static_cast<size_t>(d)] = {axis};
      mark_sharding(p, mesh, spec);
      ++split;
      break;
    }
  }
  require(matched, "parallelize_module", "no module of the model matches the plan (" + std::to_string(plan.size()) +
                                          " entries, e.g. '" + (plan.empty() ? std::string() : plan[0].module) + "'): check its module paths");
  return split;
}

ParallelizePlan megatron_plan(bool vocab_parallel) {
  using S = ParallelStyle;
  ParallelizePlan plan = {
      // BERT, RoBERTa
      {"attention.self.query", S::kColwise}, {"attention.self.key", S::kColwise}, {"attention.self.value", S::kColwise},
      {"attention.output.dense", S::kRowwise}, {"intermediate.dense", S::kColwise}, {"output.dense", S::kRowwise},
      // Llama
      {"self_attn.q_proj", S::kColwise}, {"self_attn.k_proj", S::kColwise}, {"self_attn.v_proj", S::kColwise},
      {"self_attn.o_proj", S::kRowwise}, {"mlp.gate_proj", S::kColwise}, {"mlp.up_proj", S::kColwise}, {"mlp.down_proj", S::kRowwise},
      // GPT-2's MLP (Conv1D: weight [in, out])
      {"mlp.c_fc", S::kColwise, true}, {"mlp.c_proj", S::kRowwise, true},
  };
  if (vocab_parallel) {
    // [vocab, hidden] weights split by rows: BERT's word embeddings (the decoder's,
    // tied) and its decoder bias (cls.predictions.bias; RoBERTa's lm_head.bias),
    // GPT-2's wte (lm_head's, tied), Llama's embed_tokens and lm_head.
    for (const char* module : {"embeddings.word_embeddings", "cls.predictions", "wte", "embed_tokens", "lm_head"}) {
      plan.push_back({module, S::kColwise});
    }
  }
  return plan;
}

}  // namespace lazytrain::distributed::spmd
