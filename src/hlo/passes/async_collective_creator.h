// AsyncCollectiveCreator ("async-collective-creator"): turns every all-reduce,
// all-gather and reduce-scatter into a start/done pair, as XLA's pass of that
// name does (all-gather(x) -> all-gather-done(all-gather-start(x))). The pair
// computes the same value; a backend runs the exchange between the two, so
// whatever a scheduler places between them (LatencyHidingScheduler) overlaps
// it. The pair is placed where the collective was; channel ids are renumbered
// in program order.
//
// Departure from XLA: a start here has its collective's result shape (XLA's
// all-gather-start is a tuple of the operand and the result, which keeps the
// operand's buffer alive until the done); the backend keeps the operand alive
// instead (backend/cpu/cpu_executable.cpp: the queued exchange holds it, and
// nothing is computed over it in place before the done).
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class AsyncCollectiveCreator : public HloPass {
 public:
  std::string name() const override { return "async-collective-creator"; }
  // Returns true when the module had a collective.
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
