// The CPU backend: HLO passes, then one generated kernel per fusion, compiled
// into a shared object by the system C++ compiler; everything else runs through
// the interpreter's kernels (dot through oneDNN).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "backend/cpu/cpu_compiler.h"
#include "backend/cpu/cpu_pipeline.h"
#include "backend/cpu/dot_epilogue_fusion.h"
#include "backend/interpreter/interpreter_compiler.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/cpu/kernel_isa.h"
#include "backend/literal_buffer.h"
#include "backend/onednn_matmul.h"
#include "backend/interpreter/kernels.h"
#include "core/error.h"
#include "hlo/buffer_assignment.h"
#include "hlo/evaluator/hlo_evaluator.h"
#include "hlo/passes/hlo_pass.h"
#include "hlo/hlo_serialization.h"
#include "runtime/persistent_cache.h"
#include "runtime/metrics.h"

namespace lazytrain::backend {

namespace {

using hlo::HloOpcode;
using runtime::Buffer;

using KernelFn = void (*)(const void* const* args, void* out);

class CpuExecutable : public Executable {
 public:
  CpuExecutable(hlo::HloModule module, std::shared_ptr<cpu::SharedLibrary> library, std::map<int, KernelFn> kernels, bool profile)
      : module_(std::move(module)), library_(std::move(library)), kernels_(std::move(kernels)), profile_(profile) {
    last_use_.assign(module_.instructions.size(), -1);
    for (const auto& in : module_.instructions) {
      for (int o : in.operands) last_use_[o] = in.id;
    }
    for (const auto& [id, fn] : kernels_) in_place_operands_[id] = in_place_candidates(module_.at(id));
    // A scatter-add adds its updates into a copy of operand 0; it may add into
    // operand 0 itself once nothing else reads it (the embedding gradient: the
    // decoder's weight gradient plus the looked-up rows, without a copy of the
    // vocabulary-sized matrix).
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kScatter) in_place_operands_[in.id] = {0};
    }
    // oneDNN primitives: created once per executable, for every dot and dot epilogue fusion.
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kConstant) constants_[in.id] = buffer_from_literal(in.literal);
      if (in.opcode == HloOpcode::kDot) {
        matmuls_[in.id] = std::make_unique<OneDnnMatmul>(module_.at(in.operands[0]).shape, in);
      } else if (auto epilogue = cpu::dot_epilogue_of(in)) {
        const hlo::HloModule& f = *in.fused_computation;
        for (const auto& inner : f.instructions) {
          if (inner.opcode == HloOpcode::kDot) {
            matmuls_[in.id] = std::make_unique<OneDnnMatmul>(f.at(inner.operands[0]).shape, inner,
                                                             MatmulEpilogue{epilogue->bias, epilogue->residual});
          }
        }
      }
    }
    assign_buffers();
  }

  const hlo::HloModule& module() const override { return module_; }

  std::vector<Buffer> execute(const std::vector<Buffer>& arguments) override { return execute(arguments, {}); }

  std::vector<Buffer> execute(const std::vector<Buffer>& arguments, const std::vector<bool>& donated) override {
    check(static_cast<int>(arguments.size()) == module_.num_parameters, "cpu backend",
          "expects " + std::to_string(module_.num_parameters) + " arguments, got " + std::to_string(arguments.size()));
    check(donated.empty() || donated.size() == arguments.size(), "cpu backend",
          "expects one donation flag per argument, got " + std::to_string(donated.size()));
    std::vector<Buffer> values(module_.instructions.size());
    std::vector<Buffer> outputs;
    std::vector<const void*> pointers;
    std::map<std::string, double> totals;  // LAZYTRAIN_PROFILE: milliseconds per kind of instruction
    ArenaLease arena(*this);
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kTuple) {
        for (int o : in.operands) outputs.push_back(values[o]);
        break;
      }
      const auto t0 = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      auto kernel = kernels_.find(in.id);
      auto matmul = matmuls_.find(in.id);
      if (in.opcode == HloOpcode::kConstant) {
        values[in.id] = constants_.at(in.id);  // shared: never overwritten in place (not unique)
      } else if (matmul != matmuls_.end()) {
        Buffer out = output_storage(in, values, donated, arena.buffer);
        const Buffer* bias = in.operands.size() > 2 ? &values[in.operands[2]] : nullptr;
        const Buffer* residual = in.operands.size() > 3 ? &values[in.operands[3]] : nullptr;
        matmul->second->run(values[in.operands[0]], values[in.operands[1]], bias, residual, out);
        values[in.id] = std::move(out);
      } else if (kernel != kernels_.end()) {
        Buffer out = output_storage(in, values, donated, arena.buffer);
        pointers.clear();
        for (int o : in.operands) pointers.push_back(values[o].raw());
        kernel->second(pointers.data(), out.raw());
        values[in.id] = std::move(out);
      } else if (writes_into_storage(in)) {
        Buffer out = output_storage(in, values, donated, arena.buffer);
        std::vector<hlo::ArrayRef> refs;
        for (int o : in.operands) refs.emplace_back(values[o].raw(), values[o].shape(), values[o].dtype());
        hlo::evaluate_into(in, refs, hlo::MutableArrayRef(out.raw(), out.shape(), out.dtype()));
        values[in.id] = std::move(out);
      } else {
        interpreter::Operands args;
        for (int o : in.operands) args.push_back(&values[o]);
        values[in.id] = interpreter::evaluate_instruction(in, args, arguments);
      }
      if (profile_) {
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        totals[kernel != kernels_.end()   ? std::string("generated kernels")
               : matmul != matmuls_.end() && in.opcode == HloOpcode::kFusion ? std::string("dot with epilogue")
                                                                             : hlo::opcode_name(in.opcode)] += ms;
        if (ms > 2) {
          std::fprintf(stderr, "[profile] %8.1f ms  %s %s%s\n", ms, in.name().c_str(), hlo::shape_text(module_, in).c_str(),
                       kernel != kernels_.end() ? " (generated)" : "");
        }
      }
      for (int o : in.operands) {
        if (last_use_[o] == in.id) values[o] = Buffer();
      }
    }
    if (profile_) print_totals(totals);
    return outputs;
  }

 private:
  // Instructions that the interpreter's evaluate_into computes into storage
  // they are handed (everything but values that are made elsewhere or are
  // views: parameters, constants, reshapes, collectives, fusions without a
  // generated kernel, which run on the interpreter whole).
  bool writes_into_storage(const hlo::HloInstruction& in) const {
    switch (in.opcode) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kReshape:
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllGather:
      case HloOpcode::kReduceScatter:
      case HloOpcode::kTuple:
        return false;
      case HloOpcode::kFusion:
        return kernels_.count(in.id) > 0 || matmuls_.count(in.id) > 0;
      default:
        return true;
    }
  }

  // Static buffer assignment (hlo/buffer_assignment.h): the arena slot of every
  // intermediate, and which outputs are computed over an operand in place.
  void assign_buffers() {
    hlo::BufferAssignmentOptions options;
    // A reshape makes no storage (it shows its operand's), so it is not
    // external: its buffer is its operand's, wherever that lives.
    options.storage = [this](const hlo::HloInstruction& in) {
      return writes_into_storage(in) || in.opcode == HloOpcode::kReshape ? hlo::OutputStorage::kArena : hlo::OutputStorage::kExternal;
    };
    options.may_alias = [this](const hlo::HloInstruction& in) {
      std::vector<size_t> operands;
      // A reshape is a view; a collective of one replica, or an interpreted
      // fusion, may hand back an operand's storage.
      const bool views = in.opcode == HloOpcode::kReshape || in.opcode == HloOpcode::kAllReduce || in.opcode == HloOpcode::kAllGather ||
                         in.opcode == HloOpcode::kReduceScatter || (in.opcode == HloOpcode::kFusion && !writes_into_storage(in));
      if (views) {
        for (size_t k = 0; k < in.operands.size(); ++k) operands.push_back(k);
      }
      return operands;
    };
    options.in_place_candidates = [this](const hlo::HloInstruction& in) {
      const auto it = in_place_operands_.find(in.id);
      return it == in_place_operands_.end() ? std::vector<size_t>{} : it->second;
    };
    assignment_ = hlo::assign_buffers(module_, options);
    runtime::metric("ArenaBytes", runtime::MetricKind::kBytes).add_sample(static_cast<double>(assignment_.arena_bytes));
  }

  // The arena of one execution, taken from the executable's free arenas (one
  // per concurrent execution: replicas share a cached executable) and given
  // back when the execution ends, however it ends.
  struct ArenaLease {
    explicit ArenaLease(CpuExecutable& e) : executable(e) {
      std::lock_guard<std::mutex> lock(e.arena_mutex_);
      if (!e.free_arenas_.empty()) {
        buffer = std::move(e.free_arenas_.back());
        e.free_arenas_.pop_back();
      }
      if (!buffer.defined() && e.assignment_.arena_bytes > 0) {
        buffer = Buffer(Shape{e.assignment_.arena_bytes}, DType::kBool);
        runtime::counter("ArenaAllocations").add(1);
      }
    }
    ~ArenaLease() {
      if (!buffer.defined()) return;
      std::lock_guard<std::mutex> lock(executable.arena_mutex_);
      executable.free_arenas_.push_back(std::move(buffer));
    }
    CpuExecutable& executable;
    Buffer buffer;
  };

  // Where `in`'s output is written: over the operand buffer assignment chose,
  // its arena slot, a donated argument or an intermediate it may overwrite
  // (reusable_operand), or new storage.
  Buffer output_storage(const hlo::HloInstruction& in, const std::vector<Buffer>& values, const std::vector<bool>& donated,
                        const Buffer& arena) const {
    const auto id = static_cast<size_t>(in.id);
    if (const int k = assignment_.in_place_operand[id]; k >= 0) return values[in.operands[static_cast<size_t>(k)]].reshaped(in.shape);
    if (const int64_t offset = assignment_.offset[id]; offset >= 0) return arena.view(offset, in.shape, in.dtype);
    if (in_place_operands_.count(in.id)) {
      if (Buffer out = reusable_operand(in, values, donated); out.defined()) return out;
    }
    if (!assignment_.outlives[id]) {
      static runtime::Counter& intermediates = runtime::counter("IntermediateAllocations");
      intermediates.add(1);
    }
    return Buffer(in.shape, in.dtype);
  }

  // Operands of a loop fusion that its kernel reads only at the output's own
  // linear index (element i of the operand feeds element i of the output, never
  // through a broadcast) with the output's shape and dtype: the kernel may write
  // its output over such an operand once nothing else needs it (XLA's
  // CanShareOperandBufferWithUser for elementwise fusions).
  static std::vector<size_t> in_place_candidates(const hlo::HloInstruction& fusion) {
    std::vector<size_t> out;
    if (fusion.opcode != HloOpcode::kFusion || fusion.fusion_kind != hlo::FusionKind::kLoop) return out;
    const hlo::HloModule& body = *fusion.fused_computation;
    std::vector<bool> broadcast_read(body.instructions.size(), false);
    for (const auto& in : body.instructions) {
      if (in.opcode == HloOpcode::kBroadcast) broadcast_read[in.operands[0]] = true;
    }
    for (const auto& in : body.instructions) {
      if (in.opcode != HloOpcode::kParameter || broadcast_read[in.id]) continue;
      if (in.dtype == fusion.dtype && numel(in.shape) == numel(fusion.shape)) out.push_back(static_cast<size_t>(in.parameter_number));
    }
    return out;
  }

  // Storage the kernel (or in-place scatter) of `in` may write its output into: an in-place candidate
  // operand read for the last time here, owned by nobody else (an intermediate)
  // or donated by the caller (an argument). Undefined when there is none.
  Buffer reusable_operand(const hlo::HloInstruction& in, const std::vector<Buffer>& values, const std::vector<bool>& donated) const {
    for (size_t k : in_place_operands_.at(in.id)) {
      const int o = in.operands[k];
      if (last_use_[o] != in.id || !values[o].defined()) continue;
      const hlo::HloInstruction& producer = module_.at(o);
      const bool donated_argument = producer.opcode == HloOpcode::kParameter && !donated.empty() &&
                                    donated[static_cast<size_t>(producer.parameter_number)];
      if (!donated_argument && (producer.opcode == HloOpcode::kParameter || !values[o].unique())) continue;
      // The same value read through two operands must not be overwritten under the other.
      if (std::count(in.operands.begin(), in.operands.end(), o) != 1) continue;
      return values[o].reshaped(in.shape);
    }
    return Buffer();
  }

  // One line per execution: where its time went, largest first.
  void print_totals(const std::map<std::string, double>& totals) const {
    std::vector<std::pair<double, std::string>> sorted;
    double all = 0;
    for (const auto& [kind, ms] : totals) {
      sorted.emplace_back(ms, kind);
      all += ms;
    }
    std::sort(sorted.rbegin(), sorted.rend());
    std::string line;
    for (const auto& [ms, kind] : sorted) {
      if (ms >= 0.5) line += ", " + kind + " " + std::to_string(static_cast<int>(ms + 0.5));
    }
    std::fprintf(stderr, "[profile] %s: %.1f ms in all%s (ms)\n", module_.name.c_str(), all, line.c_str());
  }

  hlo::HloModule module_;
  std::shared_ptr<cpu::SharedLibrary> library_;  // keeps the kernels loaded
  std::map<int, KernelFn> kernels_;
  std::vector<int> last_use_;
  std::map<int, std::vector<size_t>> in_place_operands_;  // kernel or scatter instruction -> operand indices
  std::map<int, std::unique_ptr<OneDnnMatmul>> matmuls_;  // dots and dot epilogue fusions
  std::map<int, Buffer> constants_;                       // each constant's value, copied once
  // CompilerOptions::profile (LAZYTRAIN_PROFILE): per-execution totals by instruction kind.
  bool profile_ = false;
  hlo::BufferAssignment assignment_;
  std::mutex arena_mutex_;
  std::vector<Buffer> free_arenas_;
};

// A persistent cache entry: the optimized module, the kernel symbol of each
// fusion, and the shared object's bytes.
std::string encode_entry(const hlo::HloModule& module, const std::map<int, std::string>& names, const std::string& so) {
  std::string out;
  auto u64 = [&](uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); };
  std::string m = hlo::serialize_module(module);
  u64(m.size());
  out += m;
  u64(names.size());
  for (const auto& [id, name] : names) {
    u64(static_cast<uint64_t>(id));
    u64(name.size());
    out += name;
  }
  out += so;
  return out;
}

struct Entry {
  hlo::HloModule module;
  std::map<int, std::string> names;
  std::string so;
};

Entry decode_entry(std::string_view in) {
  size_t pos = 0;
  auto u64 = [&]() {
    check(pos + 8 <= in.size(), "cpu backend", "truncated cache entry");
    uint64_t v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  };
  auto bytes = [&](uint64_t n) {
    check(n <= in.size() - pos, "cpu backend", "truncated cache entry");
    std::string_view s = in.substr(pos, n);
    pos += n;
    return s;
  };
  Entry e;
  e.module = hlo::deserialize_module(bytes(u64()));
  uint64_t count = u64();
  for (uint64_t k = 0; k < count; ++k) {
    int id = static_cast<int>(u64());
    e.names[id] = std::string(bytes(u64()));
  }
  e.so = std::string(in.substr(pos));
  return e;
}

std::unique_ptr<Executable> make_executable(hlo::HloModule module, const std::map<int, std::string>& names, const std::string& so,
                                            bool profile) {
  std::shared_ptr<cpu::SharedLibrary> library;
  std::map<int, KernelFn> kernels;
  if (!names.empty()) {
    library = cpu::load_shared_object(so);
    for (const auto& [id, name] : names) kernels[id] = reinterpret_cast<KernelFn>(library->symbol(name));
  }
  return std::make_unique<CpuExecutable>(std::move(module), std::move(library), std::move(kernels), profile);
}

class CpuCompiler : public Compiler {
 public:
  // Throws Error for a kernel_isa this CPU cannot run (kernel_isa.h).
  explicit CpuCompiler(CompilerOptions options)
      : options_(std::move(options)), kernel_flags_(cpu::kernel_flags(cpu::resolve_kernel_isa(options_.kernel_isa))) {}
  std::string name() const override { return "cpu"; }

  std::unique_ptr<Executable> load_cached(const std::string& graph_key) override {
    runtime::PersistentCache* disk = disk_cache();
    if (!disk || !cpu::find_cxx_compiler(options_.cxx)) return nullptr;
    const auto start = std::chrono::steady_clock::now();
    std::optional<std::string> bytes = disk->get(entry_key(graph_key));
    if (!bytes) return nullptr;
    try {
      Entry e = decode_entry(*bytes);
      auto executable = make_executable(std::move(e.module), e.names, e.so, options_.profile);
      // Read, checksum, decode and dlopen of a hit: what replaces CompileTime.
      runtime::metric("PersistentCacheLoadTime")
          .add_sample(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
      return executable;
    } catch (const Error& err) {
      std::fprintf(stderr, "warning: unusable compile cache entry for graph %s (%s); recompiling\n", graph_key.c_str(), err.what());
      runtime::counter("PersistentCacheCorrupt").add(1);
      return nullptr;
    }
  }

  std::unique_ptr<Executable> compile(hlo::HloModule module, const std::string& graph_key) override {
    Compiled c = build(std::move(module), graph_key);
    if (!c.fallback) {
      if (runtime::PersistentCache* disk = disk_cache()) disk->put(entry_key(graph_key), encode_entry(c.module, c.names, c.so));
    }
    return finish(std::move(c));
  }

  std::unique_ptr<Executable> compile(hlo::HloModule module) override { return finish(build(std::move(module), "")); }

  // One op: the simplifying passes only; elementwise work runs on the
  // interpreter's kernels and dots on oneDNN, with no C++ compiler run.
  std::unique_ptr<Executable> compile_quick(hlo::HloModule module) override {
    hlo::run_passes(module, cpu::cpu_quick_pass_pipeline());
    return make_executable(std::move(module), {}, {}, options_.profile);
  }

 private:
  struct Compiled {
    hlo::HloModule module;
    std::map<int, std::string> names;
    std::string so;
    bool fallback = false;
  };

  // CompilerOptions::cache_dir (--compile_cache_dir, LAZYTRAIN_CACHE_DIR), opened at the first use.
  runtime::PersistentCache* disk_cache() {
    if (!disk_checked_) {
      if (!options_.cache_dir.empty()) disk_.emplace(options_.cache_dir);
      disk_checked_ = true;
    }
    return disk_ ? &*disk_ : nullptr;
  }

  // Graph hash + backend + compiler version and flags (the kernel ISA among
  // them) + this build of lazytrain.
  std::string entry_key(const std::string& graph_key) const {
    std::string flags;
    for (const auto& f : kernel_flags_) flags += f + " ";
    const std::string version = cpu::compiler_version(*cpu::find_cxx_compiler(options_.cxx));
    return runtime::PersistentCache::make_key({"lazytrain-cpu", __DATE__ " " __TIME__, version, flags, graph_key});
  }

  std::unique_ptr<Executable> finish(Compiled c) {
    if (c.fallback) return interpreter::make_interpreter_compiler(options_)->compile(std::move(c.module));
    return make_executable(std::move(c.module), c.names, c.so, options_.profile);
  }

  // CompilerOptions::dump_dir (the CLI's --dump_hlo, LAZYTRAIN_DUMP_HLO): <graph>.before.hlo,
  // <graph>.after.hlo and <graph>.kernels.cpp for every compiled graph.
  void dump(const std::string& graph_key, const std::string& suffix, const std::string& text) const {
    const std::string& dir = options_.dump_dir;
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string path = dir + "/" + (graph_key.empty() ? "graph" : graph_key) + "." + suffix;
    std::ofstream out(path);
    if (ec || !(out << text)) {
      throw Error("[cpu backend] cannot write the HLO dump '" + path + "' (--dump_hlo or LAZYTRAIN_DUMP_HLO): expected a writable directory");
    }
  }

  Compiled build(hlo::HloModule module, const std::string& graph_key) {
    dump(graph_key, "before.hlo", module.to_string());
    hlo::run_passes(module, cpu::cpu_pass_pipeline());
    dump(graph_key, "after.hlo", module.to_string());
    std::optional<std::string> cxx = cpu::find_cxx_compiler(options_.cxx);
    if (!cxx && !options_.cxx.empty()) {
      throw Error("[cpu backend] the C++ compiler CXX='" + options_.cxx + "' does not run; point CXX at a C++ compiler or unset it (c++ on PATH)");
    }
    if (!cxx) {
      static bool warned = false;
      if (!warned) std::fprintf(stderr, "warning: no C++ compiler found ($CXX or c++); the cpu backend interprets instead\n");
      warned = true;
      Compiled c{std::move(module), {}, {}, true};
      return c;
    }
    // Kernels go round-robin into two translation units that compile in parallel.
    std::ostringstream sources[2];
    for (auto& src : sources) src << cpu::kernel_header_source();
    int next_source = 0;
    std::map<int, std::string> names;
    // Identical fusions (every layer of a model has the same ones) share one kernel.
    std::map<std::string, std::string> kernel_by_text;
    for (const auto& in : module.instructions) {
      if (in.opcode != HloOpcode::kFusion) continue;
      std::optional<std::string> text = cpu::emit_fusion_kernel(in, "LAZYTRAIN_KERNEL");
      if (!text) continue;
      auto [it, inserted] = kernel_by_text.emplace(*text, "fusion_" + std::to_string(in.id));
      if (inserted) {
        std::string named = *text;
        named.replace(named.find("LAZYTRAIN_KERNEL"), 16, it->second);
        sources[next_source++ % 2] << "\n" << named;
      }
      names[in.id] = it->second;
    }
    dump(graph_key, "kernels.cpp", sources[0].str() + sources[1].str());
    std::string so;
    if (!names.empty()) {
      so = cpu::compile_shared_object(*cxx, kernel_flags_,
                                      {{"kernels0.cpp", sources[0].str()},
                                             {"kernels1.cpp", sources[1].str()},
                                             {"prelude.cpp", cpu::kernel_prelude_source()}});
    }
    return Compiled{std::move(module), std::move(names), std::move(so), false};
  }

  CompilerOptions options_;
  std::vector<std::string> kernel_flags_;
  bool disk_checked_ = false;
  std::optional<runtime::PersistentCache> disk_;
};

}  // namespace

namespace cpu {
std::unique_ptr<Compiler> make_cpu_compiler(const CompilerOptions& options) { return std::make_unique<CpuCompiler>(options); }
}  // namespace cpu

}  // namespace lazytrain::backend
