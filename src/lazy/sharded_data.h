// ShardedData: a value laid out over the devices of a mesh (issue 34): its
// global shape and dtype, its layout (a tiled hlo::HloSharding over global
// device ordinals) and this process's tiles, one per device of the mesh that
// this process runs. An "xla::device_data" node holds one in place of a
// Buffer (lazy/ir.h), as PyTorch/XLA's sharded data handle does: the SPMD
// program reads each device's tile, and a read of the whole value assembles
// the tiles.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "core/dtype.h"
#include "core/shape.h"
#include "hlo/hlo_sharding.h"
#include "lazy/ir.h"
#include "runtime/async_buffer.h"

namespace lazytrain::lazy {

class ShardedData {
 public:
  // `tiles`: global ordinal -> that device's tile (pending or ready), for this
  // process's devices of the mesh. Throws Error unless `sharding` is tiled and
  // of `shape`'s rank, and every tile has the tile shape and `dtype`.
  ShardedData(Shape shape, DType dtype, hlo::HloSharding sharding, std::map<int64_t, std::shared_ptr<runtime::AsyncBuffer>> tiles);

  // Cuts `whole` into the tiles of `sharding` for the devices `ordinals`
  // (global ordinals; device cpu:(ordinal - first_local) holds each). Throws
  // Error naming the dimension when a tile count does not divide it.
  static std::shared_ptr<ShardedData> split(const runtime::Buffer& whole, const hlo::HloSharding& sharding, const std::vector<int64_t>& ordinals);
  // split(whole, sharding, local_device_ordinals()): the tiles of this process's devices.
  static std::shared_ptr<ShardedData> split_locally(const runtime::Buffer& whole, const hlo::HloSharding& sharding);
  // The global ordinals of this process's devices (cpu:0 .. cpu:L-1 under runtime::replica_world()).
  static std::vector<int64_t> local_device_ordinals();

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  const hlo::HloSharding& sharding() const { return sharding_; }
  const std::map<int64_t, std::shared_ptr<runtime::AsyncBuffer>>& tiles() const { return tiles_; }
  // Device `ordinal`'s tile; Error when this process does not hold it.
  const std::shared_ptr<runtime::AsyncBuffer>& tile(int64_t ordinal) const;

  // The whole value, assembled once from the tiles (waits for them; rethrows
  // an execution's error). Throws Error when a tile lies on another process.
  const runtime::Buffer& assembled() const;

 private:
  Shape shape_;
  DType dtype_;
  hlo::HloSharding sharding_;
  std::map<int64_t, std::shared_ptr<runtime::AsyncBuffer>> tiles_;
  mutable std::once_flag assembled_once_;
  mutable runtime::Buffer assembled_;
};

// The annotation "xla::custom_sharding" (PyTorch/XLA's CustomSharding node):
// `value` laid out as `sharding`, lowered to XLA's custom-call "Sharding"
// with that sharding, which propagation starts from. The layout is an
// attribute, so part of the graph's hash.
NodePtr make_custom_sharding(const NodePtr& value, const hlo::HloSharding& sharding);
// The annotation's layout, when `node` is one.
std::optional<hlo::HloSharding> custom_sharding_of(const Node& node);

// Device `ordinal`'s tile of `whole` laid out as `sharding` (the whole value
// when not tiled). The tile counts must divide the dimensions.
runtime::Buffer tile_of(const runtime::Buffer& whole, const hlo::HloSharding& sharding, int64_t ordinal);

}  // namespace lazytrain::lazy
