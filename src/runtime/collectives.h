// Collectives between replicas: the runtime half of HLO's all-reduce,
// all-gather and reduce-scatter, and the host-side rendezvous.
//
// A replica is a device. This process runs `local_replicas` of them (cpu:0 ..
// cpu:L-1, one execution thread each); a job launched by mpirun runs P such
// processes, and replica (process p, device cpu:l) has the global ordinal
// p * L + l (PyTorch/XLA's ordinal), world size P * L.
//
// Transport: replicas of one process meet in shared memory (each reduces a
// 1/L chunk of the inputs, then copies the others' chunks); between processes
// the process's result goes through MPI (runtime/mpi_world.h: a ring of
// point-to-point messages). Every replica gets a bit-identical result: each
// element is reduced once and copied to the others.
//
// Failure: a replica that never arrives makes the others throw Error naming
// it within collective_timeout() seconds (across processes, the silent rank,
// within twice that: mpi_world.h); abort_collectives() (a replica raised)
// makes every waiting and later collective throw at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/device.h"

namespace lazytrain::runtime {

// The reduction of all-reduce and reduce-scatter (XLA's to_apply computation).
enum class ReduceOp { kSum, kMax, kMin, kProduct };

// XLA's replica_groups: lists of global ordinals, disjoint, of one size; an
// empty list means one group of every replica.
using ReplicaGroups = std::vector<std::vector<int64_t>>;

struct ReplicaWorld {
  int local_replicas = 1;  // replica devices of this process: cpu:0 .. cpu:local_replicas-1
  int num_processes = 1;   // MPI processes (1 without mpirun)
  int process_rank = 0;    // this process's MPI rank
  int world_size() const { return local_replicas * num_processes; }
  int global_ordinal(int local_ordinal) const { return process_rank * local_replicas + local_ordinal; }
};

// The replicas of this job. The first call joins the MPI job when the process
// was started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE, or PMIX_RANK, in the
// environment), so call it early from the main thread (apps do).
const ReplicaWorld& replica_world();
// Sets how many replicas this process runs (distributed::spawn does, before
// the replica threads start). Throws Error for n < 1 or while a replica waits
// in a collective.
void set_local_replicas(int n);

// SPMD mode (issue 34, distributed/spmd.h use_spmd): one thread traces for all
// of this process's devices, so the replica-level API (distributed/xla_model.h)
// counts processes, not devices, and host meetings (host_all_gather,
// host_rendezvous) are between processes: one process meets itself; several
// meet with one device each (Error otherwise).
void set_spmd_mode(bool on);
bool spmd_mode();

// Seconds a replica waits in a collective or rendezvous for the others before
// it fails (default 300; lazytrain's --collective_timeout). Throws Error for a
// value <= 0.
void set_collective_timeout(double seconds);
double collective_timeout();

// The global ordinal of `device`; Error when it is not one of this process's replicas.
int global_ordinal(const Device& device);

// The collectives, called by the execution thread of a replica device (the
// current device, runtime/device.h) with that replica's input; every replica
// of the group calls the same collectives in the same order.
// all_reduce: `x` reduced over the group, same shape and dtype.
// all_gather: the group's inputs concatenated along `dimension`, in group order.
// reduce_scatter: shard k (along `dimension`, which divides by the group
// size) of the reduced value, for the k-th member of the group.
// Dtypes: f32, bf16, f16 (reduced in float, rounded once), s32, s64; across
// processes f32, s32 and s64. Throws Error on a timeout, an abort, a group
// that does not hold this replica, or a group that spans processes without
// being all of them.
Buffer all_reduce(const Buffer& x, ReduceOp op, const ReplicaGroups& groups);
Buffer all_gather(const Buffer& x, int64_t dimension, const ReplicaGroups& groups);
Buffer reduce_scatter(const Buffer& x, ReduceOp op, int64_t dimension, const ReplicaGroups& groups);

// Host-side exchange between every replica (PyTorch/XLA's xm.rendezvous and
// xm.mesh_reduce): the calling thread's current device names its replica;
// returns every replica's `values`, concatenated in ordinal order. Every
// replica must pass the same `tag` and as many values (Error naming the
// replicas that differ). Separate from the device collectives, so a host
// waiting here never blocks an execution.
std::vector<double> host_all_gather(const std::string& tag, const std::vector<double>& values);
// host_all_gather(tag, {}): a barrier.
void host_rendezvous(const std::string& tag);

// Makes every replica waiting in a collective or rendezvous, and every later
// one, throw Error("... " + reason). Called when a replica raised; cleared by
// set_local_replicas.
void abort_collectives(const std::string& reason);

}  // namespace lazytrain::runtime
