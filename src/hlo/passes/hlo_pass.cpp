#include "hlo/passes/hlo_pass.h"

#include "core/error.h"

namespace lazytrain::hlo {

bool run_passes(HloModule& module, const std::vector<std::unique_ptr<HloPass>>& passes, const PassDumpFn& dump) {
  bool changed = false;
  for (const auto& pass : passes) {
    bool c = pass->run(module);
    try {
      verify(module);
    } catch (const Error& e) {
      throw Error("[hlo pass " + pass->name() + "] produced an invalid module: " + e.what());
    }
    if (c && dump) dump(pass->name(), module);
    changed = changed || c;
  }
  return changed;
}

}  // namespace lazytrain::hlo
