// The data-parallel golden test across processes, run by
// tests/distributed/mpi_replicas_test.sh:
//   mpi_replicas_test reference FILE            one replica at batch 8, 20 steps; writes its parameters
//   mpirun -np P mpi_replicas_test replicas FILE [L [sharded]]
//                                               P processes x L replicas at batch 8/(P*L): every replica
//                                               holds the same bits after every step, and the parameters
//                                               after 20 steps match FILE within f32 reduction-order tolerance
//                                               (sharded: with distributed::ZeroRedundancyAdamW)
//   mpirun -np P mpi_replicas_test spmd FILE     one device a process, FSDP by SPMD annotations over all
//                                               P: the parameters after 20 steps match FILE within 1e-5
//   mpirun -np 2 mpi_replicas_test hang SECONDS  rank 1 never reaches the all-reduce: rank 0 fails within
//                                               the timeout naming it (exit 1 from MPI_Abort)
// Prints one line per check; exits non-zero on a failed check.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.h"
#include "distributed/spawn.h"
#include "distributed/spmd.h"
#include "runtime/collectives.h"
#include "runtime/mpi_world.h"
#include "../support/tiny_data_parallel.h"

namespace {

using namespace lazytrain;
using Parameters = std::vector<std::vector<float>>;

void write_parameters(const std::string& path, const Parameters& parameters) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& p : parameters) {
    const uint64_t n = p.size();
    out.write(reinterpret_cast<const char*>(&n), sizeof(n));
    out.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(n * sizeof(float)));
  }
  if (!out) throw Error("[mpi_replicas_test] cannot write '" + path + "'");
}

Parameters read_parameters(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("[mpi_replicas_test] cannot read '" + path + "': run the reference mode first");
  Parameters parameters;
  uint64_t n = 0;
  while (in.read(reinterpret_cast<char*>(&n), sizeof(n))) {
    parameters.emplace_back(n);
    in.read(reinterpret_cast<char*>(parameters.back().data()), static_cast<std::streamsize>(n * sizeof(float)));
  }
  return parameters;
}

// FNV-1a over the parameters' bytes, as a double's bits (host_all_gather carries doubles).
double fingerprint(const Parameters& parameters) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& p : parameters) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(p.data());
    for (size_t i = 0; i < p.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  }
  double d;
  std::memcpy(&d, &h, sizeof(d));
  return d;
}

int replicas(const std::string& reference_path, int local_replicas, bool sharded) {
  const Parameters reference = read_parameters(reference_path);
  int failures = 0;
  distributed::spawn([&](int) {
    testing_support::TinyRunOptions o;
    o.sharded = sharded;
    int mismatched_steps = 0;
    o.after_step = [&](int step, models::MaskedLMModel& model) {
      const double mine = fingerprint(testing_support::parameter_values(model));
      const std::vector<double> all = runtime::host_all_gather("fingerprint " + std::to_string(step), {mine});
      for (double other : all) mismatched_steps += std::memcmp(&other, &mine, sizeof(double)) != 0 ? 1 : 0;
    };
    const Parameters final_parameters = testing_support::train_tiny_replica(o);
    if (distributed::ordinal() != 0) return;
    const double difference = testing_support::max_parameter_difference(final_parameters, reference);
    std::printf("world %d (%d processes x %d replicas%s): replicas differ at %d step(s); max difference to one replica at batch 8: %.3g\n",
                distributed::world_size(), runtime::replica_world().num_processes, local_replicas, sharded ? ", sharded optimizer" : "",
                mismatched_steps, difference);
    if (mismatched_steps != 0 || !(difference < 2e-4)) ++failures;
  }, local_replicas);
  if (failures) std::printf("FAILED\n");
  return failures ? 1 : 0;
}

// SPMD across processes (issue 34): one device a process, the batch and every
// parameter split over all of them (FSDP by annotation), traced once a process.
int spmd(const std::string& reference_path) {
  const Parameters reference = read_parameters(reference_path);
  const int world = runtime::replica_world().world_size();
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < world; ++i) ids.push_back(i);
  const distributed::spmd::Mesh mesh(ids, {world}, {"fsdp"});
  testing_support::TinyRunOptions o;
  o.shard_model = [&](models::MaskedLMModel& model) { distributed::spmd::shard_parameters_fsdp(model, mesh, "fsdp"); };
  o.shard_batch = [&](Tensor& input) {
    input.to_vector<int64_t>();
    distributed::spmd::mark_sharding(input, mesh, {{"fsdp"}, {}});
  };
  const Parameters final_parameters = testing_support::train_tiny_replica(o);
  const double difference = testing_support::max_parameter_difference(final_parameters, reference);
  if (runtime::replica_world().process_rank == 0) {
    std::printf("spmd over %d processes (FSDP): max difference to one replica at batch 8: %.3g\n", world, difference);
  }
  return difference < 1e-5 ? 0 : 1;
}

int hang(double timeout) {
  runtime::set_collective_timeout(timeout);
  if (runtime::replica_world().process_rank == 1) std::this_thread::sleep_for(std::chrono::minutes(10));  // never arrives
  Tensor x = distributed::all_reduce(distributed::ReduceType::kSum, ones({4}));
  lazy::mark_step();
  x.to_vector<float>();
  std::printf("the all-reduce completed without rank 1\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    lazytrain::runtime::replica_world();  // joins the MPI job when mpirun started us
    if (mode == "reference" && argc == 3) {
      Parameters parameters;
      lazytrain::distributed::spawn([&](int) { parameters = lazytrain::testing_support::train_tiny_replica({}); }, 1);
      write_parameters(argv[2], parameters);
      return 0;
    }
    if (mode == "replicas" && argc >= 3 && argc <= 5) {
      return replicas(argv[2], argc >= 4 ? std::stoi(argv[3]) : 1, argc == 5 && std::string(argv[4]) == "sharded");
    }
    if (mode == "hang" && argc == 3) return hang(std::stod(argv[2]));
    if (mode == "spmd" && argc == 3) return spmd(argv[2]);
    std::fprintf(stderr, "usage: mpi_replicas_test reference FILE | replicas FILE [LOCAL_REPLICAS [sharded]] | spmd FILE | hang SECONDS\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (auto* mpi = lazytrain::runtime::MpiWorld::get(); mpi && mpi->size() > 1) mpi->abort(1);
    return 1;
  }
}
