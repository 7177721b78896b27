// LatencyHidingScheduler ("latency-hiding-scheduler"): places the start/done
// pairs of AsyncCollectiveCreator so that compute runs while the exchanges
// do, as XLA's LatencyHidingScheduler does, over the order MemoryScheduler
// chose (which it changes only around the pairs):
//
//  1. A done moves down to just before its first reader: the exchange runs
//     until its value is needed (a gradient's reduce-scatter until the
//     optimizer reads it).
//  2. A start moves up, past the compute before it, until that compute is
//     estimated to take as long as the exchange (LatencyEstimate), never past
//     its operand nor past the start before it: the next layer's all-gather
//     is issued while the current layer computes, and the starts keep their
//     order (every replica runs its exchanges in one order, in FIFO on its
//     collective thread, runtime/collective_stream.h).
//  3. Walking the order with the estimate's clock, a done whose exchange would
//     still be running lets ready compute from the next `lookahead`
//     instructions that does not depend on it go first (the rest of a
//     backward pass while a gradient is reduce-scattered), and the dones of
//     exchanges that end no later (what that compute may be waiting for).
//
// The result computes the same values (only independent instructions change
// places); parameters stay first, the ROOT last, a multi-output fusion's
// get-tuple-elements right after it. Deterministic, so every replica compiles
// the same order. A module without starts is left unchanged.
#pragma once

#include <cstdint>

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

// What the scheduler believes an instruction costs (XLA's
// ApproximateLatencyEstimator: rough rates, used only to compare). Defaults:
// a few cores of a current x86 CPU and an in-process exchange.
struct LatencyEstimate {
  double flops_per_second = 50e9;             // dots, and dots inside fusions
  double bytes_per_second = 10e9;             // other instructions: bytes read and written
  double collective_bytes_per_second = 4e9;   // bytes an exchange moves per replica
  double collective_latency_seconds = 20e-6;  // per exchange, however small
  int64_t lookahead = 256;                    // instructions step 3 looks past a waiting done
};

// The estimated seconds `in` (an instruction of `module`) takes: a start its
// exchange's, a done or a parameter none.
double estimated_seconds(const HloModule& module, const HloInstruction& in, const LatencyEstimate& estimate);

class LatencyHidingScheduler : public HloPass {
 public:
  explicit LatencyHidingScheduler(LatencyEstimate estimate = {}) : estimate_(estimate) {}
  std::string name() const override { return "latency-hiding-scheduler"; }
  // Returns true when the order changed.
  bool run(HloModule& module) override;

 private:
  LatencyEstimate estimate_;
};

}  // namespace lazytrain::hlo
