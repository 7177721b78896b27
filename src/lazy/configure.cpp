#include "lazy/configure.h"

#include "backend/registry.h"
#include "lazy/execution_mode.h"
#include "lazy/graph_executor.h"
#include "lazy/recompile_reasons.h"
#include "lazy/step_analysis.h"

namespace lazytrain::lazy {

void configure_backend(const std::string& backend, const std::string& compile_cache_dir, const std::string& dump_hlo) {
  if (backend.empty() && compile_cache_dir.empty() && dump_hlo.empty()) return;
  backend::CompilerOptions options = backend::CompilerOptions::from_environment();
  if (!compile_cache_dir.empty()) options.cache_dir = compile_cache_dir;
  if (!dump_hlo.empty()) options.dump_dir = dump_hlo;
  // The disk tier is the computation cache's: set before the compiler, whose target it decides.
  GraphExecutor::get().set_compile_cache_dir(options.cache_dir);
  GraphExecutor::get().set_compiler(backend::make_compiler(backend.empty() ? backend::default_backend_name() : backend, options));
}

void configure_execution(const std::string& execution_mode, bool detect_anomaly, bool debug_recompiles, bool debug_graphs) {
  set_execution_mode(parse_execution_mode(execution_mode, "--execution_mode"));
  set_detect_anomaly(detect_anomaly);
  RecompileTracker::get().set_debug(debug_recompiles);
  set_step_analysis(debug_graphs);
}

}  // namespace lazytrain::lazy
