#include "hlo/shape_inference.h"

#include <algorithm>

#include "core/error.h"
#include "hlo/collective_cases.h"
#include "hlo/custom_call.h"

namespace lazytrain::hlo {

namespace {

struct Checker {
  const HloInstruction& instr;
  void require(bool ok, const std::string& what) const {
    if (!ok) throw Error("[hlo " + instr.name() + "] " + what);
  }
};

bool is_permutation(const std::vector<int64_t>& p, size_t n) {
  if (p.size() != n) return false;
  std::vector<bool> seen(n, false);
  for (int64_t d : p) {
    if (d < 0 || d >= static_cast<int64_t>(n) || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

ShapeAndType infer_dot(const HloModule& m, const HloInstruction& in, const Checker& c) {
  const auto& lhs = m.at(in.operands[0]);
  const auto& rhs = m.at(in.operands[1]);
  const auto& d = in.dot;
  c.require(lhs.dtype == rhs.dtype, "dot operands differ in dtype");
  c.require(d.lhs_contracting_dimensions.size() == 1 && d.rhs_contracting_dimensions.size() == 1,
            "dot needs exactly one contracting dimension per side");
  size_t nb = d.lhs_batch_dimensions.size();
  c.require(d.rhs_batch_dimensions.size() == nb, "dot batch dimension counts differ");
  c.require(lhs.shape.size() == nb + 2 && rhs.shape.size() == nb + 2,
            "dot operands must be [batch..., m, k] and [batch..., k, n] up to transposition");
  Shape out;
  for (size_t i = 0; i < nb; ++i) {
    c.require(d.lhs_batch_dimensions[i] == static_cast<int64_t>(i) && d.rhs_batch_dimensions[i] == static_cast<int64_t>(i),
              "dot batch dimensions must be the leading dimensions, in order");
    c.require(lhs.shape[i] == rhs.shape[i], "dot batch sizes differ");
    out.push_back(lhs.shape[i]);
  }
  int64_t lc = d.lhs_contracting_dimensions[0], rc = d.rhs_contracting_dimensions[0];
  c.require(lc >= static_cast<int64_t>(nb) && rc >= static_cast<int64_t>(nb), "dot contracting dimension is a batch dimension");
  c.require(lhs.shape[lc] == rhs.shape[rc], "dot contracting sizes differ: " + shape_str(lhs.shape) + " vs " + shape_str(rhs.shape));
  out.push_back(lhs.shape[lc == static_cast<int64_t>(nb) ? nb + 1 : nb]);
  out.push_back(rhs.shape[rc == static_cast<int64_t>(nb) ? nb + 1 : nb]);
  return {out, lhs.dtype};
}

// The replica groups of a collective: distinct ordinals in each group, the
// groups disjoint and of one size. Returns the group size (0: all replicas,
// allowed for all-reduce only).
int64_t replica_group_size(const HloInstruction& in, const Checker& c) {
  if (in.replica_groups.empty()) {
    c.require(synchronous_collective(in.opcode) == HloOpcode::kAllReduce, "needs replica_groups: its shape depends on the group size");
    return 0;
  }
  std::vector<int64_t> seen;
  const size_t size = in.replica_groups[0].size();
  for (const auto& group : in.replica_groups) {
    c.require(!group.empty() && group.size() == size, "replica_groups must be non-empty and of one size");
    for (int64_t r : group) {
      c.require(r >= 0, "replica ordinals must be >= 0");
      seen.push_back(r);
    }
  }
  std::sort(seen.begin(), seen.end());
  c.require(std::adjacent_find(seen.begin(), seen.end()) == seen.end(), "a replica appears in two replica groups (or twice in one)");
  return static_cast<int64_t>(size);
}

ShapeAndType infer_collective(const HloModule& m, const HloInstruction& in, const Checker& c) {
  const auto& x = m.at(in.operands[0]);
  const int64_t group_size = replica_group_size(in, c);
  c.require(in.channel_id >= 1, "a collective needs a channel_id >= 1");
  c.require(in.reduce_kind != ReduceKind::kLogAddExp, "a collective cannot combine with logaddexp");
  const HloOpcode kind = synchronous_collective(in.opcode);  // a start has its collective's shape
  if (kind == HloOpcode::kAllReduce) return {x.shape, x.dtype};
  c.require(in.dimensions.size() == 1 && in.dimensions[0] >= 0 && in.dimensions[0] < static_cast<int64_t>(x.shape.size()),
            "needs one dimension within the operand's rank");
  Shape out = x.shape;
  const int64_t d = in.dimensions[0];
  if (kind == HloOpcode::kAllGather) {
    out[d] *= group_size;
  } else {
    c.require(out[d] % group_size == 0, "dimension " + std::to_string(d) + " of size " + std::to_string(out[d]) +
                                            " does not split into " + std::to_string(group_size) + " equal shards");
    out[d] /= group_size;
  }
  return {out, x.dtype};
}

}  // namespace

ShapeAndType infer_shape(const HloModule& m, const HloInstruction& in) {
  Checker c{in};
  for (int id : in.operands) c.require(id >= 0 && id < in.id, "operand %" + std::to_string(id) + " is not defined before use");
  auto operand = [&](size_t i) -> const HloInstruction& {
    c.require(i < in.operands.size(), "missing operand " + std::to_string(i));
    return m.at(in.operands[i]);
  };
  auto arity = [&](size_t n) { c.require(in.operands.size() == n, "expects " + std::to_string(n) + " operands"); };
  HloOpcode op = in.opcode;
  // Every fixed arity comes from the opcode table.
  if (opcode_arity(op) >= 0) arity(static_cast<size_t>(opcode_arity(op)));
  if (op == HloOpcode::kParameter || op == HloOpcode::kIota) {
    if (op == HloOpcode::kIota) c.require(in.dimensions.size() == 1 && in.dimensions[0] < static_cast<int64_t>(in.shape.size()), "iota needs iota_dimension < rank");
    return {in.shape, in.dtype};
  }
  if (op == HloOpcode::kPartitionId) return {Shape{}, DType::kInt32};
  if (op == HloOpcode::kConstant) {
    c.require(in.literal.defined() && in.literal.shape() == in.shape && in.literal.dtype() == in.dtype, "constant literal does not match its shape");
    return {in.shape, in.dtype};
  }
  if (op == HloOpcode::kRngBitGenerator) {
    c.require(operand(0).dtype == DType::kInt64 && operand(0).shape.empty(), "rng-bit-generator state must be s64[]");
    c.require(in.dtype == DType::kInt32, "rng-bit-generator produces s32 bits");
    return {in.shape, in.dtype};
  }
  if (op == HloOpcode::kOptimizationBarrier) {
    return {operand(0).shape, operand(0).dtype};
  }
  if (op == HloOpcode::kConvert) {
    return {operand(0).shape, in.dtype};
  }
  if (is_elementwise_unary(op)) {
    const auto& x = operand(0);
    if (op == HloOpcode::kNot) c.require(x.dtype == DType::kBool, "not expects pred");
    else if (op != HloOpcode::kNegate && op != HloOpcode::kAbs) c.require(is_floating_point(x.dtype), "expects a floating-point operand, got " + xla_name(x.dtype));
    return {x.shape, x.dtype};
  }
  if (is_elementwise_binary(op)) {
    const auto& a = operand(0);
    const auto& b = operand(1);
    c.require(a.shape == b.shape, "operand shapes differ: " + shape_str(a.shape) + " vs " + shape_str(b.shape));
    c.require(a.dtype == b.dtype, "operand dtypes differ: " + xla_name(a.dtype) + " vs " + xla_name(b.dtype));
    if (op == HloOpcode::kAnd || op == HloOpcode::kOr) c.require(a.dtype == DType::kBool || !is_floating_point(a.dtype), "and/or expect pred or integers");
    if (op == HloOpcode::kShiftRightLogical) c.require(a.dtype == DType::kInt32, "shift-right-logical expects s32");
    return {a.shape, op == HloOpcode::kCompare ? DType::kBool : a.dtype};
  }
  switch (op) {
    case HloOpcode::kSelect: {
      c.require(operand(0).dtype == DType::kBool, "select predicate must be pred");
      c.require(operand(0).shape == operand(1).shape && operand(1).shape == operand(2).shape, "select operand shapes differ");
      c.require(operand(1).dtype == operand(2).dtype, "select branches differ in dtype");
      return {operand(1).shape, operand(1).dtype};
    }
    case HloOpcode::kBroadcast: {
      const auto& x = operand(0);
      c.require(in.dimensions.size() == x.shape.size(), "broadcast dimensions must map every operand dimension");
      for (size_t i = 0; i < in.dimensions.size(); ++i) {
        int64_t d = in.dimensions[i];
        c.require(d >= 0 && d < static_cast<int64_t>(in.shape.size()), "broadcast dimension out of range");
        c.require(i == 0 || in.dimensions[i - 1] < d, "broadcast dimensions must increase");
        c.require(in.shape[d] == x.shape[i], "broadcast size mismatch at operand dimension " + std::to_string(i));
      }
      return {in.shape, x.dtype};
    }
    case HloOpcode::kReshape:
      c.require(numel(in.shape) == numel(operand(0).shape), "reshape changes the element count");
      return {in.shape, operand(0).dtype};
    case HloOpcode::kTranspose: {
      const auto& x = operand(0);
      c.require(is_permutation(in.dimensions, x.shape.size()), "transpose dimensions are not a permutation");
      Shape out;
      for (int64_t d : in.dimensions) out.push_back(x.shape[d]);
      return {out, x.dtype};
    }
    case HloOpcode::kSlice: {
      const auto& x = operand(0);
      size_t r = x.shape.size();
      c.require(in.slice_starts.size() == r && in.slice_limits.size() == r && in.slice_strides.size() == r, "slice needs start/limit/stride per dimension");
      Shape out;
      for (size_t i = 0; i < r; ++i) {
        c.require(0 <= in.slice_starts[i] && in.slice_starts[i] <= in.slice_limits[i] && in.slice_limits[i] <= x.shape[i] && in.slice_strides[i] > 0,
                  "slice bounds out of range at dimension " + std::to_string(i));
        out.push_back((in.slice_limits[i] - in.slice_starts[i] + in.slice_strides[i] - 1) / in.slice_strides[i]);
      }
      return {out, x.dtype};
    }
    case HloOpcode::kDynamicSlice: {
      const auto& x = operand(0);
      const size_t r = x.shape.size();
      c.require(in.operands.size() == 1 + r, "dynamic-slice needs one start index per dimension of its operand (" + std::to_string(r) + ")");
      c.require(in.dimensions.size() == r, "dynamic-slice needs a size per dimension");
      for (size_t i = 0; i < r; ++i) {
        const auto& start = operand(i + 1);
        c.require(start.shape.empty() && (start.dtype == DType::kInt32 || start.dtype == DType::kInt64), "dynamic-slice start indices must be s32[] or s64[]");
        c.require(start.dtype == operand(1).dtype, "dynamic-slice start indices must share one dtype");
        c.require(0 <= in.dimensions[i] && in.dimensions[i] <= x.shape[i], "dynamic-slice size out of range at dimension " + std::to_string(i));
      }
      return {Shape(in.dimensions.begin(), in.dimensions.end()), x.dtype};
    }
    case HloOpcode::kConcatenate: {
      c.require(!in.operands.empty() && in.dimensions.size() == 1, "concatenate needs operands and one dimension");
      Shape out = operand(0).shape;
      int64_t d = in.dimensions[0];
      c.require(d >= 0 && d < static_cast<int64_t>(out.size()), "concatenate dimension out of range");
      for (size_t i = 1; i < in.operands.size(); ++i) {
        Shape s = operand(i).shape;
        c.require(s.size() == out.size() && operand(i).dtype == operand(0).dtype, "concatenate operands differ in rank or dtype");
        for (size_t k = 0; k < s.size(); ++k) c.require(static_cast<int64_t>(k) == d || s[k] == out[k], "concatenate sizes differ off the joined dimension");
        out[d] += s[d];
      }
      return {out, operand(0).dtype};
    }
    case HloOpcode::kGather: {
      const auto& x = operand(0);
      const auto& idx = operand(1);
      c.require(!x.shape.empty(), "gather operand must have rank >= 1");
      c.require(idx.dtype == DType::kInt32 || idx.dtype == DType::kInt64, "gather indices must be s32 or s64");
      Shape out = idx.shape;
      out.insert(out.end(), x.shape.begin() + 1, x.shape.end());
      return {out, x.dtype};
    }
    case HloOpcode::kScatter: {
      const auto& x = operand(0);
      const auto& idx = operand(1);
      const auto& upd = operand(2);
      c.require(idx.dtype == DType::kInt32 || idx.dtype == DType::kInt64, "scatter indices must be s32 or s64");
      Shape expect = idx.shape;
      expect.insert(expect.end(), x.shape.begin() + 1, x.shape.end());
      c.require(upd.shape == expect, "scatter updates must be " + shape_str(expect) + ", got " + shape_str(upd.shape));
      c.require(upd.dtype == x.dtype, "scatter updates differ in dtype");
      return {x.shape, x.dtype};
    }
    case HloOpcode::kDot:
      return infer_dot(m, in, c);
    case HloOpcode::kReduce: {
      const auto& x = operand(0);
      c.require(operand(1).shape.empty() && operand(1).dtype == x.dtype, "reduce init value must be a scalar of the operand's dtype");
      c.require(in.reduce_kind != ReduceKind::kLogAddExp || is_floating_point(x.dtype), "reduce to_apply=logaddexp needs a floating-point operand");
      Shape out;
      for (size_t i = 0; i < x.shape.size(); ++i) {
        if (std::find(in.dimensions.begin(), in.dimensions.end(), static_cast<int64_t>(i)) == in.dimensions.end()) out.push_back(x.shape[i]);
      }
      for (size_t i = 0; i < in.dimensions.size(); ++i) {
        c.require(in.dimensions[i] >= 0 && in.dimensions[i] < static_cast<int64_t>(x.shape.size()), "reduce dimension out of range");
        c.require(i == 0 || in.dimensions[i - 1] < in.dimensions[i], "reduce dimensions must increase");
      }
      return {out, x.dtype};
    }
    case HloOpcode::kTuple:
      return {{}, DType::kFloat32};
    HLO_COLLECTIVE_CASES:
      return infer_collective(m, in, c);
    HLO_COLLECTIVE_DONE_CASES: {
      const auto& start = operand(0);
      c.require(start.opcode == async_collective_start(synchronous_collective(in.opcode)), "the operand of a done must be its start");
      return {start.shape, start.dtype};
    }
    case HloOpcode::kCustomCall:
      return infer_custom_call(m, in);
    case HloOpcode::kFusion: {
      const HloModule* f = in.fused_computation.get();
      c.require(f != nullptr, "fusion has no fused computation");
      c.require(static_cast<int>(in.operands.size()) == f->num_parameters, "fusion operand count differs from its computation's parameters");
      for (const auto& p : f->instructions) {
        if (p.opcode != HloOpcode::kParameter) continue;
        const auto& o = operand(static_cast<size_t>(p.parameter_number));
        c.require(o.shape == p.shape && o.dtype == p.dtype, "fusion operand " + std::to_string(p.parameter_number) + " does not match its parameter");
      }
      const auto& root = f->at(f->root);
      c.require(!root.operands.empty(), "a fused computation returns at least one value");
      if (root.operands.size() == 1) {
        const auto& result = f->at(root.operands[0]);
        return {result.shape, result.dtype};
      }
      // A multi-output fusion: one loop over the element count its values share.
      c.require(in.fusion_kind == FusionKind::kLoop, "a multi-output fusion must be a kLoop fusion");
      for (int o : root.operands) {
        c.require(numel(f->at(o).shape) == numel(f->at(root.operands[0]).shape), "the values of a multi-output fusion differ in element count");
      }
      return {{}, DType::kFloat32};  // tuple-shaped, as kTuple
    }
    case HloOpcode::kGetTupleElement: {
      const auto& t = operand(0);
      c.require(is_multi_output_fusion(t), "get-tuple-element reads a multi-output fusion only");
      const std::vector<const HloInstruction*> outputs = fusion_outputs(t);
      c.require(in.tuple_index >= 0 && in.tuple_index < static_cast<int64_t>(outputs.size()),
                "get-tuple-element index=" + std::to_string(in.tuple_index) + " out of range for " + std::to_string(outputs.size()) + " elements");
      const HloInstruction& element = *outputs[static_cast<size_t>(in.tuple_index)];
      return {element.shape, element.dtype};
    }
    default:
      break;
  }
  c.require(false, "unknown opcode");
  return {};
}

bool is_multi_output_fusion(const HloInstruction& in) {
  if (in.opcode != HloOpcode::kFusion || !in.fused_computation) return false;
  const HloModule& f = *in.fused_computation;
  return f.root >= 0 && f.at(f.root).operands.size() > 1;
}

std::vector<const HloInstruction*> fusion_outputs(const HloInstruction& fusion) {
  const HloModule& f = *fusion.fused_computation;
  std::vector<const HloInstruction*> out;
  for (int o : f.at(f.root).operands) out.push_back(&f.at(o));
  return out;
}

}  // namespace lazytrain::hlo
