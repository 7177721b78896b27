// The environment variables lazytrain reads, in one place and once (torch_xla's
// env_vars.h). Configuration travels in option structs (backend::CompilerOptions,
// the GraphExecutor's settings, the CLI's flags); the environment only gives
// their defaults, read at the first call of environment() and never again, so
// no layer passes configuration to another through the environment.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace lazytrain {

struct EnvironmentVariables {
  std::string backend;                        // LAZYTRAIN_BACKEND: a registered backend name; empty: "cpu"
  std::string cache_dir;                      // LAZYTRAIN_CACHE_DIR: persistent compile cache; empty: none
  std::string dump_hlo;                       // LAZYTRAIN_DUMP_HLO: dump HLO and kernels here; empty: none
  std::string profile_dir;                    // LAZYTRAIN_PROFILE: write a trace of the whole process here (runtime/profiler.h); empty: none
  bool profile_stderr = false;                // LAZYTRAIN_PROFILE_STDERR set (any value): per-execution profile on stderr
  std::optional<size_t> graph_size_warning;   // LAZYTRAIN_GRAPH_SIZE_WARNING: IR nodes (0: never warn)
  std::string cxx;                            // CXX: the C++ compiler for generated kernels; empty: "c++"
  std::string kernel_isa;                     // LAZYTRAIN_KERNEL_ISA: auto, avx2 or avx512 (generated kernels); empty: auto
  bool multi_output_fusion = true;            // LAZYTRAIN_MULTI_OUTPUT_FUSION=0: the cpu pipeline without multi-output-fusion
  // LAZYTRAIN_ASYNC_COLLECTIVES: 1 collectives overlap compute (start/done
  // pairs), 0 they run where they stand; unset: overlap when the job spans processes.
  std::optional<bool> async_collectives;
  // OMP_NUM_THREADS (OpenMP's own): the first number of its list, the user's
  // choice of compute threads; unset: lazytrain picks (runtime/thread_budget.h).
  std::optional<int> omp_num_threads;
};

// Reads the variables above through `lookup` (a getenv: null or "" = unset).
// Throws lazytrain::Error naming the variable when a value is malformed
// (LAZYTRAIN_GRAPH_SIZE_WARNING not a whole number, OMP_NUM_THREADS not a list
// of positive whole numbers).
EnvironmentVariables parse_environment(const std::function<const char*(const char*)>& lookup);

// The process environment, parsed at the first call (then cached for good).
const EnvironmentVariables& environment();

}  // namespace lazytrain
