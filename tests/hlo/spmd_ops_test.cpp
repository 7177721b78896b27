// The two opcodes the SPMD partitioner emits (issue 34): dynamic-slice, whose
// starts are clamped into the operand as XLA's are, and partition-id, the
// running device's global ordinal; their printed forms are XLA's, and a
// partitioned module's num_partitions prints and survives serialization.
#include <gtest/gtest.h>

#include <thread>

#include "hlo/hlo_builder.h"
#include "hlo/hlo_serialization.h"
#include "../support/spmd_test_util.h"

namespace lazytrain::hlo {
namespace {

TEST(SpmdOps, DynamicSliceClampsItsStartsIntoTheOperand) {
  HloBuilder b("dynamic_slice");
  int x = b.iota({4, 5}, DType::kFloat32, 1);
  int y = b.binary(HloOpcode::kAdd, x, b.binary(HloOpcode::kMultiply, b.iota({4, 5}, DType::kFloat32, 0), b.full(10, {4, 5}, DType::kFloat32)));
  // Rows 1..2 and columns 3..4 asked at (1, 3); at (3, 9) the window is moved back to (2, 3).
  int inside = b.dynamic_slice(y, {b.scalar(1, DType::kInt32), b.scalar(3, DType::kInt32)}, {2, 2});
  int clamped = b.dynamic_slice(y, {b.scalar(3, DType::kInt64), b.scalar(9, DType::kInt64)}, {2, 2});
  int negative = b.dynamic_slice(y, {b.scalar(-4, DType::kInt32), b.scalar(0, DType::kInt32)}, {1, 5});
  HloModule m = b.build({inside, clamped, negative});
  EXPECT_NE(m.to_string().find("f32[2,2]{1,0} dynamic-slice(f32[4,5]{1,0} %add."), std::string::npos) << m.to_string();
  EXPECT_NE(m.to_string().find("dynamic_slice_sizes={2,2}"), std::string::npos);
  const auto out = testing::run(m, {});
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 4), (std::vector<float>{13, 14, 23, 24}));
  EXPECT_EQ(std::vector<float>(out[1].data<float>(), out[1].data<float>() + 4), (std::vector<float>{23, 24, 33, 34}));
  EXPECT_EQ(std::vector<float>(out[2].data<float>(), out[2].data<float>() + 5), (std::vector<float>{0, 1, 2, 3, 4}));
}

TEST(SpmdOps, PartitionIdIsTheDevicesOrdinal) {
  HloBuilder b("partition_id");
  HloModule m = b.build({b.partition_id()});
  EXPECT_NE(m.to_string().find("s32[] partition-id()"), std::string::npos) << m.to_string();
  for (const std::string backend : {"interpreter", "cpu"}) {
    const auto outputs = testing::run_on_devices(m, 3, {}, backend);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(*outputs[static_cast<size_t>(i)][0].data<int32_t>(), i) << backend;
  }
}

TEST(SpmdOps, NumPartitionsPrintsAndSurvivesSerialization) {
  HloBuilder b("partitioned");
  int x = b.parameter({2}, DType::kFloat32);
  b.set_sharding(x, HloSharding::iota_tiled({2}));
  HloModule m = b.build({x});
  m.num_partitions = 2;
  EXPECT_NE(m.to_string().find("HloModule partitioned, num_partitions=2\n"), std::string::npos) << m.to_string();
  const HloModule back = deserialize_module(serialize_module(m));
  EXPECT_EQ(back.num_partitions, 2);
  EXPECT_EQ(back.to_string(), m.to_string());
}

}  // namespace
}  // namespace lazytrain::hlo
