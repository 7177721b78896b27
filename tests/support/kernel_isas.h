// The kernel instruction sets the CPU backend can generate code for on this
// machine, and a CPU compiler forced to one of them: differential tests run
// each comparison on every ISA (backend/cpu/kernel_isa.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/kernel_isa.h"
#include "backend/registry.h"

namespace lazytrain::testing {

// "avx2", and "avx512" where the CPU has AVX-512.
inline std::vector<std::string> kernel_isas() {
  std::vector<std::string> isas = {"avx2"};
  if (backend::cpu::detect_kernel_isa() == backend::cpu::KernelIsa::kAvx512) isas.push_back("avx512");
  return isas;
}

// The CPU backend with the environment's options, generating kernels for `isa`.
inline std::unique_ptr<backend::Compiler> cpu_compiler_for(const std::string& isa) {
  backend::CompilerOptions options = backend::CompilerOptions::from_environment();
  options.kernel_isa = isa;
  return backend::make_compiler("cpu", options);
}

}  // namespace lazytrain::testing
