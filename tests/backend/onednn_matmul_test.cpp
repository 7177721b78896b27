// OneDnnMatmul (the CPU backend's dot): every operand layout, with and
// without the bias/residual epilogue, for a wide f32 rhs (repacked into
// oneDNN's layout before each run where oneDNN picks another layout: its
// AVX-512 kernels do) and a narrow one (read in place); f32 and bf16. The
// operands are small integers, so every sum is exact in f32 (and in bf16)
// whatever order oneDNN adds in, and the results are compared exactly with a
// plain loop. A bf16 dot without native kernels (an AVX2 CPU, or oneDNN capped
// by ONEDNN_MAX_CPU_ISA: ctest's avx2_fallback.* entries) is widened to f32.
#include "kernels/onednn_matmul.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <random>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/matmul_dims.h"
#include "core/half.h"
#include "hlo/hlo_builder.h"
#include "runtime/buffer.h"

namespace lazytrain::backend {
namespace {

using cpu::matmul_dims;
using kernels::MatmulEpilogue;
using kernels::OneDnnMatmul;
using runtime::Buffer;

// Integer values in [-3, 3], different for each (seed, i), as f32 or bf16 (exact in both).
Buffer small_integers(const Shape& shape, int seed, DType dtype = DType::kFloat32) {
  Buffer b(shape, dtype);
  for (int64_t i = 0; i < b.numel(); ++i) {
    const float v = static_cast<float>((i * 7 + seed * 13 + (i / 5) * 3) % 7 - 3);
    if (dtype == DType::kBFloat16) {
      b.data<BFloat16>()[i] = BFloat16(v);
    } else {
      b.data<float>()[i] = v;
    }
  }
  return b;
}

float value_at(const Buffer& b, int64_t i) {
  return b.dtype() == DType::kBFloat16 ? static_cast<float>(b.data<BFloat16>()[i]) : b.data<float>()[i];
}

// oneDNN's kernels on this CPU (or below its ONEDNN_MAX_CPU_ISA cap) are AVX-512 ones.
// cpu_isa values are feature bit sets (avx2_vnni is numerically above avx512_core but has no AVX-512).
bool onednn_avx512() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
}

// ... and they include AVX512_BF16's instructions (AMX's ISA includes them too): /proc/cpuinfo's
// avx512_bf16 or amx_bf16, unless ONEDNN_MAX_CPU_ISA caps oneDNN below.
bool onednn_bf16_instructions() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

struct Case {
  int64_t m, k, n;
  bool lhs_t, rhs_t, epilogue;
  DType dtype = DType::kFloat32;
  bool residual = true;  // with `epilogue`: the residual as well as the bias
};

void check_case(const Case& c) {
  const Shape lhs_shape = c.lhs_t ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape rhs_shape = c.rhs_t ? Shape{c.n, c.k} : Shape{c.k, c.n};
  hlo::HloBuilder b("dot");
  int x = b.parameter(lhs_shape, c.dtype);
  int y = b.parameter(rhs_shape, c.dtype);
  hlo::HloModule module = b.build({b.dot(x, y, {{}, {}, {c.lhs_t ? 0 : 1}, {c.rhs_t ? 1 : 0}})});
  const hlo::HloInstruction& dot = module.at(module.at(module.root).operands[0]);
  const bool residual_too = c.epilogue && c.residual;
  OneDnnMatmul matmul(matmul_dims(lhs_shape, dot), MatmulEpilogue{c.epilogue, residual_too});
  // Only the f32 rule's shapes are repacked, and all of them where oneDNN's kernels want their own layout.
  const bool rule = !c.rhs_t && c.n > 1024 && (c.dtype == DType::kFloat32 || matmul.widened());
  if (!rule || onednn_avx512()) {
    EXPECT_EQ(matmul.repacks_rhs(), rule);
  }
  // Without AVX-512 oneDNN has no bf16 matmul, and without AVX512_BF16 only an emulated one slower
  // than widening: widened, never an error. f16 is widened at least without AVX-512.
  if (c.dtype == DType::kFloat32 || !onednn_avx512()) {
    EXPECT_EQ(matmul.widened(), c.dtype != DType::kFloat32);
  } else if (c.dtype == DType::kBFloat16) {
    EXPECT_EQ(matmul.widened(), !onednn_bf16_instructions());
  }

  const Buffer lhs = small_integers(lhs_shape, 1, c.dtype), rhs = small_integers(rhs_shape, 2, c.dtype);
  const Buffer bias = small_integers({c.n}, 3, c.dtype), residual = small_integers({c.m, c.n}, 4, c.dtype);
  Buffer out({c.m, c.n}, c.dtype);
  matmul.run(lhs.raw(), rhs.raw(), c.epilogue ? bias.raw() : nullptr, residual_too ? residual.raw() : nullptr, out.raw());
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      float want = (c.epilogue ? value_at(bias, j) : 0.0f) + (residual_too ? value_at(residual, i * c.n + j) : 0.0f);
      for (int64_t p = 0; p < c.k; ++p) {
        const float a = value_at(lhs, c.lhs_t ? p * c.m + i : i * c.k + p);
        const float w = value_at(rhs, c.rhs_t ? j * c.k + p : p * c.n + j);
        want += a * w;
      }
      ASSERT_EQ(value_at(out, i * c.n + j), want) << "m=" << c.m << " k=" << c.k << " n=" << c.n << " lhs_t=" << c.lhs_t
                                                  << " rhs_t=" << c.rhs_t << " epilogue=" << c.epilogue << " dtype=" << xla_name(c.dtype)
                                                  << " at (" << i << ", " << j << ")";
    }
  }
}

TEST(OneDnnMatmul, EveryLayoutAndEpilogueIsExactForWideAndNarrowRhs) {
  for (int64_t n : {48, 1200}) {
    for (int layout = 0; layout < 4; ++layout) {
      for (bool epilogue : {false, true}) check_case({37, 45, n, (layout & 1) != 0, (layout & 2) != 0, epilogue});
    }
  }
}

// "N tiles": how OneDnnMatmul cuts an f32 dot of `lhs` and `rhs` (its implementation() text).
std::string tiles_of(const Shape& lhs, const Shape& rhs, const hlo::DotDimensionNumbers& d) {
  hlo::HloBuilder b("dot");
  hlo::HloModule module = b.build({b.dot(b.parameter(lhs, DType::kFloat32), b.parameter(rhs, DType::kFloat32), d)});
  const std::string text = OneDnnMatmul(matmul_dims(lhs, module.at(module.at(module.root).operands[0]))).implementation();
  return text.substr(text.rfind(", ") + 2);
}

// Tiles that are windows of a larger operand: row blocks of a transposed lhs
// (a weight gradient x^T g over 600 rows: 3 tiles), and column blocks of a wide
// output (a vocabulary head: n = 5000 in 2048-column tiles, 1024 for f32 with
// K <= 128). Where oneDNN's
// brgemm takes only dense blocks, the tile copies its lhs window into one, or
// writes a dense block copied into the output (onednn_matmul.cpp); exact either way.
TEST(OneDnnMatmul, WindowTilesAreExact) {
  for (bool epilogue : {false, true}) {
    check_case({600, 512, 128, true, false, epilogue});
    for (bool lhs_t : {false, true}) {
      // bf16 sums stay exact: |sum| <= 16 * 9 + 6 < 256.
      check_case({600, 16, 5000, lhs_t, true, epilogue, DType::kBFloat16, /*residual=*/false});
      check_case({40, 16, 5000, lhs_t, true, epilogue, DType::kBFloat16});
      check_case({40, 128, 5000, lhs_t, true, epilogue});  // f32: 1024-column tiles
    }
  }
}

// A vocabulary head's forward is cut into column blocks: of 1024 columns for
// f32 with K <= 128 (bert-tiny's tied head, faster there), else of 2048 (GPT-2's).
TEST(OneDnnMatmul, AWideHeadIsCutInColumnBlocksByDtypeAndDepth) {
  const hlo::DotDimensionNumbers head = {{}, {}, {1}, {1}};  // x [m, k] times a tied embedding [n, k]
  EXPECT_EQ(tiles_of({224, 128}, {30522, 128}, head), "60 tiles");  // 30 blocks of 1024 columns x 2 of 112 rows
  EXPECT_EQ(tiles_of({256, 768}, {50257, 768}, head), "50 tiles");  // 25 blocks of 2048 x 2 of 128 rows
}

// A dot small enough for one tile by the work rule is still cut in two when
// each half has 2^20 multiply-adds (bert-tiny's weight gradients, x^T g over
// 1024 tokens, ran on one thread of two); smaller ones stay whole. Exact.
TEST(OneDnnMatmul, ASmallDotIsCutInTwoTilesAndStaysExact) {
  EXPECT_EQ(tiles_of({1024, 128}, {1024, 128}, {{}, {}, {0}, {0}}), "2 tiles");              // [128, 128] over K = 1024
  EXPECT_EQ(tiles_of({16, 128, 128}, {16, 128, 64}, {{0}, {0}, {2}, {1}}), "2 tiles");      // 16 heads' P V
  EXPECT_EQ(tiles_of({64, 64}, {64, 64}, {{}, {}, {1}, {0}}), "1 tile");                    // 2^18 multiply-adds
  check_case({128, 1024, 128, true, false, false});
  check_case({128, 1024, 128, true, false, true});
}

// The thread count never changes a result (issue 30): the thread governor runs
// executions on fewer threads under load, and oneDNN's AVX2 gemm split the sums
// of a small, deep dot (a weight gradient: 32 x 37 over 512 tokens) between
// threads. Random values, so any other summation order shows; bit for bit at 1
// and 2 threads, for unbatched, wide, transposed and batched dots, f32 and bf16.
TEST(OneDnnMatmul, ResultsAreTheSameAtOneAndTwoThreads) {
  struct Shape3 {
    int64_t batch, m, k, n;
    bool lhs_t, rhs_t;
    DType dtype;
  };
  const std::vector<Shape3> shapes = {{1, 32, 512, 37, true, false, DType::kFloat32},   {1, 512, 32, 37, false, false, DType::kFloat32},
                                      {1, 300, 64, 1500, false, false, DType::kFloat32}, {1, 40, 128, 5000, false, true, DType::kFloat32},
                                      {16, 64, 32, 64, false, true, DType::kFloat32},   {1, 32, 512, 37, true, false, DType::kBFloat16},
                                      {8, 64, 32, 64, false, false, DType::kBFloat16},  {1, 600, 512, 128, true, false, DType::kFloat32},
                                      {1, 600, 16, 5000, true, true, DType::kBFloat16}, {1, 128, 1024, 128, true, false, DType::kFloat32},
                                      {16, 128, 128, 64, false, false, DType::kFloat32}};
  const int threads = omp_get_max_threads();
  for (const Shape3& s : shapes) {
    const bool batched = s.batch > 1;
    Shape lhs_shape = s.lhs_t ? Shape{s.k, s.m} : Shape{s.m, s.k};
    Shape rhs_shape = s.rhs_t ? Shape{s.n, s.k} : Shape{s.k, s.n};
    Shape out_shape = {s.m, s.n};
    if (batched) {
      lhs_shape.insert(lhs_shape.begin(), s.batch);
      rhs_shape.insert(rhs_shape.begin(), s.batch);
      out_shape.insert(out_shape.begin(), s.batch);
    }
    const int64_t nb = batched ? 1 : 0;
    hlo::HloBuilder b("dot");
    int x = b.parameter(lhs_shape, s.dtype);
    int y = b.parameter(rhs_shape, s.dtype);
    hlo::DotDimensionNumbers d;
    if (batched) d = {{0}, {0}, {}, {}};
    d.lhs_contracting_dimensions = {s.lhs_t ? nb : nb + 1};
    d.rhs_contracting_dimensions = {s.rhs_t ? nb + 1 : nb};
    hlo::HloModule module = b.build({b.dot(x, y, d)});
    OneDnnMatmul matmul(matmul_dims(lhs_shape, module.at(module.at(module.root).operands[0])));
    std::mt19937 rng(static_cast<unsigned>(s.m * 31 + s.n));
    std::normal_distribution<float> normal;
    auto random = [&](const Shape& shape) {
      Buffer buf(shape, s.dtype);
      for (int64_t i = 0; i < buf.numel(); ++i) {
        if (s.dtype == DType::kBFloat16) {
          buf.data<BFloat16>()[i] = BFloat16(normal(rng));
        } else {
          buf.data<float>()[i] = normal(rng);
        }
      }
      return buf;
    };
    const Buffer lhs = random(lhs_shape), rhs = random(rhs_shape);
    std::vector<std::vector<uint8_t>> results;
    for (int t : {1, 2}) {
      omp_set_num_threads(t);
      Buffer out(out_shape, s.dtype);
      matmul.run(lhs.raw(), rhs.raw(), nullptr, nullptr, out.raw());
      const uint8_t* bytes = static_cast<const uint8_t*>(out.raw());
      results.emplace_back(bytes, bytes + out.nbytes());
    }
    omp_set_num_threads(threads);
    EXPECT_TRUE(results[0] == results[1]) << "batch " << s.batch << ", [" << s.m << ", " << s.k << "] x [" << s.k << ", " << s.n
                                          << "], " << xla_name(s.dtype) << ": the results at 1 and 2 threads differ";
  }
}

// bf16 operands: exact sums (|sum| <= 45 * 9 + 6 < 256 is a bf16 integer), natively or widened to f32.
TEST(OneDnnMatmul, Bf16IsExactNativelyOrWidened) {
  for (int64_t n : {48, 1200}) {
    for (int layout = 0; layout < 4; ++layout) {
      for (bool epilogue : {false, true}) check_case({37, 45, n, (layout & 1) != 0, (layout & 2) != 0, epilogue, DType::kBFloat16});
    }
  }
}

// A widened bf16 dot rounds its f32 sum to bf16 once, to nearest even: 1 + 2^-8
// (an f32 sum exactly halfway between two bf16 values) rounds to 1, 1 + 3 * 2^-8 to 1 + 2^-6.
TEST(OneDnnMatmul, Bf16ResultsRoundToNearestEvenOnce) {
  hlo::HloBuilder b("dot");
  int x = b.parameter({1, 2}, DType::kBFloat16);
  int y = b.parameter({2, 2}, DType::kBFloat16);
  hlo::HloModule module = b.build({b.dot(x, y, {{}, {}, {1}, {0}})});
  OneDnnMatmul matmul(matmul_dims({1, 2}, module.at(module.at(module.root).operands[0])));
  Buffer lhs({1, 2}, DType::kBFloat16), rhs({2, 2}, DType::kBFloat16), out({1, 2}, DType::kBFloat16);
  lhs.data<BFloat16>()[0] = BFloat16(1.0f);
  lhs.data<BFloat16>()[1] = BFloat16(1.0f / 256);
  rhs.data<BFloat16>()[0] = BFloat16(1.0f);  // column 0: 1 + 2^-8
  rhs.data<BFloat16>()[2] = BFloat16(1.0f);
  rhs.data<BFloat16>()[1] = BFloat16(1.0f);  // column 1: 1 + 3 * 2^-8
  rhs.data<BFloat16>()[3] = BFloat16(3.0f);
  matmul.run(lhs.raw(), rhs.raw(), nullptr, nullptr, out.raw());
  EXPECT_EQ(static_cast<float>(out.data<BFloat16>()[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(out.data<BFloat16>()[1]), 1.0f + 1.0f / 64);
}

}  // namespace
}  // namespace lazytrain::backend
