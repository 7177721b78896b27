// DCE: instructions the ROOT does not reach go; parameters (used or not) stay
// with their numbers, and the values computed do not change.
#include "hlo/passes/dce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/compiler.h"
#include "core/half.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;

// ---- helpers (each pass test file keeps its own copy) ----

// Random values for every parameter of `m`: normal floats, small integers, random preds.
std::vector<Buffer> random_arguments(const HloModule& m, uint32_t seed) {
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

std::vector<Buffer> run(const HloModule& m, const std::vector<Buffer>& args) {
  return backend::make_interpreter_compiler()->compile(m)->execute(args);
}

double element(const Buffer& b, int64_t i) {
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
void expect_same_values(const std::vector<Buffer>& expected, const std::vector<Buffer>& actual, double rtol = 0) {
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
bool run_and_compare(HloModule& m, bool expect_changed = true) {
  std::vector<Buffer> args = random_arguments(m, 5);
  std::vector<Buffer> before = run(m, args);
  int parameters = m.num_parameters;
  bool changed = Dce().run(m);
  EXPECT_EQ(changed, expect_changed) << m.to_string();
  verify(m);
  EXPECT_EQ(m.num_parameters, parameters);
  expect_same_values(before, run(m, args));
  return changed;
}

int count(const HloModule& m, HloOpcode op) {
  int n = 0;
  for (const HloInstruction& in : m.instructions) n += in.opcode == op;
  return n;
}

const HloInstruction& output(const HloModule& m, size_t i) { return m.at(m.at(m.root).operands[i]); }

// `m` with ROOT outputs narrowed to `keep` (indices into the old outputs): what
// only the dropped outputs used is now dead (HloBuilder::build would have
// removed it, so tests make dead code this way).
HloModule keep_outputs(HloModule m, const std::vector<size_t>& keep) {
  std::vector<int> old = m.instructions.back().operands, now;
  for (size_t k : keep) now.push_back(old[k]);
  m.instructions.back().operands = now;
  verify(m);
  return m;
}

TEST(Dce, RemovesWhatTheRootDoesNotReach) {
  HloBuilder b("dead");
  int x = b.parameter({2, 3}, DType::kFloat32);
  int y = b.parameter({2, 3}, DType::kFloat32);
  int shared = b.binary(HloOpcode::kAdd, x, y);
  int live = b.unary(HloOpcode::kExp, shared);
  int dead = b.reduce(b.unary(HloOpcode::kTanh, b.binary(HloOpcode::kMultiply, shared, b.full(3.0, {2, 3}, DType::kFloat32))), {1},
                      ReduceKind::kAdd);
  HloModule m = keep_outputs(b.build({dead, live}), {1});
  run_and_compare(m);
  // x, y, add, exp, tuple: the multiply, its constant, tanh, reduce and its init went.
  ASSERT_EQ(m.instructions.size(), 5u) << m.to_string();
  EXPECT_EQ(count(m, HloOpcode::kConstant), 0);
  EXPECT_EQ(count(m, HloOpcode::kReduce), 0);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kExp);
  for (const HloInstruction& in : m.instructions) EXPECT_EQ(in.id, &in - m.instructions.data());
}

TEST(Dce, KeepsUnusedParametersAndTheirNumbers) {
  HloBuilder b("parameters");
  int a = b.parameter({3}, DType::kFloat32);
  int unused = b.parameter({5}, DType::kInt64);
  int c = b.parameter({3}, DType::kFloat32);
  int dead = b.unary(HloOpcode::kNegate, unused);
  HloModule m = keep_outputs(b.build({dead, b.binary(HloOpcode::kAdd, a, c), a}), {1, 2});
  run_and_compare(m);
  EXPECT_EQ(m.num_parameters, 3);
  ASSERT_EQ(count(m, HloOpcode::kParameter), 3);
  EXPECT_EQ(m.at(1).opcode, HloOpcode::kParameter);
  EXPECT_EQ(m.at(1).parameter_number, 1);
  EXPECT_EQ(m.at(1).dtype, DType::kInt64);
  EXPECT_EQ(count(m, HloOpcode::kNegate), 0);
  EXPECT_EQ(output(m, 0).opcode, HloOpcode::kAdd);
  EXPECT_EQ(output(m, 1).parameter_number, 0);
}

TEST(Dce, ReportsNoChangeWhenEverythingIsLive) {
  HloBuilder b("live");
  int x = b.parameter({2, 3}, DType::kFloat32);
  b.parameter({1}, DType::kFloat32);  // an unused parameter is not dead code
  HloModule m = b.build({b.unary(HloOpcode::kExp, x)});
  std::string text = m.to_string();
  run_and_compare(m, /*expect_changed=*/false);
  EXPECT_EQ(m.to_string(), text);
}

}  // namespace
}  // namespace lazytrain::hlo
