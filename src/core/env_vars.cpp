#include "core/env_vars.h"

#include <cctype>
#include <cstdlib>

#include "core/error.h"

namespace lazytrain {

EnvironmentVariables parse_environment(const std::function<const char*(const char*)>& lookup) {
  auto get = [&](const char* name) -> std::string {
    const char* value = lookup(name);
    return value ? value : "";
  };
  EnvironmentVariables env;
  env.backend = get("LAZYTRAIN_BACKEND");
  env.cache_dir = get("LAZYTRAIN_CACHE_DIR");
  env.dump_hlo = get("LAZYTRAIN_DUMP_HLO");
  env.profile_dir = get("LAZYTRAIN_PROFILE");
  env.profile_stderr = lookup("LAZYTRAIN_PROFILE_STDERR") != nullptr;
  env.cxx = get("CXX");
  env.kernel_isa = get("LAZYTRAIN_KERNEL_ISA");
  env.multi_output_fusion = get("LAZYTRAIN_MULTI_OUTPUT_FUSION") != "0";
  if (const std::string a = get("LAZYTRAIN_ASYNC_COLLECTIVES"); !a.empty()) {
    if (a != "0" && a != "1") {
      throw Error("[environment] LAZYTRAIN_ASYNC_COLLECTIVES='" + a + "': expected 1 (collectives overlap compute) or 0 (they run in place); "
                  "unset, they overlap when the job spans processes");
    }
    env.async_collectives = a == "1";
  }
  if (const std::string n = get("LAZYTRAIN_GRAPH_SIZE_WARNING"); !n.empty()) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(n.c_str(), &end, 10);
    if (*end != '\0' || n[0] == '-' || n[0] == '+' || n[0] == ' ') {
      throw Error("[environment] LAZYTRAIN_GRAPH_SIZE_WARNING='" + n + "': expected a whole number of IR nodes (0 disables the warning)");
    }
    env.graph_size_warning = static_cast<size_t>(value);
  }
  if (const std::string n = get("OMP_NUM_THREADS"); !n.empty()) {
    // OpenMP's list "N[,N...]" (one per nesting level), blanks allowed around each: the first is ours.
    long first = 0;
    size_t at = 0;
    bool ok = true;
    while (ok) {
      const size_t comma = n.find(',', at);
      std::string item = n.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      char* end = nullptr;
      const long value = item.empty() || !std::isdigit(static_cast<unsigned char>(item[0])) ? 0 : std::strtol(item.c_str(), &end, 10);
      ok = value >= 1 && value <= 4096 && end != nullptr && *end == '\0';
      if (at == 0) first = value;
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    if (!ok) {
      throw Error("[environment] OMP_NUM_THREADS='" + n + "': expected a positive whole number of threads (or OpenMP's list, e.g. 2,1)");
    }
    env.omp_num_threads = static_cast<int>(first);
  }
  return env;
}

const EnvironmentVariables& environment() {
  static const EnvironmentVariables env = parse_environment([](const char* name) { return std::getenv(name); });
  return env;
}

}  // namespace lazytrain
