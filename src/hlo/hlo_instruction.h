// HloInstruction and HloModule: lazytrain's HLO, a flat list of instructions in
// def-before-use order whose last instruction (the ROOT) is a tuple of outputs.
//
// Semantics follow XLA's operation semantics; the restrictions lazytrain adds
// are written next to each attribute and enforced by the verifier.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/literal.h"
#include "core/shape.h"
#include "hlo/hlo_opcode.h"
#include "hlo/hlo_sharding.h"

namespace lazytrain::hlo {

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions, rhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions, rhs_contracting_dimensions;
};

// Where an instruction came from (XLA's OpMetadata): the lazy IR op it was
// lowered from ("aten::embedding") and the user's line that recorded that op
// (core/op_location.h). Set by the lowering (HloBuilder::set_metadata); passes
// keep it on copies and give a replacement or a fusion the metadata of what it
// replaces. Not compared by CSE and not part of any hash: two traces of one
// graph share their compiled module, which holds the first trace's lines; the
// lazy runtime therefore names the line of the trace being run, found by
// ir_position (hlo/op_metadata.h has the errors that carry it).
struct OpMetadata {
  std::string op_type;      // the IR op: "aten::embedding"; "" when unknown
  std::string source_file;  // as recorded (a path); "" when unknown
  int64_t source_line = 0;
  // lazytrain's, not XLA's: the IR node's index in the graph's post order,
  // which every trace with this graph's hash shares; -1 when not lowered from IR.
  int64_t ir_position = -1;

  bool empty() const { return op_type.empty() && source_file.empty() && ir_position < 0; }
};

struct HloInstruction {
  int id = 0;  // position in HloModule::instructions; printed as %<opcode>.<id>
  HloOpcode opcode = HloOpcode::kParameter;
  Shape shape;                  // unused for kTuple
  DType dtype = DType::kFloat32;
  std::vector<int> operands;    // ids of earlier instructions

  // broadcast: operand dim i maps to output dim dimensions[i]; transpose: the
  // permutation; reduce: the reduced dims; concatenate/iota: {dim};
  // dynamic-slice: the window's size per dim (XLA's dynamic_slice_sizes).
  std::vector<int64_t> dimensions;
  // slice: [start, limit) with stride per dim.
  std::vector<int64_t> slice_starts, slice_limits, slice_strides;
  ComparisonDirection direction = ComparisonDirection::kEq;  // compare
  ReduceKind reduce_kind = ReduceKind::kAdd;                // reduce, scatter (to_apply)
  DotDimensionNumbers dot;                                   // dot
  int64_t parameter_number = -1;                             // parameter
  Literal literal;                                           // constant: its value
  // fusion: the fused computation; its parameters are this instruction's
  // operands, its ROOT tuple holds the result. A ROOT tuple of several values
  // makes a multi-output fusion (XLA's): a kLoop fusion whose values all have
  // one element count, tuple-shaped like kTuple (shape and dtype unused), read
  // only through get-tuple-element.
  std::shared_ptr<const struct HloModule> fused_computation;
  FusionKind fusion_kind = FusionKind::kLoop;
  // all-reduce, all-gather, reduce-scatter (XLA's collectives): the replicas
  // that exchange values, as global ordinals; each group is a list of distinct
  // ordinals, the groups disjoint and of one size. all-reduce: empty means one
  // group of every replica. all-gather and reduce-scatter name their groups
  // (their result shape depends on the group size). `dimensions` = {d} is the
  // dimension all-gather concatenates along and reduce-scatter splits
  // (its size must divide by the group size); `reduce_kind` is the
  // reduction (to_apply). `channel_id` numbers the collectives of a module in
  // program order (1, 2, ...), as XLA's channel ids do.
  std::vector<std::vector<int64_t>> replica_groups;
  int64_t channel_id = 0;
  // get-tuple-element: which element of its operand (a multi-output fusion) it
  // reads; XLA's `index=`.
  int64_t tuple_index = 0;
  // custom-call (XLA's): the host kernel to call and its attributes, as
  // "key=value" pairs separated by commas (hlo/custom_call.h lists the targets,
  // their operands, result shapes and keys). Both enter CSE's comparison, the
  // printed text and the serialized module.
  std::string custom_call_target;
  std::string backend_config;
  // gather: operand [N, R...] and indices [I...] (integer) give [I..., R...]: rows
  // of operand dim 0 (XLA: offset_dims=trailing, collapsed_slice_dims={0},
  // start_index_map={0}, index_vector_dim=rank(indices), slice_sizes={1, R...}).
  // scatter: operand [N, R...], indices [I...], updates [I..., R...] — the inverse,
  // combining with reduce_kind (add).

  OpMetadata metadata;

  // How the value is laid out over the devices (issue 34's SPMD annotations;
  // hlo/hlo_sharding.h), XLA's `sharding={...}`; none: not annotated. A tiled
  // sharding tiles every dimension of `shape` (the verifier checks the rank).
  // Compared by CSE, printed, serialized, and kept by HloBuilder::copy.
  std::optional<HloSharding> sharding;

  std::string name() const { return opcode_name(opcode) + "." + std::to_string(id); }
};

// A fusion whose fused computation returns several values (see fused_computation).
bool is_multi_output_fusion(const HloInstruction& instruction);
// kTuple or a multi-output fusion: a value with no array shape of its own.
inline bool is_tuple_shaped(const HloInstruction& instruction) {
  return instruction.opcode == HloOpcode::kTuple || is_multi_output_fusion(instruction);
}
// The values a fusion returns, in order: the instructions of its fused
// computation that its ROOT tuple holds (one for a single-output fusion).
std::vector<const HloInstruction*> fusion_outputs(const HloInstruction& fusion);

struct HloModule {
  std::string name = "SyncTensorsGraph";
  std::vector<HloInstruction> instructions;
  int root = -1;            // a kTuple
  int num_parameters = 0;
  // The devices one program of an SPMD-partitioned module runs on (XLA's
  // num_partitions; set by the SPMD partitioner, printed when > 1). Such a
  // module has local shapes; its parameters' and ROOT's shardings describe
  // the global values they are tiles of. 1: not partitioned.
  int64_t num_partitions = 1;

  const HloInstruction& at(int id) const { return instructions[static_cast<size_t>(id)]; }
  // XLA-style text: "HloModule ...", "ENTRY ...", one instruction a line.
  std::string to_string() const;
};

// "f32[2,3]{1,0}" for an array instruction, "(f32[2,3]{1,0}, s64[])" for a tuple.
std::string shape_text(const HloModule& module, const HloInstruction& instruction);

// Checks every instruction's operands and shape against its opcode's rule; throws
// Error("[hlo verifier] <instruction>: <what is wrong>") on the first violation.
void verify(const HloModule& module);

}  // namespace lazytrain::hlo
