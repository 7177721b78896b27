// Process-wide settings from a script's flags (the CLI's --backend,
// --compile_cache_dir, --dump_hlo, --execution_mode, --detect_anomaly,
// --debug_recompiles, --debug_graphs), for the CLI and the Python package.
#pragma once

#include <string>

namespace lazytrain::lazy {

// The graph executor's backend: `backend` (else $LAZYTRAIN_BACKEND, else cpu)
// with `compile_cache_dir` and `dump_hlo` over the environment's defaults.
// Does nothing when all three are empty. Error for an unknown backend name.
void configure_backend(const std::string& backend, const std::string& compile_cache_dir, const std::string& dump_hlo);
// The execution mode (lazy/execution_mode.h), anomaly detection, recompile
// reasons (lazy/recompile_reasons.h) and step analysis (lazy/step_analysis.h).
// Throws lazytrain::Error naming --execution_mode for an unknown mode.
void configure_execution(const std::string& execution_mode, bool detect_anomaly, bool debug_recompiles, bool debug_graphs);

}  // namespace lazytrain::lazy
