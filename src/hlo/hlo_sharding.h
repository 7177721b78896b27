// How an instruction's value is laid out over the devices of a mesh: XLA's
// HloSharding (GSPMD, arXiv 2105.04663, section 3.1), the annotation that
// sharding propagation and the SPMD partitioner read (issue 34).
//
//   replicated                every device holds the whole value   {replicated}
//   maximal                   one device holds it                  {maximal device=3}
//   tiled                     the value is cut into a grid of tiles, tile_dims[d] pieces along
//                             dimension d, the tile at grid index i on devices[i] (row-major)
//                                                                  {devices=[2,1]0,1}
//                                                                  {devices=[2,1]<=[2]}  (devices 0..n-1)
//   tiled, last dimension     as tiled, with one more grid dimension whose devices hold copies
//   replicated                of the same tile (partial replication)
//                                                                  {devices=[2,1,2]<=[4] last_tile_dim_replicate}
//   manual                    the program is already per device; the partitioner leaves it   {manual}
//   tuple                     one sharding per element of a tuple  {{replicated}, {devices=[2]0,1}}
//
// The text forms are XLA's (hlo_sharding.cc's ToString and the HLO parser):
// a tile assignment whose devices are 0, 1, ..., n-1 in order prints in the
// iota form `<=[n]`; any other prints as the explicit list. parse() also reads
// XLA's iota form with a reshape and a transpose, `<=[2,2]T(1,0)`.
//
// A sharding may carry XLA's sharding metadata, the op_name of the annotation
// that asked for it: `{devices=[4,1]<=[4] metadata={op_name="bert.encoder.layer.3"}}`.
// FSDP names each parameter's unit this way (distributed/spmd.h), and the
// collective combiner gathers a unit's parameters together
// (hlo/passes/collective_combiner.h). As in XLA, == ignores it. Of XLA's
// metadata fields only op_name is read and written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"

namespace lazytrain::hlo {

class HloSharding {
 public:
  enum class Kind { kReplicated, kMaximal, kTiled, kManual, kTuple };

  static HloSharding replicate();
  static HloSharding manual();
  // Throws Error for a negative device.
  static HloSharding maximal(int64_t device);
  // `tile_dims`: the tile grid, one entry per dimension of the value, plus a
  // last one of copies when `last_tile_dim_replicate`; `devices`: the device of
  // each grid cell in row-major order. Throws Error unless every entry of
  // tile_dims is >= 1, their product is devices.size() and the devices are
  // distinct and >= 0.
  static HloSharding tiled(std::vector<int64_t> tile_dims, std::vector<int64_t> devices, bool last_tile_dim_replicate = false);
  // tiled() over the devices 0 .. product(tile_dims) - 1 in order.
  static HloSharding iota_tiled(std::vector<int64_t> tile_dims, bool last_tile_dim_replicate = false);
  // Throws Error if an element is itself a tuple (XLA's tuple shardings are flat).
  static HloSharding tuple(std::vector<HloSharding> elements);

  // XLA's text form (the table above); parse(to_string()) == *this.
  std::string to_string() const;
  // Reads XLA's text form, with or without the braces' inner spaces. Throws
  // Error naming `text` and what was expected at the first character it cannot read.
  static HloSharding parse(const std::string& text);

  Kind kind() const { return kind_; }
  bool is_replicated() const { return kind_ == Kind::kReplicated; }
  bool is_tiled() const { return kind_ == Kind::kTiled; }
  // Maximal: the device. Tiled: the grid and its devices (row-major).
  int64_t device() const { return device_; }
  const std::vector<int64_t>& tile_dims() const { return tile_dims_; }
  const std::vector<int64_t>& devices() const { return devices_; }
  bool replicate_on_last_tile_dim() const { return last_tile_dim_replicate_; }
  const std::vector<HloSharding>& tuple_elements() const { return elements_; }

  // Tiled: the dimensions of the value it shards (tile_dims without the replicated one).
  int64_t tiled_rank() const;
  // Tiled: the grid index of `device` (one coordinate per entry of tile_dims).
  // Throws Error if the sharding does not place `device`.
  std::vector<int64_t> tile_index(int64_t device) const;
  // The shape one device holds of a value of `shape`: each dimension divided by
  // its tile count, rounded up (XLA pads the last tile); the whole shape when
  // not tiled. Throws Error if a tiled sharding's rank is not `shape`'s.
  Shape tile_shape(const Shape& shape) const;

  // The sharding metadata's op_name ("" : none). with_op_name returns a copy
  // carrying `op_name`; Error when it holds '"', '{' or '}' (the text form
  // quotes it without escapes) or when the sharding is a tuple.
  const std::string& op_name() const { return op_name_; }
  HloSharding with_op_name(std::string op_name) const;

  // The layouts are equal; the metadata is not compared (XLA's operator==).
  bool operator==(const HloSharding& other) const;
  // A hash of everything to_string() prints (kind, device, tiles, devices, op_name, tuple
  // elements): equal text, equal hash. The lazy IR hashes a node's sharding with it (lazy/ir.h).
  uint64_t hash() const;

 private:
  Kind kind_ = Kind::kReplicated;
  int64_t device_ = -1;
  std::vector<int64_t> tile_dims_, devices_;
  bool last_tile_dim_replicate_ = false;
  std::vector<HloSharding> elements_;
  std::string op_name_;
};

}  // namespace lazytrain::hlo
