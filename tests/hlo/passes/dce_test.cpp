// DCE: instructions the ROOT does not reach go; parameters (used or not) stay
// with their numbers, and the values computed do not change.
#include "hlo/passes/dce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/compiler.h"
#include "core/half.h"
#include "../../support/hlo_pass_test_util.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {
namespace {

using runtime::Buffer;

using namespace testing;

bool run_and_compare(HloModule& m, bool expect_changed = true, double rtol = 0) { return run_pass_and_compare<Dce>(m, expect_changed, rtol); }

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
