// Helpers shared by the HLO pass tests: random arguments for a module, running it
// through the interpreter, and comparing outputs value by value.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/registry.h"
#include "core/half.h"
#include "hlo/hlo_builder.h"
#include "hlo/hlo_instruction.h"

namespace lazytrain::hlo::testing {

using runtime::Buffer;


// Random values for every parameter of `m`: normal floats, small integers, random preds.
inline std::vector<Buffer> random_arguments(const HloModule& m, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> small(-5, 5);
  std::vector<Buffer> args;
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode != HloOpcode::kParameter) continue;
    Buffer b(in.shape, in.dtype);
    for (int64_t i = 0; i < b.numel(); ++i) {
      switch (in.dtype) {
        case DType::kFloat32: b.data<float>()[i] = normal(gen); break;
        case DType::kBFloat16: b.data<BFloat16>()[i] = BFloat16(normal(gen)); break;
        case DType::kFloat16: b.data<Half>()[i] = static_cast<Half>(normal(gen)); break;
        case DType::kInt32: b.data<int32_t>()[i] = small(gen); break;
        case DType::kInt64: b.data<int64_t>()[i] = small(gen); break;
        case DType::kBool: b.data<uint8_t>()[i] = small(gen) > 0; break;
      }
    }
    args.push_back(b);
  }
  return args;
}

inline std::vector<Buffer> run(const HloModule& m, const std::vector<Buffer>& args) {
  return backend::make_compiler("interpreter")->compile(m)->execute(args);
}

inline double element(const Buffer& b, int64_t i) {
  switch (b.dtype()) {
    case DType::kFloat32: return b.data<float>()[i];
    case DType::kBFloat16: return static_cast<float>(b.data<BFloat16>()[i]);
    case DType::kFloat16: return static_cast<float>(b.data<Half>()[i]);
    case DType::kInt32: return b.data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(b.data<int64_t>()[i]);
    case DType::kBool: return b.data<uint8_t>()[i];
  }
  return 0;
}

// Same outputs: shapes, dtypes, and values within rtol (0: equal; NaN matches NaN).
inline void expect_same_values(const std::vector<Buffer>& expected, const std::vector<Buffer>& actual, double rtol = 0) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    ASSERT_EQ(expected[k].shape(), actual[k].shape()) << "output " << k;
    ASSERT_EQ(expected[k].dtype(), actual[k].dtype()) << "output " << k;
    for (int64_t i = 0; i < expected[k].numel(); ++i) {
      double e = element(expected[k], i), a = element(actual[k], i);
      if (e == a || (std::isnan(e) && std::isnan(a))) continue;
      ASSERT_LE(std::abs(e - a), rtol * std::abs(e)) << "output " << k << " element " << i << ": " << a << " vs " << e;
    }
  }
}

// Runs the pass on `m`, checking that the module verifies and computes what it did.
// Runs `pass` on `m`, checking that the module verifies, keeps its parameters
// and computes what it did (within rtol). Returns whether the pass changed it.
template <typename Pass>
bool run_pass_and_compare(HloModule& m, bool expect_changed = true, double rtol = 0) {
  std::vector<Buffer> args = random_arguments(m, 3);
  std::vector<Buffer> before = run(m, args);
  int parameters = m.num_parameters;
  bool changed = Pass().run(m);
  EXPECT_EQ(changed, expect_changed) << m.to_string();
  verify(m);
  EXPECT_EQ(m.num_parameters, parameters);
  expect_same_values(before, run(m, args), rtol);
  return changed;
}

inline int count(const HloModule& m, HloOpcode op) {
  int n = 0;
  for (const HloInstruction& in : m.instructions) n += in.opcode == op;
  return n;
}

inline const HloInstruction& output(const HloModule& m, size_t i) { return m.at(m.at(m.root).operands[i]); }

// f32[4,6] x and its all-reduce over every replica, all-gather along dimension 1
// in groups {0,1},{2,3}, and max reduce-scatter along dimension 0 over four.
inline HloModule three_collectives() {
  HloBuilder b("collectives");
  int x = b.parameter({4, 6}, DType::kFloat32);
  int sum = b.all_reduce(x, ReduceKind::kAdd, {});
  int gathered = b.all_gather(x, 1, {{0, 1}, {2, 3}});
  int scattered = b.reduce_scatter(x, ReduceKind::kMax, 0, {{0, 1, 2, 3}});
  return b.build({sum, gathered, scattered});
}

}  // namespace lazytrain::hlo::testing
