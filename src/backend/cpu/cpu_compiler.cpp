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
#include <sstream>

#include "backend/cpu/cpu_compiler.h"
#include "backend/cpu/cpu_executable.h"
#include "backend/cpu/cpu_pipeline.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/cpu/kernel_isa.h"
#include "core/env_vars.h"
#include "core/error.h"
#include "hlo/passes/hlo_pass.h"
#include "hlo/hlo_serialization.h"
#include "kernels/onednn_matmul.h"
#include "runtime/collectives.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::backend {

namespace {

using hlo::HloOpcode;

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
                                            bool profile, cpu::KernelIsa isa) {
  std::shared_ptr<cpu::SharedLibrary> library;
  std::map<int, cpu::KernelFn> kernels;
  if (!names.empty()) {
    library = cpu::load_shared_object(so);
    for (const auto& [id, name] : names) kernels[id] = reinterpret_cast<cpu::KernelFn>(library->symbol(name));
  }
  return cpu::make_cpu_executable(std::move(module), std::move(library), std::move(kernels), profile, isa);
}

class CpuCompiler : public Compiler {
 public:
  // Throws Error for a kernel_isa this CPU cannot run (kernel_isa.h).
  explicit CpuCompiler(CompilerOptions options)
      : options_(std::move(options)), isa_(cpu::resolve_kernel_isa(options_.kernel_isa)), kernel_flags_(cpu::kernel_flags(isa_)) {}
  std::string name() const override { return "cpu"; }

  // The optimized module, each fusion's kernel symbol and the shared object's
  // bytes (none when it interprets for want of a C++ compiler).
  std::unique_ptr<Executable> compile(hlo::HloModule module, const std::string& graph_key, std::string* serialized) override {
    Compiled c = build(std::move(module), graph_key);
    if (serialized) *serialized = c.fallback ? std::string() : encode_entry(c.module, c.names, c.so);
    return finish(std::move(c));
  }

  // Decodes and loads (dlopen) a stored entry; Error when it is truncated or unusable.
  std::unique_ptr<Executable> deserialize(std::string_view bytes) override {
    Entry e = decode_entry(bytes);
    return make_executable(std::move(e.module), e.names, e.so, options_.profile, isa_);
  }

  // The C++ compiler's version and the kernels' flags (the ISA among them),
  // the passes that change the code, and this build of lazytrain; nullopt
  // without a C++ compiler (nothing to store: fusions are interpreted).
  std::optional<std::string> cache_fingerprint() const override {
    const std::optional<std::string> cxx = cpu::find_cxx_compiler(options_.cxx);
    if (!cxx) return std::nullopt;
    std::string flags;
    for (const auto& f : kernel_flags_) flags += f + " ";
    if (!options_.multi_output_fusion) flags += "no-multi-output-fusion ";
    if (!async_collectives()) flags += "no-async-collectives";
    return std::string(__DATE__ " " __TIME__) + "\n" + cpu::compiler_version(*cxx) + "\n" + flags;
  }

  std::unique_ptr<Executable> compile(hlo::HloModule module) override { return finish(build(std::move(module), "")); }

  // One op: the simplifying passes only; elementwise work runs on the
  // interpreter's kernels and dots on oneDNN, with no C++ compiler run.
  std::unique_ptr<Executable> compile_quick(hlo::HloModule module) override {
    hlo::run_passes(module, cpu::cpu_quick_pass_pipeline());
    return make_executable(std::move(module), {}, {}, options_.profile, isa_);
  }

 private:
  struct Compiled {
    hlo::HloModule module;
    std::map<int, std::string> names;
    std::string so;
    bool fallback = false;
  };

  // CompilerOptions::async_collectives, its default decided by the job's processes.
  bool async_collectives() const { return options_.async_collectives.value_or(runtime::replica_world().num_processes > 1); }

  // Without a C++ compiler (c.fallback) no fusion has a kernel: each runs on the interpreter (counted).
  std::unique_ptr<Executable> finish(Compiled c) { return make_executable(std::move(c.module), c.names, c.so, options_.profile, isa_); }

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
    {
      runtime::TraceMe trace("compile", "HLO passes");
      if (trace) trace.arg("instructions", static_cast<int64_t>(module.instructions.size()));
      hlo::run_passes(module, cpu::cpu_pass_pipeline(options_.multi_output_fusion, async_collectives()));
    }
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
    runtime::TraceMe emit_trace("compile", "emit kernels");
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
    if (emit_trace) emit_trace.arg("kernels", static_cast<int64_t>(kernel_by_text.size())).arg("fusions", static_cast<int64_t>(names.size()));
    emit_trace.end();
    dump(graph_key, "kernels.cpp", sources[0].str() + sources[1].str());
    std::string so;
    if (!names.empty()) {
      runtime::TraceMe trace("compile", "C++ compiler");
      if (trace) trace.arg("compiler", *cxx).arg("kernels", static_cast<int64_t>(kernel_by_text.size()));
      so = cpu::compile_shared_object(*cxx, kernel_flags_,
                                      {{"kernels0.cpp", sources[0].str()},
                                             {"kernels1.cpp", sources[1].str()},
                                             {"prelude.cpp", cpu::kernel_prelude_source()}});
    }
    return Compiled{std::move(module), std::move(names), std::move(so), false};
  }

  CompilerOptions options_;
  cpu::KernelIsa isa_;  // the generated kernels' and the host kernels' (kernels/) paths
  std::vector<std::string> kernel_flags_;
};

}  // namespace

namespace cpu {
std::unique_ptr<Compiler> make_cpu_compiler(const CompilerOptions& options) {
  // LAZYTRAIN_KERNEL_ISA=avx2 makes the process behave as on an AVX2-only CPU,
  // oneDNN included (capped before its first primitive).
  if (environment().kernel_isa == "avx2") kernels::cap_onednn_at_avx2();
  return std::make_unique<CpuCompiler>(options);
}
}  // namespace cpu

}  // namespace lazytrain::backend
