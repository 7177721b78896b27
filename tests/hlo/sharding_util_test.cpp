// sharding_util (issue 34): moving a sharding through dimension maps and
// reshapes, merging two, fitting one to a shape. Expected layouts are worked
// out by hand from XLA's definition of a tile assignment (the device of grid
// cell i is devices[i], row-major; the last grid dimension holds copies when
// last_tile_dim_replicate).
#include "hlo/sharding_util.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lazytrain::hlo::sharding_util {
namespace {

HloSharding S(const std::string& text) { return HloSharding::parse(text); }

TEST(ShardingUtil, TileCountLeavesTheCopiesOut) {
  EXPECT_EQ(tile_count(HloSharding::replicate()), 1);
  EXPECT_EQ(tile_count(S("{devices=[2,2]<=[4]}")), 4);
  EXPECT_EQ(tile_count(S("{devices=[2,1,2]<=[4] last_tile_dim_replicate}")), 2);
}

TEST(ShardingUtil, MapDimensionsTransposesTheGrid) {
  // [2,3] grid over devices 0..5, transposed: out dim 0 is in dim 1.
  const HloSharding t = map_dimensions(S("{devices=[2,3]<=[6]}"), 2, {1, 0});
  // Cell (j, i) of the new grid holds the old (i, j) = device 3i + j.
  EXPECT_EQ(t.to_string(), "{devices=[3,2]0,3,1,4,2,5}");
}

TEST(ShardingUtil, ADroppedDimensionMakesCopies) {
  // 2x2 mesh, device d at (d / 2, d % 2).
  EXPECT_EQ(map_dimensions(S("{devices=[2,2]<=[4]}"), 2, {0, -1}).to_string(), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(map_dimensions(S("{devices=[2,2]<=[4]}"), 2, {-1, 1}).to_string(), "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  EXPECT_TRUE(map_dimensions(S("{devices=[4,1]<=[4]}"), 1, {-1, 0}).is_replicated());
  // A broadcast's new dimensions are not tiled: [4] -> [4, 8] along dimension 0.
  EXPECT_EQ(map_dimensions(S("{devices=[4]<=[4]}"), 2, {0}).to_string(), "{devices=[4,1]<=[4]}");
  EXPECT_THROW(map_dimensions(S("{devices=[2,2]<=[4]}"), 1, {0, 0}), Error);
  EXPECT_THROW(map_dimensions(S("{devices=[2,2]<=[4]}"), 2, {0}), Error);
  EXPECT_THROW(map_dimensions(S("{maximal device=1}"), 2, {0, 1}), Error);
}

TEST(ShardingUtil, ReshapeKeepsTheMajorDimensionOfEachGroup) {
  const HloSharding batch = S("{devices=[2,1,1]<=[2]}");
  // [B, S, H] <-> [B*S, H]: B is the major dimension of the merged group.
  EXPECT_EQ(reshape_sharding(batch, {8, 4, 16}, {32, 16}).to_string(), "{devices=[2,1]<=[2]}");
  EXPECT_EQ(reshape_sharding(S("{devices=[2,1]<=[2]}"), {32, 16}, {8, 4, 16}).to_string(), "{devices=[2,1,1]<=[2]}");
  // S is not: its tiles are not contiguous in [B*S].
  EXPECT_TRUE(reshape_sharding(S("{devices=[1,2,1]<=[2]}"), {8, 4, 16}, {32, 16}).is_replicated());
  // [H] <-> [heads, head_dim] when the heads divide by the tile count.
  EXPECT_EQ(reshape_sharding(S("{devices=[1,4]<=[4]}"), {2, 64}, {2, 4, 16}).to_string(), "{devices=[1,4,1]<=[4]}");
  EXPECT_EQ(reshape_sharding(S("{devices=[1,4,1]<=[4]}"), {2, 4, 16}, {2, 64}).to_string(), "{devices=[1,4]<=[4]}");
  EXPECT_TRUE(reshape_sharding(S("{devices=[8]<=[8]}"), {64}, {4, 16}).is_replicated());
  // Size-1 dimensions do not take a group's tiles.
  EXPECT_EQ(reshape_sharding(S("{devices=[2,1]<=[2]}"), {8, 16}, {1, 8, 16}).to_string(), "{devices=[1,2,1]<=[2]}");
  // Partial copies stay copies.
  EXPECT_EQ(reshape_sharding(S("{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}"), {8, 4, 16}, {32, 16}).to_string(),
            "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
}

TEST(ShardingUtil, MergeCombinesTwoAxesOfAMesh) {
  // 2x2 mesh (data, model): the batch by data, the features by model.
  const HloSharding by_data = S("{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  const HloSharding by_model = S("{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  ASSERT_TRUE(merge(by_data, by_model));
  EXPECT_EQ(merge(by_data, by_model)->to_string(), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(merge(by_model, by_data)->to_string(), "{devices=[2,2]<=[4]}");
  EXPECT_EQ(*merge(by_data, HloSharding::replicate()), by_data);
  EXPECT_EQ(*merge(HloSharding::replicate(), by_model), by_model);
  EXPECT_EQ(*merge(by_data, by_data), by_data);
}

TEST(ShardingUtil, MergeRefusesWhatNoGridHolds) {
  // Two devices cannot tile both dimensions.
  EXPECT_FALSE(merge(S("{devices=[2,1]<=[2]}"), S("{devices=[1,2]<=[2]}")));
  // One dimension tiled twice with other devices in each tile.
  EXPECT_FALSE(merge(S("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"), S("{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}")));
  // Different tile counts along one dimension.
  EXPECT_FALSE(merge(S("{devices=[4,1]<=[4]}"), S("{devices=[2,1,2]<=[4] last_tile_dim_replicate}")));
  // Other devices, or another rank.
  EXPECT_FALSE(merge(S("{devices=[2,1]0,1}"), S("{devices=[1,2]2,3}")));
  EXPECT_FALSE(merge(S("{devices=[2,1]<=[2]}"), S("{devices=[2]<=[2]}")));
}

TEST(ShardingUtil, FitToShapeUntilesWhatDoesNotDivide) {
  EXPECT_EQ(fit_to_shape(S("{devices=[2,2]<=[4]}"), {3, 4}).to_string(), "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}");
  EXPECT_EQ(fit_to_shape(S("{devices=[2,2]<=[4]}"), {4, 4}).to_string(), "{devices=[2,2]<=[4]}");
  EXPECT_TRUE(fit_to_shape(S("{devices=[4]<=[4]}"), {6}).is_replicated());
}

TEST(ShardingUtil, CanonicalOrdersTheCopies) {
  EXPECT_EQ(canonical(S("{devices=[2,1,2]1,0,3,2 last_tile_dim_replicate}")), S("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"));
  EXPECT_EQ(canonical(S("{devices=[2,1]1,0}")), S("{devices=[2,1]1,0}"));  // tiles, not copies: kept
  EXPECT_TRUE(canonical(S("{devices=[1,1,4]<=[4] last_tile_dim_replicate}")).is_replicated());
}

}  // namespace
}  // namespace lazytrain::hlo::sharding_util
