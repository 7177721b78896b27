// rng-bit-generator's bits, fast: HLO's counter-based generator (element i's
// 32 bits depend only on the seed and i; hlo/evaluator/reduce.cpp states the
// formula) computed in chunks over the cores, with AVX-512DQ's 64-bit
// multiplies (vpmullq) where the caller says the CPU has them, which the
// portable x86-64-v3 build cannot use. The values are the same either way.
#pragma once

#include <cstdint>

namespace lazytrain::kernels {

// out[i] for i < n: the high half of splitmix64(seed · c0 + i · golden ratio + c1).
// `out` holds at least n int32s; n >= 0 (0 writes nothing). Runs on OpenMP's threads.
void splitmix_bits(uint64_t seed, int64_t n, int32_t* out, bool avx512dq);

}  // namespace lazytrain::kernels
