// Moving a sharding through an operation: the tile-level arithmetic that
// sharding propagation and the SPMD partitioner share (XLA's hlo_sharding_util).
//
// Every function here sees a tiled sharding as a map from each device to the
// grid index of the tile it holds. An operation that sends value dimension i
// to dimension j sends grid coordinate i to j; a dimension it drops (reduced,
// broadcast away, sliced) loses its coordinate, and the devices that differed
// only there now hold the same tile: they become copies (last_tile_dim_replicate).
// Turning the map back into an HloSharding needs a full grid: every cell held
// by the same number of devices; when it is not, the result is "no sharding".
//
// Only replicated and tiled shardings move (maximal, manual and tuple ones are
// left to the caller); a replicated sharding maps to a replicated one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/shape.h"
#include "hlo/hlo_sharding.h"

namespace lazytrain::hlo::sharding_util {

// How many distinct tiles the value is cut into (the product of the tile
// counts over the value's dimensions; 1 when replicated).
int64_t tile_count(const HloSharding& sharding);

// The sharding of a value of rank `out_rank` whose dimension out_dim_of[i]
// holds the elements of the sharded value's dimension i (-1: dimension i is
// gone). Dimensions no input maps to are not tiled. Throws Error when
// `sharding` is not replicated or tiled, or out_dim_of's size is not its tiled rank.
HloSharding map_dimensions(const HloSharding& sharding, int64_t out_rank, const std::vector<int64_t>& out_dim_of);

// The sharding of reshape(x) to `to` when x of shape `from` has `sharding`:
// a tiled dimension survives when it is the major-most dimension (size > 1) of a
// group of dimensions that the reshape splits or merges, and the group's new
// major-most dimension divides by its tile count (BERT's [B, S, H] <-> [B*S, H],
// attention's [H] <-> [heads, head_dim]). Other tiled dimensions are dropped
// (their devices become copies).
HloSharding reshape_sharding(const HloSharding& sharding, const Shape& from, const Shape& to);

// The sharding that is both `a` and `b` (every device's tile index agrees with
// each on the dimensions that one tiles), or nullopt when no full grid is
// both: the two tile one dimension differently, or they pair their devices
// in a way no grid holds. merge(x, replicated) = x.
std::optional<HloSharding> merge(const HloSharding& a, const HloSharding& b);

// `sharding` with the tiling of every dimension of `shape` that its tile count
// does not divide removed (the partitioner needs even tiles; propagation never
// proposes a layout it cannot partition).
HloSharding fit_to_shape(const HloSharding& sharding, const Shape& shape);

// One canonical spelling per layout: replicated when nothing is tiled, the
// replicated dimension only when it has more than one device, its devices in
// ascending order. Two shardings that place every tile alike are equal after it.
HloSharding canonical(const HloSharding& sharding);

}  // namespace lazytrain::hlo::sharding_util
