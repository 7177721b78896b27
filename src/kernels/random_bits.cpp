#include "kernels/random_bits.h"

#include <algorithm>

namespace lazytrain::kernels {

namespace {

inline uint32_t splitmix_bits_at(uint64_t seed, int64_t i) {
  uint64_t z = seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

void bits_portable(uint64_t seed, int64_t begin, int64_t end, int32_t* o) {
  for (int64_t i = begin; i < end; ++i) o[i] = static_cast<int32_t>(splitmix_bits_at(seed, i));
}

__attribute__((target("avx512f,avx512dq,avx512vl"))) void bits_avx512(uint64_t seed, int64_t begin, int64_t end, int32_t* o) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) o[i] = static_cast<int32_t>(splitmix_bits_at(seed, i));
}

}  // namespace

void splitmix_bits(uint64_t seed, int64_t n, int32_t* out, bool avx512dq) {
  // Attention dropout drew a lot of them (GPT-2 at 4 x 1024: 600 M a step).
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > (1 << 20)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    if (avx512dq) {
      bits_avx512(seed, begin, end, out);
    } else {
      bits_portable(seed, begin, end, out);
    }
  }
}

}  // namespace lazytrain::kernels
