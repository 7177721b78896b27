// MpiWorld: the processes of a job started by mpirun (Open MPI), as the
// transport between processes of runtime/collectives.h.
//
// Every call is non-blocking MPI polled until done, so a wait ends with an
// Error after `timeout_seconds` instead of hanging; MPI's error codes become
// Errors with MPI's message (the communicators use MPI_ERRORS_RETURN). Calls
// are serialised by a mutex, so execution threads and host threads may both
// call (MPI_THREAD_SERIALIZED is enough). Device collectives and host
// rendezvous use separate communicators, so neither blocks the other.
//
// all_reduce is a ring of point-to-point messages (reduce-scatter, then
// all-gather): each chunk is reduced once, on one rank, and copied to the
// others, so every rank holds the same bits (Open MPI's MPI_Allreduce does not
// promise that), at about its speed (bench/bench_allreduce).
//
// A timeout names the silent ranks: the waiting ranks tell each other they
// are there (point to point, on a communicator of their own) and listen for
// up to the timeout again; whoever did not answer died, raised or never came.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace lazytrain::runtime {

enum class ReduceOp;

class MpiWorld {
 public:
  // The job's MPI world, initialised at the first call when the environment
  // shows an mpirun launch (OMPI_COMM_WORLD_SIZE or PMIX_RANK); nullptr
  // otherwise (a plain run never initialises MPI). MPI_Finalize runs at exit.
  static MpiWorld* get();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // In place: `data` (count elements of dtype: f32, s32 or s64) reduced over
  // every process; Error for other dtypes, on timeout (naming the silent
  // ranks), or on an MPI error (with MPI's message).
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, double timeout_seconds, const std::string& what);
  // `in` (bytes of each process) gathered into `out` (size() * bytes), in rank order.
  void all_gather(const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what);
  // The same on the host communicator (rendezvous, mesh_reduce), apart from
  // the device collectives.
  void host_all_gather(const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what);
  // Ends the whole job (MPI_Abort): what a process that failed calls, so the
  // others stop too.
  [[noreturn]] void abort(int exit_code);

 private:
  MpiWorld();
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace lazytrain::runtime
