#include "backend/cpu/kernel_isa.h"

#include "core/error.h"

namespace lazytrain::backend::cpu {

std::string to_string(KernelIsa isa) { return isa == KernelIsa::kAvx512 ? "avx512" : "avx2"; }

KernelIsa detect_kernel_isa() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  return avx512 ? KernelIsa::kAvx512 : KernelIsa::kAvx2;
}

KernelIsa resolve_kernel_isa(const std::string& requested) {
  if (requested.empty() || requested == "auto") return detect_kernel_isa();
  if (requested == "avx2") return KernelIsa::kAvx2;
  if (requested == "avx512") {
    if (detect_kernel_isa() != KernelIsa::kAvx512) {
      throw Error("[cpu backend] LAZYTRAIN_KERNEL_ISA=avx512, but this CPU lacks AVX-512 (F, BW, DQ and VL); use avx2 or auto");
    }
    return KernelIsa::kAvx512;
  }
  throw Error("[cpu backend] LAZYTRAIN_KERNEL_ISA='" + requested + "': expected auto, avx2 or avx512");
}

std::vector<std::string> kernel_flags(KernelIsa isa) {
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-fno-math-errno", "-fopenmp", "-fPIC", "-shared", "-w"};
  if (isa == KernelIsa::kAvx2) {
    flags.push_back("-march=x86-64-v3");
    return flags;
  }
  flags.push_back("-march=x86-64-v4");
  flags.push_back("-mprefer-vector-width=512");
  return flags;
}

}  // namespace lazytrain::backend::cpu
