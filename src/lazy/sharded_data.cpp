#include "lazy/sharded_data.h"

#include <atomic>
#include <cstring>
#include <set>
#include <type_traits>

#include "core/error.h"
#include "core/half.h"
#include "hlo/custom_call.h"
#include "hlo/xla_op.h"
#include "lazy/lowering_context.h"
#include "runtime/collectives.h"

namespace lazytrain::lazy {
namespace {

// Copies the box of sizes `box` at `from_start` in `from` (of `from_shape`)
// to `to_start` in `to` (of `to_shape`), a row of the last dimension at a time.
void copy_box(const uint8_t* from, const Shape& from_shape, const std::vector<int64_t>& from_start, uint8_t* to, const Shape& to_shape,
              const std::vector<int64_t>& to_start, const Shape& box, int64_t itemsize) {
  const size_t rank = box.size();
  if (rank == 0) {
    std::memcpy(to, from, static_cast<size_t>(itemsize));
    return;
  }
  if (numel(box) == 0) return;
  auto offset = [&](const Shape& shape, const std::vector<int64_t>& start, const std::vector<int64_t>& index) {
    int64_t linear = 0;
    for (size_t d = 0; d < rank; ++d) linear = linear * shape[d] + start[d] + index[d];
    return linear * itemsize;
  };
  const auto row = static_cast<size_t>(box[rank - 1] * itemsize);
  std::vector<int64_t> index(rank, 0);
  while (true) {
    std::memcpy(to + offset(to_shape, to_start, index), from + offset(from_shape, from_start, index), row);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++index[d] < box[d]) break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// Where device `ordinal`'s tile starts in the whole value.
std::vector<int64_t> tile_start(const hlo::HloSharding& sharding, const Shape& shape, int64_t ordinal) {
  std::vector<int64_t> start = sharding.tile_index(ordinal);
  start.resize(shape.size());
  const Shape tile = sharding.tile_shape(shape);
  for (size_t d = 0; d < shape.size(); ++d) start[d] *= tile[d];
  return start;
}

// A buffer's elements as doubles (exact for every dtype lazytrain has, s64 up
// to 2^53), for the host exchange, and back.
template <typename F>
void for_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(float{});
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kFloat16: return f(Half{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kBool: return f(uint8_t{});
  }
}

template <typename T>
constexpr bool kIntegral = std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint8_t>;

std::vector<double> as_doubles(const runtime::Buffer& b) {
  std::vector<double> out(static_cast<size_t>(b.numel()));
  for_dtype(b.dtype(), [&]<typename T>(T) {
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (kIntegral<T>) {
        out[i] = static_cast<double>(b.data<T>()[i]);
      } else {
        out[i] = static_cast<double>(static_cast<float>(b.data<T>()[i]));
      }
    }
  });
  return out;
}

void from_doubles(const double* values, const runtime::Buffer& b) {
  for_dtype(b.dtype(), [&]<typename T>(T) {
    for (int64_t i = 0; i < b.numel(); ++i) {
      if constexpr (kIntegral<T>) {
        b.data<T>()[i] = static_cast<T>(values[i]);
      } else {
        b.data<T>()[i] = static_cast<T>(static_cast<float>(values[i]));
      }
    }
  });
}

void check_even(const hlo::HloSharding& sharding, const Shape& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] % sharding.tile_dims()[d] != 0) {
      throw Error("[sharding] dimension " + std::to_string(d) + " of " + shape_str(shape) + " does not divide into " +
                  std::to_string(sharding.tile_dims()[d]) + " tiles of " + sharding.to_string() + ": lazytrain needs even tiles");
    }
  }
}

constexpr const char* kCustomShardingOp = "xla::custom_sharding";

int lower_custom_sharding(LoweringContext& context, const Node& node) {
  const hlo::XlaOp annotated = hlo::custom_call({hlo::XlaOp(context.builder(), context.operand(node, 0))}, hlo::kShardingTarget, "");
  context.builder().set_sharding(annotated.id(), *node.sharding());
  return annotated.id();
}

}  // namespace

NodePtr make_custom_sharding(const NodePtr& value, const hlo::HloSharding& sharding) {
  const NodePtr& annotated = value->op() == kCustomShardingOp ? value->operand(0) : value;
  return make_sharded_node(kCustomShardingOp, {annotated}, value->shape(), value->dtype(), sharding, lower_custom_sharding);
}

std::optional<hlo::HloSharding> custom_sharding_of(const Node& node) {
  if (node.op() != kCustomShardingOp) return std::nullopt;
  return *node.sharding();
}

runtime::Buffer tile_of(const runtime::Buffer& whole, const hlo::HloSharding& sharding, int64_t ordinal) {
  if (!sharding.is_tiled()) return whole;
  check_even(sharding, whole.shape());
  const Shape tile = sharding.tile_shape(whole.shape());
  const int first_local = runtime::replica_world().global_ordinal(0);
  runtime::Buffer out(tile, whole.dtype(), runtime::Device{"cpu", static_cast<int>(ordinal - first_local)});
  copy_box(static_cast<const uint8_t*>(whole.raw()), whole.shape(), tile_start(sharding, whole.shape(), ordinal), static_cast<uint8_t*>(out.raw()),
           tile, std::vector<int64_t>(tile.size(), 0), tile, itemsize(whole.dtype()));
  return out;
}

ShardedData::ShardedData(Shape shape, DType dtype, hlo::HloSharding sharding, std::map<int64_t, std::shared_ptr<runtime::AsyncBuffer>> tiles)
    : shape_(std::move(shape)), dtype_(dtype), sharding_(std::move(sharding)), tiles_(std::move(tiles)) {
  check(sharding_.is_tiled() && sharding_.tiled_rank() == static_cast<int64_t>(shape_.size()), "sharding",
        sharding_.to_string() + " does not tile a value of shape " + shape_str(shape_));
  check_even(sharding_, shape_);
  const Shape tile = sharding_.tile_shape(shape_);
  for (const auto& [ordinal, buffer] : tiles_) {
    check(buffer->shape() == tile && buffer->dtype() == dtype_, "sharding",
          "the tile of device " + std::to_string(ordinal) + " is " + xla_name(buffer->dtype()) + shape_str(buffer->shape()) + ", expected " +
              xla_name(dtype_) + shape_str(tile));
  }
}

std::vector<int64_t> ShardedData::local_device_ordinals() {
  const runtime::ReplicaWorld& world = runtime::replica_world();
  std::vector<int64_t> ordinals;
  for (int l = 0; l < world.local_replicas; ++l) ordinals.push_back(world.global_ordinal(l));
  return ordinals;
}

std::shared_ptr<ShardedData> ShardedData::split_locally(const runtime::Buffer& whole, const hlo::HloSharding& sharding) {
  return split(whole, sharding, local_device_ordinals());
}

std::shared_ptr<ShardedData> ShardedData::split(const runtime::Buffer& whole, const hlo::HloSharding& sharding, const std::vector<int64_t>& ordinals) {
  check_even(sharding, whole.shape());
  std::map<int64_t, std::shared_ptr<runtime::AsyncBuffer>> tiles;
  for (int64_t ordinal : ordinals) tiles.emplace(ordinal, std::make_shared<runtime::AsyncBuffer>(tile_of(whole, sharding, ordinal)));
  return std::make_shared<ShardedData>(whole.shape(), whole.dtype(), sharding, std::move(tiles));
}

const std::shared_ptr<runtime::AsyncBuffer>& ShardedData::tile(int64_t ordinal) const {
  const auto it = tiles_.find(ordinal);
  check(it != tiles_.end(), "sharding", "device " + std::to_string(ordinal) + "'s tile of " + sharding_.to_string() + " is not in this process");
  return it->second;
}

const runtime::Buffer& ShardedData::assembled() const {
  std::call_once(assembled_once_, [&] {
    runtime::Buffer whole(shape_, dtype_, tiles_.begin()->second->device());
    const Shape extent = sharding_.tile_shape(shape_);
    std::set<std::vector<int64_t>> placed;  // copies of a tile are placed once
    for (int64_t ordinal : sharding_.devices()) {
      const std::vector<int64_t> start = tile_start(sharding_, shape_, ordinal);
      if (placed.count(start)) continue;
      const auto it = tiles_.find(ordinal);
      if (it == tiles_.end()) continue;  // a copy may be held by another of this process's devices
      const runtime::Buffer& part = it->second->get();
      copy_box(static_cast<const uint8_t*>(part.raw()), extent, std::vector<int64_t>(extent.size(), 0), static_cast<uint8_t*>(whole.raw()), shape_, start,
               extent, itemsize(dtype_));
      placed.insert(start);
    }
    int64_t cells = 1;
    for (int64_t d = 0; d < sharding_.tiled_rank(); ++d) cells *= sharding_.tile_dims()[static_cast<size_t>(d)];
    if (static_cast<int64_t>(placed.size()) < cells) {
      // Tiles on other processes: one device each, exchanged through the host
      // (every process reads its tensors in the same order: the same program).
      const runtime::ReplicaWorld& world = runtime::replica_world();
      check(world.local_replicas == 1, "sharding",
            "reading a tensor laid out as " + sharding_.to_string() + " needs tiles of other processes, which lazytrain exchanges only with one device a process");
      static std::atomic<int64_t> reads{0};
      const std::vector<double> all = runtime::host_all_gather("read of a sharded tensor " + std::to_string(reads++), as_doubles(tile(world.global_ordinal(0))->get()));
      const auto n = static_cast<size_t>(numel(extent));
      runtime::Buffer part(extent, dtype_, whole.device());
      for (int64_t ordinal = 0; ordinal < world.world_size(); ++ordinal) {
        const std::vector<int64_t> start = tile_start(sharding_, shape_, ordinal);
        if (placed.count(start)) continue;
        from_doubles(all.data() + static_cast<size_t>(ordinal) * n, part);
        copy_box(static_cast<const uint8_t*>(part.raw()), extent, std::vector<int64_t>(extent.size(), 0), static_cast<uint8_t*>(whole.raw()), shape_, start,
                 extent, itemsize(dtype_));
        placed.insert(start);
      }
    }
    assembled_ = std::move(whole);
  });
  return assembled_;
}

}  // namespace lazytrain::lazy
