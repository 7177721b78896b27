// AllReduceReassociate ("all-reduce-reassociate"), as XLA's pass of that name:
// add(all-reduce(a), all-reduce(b)) -> all-reduce(add(a, b)) when both sum over
// the same replica groups and the add is their only user; also through a
// reshape (reshape(all-reduce(x)) -> all-reduce(reshape(x))) and past one
// other term ((all-reduce(a) + x) + all-reduce(b) -> all-reduce(a + b) + x,
// a gradient's sum that a residual's term interleaves). A sum of all-reduces
// is the all-reduce of the sum (up to the order of the additions), so one
// exchange does the work of two: Megatron's backward sums the input gradients
// of query, key and value (three partial sums) before its one all-reduce.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class AllReduceReassociate : public HloPass {
 public:
  std::string name() const override { return "all-reduce-reassociate"; }
  // Returns true when any pair of all-reduces became one.
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
