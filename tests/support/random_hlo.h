// A seeded random HLO generator for differential testing of backends.
//
// make_random_hlo_case(seed) builds one HloModule holding several independent
// random graphs (each reads its own parameters and contributes one or two
// outputs to the ROOT tuple), so that a single compile covers many patterns.
// Values are f32, s32, s64 and pred. The graphs use what fusion covers — elementwise unary/binary ops, compare and
// select, convert, broadcasts (of parameters, scalar parameters and scalar
// constants), reshape, iota, reductions over leading, trailing and middle dims
// — mixed with ops that are not fused (transpose, slice, dot).
//
// Randomness comes from raw std::mt19937_64 draws only (the std distributions
// differ between standard libraries), so a seed names the same module and the
// same argument values everywhere.
//
// Every value carries an interval and a first-order bound on its rounding error,
// which keep transcendentals in their domains (exp of bounded inputs, log/sqrt/
// rsqrt and pow of values >= 0.5, division by values >= 0.5 in magnitude) and
// give each output a tolerance:
//   - exact (compared bit for bit, -0 == +0): integers, pred, and f32 values
//     computed without rounding (grid values k/2^q added, multiplied, compared,
//     converted, selected, reduced while they stay below 2^24 units);
//   - otherwise |actual - expected| <= atol + rtol * |expected| with rtol 1e-5
//     (1e-4 once a transcendental is involved) and atol = max(1e-6, rtol * err),
//     err being the sum of the magnitudes at which the graph rounds (so a sum
//     of 1000 terms or a cancelling difference is judged against the size of
//     its terms, not of its result).
// Comparisons and f32->s32 converts only ever see exactly computed values, so a
// rounding difference can never flip a predicate.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "hlo/hlo_instruction.h"
#include "runtime/buffer.h"

namespace lazytrain::testing {

// Deterministic draws from std::mt19937_64's raw output.
class RawRng {
 public:
  explicit RawRng(uint64_t seed) : engine_(seed) {}
  uint64_t next() { return engine_(); }
  // Uniform in [0, n) (n > 0; the modulo bias is irrelevant here).
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  // Uniform in [0, 1), 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(below(static_cast<int64_t>(v.size())))]; }

 private:
  std::mt19937_64 engine_;
};

struct RandomHloOptions {
  int graphs = 20;                   // independent random graphs per module
  int min_steps = 3, max_steps = 9;  // random ops applied per graph (each may emit several instructions)
  double large_probability = 0.2;    // a graph's shape has a large last dim (1000..17000 elements)
  // >= 0: the ROOT tuple holds only this graph's outputs (the rest is generated,
  // with the same draws, and dropped as dead code; parameters stay), to print a
  // failing graph on its own.
  int only_graph = -1;
};

// How to compare one output of the module.
struct RandomOutput {
  int graph = 0;           // the random graph that produced it
  bool exact = false;      // bit-exact comparison (integers, pred, exactly computed f32)
  bool transcendental = false;
  double rtol = 0, atol = 0;
  double lo = 0, hi = 0;   // the generator's bounds on every element (a self-check)
  std::string expression;  // a short rendering of how it was computed
};

struct RandomHloCase {
  uint64_t seed = 0;
  hlo::HloModule module;
  std::vector<runtime::Buffer> arguments;  // one per parameter
  std::vector<RandomOutput> outputs;       // one per ROOT tuple element
  // How often each kind of step was taken ("exp", "reduce-middle", "broadcast-param", ...).
  std::vector<std::pair<std::string, int>> step_counts;
};

RandomHloCase make_random_hlo_case(uint64_t seed, const RandomHloOptions& options = {});

}  // namespace lazytrain::testing
