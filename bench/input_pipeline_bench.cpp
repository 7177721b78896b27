// bench_input_pipeline: does the DeviceLoader hide data preparation behind
// execution? One process, one model (the main job's BertForMaskedLM:
// hidden 128, 2 layers, sequence 128, batch 16, AdamW), three loops of the same
// steps:
//   execute-only   batches prepared and copied before the loop: the step time is
//                  the device's execute time (plus tracing, which overlaps it);
//   synchronous    each step prepares its batch on the main thread (WordPiece-
//                  tokenize raw WikiText-2 lines, pack 128-token blocks, mask),
//                  copies it, runs the step and reads the loss: preparation and
//                  execution add up;
//   DeviceLoader   the same preparation on a DataLoader worker, the copy on the
//                  DeviceLoader's transfer thread, the loss read one step late.
// Prints ms per step of each loop and the ratios DeviceLoader / execute-only
// (goal: within 1.10) and synchronous / execute-only, plus the metrics that
// show it (ExecuteTime, DeviceLockWait, compiles).
//
//   build/bench/bench_input_pipeline [--text FILE] [--vocab FILE] [--steps N] [--tokenize_passes K]
//
// Run it with OMP_NUM_THREADS=1 on this 2-core machine: the device then uses one
// core and the host (tracing, loader threads) the other, as a host CPU and an
// accelerator would; with both cores on the device the host work would slow it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "data/data_collator.h"
#include "data/data_loader.h"
#include "distributed/device_batch.h"
#include "distributed/parallel_loader.h"
#include "data/wordpiece_tokenizer.h"
#include "lazy/lazy_api.h"
#include "models/bert.h"
#include "optim/adamw.h"
#include "runtime/metrics.h"
#include "tensor/ops.h"

namespace lazytrain {
namespace {

struct Options {
  std::string text = "../shared/data/wikitext-2/valid.txt";
  std::string vocab = "../shared/data/bert-base-uncased/vocab.txt";
  int steps = 20;
  // Tokenizing a batch's text this many times; 0: as many as make the preparation
  // about half the execute time, so that overlapping them matters.
  int tokenize_passes = 0;
  int64_t batch = 16, seq = 128;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "bench_input_pipeline: %s\nusage: bench_input_pipeline [--text FILE] [--vocab FILE] [--steps N] [--tokenize_passes K]\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  if (const char* d = std::getenv("LAZYTRAIN_DATA_DIR")) {
    o.text = std::string(d) + "/wikitext-2/valid.txt";
    o.vocab = std::string(d) + "/bert-base-uncased/vocab.txt";
  }
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[i + 1];
    if (flag == "--text") o.text = value;
    else if (flag == "--vocab") o.vocab = value;
    else if (flag == "--steps") o.steps = std::max(2, std::atoi(value.c_str()));
    else if (flag == "--tokenize_passes") o.tokenize_passes = std::max(1, std::atoi(value.c_str()));
    else usage("unknown flag " + flag);
  }
  return o;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double metric_s(const std::string& name) {
  auto d = runtime::metric_data(name);
  return d ? d->accumulator * 1e-9 : 0.0;
}

// The host work of one batch: tokenize its share of raw text (tokenize_passes
// times), pack batch x seq tokens into blocks, mask them.
class Preparer {
 public:
  Preparer(Options& o, const data::WordPieceTokenizer& tokenizer, std::vector<std::string> lines)
      : o_(o), tokenizer_(tokenizer), lines_(std::move(lines)), collator_(tokenizer, {}) {}

  data::Batch operator()(uint64_t number) const {
    const size_t need = static_cast<size_t>(o_.batch * o_.seq);
    std::vector<int64_t> ids;
    size_t line = (number * 97) % lines_.size();
    while (ids.size() < need) {
      std::vector<int64_t> tokens;
      for (int p = 0; p < o_.tokenize_passes; ++p) tokens = tokenizer_.encode(lines_[line], false);
      ids.insert(ids.end(), tokens.begin(), tokens.end());
      line = (line + 1) % lines_.size();
    }
    std::vector<data::Example> examples(static_cast<size_t>(o_.batch));
    for (int64_t b = 0; b < o_.batch; ++b) {
      examples[static_cast<size_t>(b)].input_ids.assign(ids.begin() + b * o_.seq, ids.begin() + (b + 1) * o_.seq);
    }
    return collator_(examples, number);
  }

 private:
  Options& o_;  // tokenize_passes is set once calibrated
  const data::WordPieceTokenizer& tokenizer_;
  std::vector<std::string> lines_;
  data::DataCollatorForLanguageModeling collator_;
};

int run(Options o) {
  data::WordPieceTokenizer tokenizer(o.vocab);
  std::vector<std::string> lines;
  {
    std::ifstream in(o.text);
    if (!in) usage("cannot read " + o.text + " (set --text or LAZYTRAIN_DATA_DIR)");
    for (std::string l; std::getline(in, l);) {
      if (l.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(l);
    }
  }
  Preparer prepare(o, tokenizer, lines);
  models::BertConfig config;
  config.update_from_string("hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512");
  manual_seed(42);
  models::BertForMaskedLM model(config);
  model.train();
  optim::AdamW optimizer({{model.parameters(), 0.01}}, {1e-4, 0.9, 0.999, 1e-8, 0.0});
  auto step = [&](const distributed::DeviceBatch& b) {
    Tensor loss = model.forward(b["input_ids"], b["attention_mask"], b["labels"]).loss;
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    return loss;
  };

  const bool calibrate = o.tokenize_passes == 0;
  if (calibrate) o.tokenize_passes = 1;
  // Warm-up: compile the step; the last one timed alone.
  double execute_ms = 0;
  for (int i = 0; i < 3; ++i) {
    distributed::DeviceBatch b = distributed::to_device(prepare(static_cast<uint64_t>(i)));
    const double t = now_s();
    Tensor l = step(b);
    lazy::mark_step();
    l.item();
    execute_ms = (now_s() - t) * 1e3;
  }
  auto time_prep = [&] {
    const double t0 = now_s();
    for (int i = 0; i < 3; ++i) prepare(1000 + static_cast<uint64_t>(i));
    return (now_s() - t0) / 3 * 1e3;
  };
  if (calibrate) o.tokenize_passes = std::clamp(static_cast<int>(0.5 * execute_ms / time_prep()), 1, 100000);
  const double prep_ms = time_prep();  // preparation alone, on this thread

  struct Loop {
    double ms_per_step, execute_ms_per_step, lock_wait_ms_per_step, read_wait_ms_per_step;
    int64_t compiles;
  };
  auto measure = [&](auto&& body) {
    lazy::wait_device_ops();
    runtime::reset_metrics();
    const double start = now_s();
    body();
    lazy::wait_device_ops();
    const double s = now_s() - start;
    return Loop{s / o.steps * 1e3, metric_s("ExecuteTime") / o.steps * 1e3, metric_s("DeviceLockWait") / o.steps * 1e3,
                metric_s("TransferFromDeviceTime") / o.steps * 1e3, runtime::counter_value("UncachedCompile")};
  };

  // 1. execute-only
  std::vector<distributed::DeviceBatch> ready;
  for (int i = 0; i < o.steps; ++i) ready.push_back(distributed::to_device(prepare(static_cast<uint64_t>(i))));
  // Every loop but the synchronous one runs as the Trainer does: launch the step
  // traced before, trace the next while it runs, then read the launched step's loss.
  Loop execute_only = measure([&] {
    Tensor previous;
    for (int i = 0; i < o.steps; ++i) {
      if (i > 0) lazy::mark_step();
      Tensor loss = step(ready[static_cast<size_t>(i)]);
      if (previous.defined()) previous.item();
      previous = loss;
    }
    lazy::mark_step();
    previous.item();
  });
  ready.clear();

  // 2. synchronous
  Loop synchronous = measure([&] {
    for (int i = 0; i < o.steps; ++i) {
      Tensor loss = step(distributed::to_device(prepare(static_cast<uint64_t>(i))));
      lazy::mark_step();
      loss.item();
    }
  });

  // 3. DeviceLoader over a DataLoader with one worker
  data::DataLoaderOptions lo;
  lo.batch_size = 1;  // one "example" per batch: the batch number drives the preparation
  lo.num_workers = 1;
  data::DataLoader<data::Batch> loader(static_cast<size_t>(o.steps), lo,
                                       [&](const std::vector<size_t>& idx, uint64_t) { return prepare(idx[0]); });
  Loop device_loader = measure([&] {
    auto epoch = loader.epoch(0);
    distributed::DeviceLoader<data::Batch, distributed::DeviceBatch> dl([&] { return epoch->next(); }, [](data::Batch&& b) { return distributed::to_device(b); });
    Tensor previous;
    while (auto b = dl.next()) {
      Tensor loss = step(*b);
      if (previous.defined()) previous.item();
      previous = loss;
    }
    previous.item();
  });

  std::printf("bench_input_pipeline: BertForMaskedLM hidden 128, 2 layers, batch %lld x seq %lld, %d steps per loop, OMP_NUM_THREADS=%s\n",
              static_cast<long long>(o.batch), static_cast<long long>(o.seq), o.steps, std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "unset");
  std::printf("data preparation alone: %.1f ms per batch (WordPiece-tokenizing its text %d times%s + packing + masking)\n", prep_ms,
              o.tokenize_passes, calibrate ? ", chosen to make preparation about half a step" : "");
  std::printf("| loop | ms/step | ExecuteTime ms/step | DeviceLockWait ms/step | TransferFromDeviceTime ms/step | compiles |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  auto row = [](const char* name, const Loop& l) {
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %lld |\n", name, l.ms_per_step, l.execute_ms_per_step, l.lock_wait_ms_per_step,
                l.read_wait_ms_per_step, static_cast<long long>(l.compiles));
  };
  row("execute-only", execute_only);
  row("synchronous", synchronous);
  row("DeviceLoader", device_loader);
  std::printf("DeviceLoader / execute-only: %.3f (goal <= 1.10); synchronous / execute-only: %.3f; "
              "synchronous / (execute-only + preparation): %.3f\n",
              device_loader.ms_per_step / execute_only.ms_per_step, synchronous.ms_per_step / execute_only.ms_per_step,
              synchronous.ms_per_step / (execute_only.ms_per_step + prep_ms));
  std::printf("RESULT bench=input_pipeline prep_ms=%.2f execute_only_ms=%.2f synchronous_ms=%.2f device_loader_ms=%.2f "
              "device_loader_ratio=%.4f synchronous_ratio=%.4f device_loader_execute_ms=%.2f device_loader_lock_wait_ms=%.2f compiles=%lld\n",
              prep_ms, execute_only.ms_per_step, synchronous.ms_per_step, device_loader.ms_per_step,
              device_loader.ms_per_step / execute_only.ms_per_step, synchronous.ms_per_step / execute_only.ms_per_step,
              device_loader.execute_ms_per_step, device_loader.lock_wait_ms_per_step,
              static_cast<long long>(execute_only.compiles + synchronous.compiles + device_loader.compiles));
  return 0;
}

}  // namespace
}  // namespace lazytrain

int main(int argc, char** argv) {
  try {
    return lazytrain::run(lazytrain::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
