// Sharding propagation ("sharding-propagation"): from the shardings a user
// annotated, a sharding for every instruction, as XLA's ShardingPropagation
// does for GSPMD (arXiv 2105.04663, section 3.5). Backend-neutral; it runs on
// the whole-program module before the SPMD partitioner, and before fusion
// (fusion does not keep the shardings of what it fuses).
//
// Fixed, never changed: every instruction that already has a sharding (the
// user's: a parameter's data layout, a "Sharding" custom-call) and every
// parameter without one (its data is whole on every device: replicated).
//
// The rest are found by sweeps, forward (an instruction's sharding from its
// operands') then backward (an operand's from its users'), repeated until
// nothing changes. A rule only ever proposes a tiled sharding; a proposal is
// taken when the instruction has none, or when merged with the one it has
// (sharding_util::merge) it cuts the value into more tiles (a 2-D mesh: the
// batch split by one axis and the hidden size by the other). A proposal is
// first fitted to the shape (a dimension its tile count does not divide is
// not tiled). What no sweep reaches ends replicated; the ROOT tuple gets one
// sharding per output.
//
// Rules (one per opcode; sharding_util has the arithmetic):
//   elementwise, convert, select   the operands' merged / the result's
//   broadcast, transpose, reshape  dimensions follow the op's dimension map
//   slice, concatenate             dimensions the op does not cut keep their tiles
//   reduce                         kept dimensions keep theirs (a reduced tiled
//                                  dimension leaves partial sums: the partitioner
//                                  adds the all-reduce)
//   dot                            batch and free dimensions from each side; a
//                                  contracting dimension from the other operand's
//   gather, scatter (embeddings)   the index dimensions from the indices, the row
//                                  dimensions from the table / updates
//   opt-barrier                    its value's
//   custom-calls                   "Sharding" (the annotation itself), topk (every
//                                  dimension but `dim`), sdpa forward and
//                                  backward (the batch dimensions: batch, heads)
//   constant, iota, rng-bit-generator  nothing forward; they take their users'
// An instruction with no rule (a collective a user wrote, a fusion) whose
// operand or user is tiled is an Error naming it, never a silent replication.
// So is a maximal or manual annotation: the partitioner handles replicated
// and tiled layouts.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class ShardingPropagation : public HloPass {
 public:
  std::string name() const override { return "sharding-propagation"; }
  // Gives every instruction a sharding when any instruction has one; returns
  // false (and changes nothing) for a module without annotations or one
  // partitioned already. Throws Error
  // "[sharding-propagation] <instruction> (<origin>): ..." as described above.
  bool run(HloModule& module) override;
};

// True when any instruction of `module` has a sharding.
bool has_sharding(const HloModule& module);

}  // namespace lazytrain::hlo
