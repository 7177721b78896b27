// The CPU backend: HLO passes, then one generated kernel per fusion, compiled
// into a shared object by the system C++ compiler; everything else runs through
// the interpreter's kernels (dot through oneDNN).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "backend/compiler.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/interpreter/kernels.h"
#include "core/error.h"
#include "hlo/passes/hlo_pass.h"
#include "hlo/passes/pipeline.h"
#include "runtime/metrics.h"

namespace lazytrain::backend {

namespace {

using hlo::HloOpcode;
using runtime::Buffer;

using KernelFn = void (*)(const void* const* args, void* out);

class CpuExecutable : public Executable {
 public:
  CpuExecutable(hlo::HloModule module, std::shared_ptr<cpu::SharedLibrary> library, std::map<int, KernelFn> kernels)
      : module_(std::move(module)), library_(std::move(library)), kernels_(std::move(kernels)) {
    last_use_.assign(module_.instructions.size(), -1);
    for (const auto& in : module_.instructions) {
      for (int o : in.operands) last_use_[o] = in.id;
    }
  }

  const hlo::HloModule& module() const override { return module_; }

  std::vector<Buffer> execute(const std::vector<Buffer>& arguments) override {
    check(static_cast<int>(arguments.size()) == module_.num_parameters, "cpu backend",
          "expects " + std::to_string(module_.num_parameters) + " arguments, got " + std::to_string(arguments.size()));
    std::vector<Buffer> values(module_.instructions.size());
    std::vector<Buffer> outputs;
    std::vector<const void*> pointers;
    for (const auto& in : module_.instructions) {
      if (in.opcode == HloOpcode::kTuple) {
        for (int o : in.operands) outputs.push_back(values[o]);
        break;
      }
      auto kernel = kernels_.find(in.id);
      if (kernel != kernels_.end()) {
        Buffer out(in.shape, in.dtype);
        pointers.clear();
        for (int o : in.operands) pointers.push_back(values[o].raw());
        kernel->second(pointers.data(), out.raw());
        values[in.id] = std::move(out);
      } else {
        interpreter::Operands args;
        for (int o : in.operands) args.push_back(&values[o]);
        values[in.id] = interpreter::evaluate_instruction(in, args, arguments);
      }
      for (int o : in.operands) {
        if (last_use_[o] == in.id) values[o] = Buffer();
      }
    }
    return outputs;
  }

 private:
  hlo::HloModule module_;
  std::shared_ptr<cpu::SharedLibrary> library_;  // keeps the kernels loaded
  std::map<int, KernelFn> kernels_;
  std::vector<int> last_use_;
};

class CpuCompiler : public Compiler {
 public:
  std::string name() const override { return "cpu"; }

  std::unique_ptr<Executable> compile(hlo::HloModule module) override {
    hlo::run_passes(module, hlo::default_pipeline());
    std::optional<std::string> cxx = cpu::find_cxx_compiler();
    if (!cxx) {
      static bool warned = false;
      if (!warned) std::fprintf(stderr, "warning: no C++ compiler found ($CXX or c++); the cpu backend interprets instead\n");
      warned = true;
      return make_interpreter_compiler()->compile(std::move(module));
    }
    std::ostringstream source;
    source << cpu::kernel_header_source();
    std::map<int, std::string> names;
    for (const auto& in : module.instructions) {
      if (in.opcode != HloOpcode::kFusion) continue;
      std::string name = "fusion_" + std::to_string(in.id);
      if (auto text = cpu::emit_fusion_kernel(in, name)) {
        source << "\n" << *text;
        names[in.id] = name;
      }
    }
    std::shared_ptr<cpu::SharedLibrary> library;
    std::map<int, KernelFn> kernels;
    if (!names.empty()) {
      std::string bytes = cpu::compile_shared_object(*cxx, {{"kernels.cpp", source.str()}, {"prelude.cpp", cpu::kernel_prelude_source()}});
      library = cpu::load_shared_object(bytes);
      for (const auto& [id, name] : names) kernels[id] = reinterpret_cast<KernelFn>(library->symbol(name));
    }
    return std::make_unique<CpuExecutable>(std::move(module), std::move(library), std::move(kernels));
  }
};

}  // namespace

std::unique_ptr<Compiler> make_cpu_compiler() { return std::make_unique<CpuCompiler>(); }

}  // namespace lazytrain::backend
