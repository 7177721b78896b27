// SPMD sharding annotations, as PyTorch/XLA's torch_xla.distributed.spmd (xs)
// names them (issue 34): a Mesh of the job's devices, mark_sharding to lay a
// tensor out over it, clear_sharding to undo it. The compiler does the rest:
// sharding propagation lays out every other value of the step, the SPMD
// partitioner makes the one program every device runs and inserts the
// collectives (hlo/passes/sharding_propagation.h, spmd_partitioner.h).
//
// The devices are the job's replica devices by global ordinal
// (runtime/collectives.h): cpu:0 .. cpu:L-1 of this process after
// runtime::set_local_replicas(L), and those of every process under mpirun.
// A mesh spans every device of the job (PyTorch/XLA's SPMD runs one program
// on all of them). The program is traced once, on this thread's current
// device; each device runs it on its own tiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/device_batch.h"
#include "hlo/hlo_sharding.h"
#include "nn/module.h"
#include "tensor/tensor.h"

namespace lazytrain::distributed::spmd {

// torch_xla.runtime.use_spmd: this process runs `local_devices` devices
// (cpu:0 .. cpu:local_devices-1; runtime::set_local_replicas) and one thread
// traces for all of them (runtime::set_spmd_mode). reset_spmd() returns to one
// device without SPMD mode (tests). Error for local_devices < 1.
void use_spmd(int local_devices);
void reset_spmd();

// One entry per tensor dimension: the mesh axes that dimension is split over,
// major first (PyTorch/XLA's partition_spec entry: an axis name, a tuple of
// them); an empty entry leaves the dimension whole (None).
using PartitionSpec = std::vector<std::vector<std::string>>;

// xs.Mesh(device_ids, mesh_shape, axis_names): the devices laid out as an
// N-dimensional grid, device_ids read row-major into mesh_shape.
class Mesh {
 public:
  // Throws Error unless device_ids holds each global ordinal 0 .. world_size-1
  // once, the product of mesh_shape is their number, and axis_names (default
  // "0", "1", ...) are distinct, one per mesh dimension.
  Mesh(std::vector<int64_t> device_ids, std::vector<int64_t> mesh_shape, std::vector<std::string> axis_names = {});

  const std::vector<int64_t>& device_ids() const { return device_ids_; }
  const std::vector<int64_t>& mesh_shape() const { return mesh_shape_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  int64_t size() const { return static_cast<int64_t>(device_ids_.size()); }
  // The index of the mesh dimension named `name`; Error naming the axes otherwise.
  int64_t axis_index(const std::string& name) const;

  // xs.Mesh.get_op_sharding(partition_spec): the layout that splits dimension
  // i over the mesh axes spec[i] (tile count: the product of their sizes) and
  // copies the tiles over the axes no dimension uses (last_tile_dim_replicate).
  // Throws Error for an unknown axis or one used twice.
  hlo::HloSharding sharding(const PartitionSpec& spec) const;

 private:
  std::vector<int64_t> device_ids_, mesh_shape_;
  std::vector<std::string> axis_names_;
};

// xs.mark_sharding(t, mesh, partition_spec): lays `tensor` out over `mesh`
// and returns it (the same handle). A materialised tensor's data is cut into
// the tiles of this process's devices now; a pending one gets an annotation in
// the graph (PyTorch/XLA's custom sharding node), which the compiler keeps.
// Throws Error when spec has not one entry per dimension, or a dimension does
// not divide into its tiles (lazytrain needs even tiles; PyTorch/XLA pads).
// `op_name`, when given, becomes the layout's sharding metadata
// (hlo_sharding.h): FSDP names each parameter's unit with it (fsdp_unit).
Tensor mark_sharding(Tensor tensor, const Mesh& mesh, const PartitionSpec& spec, const std::string& op_name = "");
// xs.clear_sharding(t): the tensor whole again on its device (a materialised
// sharded tensor is assembled from its tiles; a pending annotation is
// removed), and its later values too (in SPMD mode each update is annotated
// whole; mark_sharding with every entry None does the same).
Tensor clear_sharding(Tensor tensor);
// The layout of `tensor`'s value: its data's or its annotation's; replicated otherwise.
hlo::HloSharding get_sharding(const Tensor& tensor);

// xs.ShardingSpec(mesh, partition_spec): a layout to give tensors, as the
// device loader's input_sharding gives it to every tensor of each batch.
struct ShardingSpec {
  Mesh mesh;
  PartitionSpec spec;
  // mark_sharding(t) with the spec's first t.dim() entries (whole dimensions
  // past the spec's end); Error as mark_sharding's.
  Tensor apply(Tensor t) const;
};
// `batch` with every tensor laid out by `spec`: the device loader's
// input_sharding, e.g. DeviceLoader's to_device
//   [&](HostBatch&& b) { return shard_batch(to_device(b), spec); }
// (the tiles are cut on the loader's transfer thread, while a step runs).
DeviceBatch shard_batch(DeviceBatch batch, const ShardingSpec& spec);

// ---- fully sharded data parallelism by annotation (PyTorch/XLA's FSDPv2,
// torch_xla.experimental.spmd_fully_sharded_data_parallel) ----
// FSDPv2's spec for a parameter of `shape`: its largest dimension split over
// mesh axis `axis`. lazytrain takes the largest dimension that the axis size
// divides (the first of equal ones), and leaves the parameter whole when none
// does (PyTorch/XLA would pad). Error for an unknown axis.
PartitionSpec fsdp_partition_spec(const Shape& shape, const Mesh& mesh, const std::string& axis = "fsdp");
// The FSDP unit of the parameter called `name` (a dotted path), as the
// sharding metadata's op_name: "fsdp/" and the path up to the first element of
// a module list ("fsdp/bert.encoder.layer.3" for
// "bert.encoder.layer.3.attention.self.query.weight": one transformer layer,
// the unit PyTorch's FSDP wraps with transformer_auto_wrap_policy), or "fsdp"
// (the root unit: embeddings, pooler, heads) when no path component is an index.
std::string fsdp_unit(const std::string& name);
// Marks every parameter of `module` (a tied one once) with
// fsdp_partition_spec, its unit (fsdp_unit) as the layout's op_name; returns
// how many were split. With the batch split over the same axis (mark_sharding
// of the inputs, or the device loader's input_sharding) the compiler gathers
// each unit's weights together before their use, forward and again backward,
// and reduce-scatters the unit's gradients together
// (hlo/passes/collective_combiner.h); the optimizer's state takes the
// parameters' layout from the first step on.
int shard_parameters_fsdp(nn::Module& module, const Mesh& mesh, const std::string& axis = "fsdp");

// ---- tensor parallelism by annotation (Megatron-LM's layout, Shoeybi et al.
// 2019, under torch.distributed.tensor.parallel's names) ----
// ColwiseParallel splits a linear layer's output features (weight rows, bias)
// over the axis; RowwiseParallel its input features (weight columns; the bias
// stays whole). A column-parallel layer followed by a row-parallel one needs
// one all-reduce forward (after the second) and one backward (before the first).
enum class ParallelStyle { kColwise, kRowwise };
struct PlanEntry {
  std::string module;           // a module path suffix: "attention.self.query" matches "bert.encoder.layer.3.attention.self.query"
  ParallelStyle style;
  bool weight_in_out = false;  // weight is [in, out] (GPT-2's Conv1D), not nn.Linear's [out, in]
};
using ParallelizePlan = std::vector<PlanEntry>;

// torch.distributed.tensor.parallel.parallelize_module: marks the weight and
// bias of every module of `model` that a plan entry matches; returns how many
// parameters were split. A dimension the axis size does not divide stays whole.
// Error when no module of `model` matches any entry (a misspelt path).
int parallelize_module(nn::Module& model, const Mesh& mesh, const ParallelizePlan& plan, const std::string& axis = "model");
// Megatron's plan for the built-in models: attention's query, key and value
// column-parallel (by heads, when the heads divide by the axis size) and its
// output row-parallel; the MLP's up (and gate) column-, its down row-parallel.
// BERT and RoBERTa, Llama, and GPT-2's MLP (GPT-2's attention computes q, k and
// v in one fused [H, 3H] layer whose columns do not split by heads; it stays whole).
// `vocab_parallel` adds Megatron's vocabulary-parallel embedding and loss: the
// word embeddings and the LM head ([vocab, hidden], tied or not) split by
// vocabulary rows, so the logits stay split by vocabulary through the
// cross-entropy (each device reduces its columns; all-reduces of [batch, seq]
// combine them) and are never gathered whole.
ParallelizePlan megatron_plan(bool vocab_parallel = false);

}  // namespace lazytrain::distributed::spmd
