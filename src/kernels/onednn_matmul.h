// One oneDNN matmul primitive for an HLO dot, optionally with an epilogue that
// oneDNN applies before writing the result (post-ops): a bias added along the
// last dim, then a residual of the output's shape added. Both backends call
// dots through it; the CPU backend creates one per dot of an executable, once.
// run() may be called from several threads at once (every device's execution
// thread runs the same executable): each run brings its own scratchpad.
// Deterministic whatever the thread count: the output is cut into tiles fixed
// by the shape (batches, or blocks of rows and of a wide output's columns),
// each computed by a primitive made for one thread, and run()'s OpenMP threads
// share the tiles, so 1 or 16 threads form every sum alike (onednn_matmul.cpp).
//
// The dot: lhs [batch..., m, k] or [batch..., k, m] (contracting dim last or
// second to last), rhs [batch..., k, n] or [batch..., n, k], out [batch..., m, n];
// f32, bf16 or f16 operands of one dtype, output of that dtype (oneDNN
// accumulates in f32). Where oneDNN has no native bf16/f16 matmul (bf16:
// CPUs without AVX512_BF16 or AMX, where oneDNN's bf16 kernels are missing or
// emulated and slower than this, or oneDNN capped by ONEDNN_MAX_CPU_ISA or
// LAZYTRAIN_KERNEL_ISA=avx2), the dot is widened: its operands are converted
// to f32 (exactly), multiplied by an f32 primitive and the result rounded to
// the dot's type once, which is what a bf16 matmul computes; a note says so
// on stderr once per process. Bias: [n], the output's dtype. Residual: the output's
// shape and dtype. With an f32 output the epilogue computes exactly what a dot
// followed by the adds computes (each value is rounded to f32 once either way).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"

namespace lazytrain::kernels {

// A dot as OneDnnMatmul sees it: batch dims first on every operand, one
// contracting dim, lhs [batch..., m, k] (or [batch..., k, m] when
// lhs_transposed), rhs [batch..., k, n] (or [batch..., n, k] when
// rhs_transposed), out [batch..., m, n]; every operand of `dtype`.
struct MatmulDims {
  Shape lhs_shape;
  Shape out_shape;
  int64_t batch_dims = 0;
  bool lhs_transposed = false;
  bool rhs_transposed = false;
  DType dtype = DType::kFloat32;
  std::string name;  // the dot's name, for errors
};

struct MatmulEpilogue {
  bool bias = false;
  bool residual = false;
};

class OneDnnMatmul {
 public:
  // Throws Error for dtypes oneDNN cannot multiply (integers) or when no
  // primitive exists (never a dnnl::error).
  explicit OneDnnMatmul(const MatmulDims& dot, MatmulEpilogue epilogue = {});
  ~OneDnnMatmul();
  OneDnnMatmul(const OneDnnMatmul&) = delete;
  OneDnnMatmul& operator=(const OneDnnMatmul&) = delete;

  // Writes lhs·rhs (+ bias broadcast over rows) (+ residual) into `out`, which
  // has the dot's shape and dtype (contiguous, like every operand). `bias`/
  // `residual` must be given exactly when the epilogue has them; none may share
  // storage with `out`.
  void run(const void* lhs, const void* rhs, const void* bias, const void* residual, void* out) const;

  // True when run() reorders rhs into oneDNN's own layout before multiplying
  // (once a run, for all tiles): an unbatched f32 dot whose rhs is stored
  // [k, n] with n > 1024, where oneDNN reading it in place is up to 3x slower
  // (onednn_matmul.cpp), and oneDNN's kernels here want another layout.
  bool repacks_rhs() const;

  // True when this bf16/f16 dot runs as an f32 matmul (no native kernel here).
  bool widened() const;

  // What runs it, for profiles: oneDNN's implementation of the largest tile
  // (its impl_info_str, e.g. "brg:avx512_core"), the tile count, and
  // ", rhs repacked" / ", widened to f32" when so; "none" for an empty dot.
  std::string implementation() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Caps oneDNN at AVX2 for the rest of the process (dnnl::set_max_cpu_isa, as
// ONEDNN_MAX_CPU_ISA=AVX2 does): effective before oneDNN's first primitive, a
// no-op after (its ISA is fixed then). The cpu backend calls it for
// LAZYTRAIN_KERNEL_ISA=avx2; kernels/ itself never reads the environment.
void cap_onednn_at_avx2();

// How often creating a primitive threw a C++ exception and was retried (the
// CPU backend reports it as the counter OneDnnCreateRetries).
int64_t onednn_create_retries();

}  // namespace lazytrain::kernels
