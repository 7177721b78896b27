// The SPMD partitioner ("spmd-partitioner"): a whole-program module whose
// every instruction has a sharding (ShardingPropagation ran) becomes the one
// program every device runs, as XLA's SpmdPartitioner does for GSPMD
// (arXiv 2105.04663, section 4). Backend-neutral.
//
// The program holds each device's tile of every value (local shapes). Where an
// op needs its operands laid out otherwise, it reshards them:
//   - a device's new tile inside the tile it holds: a dynamic-slice at offsets
//     read from a table indexed by partition-id (the device's global ordinal);
//   - otherwise an all-gather along each dimension whose tiles do not contain
//     the new ones, then that slice. (XLA would use all-to-all or
//     collective-permute for some of these; lazytrain gathers, which moves
//     more bytes but no value that the layouts do not ask for.)
// Ops whose local results are partial sums all-reduce them:
//   - dot whose contracting dimension both operands tile alike: a local dot
//     plus an all-reduce over the devices that hold the other chunks of the
//     contraction (Megatron's row-parallel layer, a gradient over a batch);
//   - reduce over a tiled dimension (add, multiply, max, min): the same;
//   - scatter-add of updates tiled by their index dimensions (embedding gradients).
// An all-reduce whose result is then sliced along one dimension by exactly
// its groups becomes a reduce-scatter (FSDP's gradients).
// The attention kernels split by their batch dimensions (batch, heads), and
// run whole when they apply dropout (the kernel draws its masks from the row's
// position in the batch it is given).
// Every other op computes on operands laid out as its result asks, dimension
// by dimension (sharding_util's maps); constants and random bits are made
// whole and sliced, an iota as its tile plus the tile's offset, a fill in the
// layout asked for: every device sees the values the whole program would.
//
// The result: module.num_partitions = the number of devices; the parameters
// keep their shardings (the layout of the global value whose tile each device
// passes) and the ROOT gets one sharding per output (the layout of what each
// device returns); every other instruction has none. Tiles must be even: a
// dimension its tile count does not divide is an Error naming the instruction,
// the dimension and the sharding. So is an op with no partitioning rule.
#pragma once

#include "hlo/passes/hlo_pass.h"

namespace lazytrain::hlo {

class SpmdPartitioner : public HloPass {
 public:
  std::string name() const override { return "spmd-partitioner"; }
  // Partitions a module whose instructions all have a sharding; returns false
  // (and changes nothing) for a module with no sharding or one partitioned
  // already. Throws Error "[spmd-partitioner] <instruction> (<origin>): ...".
  bool run(HloModule& module) override;
};

}  // namespace lazytrain::hlo
