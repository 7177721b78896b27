// The CPU backend. Work in progress (issue 3): today it runs the HLO pass
// pipeline and executes the optimized module with the interpreter's kernels.
#include "backend/compiler.h"
#include "hlo/passes/hlo_pass.h"
#include "hlo/passes/pipeline.h"

namespace lazytrain::backend {

namespace {

class CpuCompiler : public Compiler {
 public:
  std::string name() const override { return "cpu"; }
  std::unique_ptr<Executable> compile(hlo::HloModule module) override {
    hlo::run_passes(module, hlo::default_pipeline());
    return make_interpreter_compiler()->compile(std::move(module));
  }
};

}  // namespace

std::unique_ptr<Compiler> make_cpu_compiler() { return std::make_unique<CpuCompiler>(); }

}  // namespace lazytrain::backend
