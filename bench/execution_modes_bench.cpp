// bench_execution_modes: training steps per second of bert-mini in each
// execution mode (lazy/execution_mode.h), measured in one run (bench/README.md).
//
// Every mode trains its own copy of the same model from the same seed on the
// same random batches: forward, backward, clip_grad_norm_(1.0), AdamW, zero_grad,
// mark_step, loss.item() (the Trainer's step). Warm-up steps compile (lazy: one
// graph; fused_eager: its chunks; the eager modes: one quick executable per op
// signature); the timed steps only execute, round-robin over the modes (the
// median step of each is reported). Prints a table with the ratios the
// issue asks for (fused_eager / strict_eager, fused_eager / lazy), checks that
// the modes' losses agree, states the load average before and after, and ends
// with one machine-readable line:
//   RESULT bench=execution_modes model=bert-mini lazy_steps_per_s=... fused_vs_strict=... fused_vs_lazy=...
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "core/error.h"
#include "lazy/execution_mode.h"
#include "lazy/lazy_api.h"
#include "models/auto_model.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "runtime/metrics.h"

using namespace lazytrain;

namespace {

struct Options {
  int64_t batch_size = 8;
  int64_t seq_len = 128;
  int warmup = 2;
  int steps = 4;
  size_t chunk_size = lazy::kDefaultFusedEagerChunkSize;
  std::string backend = "cpu";
  std::vector<std::string> modes = {"lazy", "fused_eager", "strict_eager", "debug_eager"};
};

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr,
               "bench_execution_modes: %s\nusage: bench_execution_modes [--batch_size B] [--seq_len S] [--warmup N] [--steps M]\n"
               "                             [--chunk_size OPS] [--backend cpu|interpreter] [--modes lazy,fused_eager,...]\n",
               message.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value of " + flag);
    const std::string value = argv[++i];
    try {
      if (flag == "--batch_size") o.batch_size = std::stoll(value);
      else if (flag == "--seq_len") o.seq_len = std::stoll(value);
      else if (flag == "--warmup") o.warmup = std::stoi(value);
      else if (flag == "--steps") o.steps = std::stoi(value);
      else if (flag == "--chunk_size") o.chunk_size = std::stoul(value);
      else if (flag == "--backend") o.backend = value;
      else if (flag == "--modes") {
        o.modes.clear();
        for (size_t start = 0; start <= value.size();) {
          size_t comma = value.find(',', start);
          if (comma == std::string::npos) comma = value.size();
          o.modes.push_back(value.substr(start, comma - start));
          start = comma + 1;
        }
      } else usage("unknown flag " + flag);
    } catch (const std::logic_error&) {
      usage("bad value '" + value + "' of " + flag);
    }
  }
  if (o.batch_size < 1 || o.seq_len < 2 || o.seq_len > 512 || o.warmup < 1 || o.steps < 1) usage("sizes and step counts must be positive");
  return o;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct ModeResult {
  double steps_per_s = 0;
  double seconds_per_step = 0;  // the median of the timed steps
  double first_steps_s = 0;     // the warm-up (compiles)
  int64_t executions_per_step = 0;
  std::vector<double> losses;
};

// One mode's model, optimizer and batches: each mode trains its own copy from one seed.
struct Runner {
  lazy::ExecutionMode mode;
  std::shared_ptr<models::MaskedLMModel> model;
  std::unique_ptr<optim::AdamW> optimizer;
  std::mt19937_64 rng{7};
  std::vector<double> step_seconds;
  ModeResult result;
  RngState rng_state;  // the device generator between this runner's steps (dropout draws alike in every mode)

  Runner(lazy::ExecutionMode m) : mode(m) {
    models::BertConfig config;  // bert-mini (google/bert_uncased_L-4_H-256_A-4)
    config.update_from_string("hidden_size=256,num_hidden_layers=4,num_attention_heads=4,intermediate_size=1024");
    manual_seed(42);
    model = models::AutoModelForMaskedLM::from_config(config);
    optim::AdamWOptions adam;
    adam.lr = 1e-4;
    optimizer = std::make_unique<optim::AdamW>(std::vector<optim::ParamGroup>{{model->parameters(), 0.01}}, adam);
    rng_state = get_rng_state();
  }

  // One training step in this runner's mode; returns its wall time.
  double step(const Options& o) {
    lazy::ExecutionModeGuard guard(mode);
    set_rng_state(rng_state);
    const auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> ids(static_cast<size_t>(o.batch_size * o.seq_len)), labels(ids.size(), -100);
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = 1000 + static_cast<int64_t>(rng() % 29000);
      if (rng() % 100 < 15) labels[i] = ids[i];
    }
    Tensor loss = model->forward(from_vector(ids, {o.batch_size, o.seq_len}), ones({o.batch_size, o.seq_len}, DType::kInt64),
                                 from_vector(labels, {o.batch_size, o.seq_len}))
                      .loss;
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    optimizer->step();
    optimizer->zero_grad();
    lazy::mark_step();
    result.losses.push_back(loss.item());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rng_state = get_rng_state();
    return seconds;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    lazy::set_compiler(backend::make_compiler(o.backend));
    lazy::set_fused_eager_chunk_size(o.chunk_size);
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("bert-mini (L=4, H=256, A=4, vocab 30522) training steps, batch %lld x seq %lld, backend %s, OMP_NUM_THREADS=%s, "
                "fused_eager chunk %zu ops\n",
                static_cast<long long>(o.batch_size), static_cast<long long>(o.seq_len), o.backend.c_str(), threads ? threads : "(unset)",
                o.chunk_size);
    std::printf("load average before: %s\n", load_average().c_str());
    // Warm-up (compiles) mode by mode, then the timed steps round-robin over the
    // modes, so that a change of the machine's load falls on every mode alike.
    std::vector<std::unique_ptr<Runner>> runners;
    for (const std::string& name : o.modes) {
      runners.push_back(std::make_unique<Runner>(lazy::parse_execution_mode(name, "--modes")));
      Runner& r = *runners.back();
      for (int s = 0; s < o.warmup; ++s) r.result.first_steps_s += r.step(o);
    }
    const runtime::Device device = runtime::current_device();
    for (int s = 0; s < o.steps; ++s) {
      for (auto& r : runners) {
        const int64_t executions = lazy::execution_count(device);
        r->step_seconds.push_back(r->step(o));
        r->result.executions_per_step = lazy::execution_count(device) - executions;
      }
    }
    std::map<std::string, ModeResult> results;
    for (size_t m = 0; m < runners.size(); ++m) {
      Runner& r = *runners[m];
      std::vector<double> sorted = r.step_seconds;
      std::sort(sorted.begin(), sorted.end());
      r.result.seconds_per_step = sorted[sorted.size() / 2];
      r.result.steps_per_s = 1.0 / r.result.seconds_per_step;
      results[o.modes[m]] = r.result;
      std::printf("%-13s %7.3f steps/s  %8.1f ms/step (median of %d)  %6lld executions/step  warm-up %.1f s (%d steps)\n",
                  o.modes[m].c_str(), r.result.steps_per_s, 1e3 * r.result.seconds_per_step, o.steps,
                  static_cast<long long>(r.result.executions_per_step), r.result.first_steps_s, o.warmup);
    }
    std::printf("load average after:  %s\n", load_average().c_str());
    // The losses must agree: the modes differ in where ops are cut, not in what they compute.
    double worst = 0;
    const auto& reference = results.begin()->second.losses;
    for (const auto& [name, r] : results) {
      for (size_t s = 0; s < r.losses.size(); ++s) worst = std::max(worst, std::abs(r.losses[s] - reference[s]) / std::abs(reference[s]));
    }
    std::printf("largest relative difference of a step's loss between modes: %.2e\n", worst);
    auto rate = [&](const std::string& name) { return results.count(name) ? results[name].steps_per_s : std::nan(""); };
    const double fused_vs_strict = rate("fused_eager") / rate("strict_eager");
    const double fused_vs_lazy = rate("fused_eager") / rate("lazy");
    std::printf("fused_eager / strict_eager = %.2fx (issue: >= 1.5x); fused_eager / lazy = %.2f (issue: >= 0.80)\n", fused_vs_strict, fused_vs_lazy);
    std::printf("RESULT bench=execution_modes model=bert-mini backend=%s batch=%lld seq=%lld lazy_steps_per_s=%.4f fused_eager_steps_per_s=%.4f "
                "strict_eager_steps_per_s=%.4f debug_eager_steps_per_s=%.4f fused_vs_strict=%.3f fused_vs_lazy=%.3f max_loss_rel_diff=%.2e\n",
                o.backend.c_str(), static_cast<long long>(o.batch_size), static_cast<long long>(o.seq_len), rate("lazy"), rate("fused_eager"),
                rate("strict_eager"), rate("debug_eager"), fused_vs_strict, fused_vs_lazy, worst);
    return worst < 1e-3 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
