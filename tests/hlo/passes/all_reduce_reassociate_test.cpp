// AllReduceReassociate: sums of all-reduces over the same groups become one
// all-reduce of the sum (a chain of three too), values unchanged on 2 replica
// devices; other groups, another reduction or a second user keep theirs.
#include "hlo/passes/all_reduce_reassociate.h"

#include <gtest/gtest.h>

#include "hlo/hlo_builder.h"
#include "../../support/spmd_test_util.h"

namespace lazytrain::hlo {
namespace {

using testing::count_opcode;

// Runs the pass on `m` (2 replica devices) and checks it merged the all-reduces into one, keeping every value.
void expect_one_all_reduce_with_the_same_values(HloModule& m, uint32_t seed) {
  const std::vector<runtime::Buffer> args = testing::random_arguments(m, seed);
  const auto before = testing::run_on_devices(m, 2, args);
  ASSERT_TRUE(AllReduceReassociate().run(m));
  verify(m);
  EXPECT_EQ(count_opcode(m, HloOpcode::kAllReduce), 1) << m.to_string();
  const auto after = testing::run_on_devices(m, 2, args);
  for (int d = 0; d < 2; ++d) testing::expect_close(before[static_cast<size_t>(d)], after[static_cast<size_t>(d)], 1e-6);
}

TEST(AllReduceReassociate, ASumOfAllReducesBecomesOne) {
  HloBuilder b("sums");
  int x = b.parameter({4}, DType::kFloat32), y = b.parameter({4}, DType::kFloat32), z = b.parameter({4}, DType::kFloat32);
  auto ar = [&](int v) { return b.all_reduce(b.unary(HloOpcode::kTanh, v), ReduceKind::kAdd, {{0, 1}}); };
  int sum = b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kAdd, ar(x), ar(y)), ar(z));
  HloModule m = b.build({sum});
  expect_one_all_reduce_with_the_same_values(m, 5);
}

TEST(AllReduceReassociate, ThroughReshapesAndPastAResidualTerm) {
  // Megatron's backward: ((reshape(ar(dq)) + residual) + reshape(ar(dk))) + reshape(ar(dv)).
  HloBuilder b("residual");
  int x = b.parameter({2, 6}, DType::kFloat32), y = b.parameter({2, 6}, DType::kFloat32), z = b.parameter({2, 6}, DType::kFloat32);
  int residual = b.parameter({3, 4}, DType::kFloat32);
  auto ar = [&](int v) { return b.reshape(b.all_reduce(v, ReduceKind::kAdd, {{0, 1}}), {3, 4}); };
  int sum = b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kAdd, b.binary(HloOpcode::kAdd, ar(x), residual), ar(y)), ar(z));
  HloModule m = b.build({sum});
  expect_one_all_reduce_with_the_same_values(m, 6);
}

TEST(AllReduceReassociate, OtherGroupsKindsOrUsersStay) {
  HloBuilder b("kept");
  int x = b.parameter({4}, DType::kFloat32), y = b.parameter({4}, DType::kFloat32);
  int a = b.all_reduce(x, ReduceKind::kAdd, {{0, 1}});
  int other_groups = b.binary(HloOpcode::kAdd, a, b.all_reduce(y, ReduceKind::kAdd, {{0}, {1}}));
  int maxed = b.binary(HloOpcode::kAdd, b.all_reduce(x, ReduceKind::kMax, {{0, 1}}), b.all_reduce(y, ReduceKind::kAdd, {{0, 1}}));
  HloModule m = b.build({other_groups, maxed, a});  // `a` also an output: two users
  EXPECT_FALSE(AllReduceReassociate().run(m));
  EXPECT_EQ(count_opcode(m, HloOpcode::kAllReduce), 4);
}

}  // namespace
}  // namespace lazytrain::hlo
