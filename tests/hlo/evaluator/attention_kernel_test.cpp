// The attention host kernel's pieces on each ISA path: the register-tiled block
// products (block_gemm.h) against a double-precision product, AVX2 and AVX-512
// bit for bit, over the ragged shapes the kernel's edge blocks give; and the
// dropout decisions, which must stay the documented hash (attention.h) whichever
// path draws them (run the suite with LAZYTRAIN_KERNEL_ISA=avx2 for the other).
#include "kernels/block_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "../../support/hlo_pass_test_util.h"
#include "backend/registry.h"
#include "hlo/custom_call.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f"); }

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// C[M x N] += A B with A [M x K] (or stored [K x M] when transposed), padded
// leading dimensions as the kernel's scratch blocks have (ld 64). C has one row
// more than M and columns past N: neither path may write them.
template <bool kTransposedA>
void check_products(int64_t M, int64_t N, int64_t K) {
  SCOPED_TRACE(::testing::Message() << "M " << M << " N " << N << " K " << K << (kTransposedA ? " A transposed" : ""));
  const int64_t lda = (kTransposedA ? M : K) + 3, ldb = N + 5, ldc = N + 2;
  const std::vector<float> A = random_floats(static_cast<size_t>((kTransposedA ? K : M) * lda), 1);
  const std::vector<float> B = random_floats(static_cast<size_t>(K * ldb), 2);
  const std::vector<float> C0 = random_floats(static_cast<size_t>((M + 1) * ldc), 3);
  auto expect_untouched_outside = [&](const std::vector<float>& C, const char* path) {
    for (int64_t i = 0; i <= M; ++i) {
      for (int64_t j = i < M ? N : 0; j < ldc; ++j) {
        const size_t at = static_cast<size_t>(i * ldc + j);
        ASSERT_EQ(C[at], C0[at]) << path << " wrote outside C[M x N] at (" << i << ", " << j << ")";
      }
    }
  };
  std::vector<float> avx2 = C0;
  kernels::gemm_accumulate<kTransposedA>(M, N, K, A.data(), lda, B.data(), ldb, avx2.data(), ldc);
  expect_untouched_outside(avx2, "AVX2");
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      double expected = C0[at];
      for (int64_t k = 0; k < K; ++k) {
        const float a = kTransposedA ? A[static_cast<size_t>(k * lda + i)] : A[static_cast<size_t>(i * lda + k)];
        expected += static_cast<double>(a) * B[static_cast<size_t>(k * ldb + j)];
      }
      ASSERT_NEAR(avx2[at], expected, 1e-5 * (K + 1)) << "(" << i << ", " << j << ")";
    }
  }
  if (!cpu_has_avx512()) return;  // the AVX-512 twin runs only where the CPU has it
  std::vector<float> avx512 = C0;
  kernels::gemm_accumulate_avx512<kTransposedA>(M, N, K, A.data(), lda, B.data(), ldb, avx512.data(), ldc);
  expect_untouched_outside(avx512, "AVX-512");
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      if (j < N / 16 * 16) {
        // Full 16-column tiles: one FMA a product in k order on both paths.
        ASSERT_EQ(avx512[at], avx2[at]) << "(" << i << ", " << j << ")";
      } else {
        ASSERT_NEAR(avx512[at], avx2[at], 1e-6 * (K + 1)) << "(" << i << ", " << j << ")";
      }
    }
  }
}

TEST(AttentionKernel, BlockProductsMatchAReferenceOnEveryIsaPath) {
  if (!cpu_has_avx512()) GTEST_LOG_(INFO) << "no AVX-512 on this CPU: the AVX2 products only";
  // The kernel's block shapes (32 query rows x 64 keys x head dim 64) and the
  // ragged edges of sequences that are no multiple of them.
  for (const auto& [M, N, K] : std::vector<std::array<int64_t, 3>>{
           {32, 64, 64}, {64, 64, 32}, {8, 16, 64}, {7, 64, 64}, {32, 40, 64}, {13, 5, 70}, {1, 1, 1}, {9, 33, 3}, {64, 17, 8}}) {
    check_products<false>(M, N, K);
    check_products<true>(M, N, K);
  }
}

// The documented dropout decision (attention.h): weight (b, i, j) is kept when
// the top 24 bits of mix(seed ^ mix((b L + i) S + j)), SplitMix64's finaliser
// mix, read as bits / 2^24, are >= p. Written out here, apart from the kernel.
uint64_t splitmix64_finaliser(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool documented_keep(uint64_t seed, double p, int64_t index) {
  const uint64_t h = splitmix64_finaliser(seed ^ splitmix64_finaliser(static_cast<uint64_t>(index)));
  return static_cast<double>(h >> 40) / 16777216.0 >= p;
}

uint32_t documented_bits(uint64_t seed, int64_t index) {
  return static_cast<uint32_t>(splitmix64_finaliser(seed ^ splitmix64_finaliser(static_cast<uint64_t>(index))) >> 40);
}

// Forward and backward of the kernel with dropout p, q = 0 (every key weighs
// 1/S) and v = I [batch, S, S]: out[b, i, j] is 1/S times the dropout factor of
// weight (b, i, j), and with L = 1 the backward's dv[b, j, :] = that weight times
// dout[b, 0, :], so both show each decision. Results: {forward [batch, L, S + 1]
// (out, then lse), backward [batch, L E + S E + S S] (dq, dk, dv)}.
std::vector<runtime::Buffer> run_dropout(const char* backend_name, int64_t batch, int64_t L, int64_t S, float p, int64_t seed) {
  const int64_t E = 8;
  HloBuilder b("sdpa_dropout");
  const int q = b.parameter({batch, L, E}, DType::kFloat32);
  const int k = b.parameter({batch, S, E}, DType::kFloat32);
  const int v = b.parameter({batch, S, S}, DType::kFloat32);
  const int dout = b.parameter({batch, L, S}, DType::kFloat32);
  const int seed_param = b.parameter({}, DType::kInt64);
  const int scale = b.scalar(1.0, DType::kFloat32);
  const int dropout_p = b.scalar(p, DType::kFloat32);
  const std::string config = CustomCallConfig::format({{"is_causal", 0.0}, {"has_mask", 0.0}, {"has_dropout", 1.0}});
  const int fwd = b.custom_call({q, k, v, scale, dropout_p, seed_param}, kSdpaForwardTarget, config);
  const int bwd = b.custom_call({q, k, v, scale, fwd, dout, dropout_p, seed_param}, kSdpaBackwardTarget, config);
  const HloModule m = b.build({fwd, bwd});
  std::vector<runtime::Buffer> args = testing::random_arguments(m, 5);
  std::fill_n(args[0].data<float>(), batch * L * E, 0.0f);
  float* eye = args[2].data<float>();
  std::fill_n(eye, batch * S * S, 0.0f);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t s = 0; s < S; ++s) eye[(bi * S + s) * S + s] = 1.0f;
  for (int64_t i = 0; i < batch * L * S; ++i) args[3].data<float>()[i] = 1.0f + static_cast<float>(i % 7);  // dout, never 0
  *args[4].data<int64_t>() = seed;
  backend::CompilerOptions options;
  return backend::make_compiler(backend_name, options)->compile(m)->execute(args);
}

TEST(AttentionKernel, DropoutDecisionsAreTheDocumentedHash) {
  const int64_t batch = 3, L = 37, S = 83;  // not multiples of the 32 x 64 blocks
  const float p = 0.3f;
  const int64_t seed = 0x5eed1234abcdLL;
  for (const char* backend_name : {"cpu", "interpreter"}) {
    SCOPED_TRACE(backend_name);
    const std::vector<runtime::Buffer> result = run_dropout(backend_name, batch, L, S, p, seed);
    const float* out = result[0].data<float>();
    const float kept = 1.0f / (static_cast<float>(S) * (1.0f - p));
    int64_t dropped = 0;
    for (int64_t bi = 0; bi < batch; ++bi) {
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < S; ++j) {
          const bool keep = documented_keep(static_cast<uint64_t>(seed), p, (bi * L + i) * S + j);
          dropped += !keep;
          ASSERT_NEAR(out[(bi * L + i) * (S + 1) + j], keep ? kept : 0.0f, 1e-6f) << bi << " " << i << " " << j;
        }
      }
    }
    EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(batch * L * S), p, 0.02);
  }
}

// The comparison at its edge: p equal to an element's uniform (bits / 2^24,
// exact in float) keeps it, the next float above drops it; in the forward and
// in the backward (dv) alike.
TEST(AttentionKernel, DropoutKeepsAWeightWhoseUniformEqualsP) {
  const int64_t batch = 4, L = 1, S = 70, seed = 977;
  for (const int64_t element : {int64_t{0}, int64_t{69}, int64_t{3 * 70 + 5}}) {
    const uint32_t bits = documented_bits(static_cast<uint64_t>(seed), element);
    const float at_edge = static_cast<float>(bits) / 16777216.0f;
    for (const float p : {at_edge, std::nextafter(at_edge, 1.0f)}) {
      SCOPED_TRACE(::testing::Message() << "element " << element << " bits " << bits << " p " << p);
      const std::vector<runtime::Buffer> result = run_dropout("cpu", batch, L, S, p, seed);
      const float* out = result[0].data<float>();
      const float* grads = result[1].data<float>();
      const int64_t bi = element / S, j = element % S;
      const bool keep = p == at_edge;
      EXPECT_EQ(out[bi * (S + 1) + j] != 0.0f, keep);
      // dv[bi, j, :] = (1/S) factor dout[bi, 0, :], after dq [L E] and dk [S E] of its batch index.
      const float* dv_row = grads + bi * (L * 8 + S * 8 + S * S) + L * 8 + S * 8 + j * S;
      for (int64_t e = 0; e < S; ++e) ASSERT_EQ(dv_row[e] != 0.0f, keep) << "dv column " << e;
    }
  }
}

// The backward draws the forward's decisions: with L = 1, dv[b, j, :] is 0
// exactly where out[b, 0, j] is.
TEST(AttentionKernel, TheBackwardDropsWhatTheForwardDropped) {
  const int64_t batch = 40, L = 1, S = 67;
  for (const char* backend_name : {"cpu", "interpreter"}) {
    SCOPED_TRACE(backend_name);
    const std::vector<runtime::Buffer> result = run_dropout(backend_name, batch, L, S, 0.5f, 31);
    const float* out = result[0].data<float>();
    const float* grads = result[1].data<float>();
    int64_t kept = 0;
    for (int64_t bi = 0; bi < batch; ++bi) {
      for (int64_t j = 0; j < S; ++j) {
        const bool keep = out[bi * (S + 1) + j] != 0.0f;
        kept += keep;
        const float* dv_row = grads + bi * (L * 8 + S * 8 + S * S) + L * 8 + S * 8 + j * S;
        for (int64_t e = 0; e < S; ++e) ASSERT_EQ(dv_row[e] != 0.0f, keep) << bi << " " << j << " " << e;
      }
    }
    EXPECT_GT(kept, batch * S / 3);
    EXPECT_LT(kept, batch * S * 2 / 3);
  }
}

// A NaN in q, or +inf in k, is not hidden: the rows it reaches come out NaN,
// forward and backward, as softmax(q k^T) v gives (torch too); the other rows
// stay finite. (The kernel once skipped NaN in its row maximum and returned 0.)
TEST(AttentionKernel, NanAndInfinityScoresGiveNanRowsNotZeros) {
  const int64_t L = 5, S = 70, E = 8;
  HloBuilder b("sdpa_nan");
  const int q = b.parameter({1, L, E}, DType::kFloat32);
  const int k = b.parameter({1, S, E}, DType::kFloat32);
  const int v = b.parameter({1, S, E}, DType::kFloat32);
  const int dout = b.parameter({1, L, E}, DType::kFloat32);
  const int scale = b.scalar(0.5, DType::kFloat32);
  const std::string config = CustomCallConfig::format({{"is_causal", 0.0}, {"has_mask", 0.0}, {"has_dropout", 0.0}});
  const int fwd = b.custom_call({q, k, v, scale}, kSdpaForwardTarget, config);
  const int bwd = b.custom_call({q, k, v, scale, fwd, dout}, kSdpaBackwardTarget, config);
  const HloModule m = b.build({fwd, bwd});
  for (const bool infinite_key : {false, true}) {
    SCOPED_TRACE(infinite_key ? "+inf in k[0, 3, 0]" : "NaN in q[0, 2, 1]");
    std::vector<runtime::Buffer> args = testing::random_arguments(m, 9);
    for (int64_t i = 0; i < L * E; ++i) args[0].data<float>()[i] = std::fabs(args[0].data<float>()[i]) + 0.1f;  // q > 0
    if (infinite_key) {
      args[1].data<float>()[3 * E] = std::numeric_limits<float>::infinity();  // every row's score for key 3 is +inf
    } else {
      args[0].data<float>()[2 * E + 1] = std::numeric_limits<float>::quiet_NaN();  // row 2's scores are NaN
    }
    for (const char* backend_name : {"cpu", "interpreter"}) {
      SCOPED_TRACE(backend_name);
      backend::CompilerOptions options;
      const std::vector<runtime::Buffer> result = backend::make_compiler(backend_name, options)->compile(m)->execute(args);
      const float* out = result[0].data<float>();  // [1, L, E + 1]
      for (int64_t i = 0; i < L; ++i) {
        const bool reached = infinite_key || i == 2;
        for (int64_t e = 0; e <= E; ++e) EXPECT_EQ(std::isnan(out[i * (E + 1) + e]), reached) << "out row " << i << " column " << e;
      }
      const float* dq = result[1].data<float>();  // dq [L, E] first
      for (int64_t i = 0; i < L; ++i) {
        const bool reached = infinite_key || i == 2;
        for (int64_t e = 0; e < E; ++e) EXPECT_EQ(std::isnan(dq[i * E + e]), reached) << "dq row " << i << " column " << e;
      }
    }
  }
}

}  // namespace
}  // namespace lazytrain::hlo
