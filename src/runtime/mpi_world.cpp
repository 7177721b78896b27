#include "runtime/mpi_world.h"

#include <mpi.h>

#include <algorithm>
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

// Starts MPI operations with `start` (under the MPI mutex; it appends their
// requests), then polls them until all are done, an abort, or the timeout.
template <typename Start>
void run_nonblocking(Start start, double timeout_seconds, const std::string& what, const std::string& call, int rank, int size) {
  MpiState& s = state();
  std::vector<MPI_Request> requests;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    check_mpi(start(requests), what, call);
    ++s.operations;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  // MPI moves data only inside MPI calls: test continuously (yielding the core
  // to this process's other threads) for a second, then every 100 us, so a
  // long wait for a slow peer costs no core but a transfer in flight is not stalled.
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (true) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), what, call);
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
    if (std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
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

template <typename T, typename Op>
void reduce_loop(T* __restrict acc, const T* __restrict in, int64_t n, Op f) {
  for (int64_t i = 0; i < n; ++i) acc[i] = f(acc[i], in[i]);  // (one op per loop: it vectorises)
}

template <typename T>
void reduce_typed(ReduceOp op, T* acc, const T* in, int64_t n) {
  switch (op) {
    case ReduceOp::kSum: return reduce_loop(acc, in, n, [](T a, T b) { return a + b; });
    case ReduceOp::kProduct: return reduce_loop(acc, in, n, [](T a, T b) { return a * b; });
    case ReduceOp::kMax: return reduce_loop(acc, in, n, [](T a, T b) { return std::max(a, b); });
    case ReduceOp::kMin: return reduce_loop(acc, in, n, [](T a, T b) { return std::min(a, b); });
  }
}

// acc[i] = acc[i] op in[i] for n elements of dtype (f32, s32, s64: mpi_type checked it).
void reduce_into(DType dtype, ReduceOp op, void* acc, const void* in, int64_t n) {
  switch (dtype) {
    case DType::kFloat32: return reduce_typed(op, static_cast<float*>(acc), static_cast<const float*>(in), n);
    case DType::kInt32: return reduce_typed(op, static_cast<int32_t*>(acc), static_cast<const int32_t*>(in), n);
    case DType::kInt64: return reduce_typed(op, static_cast<int64_t*>(acc), static_cast<const int64_t*>(in), n);
    default: return;
  }
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
  // A ring (reduce-scatter, then all-gather) of point-to-point messages, which
  // Open MPI moves at its full bandwidth: chunk k (elements [count*k/P,
  // count*(k+1)/P)) is reduced once, on one rank, and copied to the others, so
  // every rank holds the same bits.
  const int P = size_;
  auto wrap = [&](int k) { return static_cast<int64_t>((k % P + P) % P); };
  auto begin = [&](int k) { return count * wrap(k) / P; };
  auto length = [&](int k) { return count * (wrap(k) + 1) / P - begin(k); };
  int64_t largest = 0;
  for (int k = 0; k < P; ++k) largest = std::max(largest, length(k));
  check(largest <= INT32_MAX, what, "a chunk of " + std::to_string(largest) + " elements is more than MPI's int count");
  std::vector<char> received(static_cast<size_t>(largest * item));
  char* bytes = static_cast<char*>(data);
  MPI_Comm comm = state().device_comm;
  const int right = (rank_ + 1) % P, left = (rank_ + P - 1) % P;
  auto exchange = [&](int send_chunk, void* receive_into, int receive_chunk) {
    run_nonblocking(
        [&](std::vector<MPI_Request>& r) {
          int code = MPI_Irecv(receive_into, static_cast<int>(length(receive_chunk)), type, left, 0, comm, &r.emplace_back());
          if (code != MPI_SUCCESS) return code;
          return MPI_Isend(bytes + begin(send_chunk) * item, static_cast<int>(length(send_chunk)), type, right, 0, comm, &r.emplace_back());
        },
        timeout_seconds, what, "the all-reduce ring", rank_, size_);
  };
  for (int step = 0; step < P - 1; ++step) {  // reduce-scatter: rank r ends with chunk r + 1 reduced
    const int send_chunk = rank_ - step, receive_chunk = rank_ - step - 1;
    exchange(send_chunk, received.data(), receive_chunk);
    reduce_into(dtype, op, bytes + begin(receive_chunk) * item, received.data(), length(receive_chunk));
  }
  for (int step = 0; step < P - 1; ++step) {  // all-gather of the reduced chunks
    const int send_chunk = rank_ + 1 - step, receive_chunk = rank_ - step;
    exchange(send_chunk, bytes + begin(receive_chunk) * item, receive_chunk);
  }
}

namespace {
// `bytes` of every rank into `out`, in rank order, on communicator `comm`.
void all_gather_on(MPI_Comm comm, const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what, int rank,
                   int size) {
  if (size == 1) {
    std::memcpy(out, in, static_cast<size_t>(bytes));
    return;
  }
  check(bytes <= INT32_MAX, what, "an all-gather of " + std::to_string(bytes) + " bytes per process is more than MPI's int count");
  run_nonblocking(
      [&](std::vector<MPI_Request>& r) {
        return MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm, &r.emplace_back());
      },
      timeout_seconds, what, "MPI_Iallgather", rank, size);
}
}  // namespace

void MpiWorld::all_gather(const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what) {
  all_gather_on(state().device_comm, in, out, bytes, timeout_seconds, what, rank_, size_);
}

void MpiWorld::host_all_gather(const void* in, void* out, int64_t bytes, double timeout_seconds, const std::string& what) {
  all_gather_on(state().host_comm, in, out, bytes, timeout_seconds, what, rank_, size_);
}

void MpiWorld::abort(int exit_code) {
  MpiState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.aborted = true;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace lazytrain::runtime
