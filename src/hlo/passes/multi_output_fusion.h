// MultiOutputFusion ("multi-output-fusion"): merges loop fusions that share
// what they read into one multi-output fusion, so that one loop reads each
// array once and writes every result (XLA's MultiOutputFusion and
// CpuMultiOutputFusion, simplified). Runs after InstructionFusion.
//
// Two kinds of merge, between kLoop fusions of one element count (so that one
// linear index serves them all; kInput and kOutput fusions stay out):
// - siblings: fusions that read the same array operand of their own element
//   count (AdamW's new first and second moments both read the gradient);
// - producer-consumer: a fusion and the fusion that reads its value, when that
//   value is also a step output or read by nobody else once merged (the
//   parameter update reads the new moments that the step returns too).
// A merge that would put a path through another instruction between the two
// (a cycle once they are one instruction) is not made. The merged fusion's
// fused computation returns a tuple of every member's value that is read
// outside it; users read the elements through get-tuple-element (one
// get-tuple-element per element). A group whose only value read outside is
// one stays a single-output fusion.
//
// What a backend's kernels can compute in one loop it says through ShouldFuse
// (CpuMultiOutputFusion in backend/cpu/cpu_fusion.h); this pass knows no backend.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class MultiOutputFusion : public HloPass {
 public:
  std::string name() const override { return "multi-output-fusion"; }
  bool run(HloModule& module) override;

  // Whether the backend can compute loop fusions `a` and `b` of `module` (of
  // one element count) in one loop; asked before every merge, about one
  // member of each side.
  virtual bool ShouldFuse(const HloModule& module, const HloInstruction& a, const HloInstruction& b) const = 0;
};

}  // namespace lazytrain::hlo
