// SPMD layouts of a BERT masked-LM training step (issue 34): per-device memory
// and step time of data parallelism, FSDP and a 2-D mesh, on N logical devices
// of this process, in one run.
//
// For each layout it builds the model, lays it out (FSDP: every parameter split
// along its largest dimension that divides, distributed/spmd.h
// shard_parameters_fsdp), trains --warmup steps (the first compiles) and times
// --steps more at the same global batch, then reports:
//   persistent bytes per device: every live tensor's bytes that one device
//     holds between steps (a tiled tensor's tile, a whole one's whole): the
//     weights and AdamW's two moments, 12 bytes a parameter (12Ψ), divided by N
//     for what is split. ZeRO's 16Ψ also counts the gradients; here
//     zero_grad() frees them (PyTorch's set_to_none), so they live only inside
//     the step, in its arena;
//   the largest parameter (what FSDP gathers at once for one use);
//   arena bytes: the largest working memory of one device's program (the CPU
//     backend's static buffer assignment, metric ArenaBytes);
//   compile seconds (CompileTime of the first step) and the median step time,
//   with the collectives overlapping compute (start/done pairs on each
//   device's collective thread: CompilerOptions::async_collectives) and
//   without (each collective run where it stands), --overlap off,on.
// Machine facts (CPU, ISA, load) are printed first; runs of one binary share
// the machine, so the ratios between layouts are what to read.
//
// Under mpirun -np P (one mesh over every process's devices) --devices counts
// them all, N/P a process; rank 0 prints.
//
// usage: bench_spmd [--model bert-tiny|bert-mini|bert-base|bert-large] [--devices 1,2,4]
//                   [--batch_size B (global)] [--seq_len S] [--warmup W] [--steps M] [--overlap off,on]
//                   [--layouts data_parallel,fsdp,2d] (bert-large over 4 devices: --layouts fsdp, as
//                   data parallelism would hold four whole copies)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "bench_support.h"
#include "distributed/spmd.h"
#include "lazy/lazy_api.h"
#include "lazy/lazy_tensor.h"
#include "lazy/sharded_data.h"
#include "models/auto_model.h"
#include "optim/adamw.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "runtime/thread_budget.h"
#include "tensor/ops.h"

namespace lazytrain {
namespace {

using distributed::spmd::Mesh;

struct Options {
  std::string model = "bert-base";
  std::vector<int> devices = {1, 2, 4};
  int64_t batch = 8, seq = 128;
  int warmup = 2, steps = 3;
  std::vector<bool> overlap = {false, true};  // off first: the "on" row reads its ratio to it
  std::set<std::string> layouts = {"data_parallel", "fsdp", "2d"};
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "bench_spmd: %s\nusage: bench_spmd [--model bert-tiny|bert-mini|bert-base|bert-large] [--devices 1,2,4] "
                       "[--batch_size B] [--seq_len S] [--warmup W] [--steps M] [--overlap off,on] [--layouts data_parallel,fsdp,2d]\n", why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[i + 1];
    auto number = [&](int64_t min) {
      const auto n = bench::parse_int(value, min);
      if (!n) usage(flag + " expects an integer >= " + std::to_string(min) + ", got '" + value + "'");
      return *n;
    };
    if (flag == "--model") o.model = value;
    else if (flag == "--batch_size") o.batch = number(1);
    else if (flag == "--seq_len") o.seq = number(1);
    else if (flag == "--warmup") o.warmup = static_cast<int>(number(1));
    else if (flag == "--steps") o.steps = static_cast<int>(number(1));
    else if (flag == "--devices") {
      o.devices.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');) {
        const auto n = bench::parse_int(part, 1);
        if (!n) usage("--devices expects a list of integers >= 1, got '" + value + "'");
        o.devices.push_back(static_cast<int>(*n));
      }
    } else if (flag == "--layouts") {
      o.layouts.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');) {
        if (part != "data_parallel" && part != "fsdp" && part != "2d") usage("--layouts expects a list of data_parallel, fsdp and 2d, got '" + value + "'");
        o.layouts.insert(part);
      }
    } else if (flag == "--overlap") {
      o.overlap.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');) {
        if (part != "on" && part != "off") usage("--overlap expects a list of on and off, got '" + value + "'");
        o.overlap.push_back(part == "on");
      }
    } else {
      usage("unknown flag " + flag);
    }
  }
  return o;
}

models::BertConfig make_config(const std::string& model) {
  models::BertConfig c;  // bert-base-uncased
  if (model == "bert-tiny") c.update_from_string("hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512");
  else if (model == "bert-mini") c.update_from_string("hidden_size=256,num_hidden_layers=4,num_attention_heads=4,intermediate_size=1024");
  else if (model == "bert-large") c.update_from_string("hidden_size=1024,num_hidden_layers=24,num_attention_heads=16,intermediate_size=4096");
  else if (model != "bert-base") usage("--model must be bert-tiny, bert-mini, bert-base or bert-large, got '" + model + "'");
  c.hidden_dropout_prob = 0;
  c.attention_probs_dropout_prob = 0;
  return c;
}

struct Layout {
  std::string key;  // --layouts' name
  std::string name;
  std::vector<int64_t> mesh_shape;
  std::vector<std::string> axes;
  std::string batch_axis, param_axis;  // param_axis "": parameters whole
};

// Bytes one device holds of every live tensor of the tracing device (a tile for a split one).
int64_t persistent_bytes_per_device() {
  int64_t bytes = 0;
  for (const auto& t : lazy::live_tensors(runtime::current_device())) {
    const lazy::NodePtr& v = t->ir_value();
    if (!v->is_device_data()) continue;
    const int64_t whole = numel(t->shape()) * itemsize(t->dtype());
    if (const auto& sharded = v->sharded_data()) {
      bytes += numel(sharded->sharding().tile_shape(t->shape())) * itemsize(t->dtype());
    } else {
      bytes += whole;
    }
  }
  return bytes;
}

struct Result {
  double compile_seconds = 0, step_seconds = 0;
  int64_t persistent = 0, largest_parameter = 0, arena = 0, parameters = 0;
};

// A fresh compiler of the current backend, its collectives asynchronous or not.
void use_compiler(bool async_collectives) {
  backend::CompilerOptions options = backend::CompilerOptions::from_environment();
  options.async_collectives = async_collectives;
  lazy::set_compiler(backend::make_compiler(lazy::compiler().name(), options));
}

Result run(const Options& o, int devices, const Layout& layout, bool overlap) {
  use_compiler(overlap);
  // Under mpirun the devices are split over the processes (one mesh spans them).
  runtime::set_local_replicas(devices / runtime::replica_world().num_processes);
  std::vector<int64_t> ids(static_cast<size_t>(devices));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  const Mesh mesh(ids, layout.mesh_shape, layout.axes);
  Result r;
  {
    manual_seed(0);
    auto model = models::AutoModelForMaskedLM::from_config(make_config(o.model));
    lazy::mark_step();
    for (const Tensor& p : model->parameters()) {
      r.parameters += p.numel();
      r.largest_parameter = std::max(r.largest_parameter, p.numel() * itemsize(p.dtype()));
    }
    if (!layout.param_axis.empty() && devices > 1) distributed::spmd::shard_parameters_fsdp(*model, mesh, layout.param_axis);
    optim::AdamW optimizer({{model->parameters(), 0.01}}, optim::AdamWOptions{});
    std::mt19937_64 rng(1);
    std::vector<double> times;
    const double compile_before = bench::metric_seconds("CompileTime");
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      std::vector<int64_t> ids_values(static_cast<size_t>(o.batch * o.seq));
      for (auto& id : ids_values) id = 1000 + static_cast<int64_t>(rng() % 20000);
      const auto start = std::chrono::steady_clock::now();
      Tensor input_ids = from_vector(ids_values, {o.batch, o.seq});
      Tensor attention = ones({o.batch, o.seq}, DType::kInt64);
      if (devices > 1) {
        distributed::spmd::mark_sharding(input_ids, mesh, {{layout.batch_axis}, {}});
        distributed::spmd::mark_sharding(attention, mesh, {{layout.batch_axis}, {}});
      }
      Tensor loss = model->forward(input_ids, attention, input_ids).loss;
      loss.backward();
      optimizer.step();
      optimizer.zero_grad();
      lazy::mark_step();
      loss.item();
      if (step == 0) r.compile_seconds = bench::metric_seconds("CompileTime") - compile_before;
      if (step >= o.warmup) times.push_back(bench::seconds_since(start));
    }
    lazy::wait_device_ops();
    std::sort(times.begin(), times.end());
    r.step_seconds = times[times.size() / 2];
    r.persistent = persistent_bytes_per_device();
    for (const auto& sample : runtime::metric("ArenaBytes", runtime::MetricKind::kBytes).data().samples) {
      r.arena = std::max(r.arena, static_cast<int64_t>(sample.value));
    }
    runtime::metric("ArenaBytes", runtime::MetricKind::kBytes).clear();
  }
  runtime::set_local_replicas(1);
  // Each layout's executables keep an arena per device: drop them before the next layout.
  use_compiler(true);
  return r;
}

// The machine, its ISA and its load, as every bench states them.
void print_machine() {
  std::string model = "unknown CPU", flags;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") model = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0 && flags.empty()) flags = line;
  }
  std::string isa = "AVX2";
  if (flags.find(" avx512f") != std::string::npos) isa = "AVX-512";
  if (flags.find(" avx512_bf16") != std::string::npos) isa += " with AVX512_BF16";
  if (flags.find(" amx_tile") != std::string::npos) isa += " and AMX";
  std::ifstream loadavg("/proc/loadavg");
  std::string load;
  std::getline(loadavg, load);
  std::printf("bench_spmd: %s, %s, %d CPUs, load average %s\n", model.c_str(), isa.c_str(), runtime::available_cpus(), load.c_str());
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace
}  // namespace lazytrain

int main(int argc, char** argv) {
  using namespace lazytrain;
  const Options o = parse(argc, argv);
  const runtime::ReplicaWorld& world = runtime::replica_world();  // joins the MPI job under mpirun
  for (int n : o.devices) {
    if (n % world.num_processes != 0) usage("--devices " + std::to_string(n) + " does not split over " + std::to_string(world.num_processes) + " processes");
  }
  if (world.process_rank != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;  // rank 0 prints the table
  print_machine();
  std::printf("model %s, global batch %lld x %lld tokens, %d warm-up + %d timed steps (median), AdamW f32\n\n", o.model.c_str(),
              static_cast<long long>(o.batch), static_cast<long long>(o.seq), o.warmup, o.steps);
  std::printf("| devices | layout | overlap | persistent MiB/device | 12Ψ/N MiB | largest parameter MiB | arena MiB | compile s | step s | "
              "vs data parallel | vs no overlap |\n");
  std::printf("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int n : o.devices) {
    std::vector<Layout> layouts = {{"data_parallel", "data parallel", {n}, {"data"}, "data", ""}, {"fsdp", "fsdp", {n}, {"fsdp"}, "fsdp", "fsdp"}};
    if (n % 2 == 0 && n > 2) layouts.push_back({"2d", "2-D data x fsdp", {n / 2, 2}, {"data", "fsdp"}, "data", "fsdp"});
    if (n == 2) layouts.push_back({"2d", "2-D batch x model", {1, 2}, {"data", "model"}, "data", "model"});
    if (n == 1) layouts = {{"one_device", "one device", {1}, {"data"}, "data", ""}};
    std::map<bool, double> dp_step;  // by overlap
    for (const Layout& layout : layouts) {
      if (o.batch % n != 0 || (n > 1 && !o.layouts.count(layout.key))) continue;
      std::map<bool, double> step;
      // One device has no collectives: overlap changes nothing there.
      for (bool overlap : n == 1 ? std::vector<bool>{o.overlap.front()} : o.overlap) {
        const Result r = run(o, n, layout, overlap);
        step[overlap] = r.step_seconds;
        if (layout.name == "data parallel") dp_step[overlap] = r.step_seconds;
        const int64_t zero = 12 * r.parameters / n;
        const std::string versus_off = overlap && step.count(false) ? std::to_string(r.step_seconds / step[false]).substr(0, 4) : "";
        std::printf("| %d | %s | %s | %s | %s | %s | %s | %.1f | %.3f | %s | %s |\n", n, n == 1 ? "one device" : layout.name.c_str(),
                    n == 1 ? "" : overlap ? "on" : "off", mib(r.persistent).c_str(), mib(zero).c_str(), mib(r.largest_parameter).c_str(),
                    mib(r.arena).c_str(), r.compile_seconds, r.step_seconds,
                    dp_step.count(overlap) ? std::to_string(r.step_seconds / dp_step[overlap]).substr(0, 4).c_str() : "",
                    versus_off.c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
