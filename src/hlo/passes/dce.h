// DCE ("dce"): dead-code elimination, as XLA's HloDCE does.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

// Removes every instruction the ROOT tuple does not reach through operands.
// Parameters always stay (even unused ones), with their numbers, so the
// argument list of the compiled module never changes; the ROOT keeps its
// outputs; the order of the instructions that stay is kept. Fused computations
// are not entered (their builder already removed their dead code).
class Dce : public HloPass {
 public:
  std::string name() const override { return "dce"; }
  // Returns true when any instruction was removed.
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
