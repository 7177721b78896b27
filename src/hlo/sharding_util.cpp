#include "hlo/sharding_util.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace lazytrain::hlo::sharding_util {
namespace {

// Each device of a tiled sharding with the grid index of its tile over the
// value's dimensions (the replicated grid dimension left out), and the grid.
struct TileMap {
  std::vector<int64_t> counts;
  std::vector<std::pair<int64_t, std::vector<int64_t>>> tiles;  // (device, index), in the sharding's order
};

TileMap tile_map(const HloSharding& sharding) {
  const auto rank = static_cast<size_t>(sharding.tiled_rank());
  TileMap map;
  map.counts.assign(sharding.tile_dims().begin(), sharding.tile_dims().begin() + static_cast<std::ptrdiff_t>(rank));
  for (int64_t device : sharding.devices()) {
    std::vector<int64_t> index = sharding.tile_index(device);
    index.resize(rank);
    map.tiles.emplace_back(device, std::move(index));
  }
  return map;
}

// The sharding that places every device's tile as `map` does; nullopt unless
// every grid cell is held by the same number of devices.
std::optional<HloSharding> from_tile_map(const TileMap& map) {
  int64_t cells = 1;
  for (int64_t c : map.counts) cells *= c;
  if (cells == 1) return HloSharding::replicate();
  std::vector<std::vector<int64_t>> holders(static_cast<size_t>(cells));
  for (const auto& [device, index] : map.tiles) {
    int64_t cell = 0;
    for (size_t d = 0; d < index.size(); ++d) cell = cell * map.counts[d] + index[d];
    holders[static_cast<size_t>(cell)].push_back(device);
  }
  const size_t copies = holders[0].size();
  std::vector<int64_t> devices;
  for (auto& group : holders) {
    if (group.empty() || group.size() != copies) return std::nullopt;
    std::sort(group.begin(), group.end());
    devices.insert(devices.end(), group.begin(), group.end());
  }
  if (copies == 1) return HloSharding::tiled(map.counts, std::move(devices));
  std::vector<int64_t> tile_dims = map.counts;
  tile_dims.push_back(static_cast<int64_t>(copies));
  return HloSharding::tiled(std::move(tile_dims), std::move(devices), /*last_tile_dim_replicate=*/true);
}

void require_movable(const HloSharding& sharding, const char* what) {
  if (!sharding.is_replicated() && !sharding.is_tiled()) {
    throw Error(std::string("[sharding] ") + what + " moves only replicated and tiled shardings, got " + sharding.to_string());
  }
}

}  // namespace

int64_t tile_count(const HloSharding& sharding) {
  if (!sharding.is_tiled()) return 1;
  int64_t count = 1;
  for (int64_t d = 0; d < sharding.tiled_rank(); ++d) count *= sharding.tile_dims()[static_cast<size_t>(d)];
  return count;
}

HloSharding map_dimensions(const HloSharding& sharding, int64_t out_rank, const std::vector<int64_t>& out_dim_of) {
  require_movable(sharding, "map_dimensions");
  if (sharding.is_replicated()) return sharding;
  if (static_cast<int64_t>(out_dim_of.size()) != sharding.tiled_rank()) {
    throw Error("[sharding] map_dimensions: " + sharding.to_string() + " tiles " + std::to_string(sharding.tiled_rank()) +
                " dimensions, but the mapping has " + std::to_string(out_dim_of.size()));
  }
  const TileMap in = tile_map(sharding);
  TileMap out;
  out.counts.assign(static_cast<size_t>(out_rank), 1);
  for (size_t i = 0; i < out_dim_of.size(); ++i) {
    const int64_t j = out_dim_of[i];
    if (j < 0) continue;
    if (j >= out_rank || out.counts[static_cast<size_t>(j)] != 1) {
      throw Error("[sharding] map_dimensions: dimension " + std::to_string(i) + " maps to " + std::to_string(j) +
                  ", out of range or already taken");
    }
    out.counts[static_cast<size_t>(j)] = in.counts[i];
  }
  for (const auto& [device, index] : in.tiles) {
    std::vector<int64_t> moved(static_cast<size_t>(out_rank), 0);
    for (size_t i = 0; i < out_dim_of.size(); ++i) {
      if (out_dim_of[i] >= 0) moved[static_cast<size_t>(out_dim_of[i])] = index[i];
    }
    out.tiles.emplace_back(device, std::move(moved));
  }
  // Dropping coordinates of a full grid leaves a full grid.
  return *from_tile_map(out);
}

HloSharding reshape_sharding(const HloSharding& sharding, const Shape& from, const Shape& to) {
  require_movable(sharding, "reshape_sharding");
  if (sharding.is_replicated()) return sharding;
  std::vector<int64_t> out_dim_of(from.size(), -1);
  const std::vector<int64_t>& counts = sharding.tile_dims();
  // Walk both shapes in groups of dimensions with equal products.
  size_t i = 0, j = 0;
  while (i < from.size() && j < to.size()) {
    const size_t i0 = i, j0 = j;
    int64_t from_product = from[i], to_product = to[j];
    while (from_product != to_product) {
      if (from_product < to_product) {
        if (++i == from.size()) break;
        from_product *= from[i];
      } else {
        if (++j == to.size()) break;
        to_product *= to[j];
      }
    }
    if (from_product != to_product) break;
    // The group is from[i0..i] <-> to[j0..j]: only its major-most real dimension keeps a tiling.
    size_t major_from = i0, major_to = j0;
    while (major_from < i && from[major_from] == 1) ++major_from;
    while (major_to < j && to[major_to] == 1) ++major_to;
    const int64_t count = counts[major_from];
    if (count > 1 && to[major_to] % count == 0) out_dim_of[major_from] = static_cast<int64_t>(major_to);
    ++i;
    ++j;
  }
  return map_dimensions(sharding, static_cast<int64_t>(to.size()), out_dim_of);
}

std::optional<HloSharding> merge(const HloSharding& a, const HloSharding& b) {
  require_movable(a, "merge");
  require_movable(b, "merge");
  if (b.is_replicated()) return a;
  if (a.is_replicated()) return b;
  if (a.tiled_rank() != b.tiled_rank()) return std::nullopt;
  const TileMap ma = tile_map(a), mb = tile_map(b);
  if (ma.tiles.size() != mb.tiles.size()) return std::nullopt;
  TileMap out;
  for (size_t d = 0; d < ma.counts.size(); ++d) {
    if (ma.counts[d] > 1 && mb.counts[d] > 1 && ma.counts[d] != mb.counts[d]) return std::nullopt;
    out.counts.push_back(std::max(ma.counts[d], mb.counts[d]));
  }
  for (const auto& [device, index_a] : ma.tiles) {
    const auto it = std::find_if(mb.tiles.begin(), mb.tiles.end(), [&](const auto& t) { return t.first == device; });
    if (it == mb.tiles.end()) return std::nullopt;
    std::vector<int64_t> index(index_a.size());
    for (size_t d = 0; d < index.size(); ++d) {
      if (ma.counts[d] > 1 && mb.counts[d] > 1 && index_a[d] != it->second[d]) return std::nullopt;
      index[d] = ma.counts[d] > 1 ? index_a[d] : it->second[d];
    }
    out.tiles.emplace_back(device, std::move(index));
  }
  return from_tile_map(out);
}

HloSharding fit_to_shape(const HloSharding& sharding, const Shape& shape) {
  if (!sharding.is_tiled()) return sharding;
  std::vector<int64_t> keep(shape.size(), -1);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] % sharding.tile_dims()[d] == 0) keep[d] = static_cast<int64_t>(d);
  }
  return map_dimensions(sharding, static_cast<int64_t>(shape.size()), keep);
}

HloSharding canonical(const HloSharding& sharding) {
  if (!sharding.is_tiled()) return sharding;
  std::vector<int64_t> same(static_cast<size_t>(sharding.tiled_rank()));
  for (size_t d = 0; d < same.size(); ++d) same[d] = static_cast<int64_t>(d);
  return map_dimensions(sharding, static_cast<int64_t>(same.size()), same);
}

}  // namespace lazytrain::hlo::sharding_util
