#include "runtime/mpi_world.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "runtime/collectives.h"
#include "runtime/local_rendezvous.h"

namespace lazytrain::runtime {

namespace {

struct MpiState {
  std::mutex mutex;  // every MPI call
  MPI_Comm device_comm = MPI_COMM_NULL;
  MPI_Comm host_comm = MPI_COMM_NULL;
  MPI_Comm roll_call_comm = MPI_COMM_NULL;  // who is still here, after a timeout
  int64_t operations = 0;                  // MPI operations this process started
  bool aborted = false;
};
MpiState& state() {
  static MpiState* s = new MpiState();  // never destroyed: used until MPI_Finalize at exit
  return *s;
}

bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr; }

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

void check_mpi(int code, const std::string& what, const std::string& call) {
  if (code != MPI_SUCCESS) throw Error("[" + what + "] " + call + " failed: " + mpi_error_text(code));
}

// After a timeout: which other ranks are alive and waiting too. Each waiting
// rank tells every other one (point to point, beside the stuck operation) and
// listens; a rank waiting as well times out within `listen_seconds` of this
// one (it started waiting no later than now), so the ranks not heard from by
// then are the ones that died, raised or never came. Returns their list.
std::string silent_ranks(int rank, int size, double listen_seconds) {
  MpiState& s = state();
  int64_t mine = 0;
  std::vector<int64_t> heard(static_cast<size_t>(size), -1);
  std::vector<MPI_Request> sends, receives(static_cast<size_t>(size), MPI_REQUEST_NULL);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    mine = s.operations;
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      sends.emplace_back();
      MPI_Isend(&mine, 1, MPI_INT64_T, r, 0, s.roll_call_comm, &sends.back());
      MPI_Irecv(&heard[static_cast<size_t>(r)], 1, MPI_INT64_T, r, 0, s.roll_call_comm, &receives[static_cast<size_t>(r)]);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(listen_seconds);
  std::vector<bool> answered(static_cast<size_t>(size), false);
  answered[static_cast<size_t>(rank)] = true;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      for (int r = 0; r < size; ++r) {
        if (answered[static_cast<size_t>(r)]) continue;
        int done = 0;
        MPI_Test(&receives[static_cast<size_t>(r)], &done, MPI_STATUS_IGNORE);
        answered[static_cast<size_t>(r)] = done != 0;
        all = all && done != 0;
      }
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string silent;
  for (int r = 0; r < size; ++r) {
    if (!answered[static_cast<size_t>(r)]) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
  }
  return silent;  // (requests left pending: the job is ending)
}

// Starts an MPI operation with `start` (under the MPI mutex), then polls it
// until done, an abort, or the timeout.
template <typename Start>
void run_nonblocking(Start start, double timeout_seconds, const std::string& what, const std::string& call, int rank, int size) {
  MpiState& s = state();
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    check_mpi(start(&request), what, call);
    ++s.operations;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  auto pause = std::chrono::microseconds(1);
  while (true) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what, call);
    }
    if (done) return;
    throw_if_collective_aborted(what);
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string silent = silent_ranks(rank, size, timeout_seconds);
      std::string message = "process rank " + std::to_string(rank) + " of " + std::to_string(size) + " waited " +
                            std::to_string(static_cast<int64_t>(timeout_seconds)) + " s (collective_timeout) in " + call + " for " +
                            (silent.empty() ? std::string("the other processes (all of them answered a roll call: they are stuck elsewhere)")
                                            : "process rank " + silent + ": it died, raised or never arrived");
      set_collective_abort(message);
      throw Error("[" + what + "] " + message);
    }
    std::this_thread::sleep_for(pause);  // back off to 1 ms: a long wait costs no core
    if (pause < std::chrono::microseconds(1000)) pause *= 2;
  }
}

MPI_Datatype mpi_type(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::kFloat32: return MPI_FLOAT;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt64: return MPI_INT64_T;
    default: throw Error("[" + what + "] " + xla_name(dtype) + " across processes is not supported (f32, s32, s64 are)");
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kProduct: return MPI_PROD;
  }
  return MPI_SUM;
}

}  // namespace

MpiWorld* MpiWorld::get() {
  static MpiWorld* world = launched_by_mpirun() ? new MpiWorld() : nullptr;
  return world;
}

MpiWorld::MpiWorld() {
  int provided = 0;
  int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (code != MPI_SUCCESS) throw Error("[mpi] MPI_Init_thread failed: " + mpi_error_text(code));
  if (provided < MPI_THREAD_SERIALIZED) throw Error("[mpi] this MPI library does not support MPI_THREAD_SERIALIZED");
  MpiState& s = state();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.device_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.host_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.roll_call_comm);
  MPI_Comm_set_errhandler(s.device_comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(s.host_comm, MPI_ERRORS_RETURN);
  std::atexit([] {
    MpiState& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && !st.aborted) MPI_Finalize();
  });
}

void MpiWorld::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op, double timeout_seconds, const std::string& what) {
  if (size_ == 1 || count == 0) return;
  MPI_Datatype type = mpi_type(dtype, what);
  const int64_t item = itemsize(dtype);
  // Each rank reduces one block (padded to a multiple of size_), then every
  // rank gathers every block: one reduction per element, the same bits everywhere.
  const int64_t block = (count + size_ - 1) / size_;
  check(block <= INT32_MAX, what, "a block of " + std::to_string(block) + " elements is more than MPI's int count");
  std::vector<char> padded(static_cast<size_t>(block * size_ * item), 0);
  std::memcpy(padded.data(), data, static_cast<size_t>(count * item));
  std::vector<char> mine(static_cast<size_t>(block * item));
  MPI_Comm comm = state().device_comm;
  MPI_Op mop = mpi_op(op);
  run_nonblocking([&](MPI_Request* r) { return MPI_Ireduce_scatter_block(padded.data(), mine.data(), static_cast<int>(block), type, mop, comm, r); },
                  timeout_seconds, what, "MPI_Ireduce_scatter_block", rank_, size_);
  run_nonblocking([&](MPI_Request* r) { return MPI_Iallgather(mine.data(), static_cast<int>(block), type, padded.data(), static_cast<int>(block), type, comm, r); },
                  timeout_seconds, what, "MPI_Iallgather", rank_, size_);
  std::memcpy(data, padded.data(), static_cast<size_t>(count * item));
}

void MpiWorld::all_gather(const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what) {
  if (size_ == 1) {
    std::memcpy(out, in, static_cast<size_t>(bytes));
    return;
  }
  check(bytes <= INT32_MAX, what, "all-gather of " + std::to_string(bytes) + " bytes per process is more than MPI's int count");
  MPI_Comm comm = state().device_comm;
  run_nonblocking([&](MPI_Request* r) { return MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm, r); },
                  timeout_seconds, what, "MPI_Iallgather", rank_, size_);
}

void MpiWorld::host_all_gather(const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what) {
  if (size_ == 1) {
    std::memcpy(out, in, static_cast<size_t>(bytes));
    return;
  }
  check(bytes <= INT32_MAX, what, "host all-gather of " + std::to_string(bytes) + " bytes per process is more than MPI's int count");
  MPI_Comm comm = state().host_comm;
  run_nonblocking([&](MPI_Request* r) { return MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm, r); },
                  timeout_seconds, what, "MPI_Iallgather", rank_, size_);
}

void MpiWorld::abort(int exit_code) {
  MpiState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.aborted = true;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace lazytrain::runtime
