// MemoryScheduler ("memory-scheduler"): orders a module's instructions to keep
// fewer bytes alive at once, as XLA's ListMemoryScheduler does. Backends run
// instructions in module order and free each value after its last use, so the
// order is the memory: the lowering's order (a post-order from the outputs)
// puts a training step's weight-gradient dots after the whole input-gradient
// chain when the optimizer reads the gradients, which keeps every layer's
// activations alive until the end of backward.
//
// Greedy list scheduling: among the instructions whose operands are all
// computed, take the one that frees the most bytes net of what it allocates
// (an operand is freed when this is its last remaining user); ties keep the
// original order. The result computes the same values (only independent
// instructions change places); parameters keep their numbers and come first,
// the ROOT tuple stays last; a multi-output fusion's get-tuple-elements
// follow it at once (its kernel writes their values). Deterministic, so replicas that compile the same
// module run their collectives in the same order.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class MemoryScheduler : public HloPass {
 public:
  std::string name() const override { return "memory-scheduler"; }
  // Returns true when the order changed.
  bool run(HloModule& module) override;
};

// The most bytes of instruction results (parameters and the ROOT tuple not
// counted) alive at once when `module` runs in its order, each freed after its
// last use and the ROOT's operands kept to the end.
int64_t peak_live_bytes(const HloModule& module);

}  // namespace lazytrain::hlo
