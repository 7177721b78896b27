#include "bench_support.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <omp.h>
#include <vector>

#include "backend/registry.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "optim/clip_grad.h"
#include "roofline.h"
#include "runtime/metrics.h"

namespace lazytrain::bench {

void usage_error(const std::string& program, const std::string& usage, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n%s", program.c_str(), message.c_str(), usage.c_str());
  std::exit(2);
}

void parse_step_flags(int argc, char** argv, const std::string& program, const std::string& usage, StepFlags& f,
                      const std::function<bool(const std::string& flag, const std::string& value)>& other) {
  auto integer = [&](const std::string& flag, const std::string& value, int64_t min) {
    if (const auto v = parse_int(value, min)) return *v;
    usage_error(program, usage, flag + " expects an integer >= " + std::to_string(min) + ", got '" + value + "'");
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("%s", usage.c_str());
      std::exit(0);
    }
    if (flag == "--bf16") {
      f.bf16 = true;
      continue;
    }
    if (flag == "--gradient_checkpointing") {
      f.gradient_checkpointing = true;
      continue;
    }
    if (flag == "--no_roofline") {
      f.roofline = false;
      continue;
    }
    if (i + 1 >= argc) usage_error(program, usage, "unknown flag or missing value: " + flag);
    const std::string value = argv[++i];
    if (flag == "--config_overrides") f.config_overrides = value;
    else if (flag == "--backend") f.backend = value;
    else if (flag == "--batch_size") f.batch_size = integer(flag, value, 1);
    else if (flag == "--seq_len") f.seq_len = integer(flag, value, 2);
    else if (flag == "--warmup") f.warmup = static_cast<int>(integer(flag, value, 1));
    else if (flag == "--steps") f.steps = static_cast<int>(integer(flag, value, 1));
    else if (flag == "--seed") f.seed = static_cast<uint64_t>(integer(flag, value, 0));
    else if (!other(flag, value)) usage_error(program, usage, "unknown flag: " + flag);
  }
  const std::vector<std::string> names = backend::backend_names();
  if (std::find(names.begin(), names.end(), f.backend) == names.end()) usage_error(program, usage, "--backend: no backend named '" + f.backend + "'");
}

double finish_training_step(const Tensor& loss, const std::vector<Tensor>& params, optim::AdamW& optimizer) {
  loss.backward();
  optim::clip_grad_norm_(params, 1.0);
  optimizer.step();
  optimizer.zero_grad();
  lazy::mark_step();
  return loss.item();
}

void FallbackTally::add_counted() {
  static const std::string prefix = "InterpreterFallback.";
  for (const std::string& name : runtime::counter_names()) {
    if (name.rfind(prefix, 0) == 0) runs_[name.substr(prefix.size())] += runtime::counter_value(name);
  }
}

void FallbackTally::fail_if_any() const {
  if (runs_.empty()) return;
  std::string list;
  int64_t all = 0;
  for (const auto& [fusion, runs] : runs_) {
    list += (list.empty() ? "" : ", ") + fusion + " (" + std::to_string(runs) + " runs)";
    all += runs;
  }
  throw Error("[benchmark] " + std::to_string(all) + " interpreter fallbacks: fusions the cpu backend did not generate ran on the "
              "interpreter, so this is not the generated code's speed: " + list + " (the warnings above say why)");
}

void time_training_steps(const TrainingRun& run, const std::function<double(int step)>& step) {
  // Counted across the resets below: a warm-up graph's fallback counts too.
  FallbackTally fallbacks;
  fallbacks.add_counted();  // the model's initialisation
  // Warm-up: the first step compiles the training graph.
  runtime::reset_metrics();
  double first_step_s = 0.0, loss = 0.0, first_compile_s = 0.0;
  const auto warm_start = std::chrono::steady_clock::now();
  for (int i = 0; i < run.warmup; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    loss = step(i);
    if (i == 0) {
      first_step_s = seconds_since(t0);
      first_compile_s = metric_seconds("CompileTime");
    }
  }
  const double warmup_s = seconds_since(warm_start);
  if (const int64_t hits = runtime::counter_value("PersistentCacheHit"); hits > 0) {
    std::printf("note: %lld graph(s) came from the on-disk compile cache (LAZYTRAIN_CACHE_DIR) in %.3f s (PersistentCacheLoadTime): "
                "CompileTime is not a cold compile\n",
                static_cast<long long>(hits), metric_seconds("PersistentCacheLoadTime"));
  }
  const int64_t warmup_compiles = runtime::counter_value("UncachedCompile");
  std::printf("warm-up: first step %.3f s (CompileTime %.3f s, %lld graph(s) compiled in warm-up), last loss %.4f, %.3f s in all\n",
              first_step_s, first_compile_s, static_cast<long long>(warmup_compiles), loss, warmup_s);

  fallbacks.add_counted();
  runtime::reset_metrics();
  std::vector<double> step_s;
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < run.steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    loss = step(run.warmup + i);
    step_s.push_back(seconds_since(t0));
  }
  const double total_s = seconds_since(start);
  // CPU time per step: what the step costs in core-seconds (OpenMP spin-waits included);
  // unlike wall time, other processes on the machine barely change it.
  const double cpu_s_per_step = (process_cpu_seconds() - cpu_start) / run.steps;
  const double execute_s = metric_seconds("ExecuteTime");
  const double compile_s = metric_seconds("CompileTime");
  const int64_t recompiles = runtime::counter_value("UncachedCompile");
  const double tokens_per_s = static_cast<double>(run.tokens_per_step) * run.steps / total_s;
  std::vector<double> sorted = step_s;
  std::sort(sorted.begin(), sorted.end());
  const double median_s = sorted[sorted.size() / 2];
  // On a shared machine contention only ever slows a step down: the best step is the
  // steadier estimate of what the code can do; the mean is what this run got.
  const double tokens_per_s_best = static_cast<double>(run.tokens_per_step) / sorted.front();
  const double gflops = tokens_per_s * run.flops_per_token * 1e-9;
  const double gflops_best = tokens_per_s_best * run.flops_per_token * 1e-9;
  const int64_t hwm_kb = proc_status_kb("VmHWM");
  std::printf("timed: %d steps in %.3f s: %.1f tokens/s (best step %.1f), step median %.3f s (min %.3f, max %.3f), loss %.4f\n",
              run.steps, total_s, tokens_per_s, tokens_per_s_best, median_s, sorted.front(), sorted.back(), loss);
  std::printf("       ExecuteTime %.3f s (%.1f%% of the step), CompileTime %.3f s, recompiles %lld, model %.2f GFLOP/s (best step %.2f)\n",
              execute_s, 100.0 * execute_s / total_s, compile_s, static_cast<long long>(recompiles), gflops, gflops_best);
  std::printf("       process CPU time %.3f s per step (user + system, all threads)\n", cpu_s_per_step);
  // The thread governor (runtime/thread_governor.h) during the timed steps.
  const int64_t reduced = runtime::counter_value("ExecutionThreadsReduced");
  const int64_t raised = runtime::counter_value("ExecutionThreadsRaised");
  const int64_t in_use = runtime::counter_value("ExecutionThreadsInUse");
  std::printf("       compute threads %lld allowed, %lld in the last step; during the timed steps fewer %lld times, more %lld times\n",
              static_cast<long long>(runtime::counter_value("ExecutionThreads")), static_cast<long long>(in_use),
              static_cast<long long>(reduced), static_cast<long long>(raised));
  std::printf("peak RSS (VmHWM): %.1f MiB\n", static_cast<double>(hwm_kb) / 1024.0);
  fallbacks.add_counted();
  fallbacks.fail_if_any();  // before the RESULT line: a run with fallbacks is not a result
  const double allocations = static_cast<double>(runtime::counter_value("BufferAllocations")) / run.steps;
  const double from_system = static_cast<double>(runtime::counter_value("BufferCacheMisses")) / run.steps;
  const double intermediates = static_cast<double>(runtime::counter_value("IntermediateAllocations")) / run.steps;
  std::printf("buffers per timed step: %.1f (the batch, dropout seeds and kept outputs), %.1f of them taken from the system "
              "(the rest reuse cached blocks), %.1f intermediates outside the arena; new arenas %lld\n",
              allocations, from_system, intermediates, static_cast<long long>(runtime::counter_value("ArenaAllocations")));
  std::string roofline_fields;
  if (run.roofline) {
    // The step's graph: the largest compiled one.
    std::shared_ptr<backend::Executable> largest;
    for (auto& e : lazy::cached_executables()) {
      if (!largest || e->module().instructions.size() > largest->module().instructions.size()) largest = e;
    }
    const int64_t threads_counter = runtime::counter_value("ExecutionThreads");
    const int threads = threads_counter > 0 ? static_cast<int>(threads_counter) : omp_get_max_threads();
    if (largest) {
      const Roofline r = measure_roofline(largest->module(), threads);
      print_roofline(r, median_s);
      roofline_fields = roofline_result_fields(r, median_s);
    }
  }
  std::printf("RESULT %s steps=%d tokens_per_s=%.2f tokens_per_s_best=%.2f step_median_s=%.4f execute_share=%.4f "
              "first_compile_s=%.3f first_step_s=%.3f recompiles=%lld flops_per_token=%.6g model_gflops=%.3f model_gflops_best=%.3f "
              "cpu_s_per_step=%.4f vmhwm_kb=%lld loss=%.4f threads_in_use=%lld threads_reduced=%lld threads_raised=%lld "
              "allocations_per_step=%.1f system_allocations_per_step=%.1f intermediate_allocations_per_step=%.1f%s\n",
              run.result_prefix.c_str(), run.steps, tokens_per_s, tokens_per_s_best, median_s, execute_s / total_s, first_compile_s,
              first_step_s, static_cast<long long>(recompiles), run.flops_per_token, gflops, gflops_best, cpu_s_per_step,
              static_cast<long long>(hwm_kb), loss, static_cast<long long>(in_use), static_cast<long long>(reduced),
              static_cast<long long>(raised), allocations, from_system, intermediates, roofline_fields.c_str());
}

}  // namespace lazytrain::bench
