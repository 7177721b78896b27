// CollectiveCombiner ("collective-combiner"): one all-gather for a unit's
// parameters and one reduce-scatter for its gradients, where the SPMD
// partitioner made one per parameter (issue 34's FSDP structure: per layer
// unit, two all-gathers and one reduce-scatter). XLA's AllGatherCombiner and
// ReduceScatterCombiner do this job.
//
// The unit is the op_name of a parameter's sharding metadata
// (hlo_sharding.h), which FSDP sets to the parameter's layer
// (distributed/spmd.h fsdp_unit). What it combines, per unit, dtype, reduction
// and replica groups:
// - all-gathers of entry parameters of the unit, one set each time the
//   computation passes over the unit: sorted by when they are needed (the
//   longest path from each to the ROOT, greatest first), a set ends where a
//   parameter comes again (the backward's second gather of a weight starts
//   the unit's second set);
// - reduce-scatters whose results reach, through elementwise ops, transposes
//   and reshapes, only the unit's parameters or outputs (a gradient flowing
//   into its optimizer update in the same step); a set is left apart when
//   one member's operand depends on another's result.
// A set also ends where it would pass the byte threshold. The combined
// collective stands where its set's first member stood: the unit's gradients
// are reduce-scattered once the last of them is computed.
//
// Departure from XLA: XLA's combined collectives are variadic (a tuple of
// operands and results). lazytrain's collectives take one array, so the
// combiner packs: each member is transposed to put its collective dimension
// first and flattened, the members are concatenated into one buffer, the
// collective runs on it, and slices, reshapes and transposes unpack each
// member's result (as PyTorch FSDP's FlatParameter packs a unit). Each
// element's sum runs over the same devices in the same order: the results are
// bit for bit those of the separate collectives.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class CollectiveCombiner : public HloPass {
 public:
  // XLA's combine_threshold_in_bytes: a combined collective holds at most this
  // many bytes (an all-gather's result, a reduce-scatter's operand); a member
  // larger alone stays alone (bert-base's 89 MiB word embeddings), one
  // transformer layer of bert-large (48 MiB) fits.
  static constexpr int64_t kDefaultThreshold = int64_t{64} << 20;
  explicit CollectiveCombiner(int64_t combine_threshold_in_bytes = kDefaultThreshold) : combine_threshold_in_bytes_(combine_threshold_in_bytes) {}
  std::string name() const override { return "collective-combiner"; }
  // Returns true when any two collectives became one.
  bool run(HloModule& module) override;

 private:
  int64_t combine_threshold_in_bytes_;
};

}  // namespace lazytrain::hlo
