// The roofline bound of a compiled training step, measured on this machine in
// the benchmark's own run (issue 33: a target that the step's own memory
// traffic cannot make impossible, unlike MFU).
//
//   bound = Σ over the step's dots of the best time oneDNN takes for that dot
//           alone (same shapes, dtype and layout, its primitive made once;
//           a fused attention kernel's matmuls count as the batched dots
//           eager attention runs: Q K^T and P V, and five in its backward)
//         + non-matmul bytes / the memory bandwidth of a STREAM triad
//
// Non-matmul bytes count every value the step's other instructions (fused
// kernels, reductions, gathers, scatters; the optimizer, clipping, norms,
// activations' elementwise work) move, each value once: written once if one
// of them produces it, read once if any of them reads it, however many
// kernels do. Parameters and optimizer moments read and updated count a read
// and a write. Reshapes are views (no bytes); dots' own operands and outputs
// are in the dots' times. It is the traffic of a step that fused every
// non-matmul computation perfectly around the same dots, at the triad's
// bandwidth, with the dots at oneDNN's own best: a lower bound for this
// graph on this machine, not for the model in general.
#pragma once

#include <cstdint>
#include <string>

#include "hlo/hlo_instruction.h"

namespace lazytrain::bench {

// STREAM's triad a[i] = b[i] + s * c[i] over f32 arrays of `bytes_per_array`
// (each much larger than the caches) on `threads` OpenMP threads: the best
// rate in bytes/s over `repeats` passes (12 bytes per element: b, c read, a written).
double triad_bytes_per_second(int threads, int64_t bytes_per_array = int64_t{128} << 20, int repeats = 6);

struct Roofline {
  int64_t dots = 0;          // dot instructions (bare or with an epilogue)
  double matmul_flops = 0;   // 2·M·N·K summed over them
  double matmul_s = 0;       // Σ each dot's best oneDNN time
  double other_bytes = 0;    // the non-matmul bytes above
  double bandwidth = 0;      // bytes/s (triad)
  int threads = 1;
  double bound_s() const { return matmul_s + other_bytes / bandwidth; }
};

// Measures `module` (an optimized cpu-backend step) on `threads` threads.
// Each distinct dot (shapes, dimension numbers, dtype) is timed alone: one
// untimed run, then the best of at least 3 runs and 0.2 s.
Roofline measure_roofline(const hlo::HloModule& module, int threads);

// "roofline (2 threads): matmuls 0.412 s (146 dots, 2.1 TFLOP) + 1.23 GB at
// 18.2 GB/s (triad) = 0.480 s; the step is 1.31x the bound" and the RESULT fields
// " roofline_s=... roofline_matmul_s=... roofline_bytes=... triad_gbps=... roofline_fraction=...".
void print_roofline(const Roofline& r, double step_s);
std::string roofline_result_fields(const Roofline& r, double step_s);

}  // namespace lazytrain::bench
