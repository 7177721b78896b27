// CollectiveCombiner (issue 34's FSDP structure): an FSDP-laid-out layer,
// partitioned for 4 devices, gathers its weights (one split along rows, one
// along columns, a bias) in one all-gather per pass over the layer and
// reduce-scatters their gradients in one; every device's outputs are bit for
// bit those of the separate collectives. Parameters of another unit, or
// without one, stay apart, and reduce-scatters that feed each other are left alone.
#include "hlo/passes/collective_combiner.h"

#include <gtest/gtest.h>

#include "hlo/hlo_builder.h"
#include "../../support/spmd_test_util.h"

namespace lazytrain::hlo {
namespace {

using testing::count_opcode;
using testing::run_on_devices;

HloSharding S(const std::string& text) { return HloSharding::parse(text); }

// x [8,16] by batch; w1 [16,16] by rows, b1 [16], w2 [16,16] by columns of
// unit `unit`; h = x w1 + b1, y = h w2; a backward that reads w2 again
// (dh = y w2^T); the updates w - 0.1 dw, b1 - 0.1 db1 and y as outputs.
HloModule fsdp_layer(const std::string& unit, const std::string& w2_unit) {
  HloBuilder b("fsdp_layer");
  const int x = b.parameter({8, 16}, DType::kFloat32);
  const int w1 = b.parameter({16, 16}, DType::kFloat32);
  const int b1 = b.parameter({16}, DType::kFloat32);
  const int w2 = b.parameter({16, 16}, DType::kFloat32);
  b.set_sharding(x, S("{devices=[4,1]<=[4]}"));
  b.set_sharding(w1, S("{devices=[4,1]<=[4]}").with_op_name(unit));
  b.set_sharding(b1, S("{devices=[4]<=[4]}").with_op_name(unit));
  b.set_sharding(w2, S("{devices=[1,4]<=[4]}").with_op_name(w2_unit));
  const DotDimensionNumbers mm{{}, {}, {1}, {0}}, mm_rhs_t{{}, {}, {1}, {1}}, mm_lhs_t{{}, {}, {0}, {0}};
  const int h = b.binary(HloOpcode::kAdd, b.dot(x, w1, mm), b.broadcast(b1, {8, 16}, {1}));
  const int y = b.dot(h, w2, mm);
  const int dh = b.dot(y, w2, mm_rhs_t);
  const int tenth = b.full(0.1, {16, 16}, DType::kFloat32);
  const int new_w1 = b.binary(HloOpcode::kSubtract, w1, b.binary(HloOpcode::kMultiply, tenth, b.dot(x, dh, mm_lhs_t)));
  const int new_w2 = b.binary(HloOpcode::kSubtract, w2, b.binary(HloOpcode::kMultiply, tenth, b.dot(h, y, mm_lhs_t)));
  const int db1 = b.reduce(dh, {0}, ReduceKind::kAdd);
  const int new_b1 = b.binary(HloOpcode::kSubtract, b1, b.binary(HloOpcode::kMultiply, b.full(0.1, {16}, DType::kFloat32), db1));
  return b.build({new_w1, new_b1, new_w2, y});
}

// Partitions `global` for 4 devices and runs it before and after the
// combiner; the outputs must be equal bit for bit. Returns the combined module.
HloModule combined_matches(const HloModule& global, int64_t threshold = CollectiveCombiner::kDefaultThreshold) {
  const std::vector<runtime::Buffer> arguments = testing::random_arguments(global, 5);  // whole values: each device gets its tiles
  const HloModule local = testing::partitioned(global);
  HloModule combined = local;
  CollectiveCombiner(threshold).run(combined);
  verify(combined);
  const auto expected = run_on_devices(local, 4, arguments);
  const auto actual = run_on_devices(combined, 4, arguments);
  for (size_t d = 0; d < expected.size(); ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    testing::expect_same_values(expected[d], actual[d]);
  }
  return combined;
}

TEST(CollectiveCombiner, AUnitIsGatheredOncePerPassAndReduceScatteredOnce) {
  const HloModule local = testing::partitioned(fsdp_layer("fsdp/layer.0", "fsdp/layer.0"));
  // Apart: w1, b1 and w2 gathered for the forward, w2 again for the backward; three gradients.
  ASSERT_EQ(count_opcode(local, HloOpcode::kAllGather), 4) << local.to_string();
  ASSERT_EQ(count_opcode(local, HloOpcode::kReduceScatter), 3) << local.to_string();
  const HloModule combined = combined_matches(fsdp_layer("fsdp/layer.0", "fsdp/layer.0"));
  // The forward's three in one; the backward's one gather of w2 has nothing to join.
  EXPECT_EQ(count_opcode(combined, HloOpcode::kAllGather), 2) << combined.to_string();
  EXPECT_EQ(count_opcode(combined, HloOpcode::kReduceScatter), 1) << combined.to_string();
  // The packed forward gather: 16*16 / 4 + 16 / 4 + 16*16 / 4 elements a device.
  EXPECT_NE(combined.to_string().find("f32[528]{0} all-gather(f32[132]{0}"), std::string::npos) << combined.to_string();
}

TEST(CollectiveCombiner, OtherUnitsAndUnnamedParametersStayApart) {
  const HloModule two_units = combined_matches(fsdp_layer("fsdp/layer.0", "fsdp/layer.1"));
  // w1 and b1 together; w2's two gathers and its gradient alone.
  EXPECT_EQ(count_opcode(two_units, HloOpcode::kAllGather), 3);
  EXPECT_EQ(count_opcode(two_units, HloOpcode::kReduceScatter), 2);
  HloModule unnamed = testing::partitioned(fsdp_layer("", ""));
  EXPECT_FALSE(CollectiveCombiner().run(unnamed));
}

TEST(CollectiveCombiner, ASetEndsAtTheByteThreshold) {
  // 1 KiB of f32: w1 (16x16 gathered: 1 KiB) fills a set alone; b1 and w2 make
  // another (64 + 1024 bytes would pass it: each alone); gradients likewise.
  const HloModule combined = combined_matches(fsdp_layer("fsdp/layer.0", "fsdp/layer.0"), 1024);
  EXPECT_EQ(count_opcode(combined, HloOpcode::kAllGather), 4) << combined.to_string();
  const HloModule roomier = combined_matches(fsdp_layer("fsdp/layer.0", "fsdp/layer.0"), 1024 + 64);
  EXPECT_EQ(count_opcode(roomier, HloOpcode::kAllGather), 3) << roomier.to_string();  // w1 and b1, then w2
}

TEST(CollectiveCombiner, ReduceScattersThatFeedEachOtherAreLeftAlone) {
  // p's gradient reduce-scattered; the next one's operand is built from that result.
  HloBuilder b("chained");
  const int p = b.parameter({4}, DType::kFloat32);
  const int g = b.parameter({16}, DType::kFloat32);
  b.set_sharding(p, S("{devices=[4]<=[4]}").with_op_name("u"));
  const std::vector<std::vector<int64_t>> all = {{0, 1, 2, 3}};
  const int first = b.reduce_scatter(g, ReduceKind::kAdd, 0, all);
  const int second = b.reduce_scatter(b.concatenate({first, first, first, first}, 0), ReduceKind::kAdd, 0, all);
  HloModule m = b.build({b.binary(HloOpcode::kSubtract, p, first), b.binary(HloOpcode::kSubtract, p, second)});
  m.num_partitions = 4;
  EXPECT_FALSE(CollectiveCombiner().run(m));
  EXPECT_EQ(count_opcode(m, HloOpcode::kReduceScatter), 2);
}

}  // namespace
}  // namespace lazytrain::hlo
