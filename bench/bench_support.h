// What the training benchmarks share: the process's peak memory and CPU time,
// lazytrain's metrics in seconds, wall-clock intervals, and integer flags.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "optim/adamw.h"
#include "runtime/metrics.h"
#include "tensor/tensor.h"

namespace lazytrain::bench {

// kB from /proc/self/status ("VmHWM:  123456 kB"); -1 when unreadable.
inline int64_t proc_status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
  }
  return -1;
}

// A time metric's total (runtime/metrics.h keeps nanoseconds), seconds.
inline double metric_seconds(const std::string& name) {
  auto data = runtime::metric_data(name);
  return data ? data->accumulator * 1e-9 : 0.0;
}

// User + system CPU time of the whole process (every thread), seconds.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `value` as an integer >= min; nullopt when it is not one.
inline std::optional<int64_t> parse_int(const std::string& value, int64_t min) {
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The flags both training benchmarks take; each sets its own defaults first.
struct StepFlags {
  std::string config_overrides;
  std::string backend = "cpu";
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  int warmup = 1;
  int steps = 1;
  bool bf16 = false;
  bool gradient_checkpointing = false;  // the model's gradient_checkpointing_enable()
  bool roofline = true;                 // --no_roofline: skip measuring the bound (bench/roofline.h)
  uint64_t seed = 42;
};

// Parses argv into `flags`; a flag it does not know goes to `other(flag, value)`,
// which returns false for an unknown one. --help prints `usage` and exits 0; a
// bad flag or value prints "<program>: <why>" and `usage` and exits 2 (as does
// an unknown --backend).
void parse_step_flags(int argc, char** argv, const std::string& program, const std::string& usage, StepFlags& flags,
                      const std::function<bool(const std::string& flag, const std::string& value)>& other);
// Prints "<program>: <message>" and the usage, exits 2.
[[noreturn]] void usage_error(const std::string& program, const std::string& usage, const std::string& message);

// A training benchmark's timing: `warmup` steps (the first compiles), then
// `steps` timed ones, each returning the loss it read.
struct TrainingRun {
  std::string result_prefix;  // "bench=... model=... backend=... batch=... seq=... dtype=..."
  int64_t tokens_per_step = 0;
  double flops_per_token = 0;  // training matmul FLOPs, for model GFLOP/s
  int warmup = 1, steps = 1;
  bool roofline = true;  // measure and print the step's roofline bound (bench/roofline.h)
};

// The Trainer's step after the forward: loss.backward(), clip_grad_norm_(params, 1.0),
// optimizer.step(), zero_grad(), mark_step(); returns loss.item().
double finish_training_step(const Tensor& loss, const std::vector<Tensor>& params, optim::AdamW& optimizer);

// The interpreter fallbacks of a run (backend/cpu/cpu_executable.h), summed
// over the metrics resets between its phases.
class FallbackTally {
 public:
  // Adds the InterpreterFallback.<fusion> counters as they stand now.
  void add_counted();
  // Throws Error naming every fusion that ran on the interpreter (and how
  // often); nothing when none did.
  void fail_if_any() const;

 private:
  std::map<std::string, int64_t> runs_;  // fusion name -> runs
};

// Runs the steps and prints: the warm-up (first step, its CompileTime, graphs
// compiled), the timed steps (tokens/s mean and best step, step median/min/max,
// ExecuteTime share, recompiles, model GFLOP/s), the process CPU time per step,
// peak RSS (VmHWM), buffer allocations per timed step (runtime/buffer.h's
// BufferAllocations; BufferCacheMisses, those the caching allocator took from
// the system; IntermediateAllocations: those outside the static
// buffer assignment's arena) and the roofline bound of the largest compiled
// graph (bench/roofline.h), then one line "RESULT <result_prefix> steps=... tokens_per_s=...
// tokens_per_s_best=... ... vmhwm_kb=... loss=..." that bench/run_*.sh parse.
// Metrics are reset before the warm-up and again before the timed steps.
// Throws Error, before the RESULT line, when any fusion ran on the
// interpreter during the run (FallbackTally): the benchmark then exits 1
// naming the fusions.
void time_training_steps(const TrainingRun& run, const std::function<double(int step)>& step);

}  // namespace lazytrain::bench
