// The kernel ISA of the CPU backend (backend/cpu/kernel_isa.h): how it is
// chosen, that AVX-512 kernels really are 16 lanes wide and call SLEEF's
// AVX-512 functions (read from the disassembly of the generated code), and
// that the ISA is part of the persistent compile-cache key. The numerics of
// both paths against the interpreter are DifferentialRandomHloOnIsa and
// DifferentialSpecialValues (tests/backend/differential_test.cpp).
#include "backend/cpu/kernel_isa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "backend/cpu/cpu_pipeline.h"
#include "backend/cpu/jit.h"
#include "backend/cpu/kernel_emitter.h"
#include "backend/registry.h"
#include "core/error.h"
#include "hlo/hlo_builder.h"
#include "hlo/passes/hlo_pass.h"
#include "lazy/computation_cache.h"
#include "runtime/metrics.h"

namespace lazytrain::backend::cpu {
namespace {

namespace fs = std::filesystem;
using hlo::HloOpcode;

bool cpu_has_avx512() { return detect_kernel_isa() == KernelIsa::kAvx512; }

TEST(KernelIsa, ResolvesAutoToTheDetectedIsaAndForcesAvx2) {
  EXPECT_EQ(resolve_kernel_isa(""), detect_kernel_isa());
  EXPECT_EQ(resolve_kernel_isa("auto"), detect_kernel_isa());
  EXPECT_EQ(resolve_kernel_isa("avx2"), KernelIsa::kAvx2);
  EXPECT_EQ(to_string(KernelIsa::kAvx2), "avx2");
  EXPECT_EQ(to_string(KernelIsa::kAvx512), "avx512");
  if (cpu_has_avx512()) {
    EXPECT_EQ(resolve_kernel_isa("avx512"), KernelIsa::kAvx512);
  } else {
    EXPECT_THROW(resolve_kernel_isa("avx512"), Error);
  }
}

TEST(KernelIsa, AnUnknownIsaIsOneErrorNamingTheVariable) {
  try {
    resolve_kernel_isa("sse2");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LAZYTRAIN_KERNEL_ISA='sse2'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto, avx2 or avx512"), std::string::npos) << e.what();
  }
  CompilerOptions options;
  options.kernel_isa = "avx1024";
  EXPECT_THROW(make_compiler("cpu", options), Error);
}

TEST(KernelIsa, FlagsSelectTheTargetAndTheVectorWidth) {
  const std::vector<std::string> avx2 = kernel_flags(KernelIsa::kAvx2);
  const std::vector<std::string> avx512 = kernel_flags(KernelIsa::kAvx512);
  auto has = [](const std::vector<std::string>& flags, const std::string& f) { return std::find(flags.begin(), flags.end(), f) != flags.end(); };
  EXPECT_TRUE(has(avx2, "-march=x86-64-v3"));
  EXPECT_FALSE(has(avx2, "-march=x86-64-v4"));
  EXPECT_TRUE(has(avx512, "-march=x86-64-v4"));
  EXPECT_TRUE(has(avx512, "-mprefer-vector-width=512"));
  EXPECT_FALSE(has(avx512, "-march=x86-64-v3"));
}

// `command`'s standard output.
std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

// The disassembly of the kernel generated for tanh(exp(x) * y) + erf(x),
// compiled with `isa`'s flags.
std::string disassembled_kernel(KernelIsa isa) {
  hlo::HloBuilder b("isa");
  const int x = b.parameter({64, 1024}, DType::kFloat32);
  const int y = b.parameter({64, 1024}, DType::kFloat32);
  const int e = b.binary(HloOpcode::kMultiply, b.unary(HloOpcode::kExp, x), y);
  hlo::HloModule m = b.build({b.binary(HloOpcode::kAdd, b.unary(HloOpcode::kTanh, e), b.unary(HloOpcode::kErf, x))});
  hlo::run_passes(m, cpu_pass_pipeline());
  std::string source = kernel_header_source();
  int kernels = 0;
  for (const auto& in : m.instructions) {
    if (in.opcode != HloOpcode::kFusion) continue;
    std::optional<std::string> text = emit_fusion_kernel(in, "kernel_" + std::to_string(in.id));
    if (text) source += "\n" + *text, ++kernels;
  }
  EXPECT_EQ(kernels, 1) << m.to_string();
  const std::optional<std::string> cxx = find_cxx_compiler(CompilerOptions::from_environment().cxx);
  if (!cxx) return "";
  const std::string so = compile_shared_object(*cxx, kernel_flags(isa), {{"kernels.cpp", source}, {"prelude.cpp", kernel_prelude_source()}});
  const fs::path path = fs::temp_directory_path() / ("lazytrain_isa_" + std::to_string(::getpid()) + "_" + to_string(isa) + ".so");
  std::ofstream(path, std::ios::binary) << so;
  const std::string text = run_command("objdump -d --no-show-raw-insn '" + path.string() + "' 2>&1");
  fs::remove(path);
  return text;
}

// The body of function `name` in an objdump listing.
std::string function_body(const std::string& listing, const std::string& name) {
  const size_t start = listing.find("<" + name + ">:");
  if (start == std::string::npos) return "";
  const size_t end = listing.find("\n\n", start);
  return listing.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The body of the generated kernel (the one function named kernel_<id>).
std::string kernel_body(const std::string& listing) {
  const size_t start = listing.find(">:", listing.find("<kernel_"));
  if (start == std::string::npos) return "";
  const size_t open = listing.rfind('<', start);
  return function_body(listing, listing.substr(open + 1, start - open - 1));
}

TEST(KernelIsa, Avx2KernelsUseEightLanesAndSleefAvx2) {
  if (!find_cxx_compiler(CompilerOptions::from_environment().cxx)) GTEST_SKIP() << "no C++ compiler";
  const std::string listing = disassembled_kernel(KernelIsa::kAvx2);
  const std::string kernel = kernel_body(listing);
  ASSERT_NE(kernel.find("ymm"), std::string::npos) << kernel.substr(0, 4000);
  EXPECT_EQ(kernel.find("zmm"), std::string::npos) << kernel.substr(0, 4000);
  EXPECT_NE(kernel.find("_ZGVdN8v_lt_expf"), std::string::npos) << kernel.substr(0, 4000);
  // erf and tanh are inline (core/scalar_ops.h): a loop they kept from vectorizing would call the scalar exp.
  EXPECT_EQ(kernel.find("<lt_expf"), std::string::npos) << kernel.substr(0, 4000);
  EXPECT_EQ(function_body(listing, "_ZGVeN16v_lt_expf"), "");  // no AVX-512 variants in an AVX2 library
}

TEST(KernelIsa, Avx512KernelsUseSixteenLanesAndSleefAvx512) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  if (!find_cxx_compiler(CompilerOptions::from_environment().cxx)) GTEST_SKIP() << "no C++ compiler";
  const std::string listing = disassembled_kernel(KernelIsa::kAvx512);
  const std::string kernel = kernel_body(listing);
  ASSERT_NE(kernel.find("zmm"), std::string::npos) << kernel.substr(0, 4000);
  EXPECT_NE(kernel.find("_ZGVeN16v_lt_expf"), std::string::npos) << kernel.substr(0, 4000);
  EXPECT_EQ(kernel.find("<lt_expf"), std::string::npos) << kernel.substr(0, 4000);
  // The variants forward to SLEEF's AVX-512 kernels.
  const std::string expf16 = function_body(listing, "_ZGVeN16v_lt_expf");
  EXPECT_NE(expf16.find("Sleef_expf16_u10avx512f"), std::string::npos) << expf16;
}

// A cache entry written by AVX2 kernels is not loaded by a compiler that would
// generate AVX-512 ones, and the reverse: the flags are in the key.
TEST(KernelIsa, IsPartOfThePersistentCacheKey) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: one ISA only";
  const fs::path dir = fs::temp_directory_path() / ("lazytrain_isa_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CompilerOptions avx2;
  avx2.cache_dir = dir.string();
  avx2.kernel_isa = "avx2";
  CompilerOptions avx512 = avx2;
  avx512.kernel_isa = "avx512";
  hlo::HloBuilder b("cached");
  const int x = b.parameter({64, 32}, DType::kFloat32);
  hlo::HloModule m = b.build({b.unary(HloOpcode::kTanh, b.binary(HloOpcode::kAdd, x, x))});
  lazy::ComputationCache cache(dir.string());
  cache.compile(*make_compiler("cpu", avx2), m, 0x0000feed0000feed);
  EXPECT_TRUE(cache.load(*make_compiler("cpu", avx2), 0x0000feed0000feed));
  EXPECT_EQ(cache.load(*make_compiler("cpu", avx512), 0x0000feed0000feed), nullptr);
  cache.compile(*make_compiler("cpu", avx512), m, 0x0000feed0000feed);
  EXPECT_TRUE(cache.load(*make_compiler("cpu", avx512), 0x0000feed0000feed));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lazytrain::backend::cpu
