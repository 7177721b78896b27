// bench_profiler_overhead: what the profiler (runtime/profiler.h) costs.
//
// 1. One TraceMe scope (a "kernel" event with a name and a shape argument, as
//    the CPU executable records), in a loop of --events iterations: with no
//    trace on (one relaxed atomic load; the issue asks for "nothing
//    measurable"), and with a trace recording (two clock reads and a buffer
//    append). Each against the same loop without the scope; best of 5 loops.
// 2. bert-tiny training steps (forward, backward, clip, AdamW, mark_step,
//    loss.item(); batch 8 x 128) with no trace and with a trace, in
//    alternating blocks of --block steps for --rounds rounds; the median step
//    of each.
// Ends with:
//   RESULT bench=profiler_overhead off_ns_per_event=... on_ns_per_event=... step_off_s=... step_on_s=... step_ratio=...
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "bench_support.h"
#include "core/error.h"
#include "lazy/lazy_api.h"
#include "models/bert.h"
#include "runtime/execution_queue.h"
#include "runtime/profiler.h"
#include "tensor/ops.h"

using namespace lazytrain;

namespace {

constexpr const char* kUsage =
    "usage: bench_profiler_overhead [--events N] [--rounds N] [--block N]\n"
    "  --events  TraceMe scopes per timed loop (default 20000000)\n"
    "  --rounds  alternating off/on blocks of training steps (default 5)\n"
    "  --block   training steps per block (default 6)\n";

struct Options {
  int64_t events = 20'000'000;
  int64_t rounds = 5;
  int64_t block = 6;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    }
    if (i + 1 >= argc) bench::usage_error("bench_profiler_overhead", kUsage, "unknown flag or missing value: " + flag);
    const std::string value = argv[++i];
    const auto n = bench::parse_int(value, 1);
    if (!n) bench::usage_error("bench_profiler_overhead", kUsage, flag + " expects an integer >= 1, got '" + value + "'");
    if (flag == "--events") o.events = *n;
    else if (flag == "--rounds") o.rounds = *n;
    else if (flag == "--block") o.block = *n;
    else bench::usage_error("bench_profiler_overhead", kUsage, "unknown flag: " + flag);
  }
  return o;
}

// Work the compiler cannot remove, the same with and without a scope.
volatile int64_t g_sink = 0;

// Nanoseconds per iteration of `events` iterations, best of 5.
template <typename Body>
double ns_per_iteration(int64_t events, const Body& body) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < events; ++i) body(i);
    best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(events));
  }
  return best;
}

double plain_loop(int64_t events) {
  return ns_per_iteration(events, [](int64_t i) { g_sink = g_sink + i; });
}

double scoped_loop(int64_t events) {
  static const std::string name = "fusion.57", shape = "f32[4,128,768]";
  return ns_per_iteration(events, [](int64_t i) {
    runtime::TraceMe trace("kernel");
    if (trace) trace.name(name).arg("shape", shape);
    g_sink = g_sink + i;
  });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(const Options& o) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("bench_profiler_overhead_" + std::to_string(::getpid()))).string();
  check(!runtime::is_tracing(), "bench_profiler_overhead", "unset LAZYTRAIN_PROFILE: this benchmark turns tracing on and off itself");

  // 1. One scope, off and on.
  const double base = plain_loop(o.events);
  const double off = scoped_loop(o.events) - base;
  runtime::start_trace(dir);
  // A thread keeps at most kMaxEventsPerThread events: a loop of that many, timed once each.
  const int64_t on_events = std::min<int64_t>(o.events, runtime::kMaxEventsPerThread / 5);
  const double on = scoped_loop(on_events) - plain_loop(on_events);
  std::filesystem::remove(runtime::stop_trace());
  std::printf("TraceMe with no trace on: %.3f ns per event (loop without it %.3f ns per iteration, %lld iterations, best of 5)\n", off, base,
              static_cast<long long>(o.events));
  std::printf("TraceMe while a trace records: %.1f ns per event (%lld events, best of 5)\n", on, static_cast<long long>(on_events));

  // 2. bert-tiny training steps, off and on in alternating blocks.
  lazy::set_compiler(backend::make_compiler("cpu"));
  models::BertConfig config;
  config.update_from_string("hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512");
  manual_seed(42);
  models::BertForMaskedLM model(config);
  model.train();
  optim::AdamW optimizer({{model.parameters(), 0.01}}, {1e-4, 0.9, 0.999, 1e-8, 0.0});
  const std::vector<Tensor> params = model.parameters();
  const int64_t batch = 8, seq = 128;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> token(1000, config.vocab_size - 1);
  std::vector<int64_t> ids(static_cast<size_t>(batch * seq)), labels(ids.size(), -100);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = token(rng);
    if (i % 7 == 0) labels[i] = ids[i];
  }
  auto step = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor loss = model.forward(from_vector(ids, {batch, seq}), ones({batch, seq}, DType::kInt64), from_vector(labels, {batch, seq})).loss;
    bench::finish_training_step(loss, params, optimizer);
    return bench::seconds_since(t0);
  };
  for (int i = 0; i < 2; ++i) step();  // compiles
  std::vector<double> off_steps, on_steps;
  int64_t events_file_bytes = 0;
  for (int64_t round = 0; round < o.rounds; ++round) {
    for (int64_t i = 0; i < o.block; ++i) off_steps.push_back(step());
    runtime::start_trace(dir);
    for (int64_t i = 0; i < o.block; ++i) on_steps.push_back(step());
    const std::string path = runtime::stop_trace();
    events_file_bytes = static_cast<int64_t>(std::filesystem::file_size(path));
    std::filesystem::remove(path);
  }
  std::filesystem::remove_all(dir);
  const double step_off = median(off_steps), step_on = median(on_steps);
  std::printf("bert-tiny training step (batch %lld x %lld, cpu backend, %d threads): median %.2f ms with no trace, %.2f ms tracing (%+.1f%%), "
              "%lld x %lld steps each; a %lld-step trace file: %.1f KB\n",
              static_cast<long long>(batch), static_cast<long long>(seq), runtime::threads_per_execution(), step_off * 1e3, step_on * 1e3,
              (step_on / step_off - 1) * 100, static_cast<long long>(o.rounds), static_cast<long long>(o.block), static_cast<long long>(o.block),
              static_cast<double>(events_file_bytes) / 1024.0);
  std::printf("RESULT bench=profiler_overhead off_ns_per_event=%.3f on_ns_per_event=%.1f step_off_s=%.5f step_on_s=%.5f step_ratio=%.4f\n", off, on,
              step_off, step_on, step_on / step_off);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_profiler_overhead: %s\n", e.what());
    return 1;
  }
}
