#include "train/arguments_agreement.h"

#include <set>
#include <vector>

#include "core/crc32c.h"
#include "core/error.h"
#include "runtime/collectives.h"

namespace lazytrain::train {

bool is_per_process_argument(const std::string& key) {
  static const std::set<std::string> per_process = {"num_threads",     "dataloader_num_workers", "loader_prefetch_size",
                                                    "device_prefetch_size", "disable_tqdm",      "tpu_metrics_debug",
                                                    "debug_recompiles", "debug_graphs",           "logging_dir",
                                                    "report_to",        "collective_timeout"};
  return per_process.count(key) > 0;
}

void check_arguments_agree(const std::string& command, const nlohmann::json& arguments) {
  const runtime::ReplicaWorld& world = runtime::replica_world();
  if (world.num_processes <= 1) return;
  // One number a key (its value's CRC32C, exact in a double), in the keys' order, which every process
  // shares; then each value as a number where it is one, so the error can show the other rank's value.
  std::vector<std::string> keys;
  std::vector<double> sent, numbers;
  for (const auto& [key, v] : arguments.items()) {
    if (is_per_process_argument(key)) continue;
    keys.push_back(key);
    sent.push_back(static_cast<double>(crc32c(v.dump())));
    numbers.push_back(v.is_number() ? v.get<double>() : v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : 0.0);
  }
  sent.insert(sent.end(), numbers.begin(), numbers.end());
  const std::vector<double> all = runtime::host_all_gather(command + ".training_arguments", sent);
  const size_t n = sent.size(), k = keys.size();
  const size_t replicas_per_process = all.size() / n / static_cast<size_t>(world.num_processes);
  for (size_t i = 0; i < k; ++i) {
    for (int rank = 1; rank < world.num_processes; ++rank) {
      const size_t first = 0, other = static_cast<size_t>(rank) * replicas_per_process * n;
      if (all[first + i] == all[other + i]) continue;
      const nlohmann::json& v = arguments[keys[i]];
      auto shown = [&](size_t at) -> std::string {
        if (!v.is_number() && !v.is_boolean()) return "another value";
        if (v.is_boolean()) return all[at + k + i] != 0.0 ? "true" : "false";
        const double x = all[at + k + i];
        if (v.is_number_integer()) return std::to_string(static_cast<long long>(x));
        return nlohmann::json(x).dump();
      };
      throw Error("[" + command + "] under mpirun, process rank " + std::to_string(rank) + " has --" + keys[i] + " " + shown(other) +
                  ", rank 0 has " + shown(first) + " (this is rank " + std::to_string(world.process_rank) + ": " + v.dump() +
                  "); every process must be given the same training arguments");
    }
  }
}

}  // namespace lazytrain::train
