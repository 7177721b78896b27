// bench_allreduce: the gradient exchange of data parallelism, measured
// (bench/README.md). For f32 messages from 4 KB to 256 MB it times
// runtime::all_reduce (what an HLO all-reduce runs) and reports, as NCCL's
// tests define them:
//   algbw = message bytes / time
//   busbw = algbw * 2 (n - 1) / n   (the bytes a ring all-reduce moves per link)
// next to this machine's memcpy bandwidth, measured in the same run: the
// physical limit of a shared-memory exchange (every byte is read and written
// at least once).
//
//   bench_allreduce [--replicas N] [--max_mb 256] [--min_time 0.5]
//       N replica threads of one process (the in-process transport)
//   mpirun -np P bench_allreduce [--max_mb 256]
//       one replica per process (MPI: reduce-scatter + all-gather), and
//       Open MPI's own MPI_Allreduce on the same buffers as the peer
//
// Prints a table and one line per size:
//   RESULT bench=allreduce transport=... bytes=... time_us=... algbw_gbs=... busbw_gbs=... memcpy_fraction=...
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/spawn.h"
#include "runtime/collectives.h"
#include "runtime/mpi_world.h"

namespace {

using namespace lazytrain;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Options {
  int replicas = 2;
  double max_mb = 256;
  double min_time = 0.5;
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr, "bench_allreduce: %s\nusage: bench_allreduce [--replicas N] [--max_mb MB] [--min_time SECONDS]\n", message.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--replicas") o.replicas = std::stoi(v);
    else if (a == "--max_mb") o.max_mb = std::stod(v);
    else if (a == "--min_time") o.min_time = std::stod(v);
    else usage("unknown flag " + a);
  }
  if (o.replicas < 1 || o.max_mb <= 0 || o.min_time <= 0) usage("values must be positive");
  return o;
}

// The best of several timed memcpy passes over `bytes` (one thread): GB/s.
double memcpy_gbs(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, seconds_since(t));
    std::swap(a, b);
  }
  return static_cast<double>(bytes) / best / 1e9;
}

std::vector<int64_t> message_bytes(double max_mb) {
  std::vector<int64_t> sizes;
  for (int64_t b = 4096; b <= static_cast<int64_t>(max_mb * 1024 * 1024); b *= 4) sizes.push_back(b);
  return sizes;
}

struct Row {
  std::string transport;
  int64_t bytes = 0;
  double seconds = 0;  // per all-reduce
  int ranks = 0;
};

void print(const std::vector<Row>& rows, double memcpy_limit) {
  std::printf("| transport | ranks | message | time | algbw GB/s | busbw GB/s | busbw / memcpy |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const double algbw = static_cast<double>(r.bytes) / r.seconds / 1e9;
    const double busbw = algbw * 2.0 * (r.ranks - 1) / r.ranks;
    char size[32];
    if (r.bytes >= (1 << 20)) std::snprintf(size, sizeof(size), "%lld MB", static_cast<long long>(r.bytes >> 20));
    else std::snprintf(size, sizeof(size), "%lld KB", static_cast<long long>(r.bytes >> 10));
    std::printf("| %s | %d | %s | %.1f us | %.2f | %.2f | %.0f%% |\n", r.transport.c_str(), r.ranks, size, r.seconds * 1e6, algbw, busbw,
                100.0 * busbw / memcpy_limit);
  }
  for (const Row& r : rows) {
    const double algbw = static_cast<double>(r.bytes) / r.seconds / 1e9;
    const double busbw = algbw * 2.0 * (r.ranks - 1) / r.ranks;
    std::printf("RESULT bench=allreduce transport=%s ranks=%d bytes=%lld time_us=%.1f algbw_gbs=%.3f busbw_gbs=%.3f memcpy_fraction=%.3f\n",
                r.transport.c_str(), r.ranks, static_cast<long long>(r.bytes), r.seconds * 1e6, algbw, busbw, busbw / memcpy_limit);
  }
}

// Repeats `op` until min_time passed (at least 3 times); seconds per call.
// Every rank must call it the same number of times: the count is fixed by
// the first call's time (`calls` is shared by the caller when it must be).
template <typename Op>
double time_repeated(Op op, int calls) {
  op();  // warm-up: buffers touched, rendezvous made
  const auto t = Clock::now();
  for (int i = 0; i < calls; ++i) op();
  return seconds_since(t) / calls;
}

int calls_for(int64_t bytes, double min_time) {
  // A generous bandwidth guess (1 GB/s) keeps big messages short; small ones repeat many times.
  const double guess = std::max(20e-6, static_cast<double>(bytes) / 1e9);
  return std::max(3, static_cast<int>(min_time / guess));
}

std::vector<Row> in_process(const Options& o) {
  std::vector<Row> rows;
  std::mutex mutex;
  distributed::SpawnOptions spawn_options;
  spawn_options.threads_per_replica = 1;
  distributed::spawn([&](int index) {
    for (int64_t bytes : message_bytes(o.max_mb)) {
      runtime::Buffer x({bytes / 4}, DType::kFloat32);
      std::fill(x.data<float>(), x.data<float>() + bytes / 4, 1.0f);
      const double seconds = time_repeated([&] { runtime::all_reduce(x, runtime::ReduceOp::kSum, {}); }, calls_for(bytes, o.min_time));
      if (index == 0) {
        std::lock_guard<std::mutex> lock(mutex);
        rows.push_back({"in-process (shared memory)", bytes, seconds, o.replicas});
      }
    }
  }, o.replicas, spawn_options);
  return rows;
}

std::vector<Row> across_processes(const Options& o, int rank, int size) {
  std::vector<Row> rows;
  runtime::DeviceGuard guard(runtime::Device{"cpu", 0});
  for (int64_t bytes : message_bytes(o.max_mb)) {
    runtime::Buffer x({bytes / 4}, DType::kFloat32);
    std::fill(x.data<float>(), x.data<float>() + bytes / 4, 1.0f);
    // Rank 0 decides the repeat count, so every rank runs as many.
    int calls = calls_for(bytes, o.min_time);
    MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double ours = time_repeated([&] { runtime::all_reduce(x, runtime::ReduceOp::kSum, {}); }, calls);
    std::vector<float> out(static_cast<size_t>(bytes / 4));
    MPI_Barrier(MPI_COMM_WORLD);
    const double peer = time_repeated(
        [&] { MPI_Allreduce(x.data<float>(), out.data(), static_cast<int>(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }, calls);
    if (rank == 0) {
      rows.push_back({"lazytrain over MPI", bytes, ours, size});
      rows.push_back({"peer: MPI_Allreduce", bytes, peer, size});
    }
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const runtime::ReplicaWorld world = runtime::replica_world();
  runtime::set_collective_timeout(600);
  const double limit = memcpy_gbs(size_t{256} << 20);
  std::vector<Row> rows;
  if (world.num_processes > 1) {
    rows = across_processes(o, world.process_rank, world.num_processes);
  } else {
    rows = in_process(o);
  }
  if (world.process_rank != 0) return 0;
  std::FILE* load = std::fopen("/proc/loadavg", "r");
  char loadavg[64] = "?";
  if (load) {
    if (!std::fgets(loadavg, sizeof(loadavg), load)) std::strcpy(loadavg, "?");
    std::fclose(load);
  }
  std::printf("memcpy bandwidth (one thread, 256 MB, best of 5): %.2f GB/s; load average: %s", limit, loadavg);
  print(rows, limit);
  std::printf("RESULT bench=allreduce memcpy_gbs=%.3f\n", limit);
  return 0;
}
