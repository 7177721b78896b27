// spawn: PyTorch/XLA's xmp.spawn(fn, nprocs) for replicas in one process:
// `num_replicas` threads, thread i running fn(i) with device cpu:i current
// (runtime/device.h), so its tensors, graphs and execution queue are replica
// i's. With mpirun, every process spawns its own replicas (global ordinal =
// process rank x num_replicas + i, distributed/xla_model.h).
#pragma once

#include <functional>

namespace lazytrain::distributed {

struct SpawnOptions {
  // Seconds a replica waits in a collective or rendezvous before it fails
  // naming the replicas that did not arrive (runtime/collectives.h).
  double collective_timeout = 300.0;
  // OpenMP threads per replica; 0: the process's threads
  // (runtime::threads_per_execution(): --num_threads or the CPUs it may use)
  // divided among the replicas (at least 1), so they never oversubscribe them.
  int threads_per_replica = 0;
};

// Runs fn(0) .. fn(num_replicas - 1) on their own threads and returns when all
// have ended and their devices are idle (lazy::wait_device_ops). When one
// raises, the collectives of the others fail at once (abort_collectives), and
// spawn rethrows the first error raised (the cause, not the others' "aborted"
// errors). Afterwards the process is back to one replica. Throws Error for
// num_replicas < 1 or threads_per_replica < 0.
void spawn(const std::function<void(int index)>& fn, int num_replicas, const SpawnOptions& options = {});

}  // namespace lazytrain::distributed
