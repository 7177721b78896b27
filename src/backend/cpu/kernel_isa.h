// The instruction set generated kernels are compiled for. The library itself
// is built for x86-64-v3 (AVX2, FMA) so that it runs on any recent x86 CPU;
// generated kernels are compiled on the machine that runs them, so they can
// use what this CPU has: AVX-512 (16-wide f32 loops, SLEEF's AVX-512 vector
// functions) where it exists, AVX2 otherwise. The choice is part of the kernel
// flags, hence of the persistent compile-cache key: a cache written on an
// AVX-512 machine is never loaded on an AVX2 one.
#pragma once

#include <string>
#include <vector>

namespace lazytrain::backend::cpu {

enum class KernelIsa {
  kAvx2,    // x86-64-v3: AVX2 + FMA, 8 f32 lanes; SLEEF's *_u10avx2 functions
  kAvx512,  // x86-64-v4: AVX-512 F/BW/DQ/VL, 16 f32 lanes; SLEEF's *_u10avx512f functions
};

// "avx2" or "avx512".
std::string to_string(KernelIsa isa);

// The widest ISA this CPU runs (cpuid, at run time): kAvx512 when it has
// AVX-512 F, BW, DQ and VL, kAvx2 otherwise.
KernelIsa detect_kernel_isa();

// CompilerOptions::kernel_isa (LAZYTRAIN_KERNEL_ISA): "" or "auto" is
// detect_kernel_isa(); "avx2" or "avx512" forces one. Throws Error naming
// LAZYTRAIN_KERNEL_ISA for another value, or for "avx512" on a CPU without it.
KernelIsa resolve_kernel_isa(const std::string& requested);

// The compiler flags of kernels for `isa`: -march=x86-64-v3 or
// -march=x86-64-v4 -mprefer-vector-width=512 (GCC otherwise keeps 256-bit
// vectors on x86-64-v4).
//
// bf16 rounding stays the integer round-to-nearest-even of core/scalar_ops.h,
// which GCC vectorizes 16 wide, rather than AVX512_BF16's vcvtneps2bf16: that
// instruction treats subnormal inputs as zero and keeps NaN payloads, where
// PyTorch's c10::BFloat16 (and the interpreter) keep subnormals and give 0x7fc0.
std::vector<std::string> kernel_flags(KernelIsa isa);

}  // namespace lazytrain::backend::cpu
