// Replicas, as PyTorch/XLA's torch_xla.core.xla_model (xm) names them: who am
// I (world_size, ordinal, is_master_ordinal), host-side meetings (rendezvous,
// mesh_reduce, master_print), collectives on tensors (all_reduce, all_gather,
// reduce_scatter: traced into the step's graph as HLO collectives) and the
// data-parallel step (reduce_gradients, optimizer_step).
//
// A replica is a device: distributed::spawn (spawn.h) runs one thread per
// local replica with that device current; mpirun runs processes of them. The
// calling thread's current device (runtime/device.h) says which replica it is.
// The transport and its failure rules are runtime/collectives.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "optim/adamw.h"
#include "runtime/collectives.h"
#include "tensor/tensor.h"

namespace lazytrain::distributed {

using runtime::ReplicaGroups;

// xm.REDUCE_SUM, REDUCE_MUL, REDUCE_MIN, REDUCE_MAX.
enum class ReduceType { kSum, kMul, kMin, kMax };

// In SPMD mode (distributed/spmd.h use_spmd) a process is one participant:
// world_size() counts processes, ordinal() is the process's rank, host
// meetings are between processes, reduce_gradients does nothing (the compiler
// reduces) and the tensor collectives are refused (the layouts decide them).

// ---- who am I ----
// xm.xrt_world_size(): replicas in the job (processes x replicas per process).
int world_size();
// xm.get_ordinal(): this thread's replica, 0 .. world_size()-1.
int ordinal();
// xm.get_local_ordinal(): this thread's replica within its process.
int local_ordinal();
// xm.is_master_ordinal(local): local ordinal 0 (local = true: one per
// process, e.g. for per-host files) or global ordinal 0 (the job's one master:
// logging, checkpoints).
bool is_master_ordinal(bool local = true);

// ---- host-side meetings (never inside a traced graph) ----
// xm.rendezvous(tag): waits until every replica reached rendezvous(tag).
// Error on a different tag, or after collective_timeout() naming the replicas
// that did not come.
void rendezvous(const std::string& tag);
// xm.mesh_reduce(tag, data, reduce_fn): every replica's `value`, in ordinal
// order, reduced on the host by `reduce_fn`; every replica gets the result.
double mesh_reduce(const std::string& tag, double value, const std::function<double(const std::vector<double>&)>& reduce_fn);
// xm.master_print: prints `text` and a newline on stdout on the global master
// ordinal only; the others return at once (no meeting: safe on one replica alone).
void master_print(const std::string& text);

// ---- collectives on tensors (lazy: recorded into the graph, no autograd) ----
// xm.all_reduce(reduce_type, x, scale, groups): x reduced over its replica
// group, then multiplied by `scale` (1/world_size() gives the mean). Lowered
// to HLO all-reduce (+ multiply).
Tensor all_reduce(ReduceType type, const Tensor& x, double scale = 1.0, const ReplicaGroups& groups = {});
// The same for a list, coalesced: tensors of one dtype are flattened into
// buckets of at most `bucket_cap_mb` megabytes (a larger tensor is a bucket of
// its own), one all-reduce per bucket, then split back into their shapes.
std::vector<Tensor> all_reduce(ReduceType type, const std::vector<Tensor>& xs, double scale, const ReplicaGroups& groups = {},
                               double bucket_cap_mb = 4.0);
// xm.all_gather(x, dim, groups): the group's tensors concatenated along `dim`.
Tensor all_gather(const Tensor& x, int64_t dim = 0, const ReplicaGroups& groups = {});
// xm.reduce_scatter(reduce_type, x, scale, scatter_dim, shard_count, groups):
// shard ordinal-in-group of the reduction (x.size(scatter_dim) divides by
// shard_count, the group size), times `scale`.
Tensor reduce_scatter(ReduceType type, const Tensor& x, double scale, int64_t scatter_dim, int64_t shard_count,
                      const ReplicaGroups& groups = {});

// ---- the data-parallel step ----
// xm.reduce_gradients(optimizer): every parameter's grad() becomes its mean
// over the replicas (one bucketed all-reduce, scale 1/world_size()). With one
// replica it does nothing (no collective in the graph).
// A parameter with a gradient on some replicas only (an unused branch, a
// conditional head) counts as zeros where it has none, so every replica gets
// the same mean and sets it as the grad (torch DDP's find_unused_parameters);
// one with a gradient on no replica keeps none. Which replicas have one is
// exchanged on the host (a meeting of every replica at this call): every
// replica must pass the same parameters in one order (Error otherwise).
void reduce_gradients(const std::vector<Tensor>& params, double bucket_cap_mb = 4.0);
void reduce_gradients(optim::AdamW& optimizer, double bucket_cap_mb = 4.0);
// For each of `params`, whether any replica has a gradient for it (the host
// meeting reduce_gradients holds; every replica must call it with as many).
std::vector<bool> grads_on_any_replica(const std::vector<Tensor>& params);
// xm.optimizer_step(optimizer): reduce_gradients, then optimizer.step(), all
// traced into the step's graph. (To clip by the global norm, call
// reduce_gradients, clip_grad_norm_, then optimizer.step(): the norm is the
// reduced gradients', the same on every replica.)
void optimizer_step(optim::AdamW& optimizer, double bucket_cap_mb = 4.0);

}  // namespace lazytrain::distributed
