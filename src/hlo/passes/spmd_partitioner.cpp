#include "hlo/passes/spmd_partitioner.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "core/error.h"
#include "hlo/custom_call.h"
#include "hlo/hlo_builder.h"
#include "hlo/op_metadata.h"
#include "hlo/sharding_util.h"

namespace lazytrain::hlo {
namespace {

using sharding_util::canonical;
using sharding_util::map_dimensions;

using Groups = std::vector<std::vector<int64_t>>;

// Tiles per dimension of a value of rank `rank` (1 where not tiled).
std::vector<int64_t> counts_of(const HloSharding& s, size_t rank) {
  if (!s.is_tiled()) return std::vector<int64_t>(rank, 1);
  return {s.tile_dims().begin(), s.tile_dims().begin() + static_cast<std::ptrdiff_t>(rank)};
}

// The grid index of `device`'s tile over the value's dimensions (zeros when not tiled).
std::vector<int64_t> coords_of(const HloSharding& s, int64_t device, size_t rank) {
  if (!s.is_tiled()) return std::vector<int64_t>(rank, 0);
  std::vector<int64_t> index = s.tile_index(device);
  index.resize(rank);
  return index;
}

// The dimension map (of a value of rank `rank`) that keeps the dimensions `keep` says and drops the rest.
std::vector<int64_t> keeping(size_t rank, const std::function<bool(size_t)>& keep) {
  std::vector<int64_t> map(rank, -1);
  for (size_t d = 0; d < rank; ++d) {
    if (keep(d)) map[d] = static_cast<int64_t>(d);
  }
  return map;
}

bool same_layout(const HloSharding& a, const HloSharding& b) { return canonical(a) == canonical(b); }

class Partitioner {
 public:
  explicit Partitioner(const HloModule& global) : g_(global), b_(global.name), local_(global.instructions.size(), -1) {
    std::set<int64_t> devices;
    for (const HloInstruction& in : g_.instructions) {
      if (in.id == g_.root) continue;
      if (!in.sharding) fail(in, "has no sharding: run sharding propagation first");
      if (!in.sharding->is_tiled()) continue;
      std::set<int64_t> mine(in.sharding->devices().begin(), in.sharding->devices().end());
      if (!devices.empty() && mine != devices) {
        fail(in, "its sharding " + in.sharding->to_string() + " spans other devices than the module's other shardings: one module runs on one mesh");
      }
      devices = std::move(mine);
    }
    devices_.assign(devices.begin(), devices.end());
  }

  // False when no value is tiled (every device runs the whole program as it is).
  bool tiled() const { return !devices_.empty(); }

  HloModule run() {
    std::vector<int> outputs;
    for (const HloInstruction& in : g_.instructions) {
      if (in.id == g_.root) {
        for (int o : in.operands) outputs.push_back(local_[static_cast<size_t>(o)]);
        break;
      }
      current_ = &in;
      b_.set_metadata(in.metadata);
      local_[static_cast<size_t>(in.id)] = lower(in);
    }
    HloModule out = b_.build(outputs);
    out.num_partitions = static_cast<int64_t>(devices_.size());
    std::vector<HloSharding> layouts;
    for (int o : g_.at(g_.root).operands) layouts.push_back(*g_.at(o).sharding);
    out.instructions[static_cast<size_t>(out.root)].sharding = HloSharding::tuple(std::move(layouts));
    return out;
  }

 private:
  [[noreturn]] void fail(const HloInstruction& in, const std::string& what) const {
    const std::string origin = origin_text(in.metadata);
    throw Error("[spmd-partitioner] " + in.name() + (origin.empty() ? "" : " (" + origin + ")") + ": " + what);
  }

  // The shape one device holds of a value of `shape` laid out as `s`; every tile count must divide its dimension.
  Shape local_shape(const Shape& shape, const HloSharding& s) const {
    const std::vector<int64_t> counts = counts_of(s, shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] % counts[d] != 0) {
        fail(*current_, "dimension " + std::to_string(d) + " of " + shape_str(shape) + " does not divide into " + std::to_string(counts[d]) +
                            " tiles of " + s.to_string() + ": the SPMD partitioner needs even tiles (pad the tensor or shard another dimension)");
      }
    }
    return s.tile_shape(shape);
  }

  // A scalar s32 holding value_of(device) on each device: a constant when all
  // agree, else a table of every device's value read at partition-id.
  int per_device(const std::function<int64_t(int64_t)>& value_of) {
    std::vector<int64_t> values;
    for (int64_t device : devices_) values.push_back(value_of(device));
    if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; })) return b_.scalar(static_cast<double>(values[0]), DType::kInt32);
    if (auto it = tables_.find(values); it != tables_.end()) return it->second;
    Literal table({devices_.back() + 1}, DType::kInt32);
    for (size_t i = 0; i < devices_.size(); ++i) table.data<int32_t>()[devices_[i]] = static_cast<int32_t>(values[i]);
    if (partition_id_ < 0) partition_id_ = b_.partition_id();
    const int entry = b_.dynamic_slice(b_.constant(table), {partition_id_}, {1});
    const int scalar = b_.reshape(entry, {});
    tables_.emplace(values, scalar);
    return scalar;
  }

  // Groups of devices for a collective: devices with equal key() form a class;
  // within it, group j takes the j-th device (ascending) of each bucket 0..n-1
  // (the bucket order is the group's order).
  Groups matched_groups(const std::function<std::vector<int64_t>(int64_t)>& key, const std::function<int64_t(int64_t)>& bucket, int64_t n) const {
    std::map<std::vector<int64_t>, std::vector<std::vector<int64_t>>> classes;
    for (int64_t device : devices_) {
      auto& buckets = classes[key(device)];
      buckets.resize(static_cast<size_t>(n));
      buckets[static_cast<size_t>(bucket(device))].push_back(device);
    }
    Groups groups;
    for (const auto& [k, buckets] : classes) {
      for (size_t j = 0; j < buckets[0].size(); ++j) {
        std::vector<int64_t> group;
        for (const auto& members : buckets) {
          if (members.size() != buckets[0].size()) fail(*current_, "internal: a collective's groups are uneven");
          group.push_back(members[j]);
        }
        groups.push_back(std::move(group));
      }
    }
    return groups;
  }

  // The devices that hold the tiles of dimension d of `s` side by side, in tile order.
  Groups gather_groups(const HloSharding& s, size_t rank, size_t d) const {
    return matched_groups(
        [&](int64_t device) {
          std::vector<int64_t> c = coords_of(s, device, rank);
          c.erase(c.begin() + static_cast<std::ptrdiff_t>(d));
          return c;
        },
        [&](int64_t device) { return coords_of(s, device, rank)[d]; }, counts_of(s, rank)[d]);
  }

  // Whether every device's tile of `to` lies, along dimension d, inside its tile of `from`.
  bool contained_along(const Shape& shape, const HloSharding& from, const HloSharding& to, size_t d) const {
    const int64_t from_size = shape[d] / counts_of(from, shape.size())[d], to_size = shape[d] / counts_of(to, shape.size())[d];
    for (int64_t device : devices_) {
      const int64_t from_start = coords_of(from, device, shape.size())[d] * from_size;
      const int64_t to_start = coords_of(to, device, shape.size())[d] * to_size;
      if (to_start < from_start || to_start + to_size > from_start + from_size) return false;
    }
    return true;
  }

  // `x` (laid out as `from`) laid out as `to`: all-gathers along each dimension
  // whose tiles do not hold the new ones, then a slice of the local tile.
  int reshard(int x, const Shape& shape, const HloSharding& from, const HloSharding& to) {
    if (same_layout(from, to)) return x;
    const size_t rank = shape.size();
    local_shape(shape, to);
    HloSharding held = from;
    for (size_t d = 0; d < rank; ++d) {
      if (counts_of(held, rank)[d] == 1 || contained_along(shape, held, to, d)) continue;
      x = b_.all_gather(x, static_cast<int64_t>(d), gather_groups(held, rank, d));
      held = map_dimensions(held, static_cast<int64_t>(rank), keeping(rank, [&](size_t k) { return k != d; }));
    }
    const Shape held_shape = local_shape(shape, held), to_shape = local_shape(shape, to);
    if (held_shape == to_shape) return x;  // every dimension already whole or equally tiled
    std::vector<int> starts;
    for (size_t d = 0; d < rank; ++d) {
      starts.push_back(per_device([&](int64_t device) {
        return coords_of(to, device, rank)[d] * to_shape[d] - coords_of(held, device, rank)[d] * held_shape[d];
      }));
    }
    return b_.dynamic_slice(x, starts, to_shape);
  }

  // Operand k of `in` laid out as `want`. A value made from nothing (a fill,
  // a constant, an iota) is made again in that layout: no collective for it.
  // A broadcast is made again from its operand laid out to match: what moves
  // is the smaller operand (a bias of [16], not its [8,8,16] broadcast).
  int operand_as(const HloInstruction& in, size_t k, const HloSharding& want) {
    const HloInstruction& o = g_.at(in.operands[k]);
    if (!same_layout(*o.sharding, want)) {
      if (o.opcode == HloOpcode::kBroadcast) {
        std::vector<int64_t> map(o.shape.size(), -1);  // result dimension -> operand dimension
        for (size_t i = 0; i < o.dimensions.size(); ++i) map[static_cast<size_t>(o.dimensions[i])] = static_cast<int64_t>(i);
        const int x = operand_as(o, 0, map_dimensions(want, static_cast<int64_t>(o.dimensions.size()), map));
        return local_copy(o, {x}, local_shape(o.shape, want));
      }
      // Likewise a lookup in a table no larger than its result (position and token type embeddings).
      if (o.opcode == HloOpcode::kGather && numel(g_.at(o.operands[0]).shape) <= numel(o.shape)) return gather_as(o, want);
      if (o.opcode == HloOpcode::kIota) return local_iota(o, want);
      if (o.opcode == HloOpcode::kConstant) return reshard(local_copy(o, {}, o.shape), o.shape, HloSharding::replicate(), want);
    }
    return reshard(local_[static_cast<size_t>(o.id)], o.shape, *o.sharding, want);
  }

  // This device's tile of iota `o` laid out as `want`: an iota of the tile's
  // shape, plus the tile's offset along the counted dimension when that is split.
  int local_iota(const HloInstruction& o, const HloSharding& want) {
    const Shape local = local_shape(o.shape, want);
    const int tile = local_copy(o, {}, local);
    const auto d = static_cast<size_t>(o.dimensions[0]);
    if (counts_of(want, o.shape.size())[d] == 1) return tile;
    const int offset = b_.convert(per_device([&](int64_t device) { return coords_of(want, device, o.shape.size())[d] * local[d]; }), o.dtype);
    return b_.binary(HloOpcode::kAdd, tile, b_.broadcast(offset, local, {}));
  }

  // `in` on local operands, with `shape` where the shape is an attribute (broadcast, reshape, iota, ...).
  int local_copy(const HloInstruction& in, std::vector<int> operands, const Shape& shape) {
    HloInstruction local = in;
    local.shape = shape;
    local.sharding.reset();
    return b_.copy(local, std::move(operands));
  }

  // `x` holds, on each device, a partial result (laid out as `layout`) whose
  // partial values `groups` add up (or reduce by `kind`); returns it laid out as
  // `want`: a reduce-scatter when `want` splits one more dimension exactly by
  // the groups, else an all-reduce and a reshard.
  int resolve_partials(int x, const Shape& shape, const HloSharding& layout, const Groups& groups, const HloSharding& want, ReduceKind kind) {
    const size_t rank = shape.size();
    const auto k = static_cast<int64_t>(groups[0].size());
    for (size_t d = 0; d < rank; ++d) {
      if (counts_of(layout, rank)[d] != 1 || counts_of(want, rank)[d] != k) continue;
      const HloSharding without = map_dimensions(want, static_cast<int64_t>(rank), keeping(rank, [&](size_t j) { return j != d; }));
      if (!same_layout(without, layout)) continue;
      Groups ordered;
      bool fits = true;
      for (const auto& group : groups) {
        std::vector<int64_t> by_tile(group.size(), -1);
        for (int64_t device : group) {
          const int64_t t = coords_of(want, device, rank)[d];
          if (by_tile[static_cast<size_t>(t)] >= 0) fits = false;
          by_tile[static_cast<size_t>(t)] = device;
        }
        if (std::count(by_tile.begin(), by_tile.end(), -1) > 0) fits = false;
        ordered.push_back(std::move(by_tile));
      }
      if (fits) return b_.reduce_scatter(x, kind, static_cast<int64_t>(d), std::move(ordered));
    }
    const int summed = b_.all_reduce(x, kind, groups);
    return reshard(summed, shape, layout, want);
  }

  // The linear index of `device`'s tile of `s` over the dimensions `dims`.
  static int64_t linear_coords(const HloSharding& s, int64_t device, size_t rank, const std::vector<size_t>& dims) {
    const std::vector<int64_t> c = coords_of(s, device, rank), n = counts_of(s, rank);
    int64_t linear = 0;
    for (size_t d : dims) linear = linear * n[d] + c[d];
    return linear;
  }
  static int64_t product_over(const HloSharding& s, size_t rank, const std::vector<size_t>& dims) {
    int64_t p = 1;
    for (size_t d : dims) p *= counts_of(s, rank)[d];
    return p;
  }
  // Groups of the devices whose tiles of `result` agree and which differ in `s`'s tiles over `dims`.
  Groups partial_groups(const HloSharding& result, size_t result_rank, const HloSharding& s, size_t rank, const std::vector<size_t>& dims) const {
    return matched_groups([&](int64_t device) { return coords_of(result, device, result_rank); },
                          [&](int64_t device) { return linear_coords(s, device, rank, dims); }, product_over(s, rank, dims));
  }

  int lower(const HloInstruction& in);
  int lower_dot(const HloInstruction& in);
  int lower_reduce(const HloInstruction& in);
  int lower_row_split_gather(const HloInstruction& in);
  // Gather `in` laid out as `s`, its table and ids laid out to match.
  int gather_as(const HloInstruction& in, const HloSharding& s);
  int lower_scatter(const HloInstruction& in);
  int lower_custom_call(const HloInstruction& in);

  const HloModule& g_;
  HloBuilder b_;
  std::vector<int> local_;       // global id -> its local value, laid out as the instruction's sharding
  std::vector<int64_t> devices_;  // ascending global ordinals
  const HloInstruction* current_ = nullptr;
  int partition_id_ = -1;
  std::map<std::vector<int64_t>, int> tables_;
};

int Partitioner::lower(const HloInstruction& in) {
  const HloSharding& s = *in.sharding;
  const Shape& shape = in.shape;
  const size_t rank = shape.size();
  const HloSharding replicated = HloSharding::replicate();
  if (is_elementwise(in.opcode)) {
    std::vector<int> ops;
    for (size_t k = 0; k < in.operands.size(); ++k) ops.push_back(operand_as(in, k, s));
    return local_copy(in, std::move(ops), local_shape(shape, s));
  }
  switch (in.opcode) {
    case HloOpcode::kParameter: {
      const int p = b_.parameter(local_shape(shape, s), in.dtype);
      b_.set_sharding(p, s);
      return p;
    }
    case HloOpcode::kIota: return local_iota(in, s);
    case HloOpcode::kConstant:
    case HloOpcode::kRngBitGenerator: {
      // Made whole on every device (the same values as the whole program), then sliced.
      std::vector<int> ops;
      for (size_t k = 0; k < in.operands.size(); ++k) ops.push_back(operand_as(in, k, replicated));
      return reshard(local_copy(in, std::move(ops), shape), shape, replicated, s);
    }
    case HloOpcode::kBroadcast: {
      std::vector<int64_t> map(rank, -1);  // result dimension -> operand dimension
      for (size_t i = 0; i < in.dimensions.size(); ++i) map[static_cast<size_t>(in.dimensions[i])] = static_cast<int64_t>(i);
      const int x = operand_as(in, 0, map_dimensions(s, static_cast<int64_t>(in.dimensions.size()), map));
      return local_copy(in, {x}, local_shape(shape, s));
    }
    case HloOpcode::kTranspose: {
      const int x = operand_as(in, 0, map_dimensions(s, static_cast<int64_t>(rank), in.dimensions));
      return local_copy(in, {x}, local_shape(shape, s));
    }
    case HloOpcode::kReshape: {
      const Shape& from = g_.at(in.operands[0]).shape;
      const HloSharding want = sharding_util::reshape_sharding(s, shape, from);
      if (same_layout(sharding_util::reshape_sharding(want, from, shape), s)) {
        return local_copy(in, {operand_as(in, 0, want)}, local_shape(shape, s));
      }
      // The tiles do not reshape into tiles: reshape the whole value.
      return reshard(local_copy(in, {operand_as(in, 0, replicated)}, shape), shape, replicated, s);
    }
    case HloOpcode::kSlice: {
      const Shape& from = g_.at(in.operands[0]).shape;
      const HloSharding uncut = map_dimensions(s, static_cast<int64_t>(rank), keeping(rank, [&](size_t d) { return from[d] == shape[d]; }));
      const int x = operand_as(in, 0, uncut);
      const Shape held = local_shape(from, uncut);
      std::vector<int64_t> starts = in.slice_starts, limits = in.slice_limits, strides = in.slice_strides;
      for (size_t d = 0; d < rank; ++d) {
        if (from[d] == shape[d]) starts[d] = 0, limits[d] = held[d], strides[d] = 1;
      }
      return reshard(b_.slice(x, starts, limits, strides), shape, uncut, s);
    }
    case HloOpcode::kConcatenate: {
      const auto d = static_cast<size_t>(in.dimensions[0]);
      const HloSharding whole = map_dimensions(s, static_cast<int64_t>(rank), keeping(rank, [&](size_t k) { return k != d; }));
      std::vector<int> ops;
      for (size_t k = 0; k < in.operands.size(); ++k) ops.push_back(operand_as(in, k, whole));
      return reshard(local_copy(in, std::move(ops), {}), shape, whole, s);
    }
    case HloOpcode::kReduce: return lower_reduce(in);
    case HloOpcode::kDot: return lower_dot(in);
    case HloOpcode::kGather: {
      if (const int looked_up = lower_row_split_gather(in); looked_up >= 0) return looked_up;
      return gather_as(in, s);
    }
    case HloOpcode::kScatter: return lower_scatter(in);
    case HloOpcode::kOptimizationBarrier:
      return local_copy(in, {operand_as(in, 0, s), local_[static_cast<size_t>(in.operands[1])]}, {});
    case HloOpcode::kCustomCall: return lower_custom_call(in);
    default: break;
  }
  fail(in, "no partitioning rule for " + opcode_name(in.opcode));
}

// A lookup in a table split by rows only (Megatron's vocabulary-parallel
// embedding): each device looks up the ids among its own rows, zeros for the
// others, and an all-reduce over the devices that split the rows sums them;
// the table is never gathered. -1 when the layouts do not fit (the result split
// along R, the table along more than its rows, or a device group that would
// not hold one tile of each row block) or the table is the smaller exchange:
// the caller gathers the table.
int Partitioner::lower_row_split_gather(const HloInstruction& in) {
  const HloSharding& s = *in.sharding;
  const HloInstruction& table = g_.at(in.operands[0]);
  const HloInstruction& ids_in = g_.at(in.operands[1]);
  const size_t rank = in.shape.size(), table_rank = table.shape.size(), ni = ids_in.shape.size();
  const HloSharding& held = *table.sharding;
  if (!held.is_tiled() || !is_floating_point(in.dtype)) return -1;
  const std::vector<int64_t> row_tiles = counts_of(held, table_rank), result_tiles = counts_of(s, rank);
  if (row_tiles[0] == 1) return -1;
  // The cheaper exchange: the looked-up rows are all-reduced (about twice
  // their bytes) where the table would be gathered whole (a vocabulary's
  // worth of rows against a batch's; a short position table is gathered).
  if (numel(table.shape) <= 2 * numel(in.shape)) return -1;
  for (size_t d = 1; d < table_rank; ++d) {
    if (row_tiles[d] != 1 || result_tiles[ni + d - 1] != 1) return -1;
  }
  // One device of each row block per group of devices holding the same result tile.
  std::map<std::vector<int64_t>, std::vector<int64_t>> blocks;  // result tile -> devices per row block
  for (int64_t device : devices_) {
    auto& count = blocks[coords_of(s, device, rank)];
    count.resize(static_cast<size_t>(row_tiles[0]));
    ++count[static_cast<size_t>(coords_of(held, device, table_rank)[0])];
  }
  for (const auto& [tile, count] : blocks) {
    if (std::any_of(count.begin(), count.end(), [&](int64_t c) { return c != count[0]; })) return -1;
  }
  std::vector<int64_t> ids_map(rank, -1);  // result dimension -> ids dimension
  for (size_t j = 0; j < ni; ++j) ids_map[j] = static_cast<int64_t>(j);
  const HloSharding ids_layout = map_dimensions(s, static_cast<int64_t>(ni), ids_map);
  const int ids = operand_as(in, 1, ids_layout);
  const Shape ids_shape = local_shape(ids_in.shape, ids_layout);
  const int64_t rows = table.shape[0] / row_tiles[0];
  const int first = b_.convert(per_device([&](int64_t device) { return coords_of(held, device, table_rank)[0] * rows; }), ids_in.dtype);
  const int local_ids = b_.binary(HloOpcode::kSubtract, ids, b_.broadcast(first, ids_shape, {}));
  const int at_least_first = b_.compare(local_ids, b_.full(0.0, ids_shape, ids_in.dtype), ComparisonDirection::kGe);
  const int below_last = b_.compare(local_ids, b_.full(static_cast<double>(rows), ids_shape, ids_in.dtype), ComparisonDirection::kLt);
  const int mine = b_.binary(HloOpcode::kAnd, at_least_first, below_last);
  const int safe_ids = b_.select(mine, local_ids, b_.full(0.0, ids_shape, ids_in.dtype));
  const int looked_up = local_copy(in, {local_[static_cast<size_t>(table.id)], safe_ids}, {});
  const Shape out_shape = local_shape(in.shape, s);
  std::vector<int64_t> id_dims(ni);
  std::iota(id_dims.begin(), id_dims.end(), int64_t{0});
  const int kept = b_.select(b_.broadcast(mine, out_shape, id_dims), looked_up, b_.full(0.0, out_shape, in.dtype));
  return b_.all_reduce(kept, ReduceKind::kAdd,
                       matched_groups([&](int64_t device) { return coords_of(s, device, rank); },
                                      [&](int64_t device) { return coords_of(held, device, table_rank)[0]; }, row_tiles[0]));
}

int Partitioner::gather_as(const HloInstruction& in, const HloSharding& s) {
  // table [N, R...], ids [I...] -> [I..., R...]: the table whole along N.
  const size_t rank = in.shape.size(), ni = g_.at(in.operands[1]).shape.size();
  std::vector<int64_t> to_table(rank, -1), to_ids(rank, -1);
  for (size_t j = 0; j < rank; ++j) (j < ni ? to_ids[j] : to_table[j]) = static_cast<int64_t>(j < ni ? j : j - ni + 1);
  const int table = operand_as(in, 0, map_dimensions(s, static_cast<int64_t>(rank - ni + 1), to_table));
  const int ids = operand_as(in, 1, map_dimensions(s, static_cast<int64_t>(ni), to_ids));
  return local_copy(in, {table, ids}, local_shape(in.shape, s));
}

int Partitioner::lower_reduce(const HloInstruction& in) {
  const HloSharding& s = *in.sharding;
  const HloInstruction& x = g_.at(in.operands[0]);
  const HloInstruction& init = g_.at(in.operands[1]);
  const size_t in_rank = x.shape.size(), rank = in.shape.size();
  const HloSharding& held = *x.sharding;
  std::vector<int64_t> kept(in_rank, -1);  // operand dimension -> result dimension
  std::vector<size_t> tiled_reduced;
  int64_t next = 0;
  for (size_t d = 0; d < in_rank; ++d) {
    const bool reduced = std::find(in.dimensions.begin(), in.dimensions.end(), static_cast<int64_t>(d)) != in.dimensions.end();
    if (!reduced) kept[d] = next++;
    if (reduced && counts_of(held, in_rank)[d] > 1) tiled_reduced.push_back(d);
  }
  // Partial reductions combine when applying init on every device changes
  // nothing: max and min always, a sum from 0, a product from 1.
  const bool idempotent_init = in.reduce_kind == ReduceKind::kMax || in.reduce_kind == ReduceKind::kMin ||
                               (init.opcode == HloOpcode::kConstant && in.reduce_kind == ReduceKind::kAdd && all_elements_equal(init.literal, 0)) ||
                               (init.opcode == HloOpcode::kConstant && in.reduce_kind == ReduceKind::kMul && all_elements_equal(init.literal, 1));
  if (!tiled_reduced.empty() && idempotent_init) {
    const HloSharding partial = map_dimensions(held, static_cast<int64_t>(rank), kept);
    const int y = local_copy(in, {local_[static_cast<size_t>(x.id)], operand_as(in, 1, HloSharding::replicate())}, {});
    return resolve_partials(y, in.shape, partial, partial_groups(partial, rank, held, in_rank, tiled_reduced), s, in.reduce_kind);
  }
  const bool from_minus_infinity = init.opcode == HloOpcode::kConstant && all_elements_equal(init.literal, -std::numeric_limits<double>::infinity());
  if (!tiled_reduced.empty() && in.reduce_kind == ReduceKind::kLogAddExp && from_minus_infinity) {
    // Each device's logsumexp of its own part (a vocabulary-parallel loss's
    // columns), combined without moving the parts: m + log(sum exp(y - m)),
    // m the parts' maximum (shifted by 0 where it is infinite, as the
    // evaluator's logaddexp does: -inf everywhere stays -inf, a +inf part gives +inf).
    const HloSharding partial = map_dimensions(held, static_cast<int64_t>(rank), kept);
    const Groups groups = partial_groups(partial, rank, held, in_rank, tiled_reduced);
    const int y = local_copy(in, {local_[static_cast<size_t>(x.id)], operand_as(in, 1, HloSharding::replicate())}, {});
    const Shape local = local_shape(in.shape, partial);
    const int m = b_.all_reduce(y, ReduceKind::kMax, groups);
    const int finite = b_.compare(b_.unary(HloOpcode::kAbs, m), b_.full(std::numeric_limits<double>::infinity(), local, in.dtype), ComparisonDirection::kLt);
    const int shift = b_.select(finite, m, b_.full(0.0, local, in.dtype));
    const int sum = b_.all_reduce(b_.unary(HloOpcode::kExp, b_.binary(HloOpcode::kSubtract, y, shift)), ReduceKind::kAdd, groups);
    return reshard(b_.binary(HloOpcode::kAdd, b_.unary(HloOpcode::kLog, sum), shift), in.shape, partial, s);
  }
  std::vector<int64_t> back(rank, -1);  // result dimension -> operand dimension
  for (size_t d = 0; d < in_rank; ++d) {
    if (kept[d] >= 0) back[static_cast<size_t>(kept[d])] = static_cast<int64_t>(d);
  }
  const int y = operand_as(in, 0, map_dimensions(s, static_cast<int64_t>(in_rank), back));
  return local_copy(in, {y, operand_as(in, 1, HloSharding::replicate())}, {});
}

int Partitioner::lower_dot(const HloInstruction& in) {
  const HloSharding& s = *in.sharding;
  const size_t rank = in.shape.size();
  const auto nb = static_cast<int64_t>(in.dot.lhs_batch_dimensions.size());
  const int64_t lc = in.dot.lhs_contracting_dimensions[0], rc = in.dot.rhs_contracting_dimensions[0];
  const int64_t lf = lc == nb ? nb + 1 : nb, rf = rc == nb ? nb + 1 : nb;
  const HloSharding& lhs = *g_.at(in.operands[0]).sharding;
  const HloSharding& rhs = *g_.at(in.operands[1]).sharding;
  auto batch_map = [&] {
    std::vector<int64_t> map(rank, -1);
    for (int64_t d = 0; d < nb; ++d) map[static_cast<size_t>(d)] = d;
    return map;
  };
  // Both operands tile the contraction alike: a local dot of the chunks each holds, then the partial sums combined.
  std::vector<int64_t> only_lc(rank, -1), only_rc(rank, -1);
  only_lc[static_cast<size_t>(lc)] = 0;
  only_rc[static_cast<size_t>(rc)] = 0;
  const HloSharding lhs_chunks = map_dimensions(lhs, 1, only_lc);
  if (lhs_chunks.is_tiled() && same_layout(lhs_chunks, map_dimensions(rhs, 1, only_rc))) {
    std::vector<int64_t> lhs_to_rhs = batch_map(), rhs_free(rank, -1), lhs_to_out = batch_map(), rhs_to_out(rank, -1);
    lhs_to_rhs[static_cast<size_t>(lc)] = rc;
    rhs_free[static_cast<size_t>(rf)] = rf;
    lhs_to_out[static_cast<size_t>(lf)] = nb;
    rhs_to_out[static_cast<size_t>(rf)] = nb + 1;
    const HloSharding from_lhs = map_dimensions(lhs, static_cast<int64_t>(rank), lhs_to_rhs);
    const HloSharding rhs_want = sharding_util::merge(from_lhs, map_dimensions(rhs, static_cast<int64_t>(rank), rhs_free)).value_or(from_lhs);
    const std::optional<HloSharding> partial = sharding_util::merge(map_dimensions(lhs, static_cast<int64_t>(rank), lhs_to_out),
                                                                     map_dimensions(rhs_want, static_cast<int64_t>(rank), rhs_to_out));
    if (partial) {
      const int y = local_copy(in, {local_[static_cast<size_t>(in.operands[0])], operand_as(in, 1, rhs_want)}, {});
      const Groups groups = partial_groups(*partial, rank, lhs_chunks, 1, {0});
      return resolve_partials(y, in.shape, *partial, groups, s, ReduceKind::kAdd);
    }
  }
  // Otherwise each operand as the result asks: its batch and free dimensions from the result's, the contraction whole.
  std::vector<int64_t> to_lhs = batch_map(), to_rhs = batch_map();
  to_lhs[static_cast<size_t>(nb)] = lf;
  to_rhs[static_cast<size_t>(nb + 1)] = rf;
  const int x = operand_as(in, 0, map_dimensions(s, static_cast<int64_t>(rank), to_lhs));
  const int y = operand_as(in, 1, map_dimensions(s, static_cast<int64_t>(rank), to_rhs));
  return local_copy(in, {x, y}, {});
}

int Partitioner::lower_scatter(const HloInstruction& in) {
  // operand [N, R...], ids [I...], updates [I..., R...] -> [N, R...], combined by reduce_kind.
  const HloSharding& s = *in.sharding;
  const size_t rank = in.shape.size();
  const HloInstruction& updates = g_.at(in.operands[2]);
  const size_t ni = g_.at(in.operands[1]).shape.size(), upd_rank = updates.shape.size();
  const HloSharding& held = *updates.sharding;
  std::vector<size_t> tiled_index_dims;
  for (size_t j = 0; j < ni; ++j) {
    if (counts_of(held, upd_rank)[j] > 1) tiled_index_dims.push_back(j);
  }
  if (!tiled_index_dims.empty() && in.reduce_kind == ReduceKind::kAdd) {
    // Each device adds its own updates into zeros; the sums of all devices, plus the operand.
    std::vector<int64_t> upd_to_out(upd_rank, -1), upd_to_ids(upd_rank, -1);
    for (size_t j = 0; j < upd_rank; ++j) (j < ni ? upd_to_ids[j] : upd_to_out[j]) = static_cast<int64_t>(j < ni ? j : j - ni + 1);
    const HloSharding partial = map_dimensions(held, static_cast<int64_t>(rank), upd_to_out);
    const int ids = operand_as(in, 1, map_dimensions(held, static_cast<int64_t>(ni), upd_to_ids));
    const int zeros = b_.full(0.0, local_shape(in.shape, partial), in.dtype);
    const int sums = local_copy(in, {zeros, ids, local_[static_cast<size_t>(updates.id)]}, {});
    const int total = resolve_partials(sums, in.shape, partial, partial_groups(partial, rank, held, upd_rank, tiled_index_dims), s, ReduceKind::kAdd);
    return b_.binary(HloOpcode::kAdd, operand_as(in, 0, s), total);
  }
  // The ids index the whole table: scatter into whole rows, then keep this device's.
  std::vector<int64_t> out_to_upd(rank, -1);
  for (size_t r = 1; r < rank; ++r) out_to_upd[r] = static_cast<int64_t>(ni + r - 1);
  const HloSharding whole_rows = map_dimensions(s, static_cast<int64_t>(rank), keeping(rank, [](size_t d) { return d != 0; }));
  const int x = operand_as(in, 0, whole_rows);
  const int ids = operand_as(in, 1, HloSharding::replicate());
  const int upd = operand_as(in, 2, map_dimensions(whole_rows, static_cast<int64_t>(upd_rank), out_to_upd));
  return reshard(local_copy(in, {x, ids, upd}, {}), in.shape, whole_rows, s);
}

int Partitioner::lower_custom_call(const HloInstruction& in) {
  const HloSharding& s = *in.sharding;
  const size_t rank = in.shape.size();
  if (in.custom_call_target == kShardingTarget) return operand_as(in, 0, s);
  if (in.custom_call_target == kTopKTarget) {
    const auto dim = static_cast<size_t>(CustomCallConfig(in.backend_config).number("dim"));
    const HloSharding whole = map_dimensions(s, static_cast<int64_t>(rank), keeping(rank, [&](size_t d) { return d != dim; }));
    return reshard(local_copy(in, {operand_as(in, 0, whole)}, {}), in.shape, whole, s);
  }
  if (in.custom_call_target == kSdpaForwardTarget || in.custom_call_target == kSdpaBackwardTarget) {
    // Attention splits only by its batch dimensions (batch, heads): each device attends over its own.
    const bool backward = in.custom_call_target == kSdpaBackwardTarget;
    const CustomCallConfig config(in.backend_config);
    const Shape& q = g_.at(in.operands[0]).shape;
    const size_t batch = q.size() - 2;
    const size_t mask = config.number("has_mask") != 0 ? (backward ? 6 : 4) : in.operands.size();
    // With dropout the kernel draws each mask from its row's position in the
    // batch it is given: only the whole batch draws the whole program's masks.
    const bool dropout = config.number("has_dropout") != 0;
    const HloSharding by_batch = dropout ? HloSharding::replicate()
                                         : map_dimensions(s, static_cast<int64_t>(rank), keeping(rank, [&](size_t d) { return d < batch; }));
    std::vector<int> ops;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      const Shape& o = g_.at(in.operands[k]).shape;
      const bool carries_batch = k < 3 || (backward && (k == 4 || k == 5));
      std::vector<int64_t> map(rank, -1);  // result dimension -> operand dimension
      for (size_t d = 0; d < batch; ++d) {
        if (carries_batch || (k == mask && o[d] == q[d])) map[d] = static_cast<int64_t>(d);
      }
      ops.push_back(operand_as(in, k, o.empty() ? HloSharding::replicate() : map_dimensions(by_batch, static_cast<int64_t>(o.size()), map)));
    }
    return reshard(local_copy(in, std::move(ops), {}), in.shape, by_batch, s);
  }
  fail(in, "no partitioning rule for custom-call " + in.custom_call_target);
}

}  // namespace

bool SpmdPartitioner::run(HloModule& module) {
  if (module.num_partitions > 1) return false;
  const bool annotated = std::any_of(module.instructions.begin(), module.instructions.end(), [](const HloInstruction& in) { return in.sharding.has_value(); });
  if (!annotated) return false;
  Partitioner partitioner(module);
  if (!partitioner.tiled()) return false;
  module = partitioner.run();
  return true;
}

}  // namespace lazytrain::hlo
