// XLA-style HLO text, close enough that a reader of XLA dumps can read ours.
#include <sstream>

#include "core/half.h"
#include "hlo/collective_cases.h"
#include "hlo/hlo_instruction.h"
#include "hlo/op_metadata.h"

namespace lazytrain::hlo {

namespace {

std::string array_shape_text(const Shape& shape, DType dtype) {
  std::string s = xla_name(dtype) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  s += "]";
  if (shape.size() > 0) {  // row-major layout, minor-to-major
    s += "{";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape.size() - 1 - i);
    s += "}";
  }
  return s;
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

std::string literal_text(const Literal& b) {
  std::ostringstream os;
  int64_t n = b.numel();
  if (n > 8) return "{...}";
  if (!b.shape().empty()) os << "{";
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    switch (b.dtype()) {
      case DType::kFloat32: os << b.data<float>()[i]; break;
      case DType::kBFloat16: os << static_cast<float>(b.data<BFloat16>()[i]); break;
      case DType::kFloat16: os << static_cast<float>(b.data<Half>()[i]); break;
      case DType::kInt32: os << b.data<int32_t>()[i]; break;
      case DType::kInt64: os << b.data<int64_t>()[i]; break;
      case DType::kBool: os << (b.data<uint8_t>()[i] ? "true" : "false"); break;
    }
  }
  if (!b.shape().empty()) os << "}";
  return os.str();
}

// ", channel_id=1, replica_groups={{0,1},{2,3}}" (XLA prints {} for all replicas).
std::string collective_attributes(const HloInstruction& in) {
  std::string s = ", channel_id=" + std::to_string(in.channel_id) + ", replica_groups={";
  for (size_t g = 0; g < in.replica_groups.size(); ++g) s += (g ? "," : "") + list(in.replica_groups[g]);
  s += "}";
  const HloOpcode kind = synchronous_collective(in.opcode);
  if (kind != HloOpcode::kAllReduce) s += ", dimensions=" + list(in.dimensions);
  if (kind != HloOpcode::kAllGather) s += ", to_apply=%" + reduce_kind_name(in.reduce_kind);
  return s;
}

std::string attributes(const HloInstruction& in) {
  switch (in.opcode) {
    HLO_COLLECTIVE_CASES: return collective_attributes(in);
    case HloOpcode::kParameter: return "";
    case HloOpcode::kBroadcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kConcatenate: return ", dimensions=" + list(in.dimensions);
    case HloOpcode::kReduce: return ", dimensions=" + list(in.dimensions) + ", to_apply=%" + reduce_kind_name(in.reduce_kind);
    case HloOpcode::kIota: return ", iota_dimension=" + std::to_string(in.dimensions[0]);
    case HloOpcode::kDynamicSlice: return ", dynamic_slice_sizes=" + list(in.dimensions);
    case HloOpcode::kCompare: return ", direction=" + direction_name(in.direction);
    case HloOpcode::kRngBitGenerator: return ", algorithm=rng_philox";
    case HloOpcode::kSlice: {
      std::string s = ", slice={";
      for (size_t i = 0; i < in.slice_starts.size(); ++i) {
        s += (i ? ", [" : "[") + std::to_string(in.slice_starts[i]) + ":" + std::to_string(in.slice_limits[i]);
        if (in.slice_strides[i] != 1) s += ":" + std::to_string(in.slice_strides[i]);
        s += "]";
      }
      return s + "}";
    }
    case HloOpcode::kDot:
      return ", lhs_batch_dims=" + list(in.dot.lhs_batch_dimensions) + ", lhs_contracting_dims=" + list(in.dot.lhs_contracting_dimensions) +
             ", rhs_batch_dims=" + list(in.dot.rhs_batch_dimensions) + ", rhs_contracting_dims=" + list(in.dot.rhs_contracting_dimensions);
    case HloOpcode::kGather: {
      return ", offset_dims={trailing}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=" +
             std::to_string(in.shape.size());
    }
    case HloOpcode::kCustomCall:
      return ", custom_call_target=\"" + in.custom_call_target + "\", backend_config=\"" + in.backend_config + "\"";
    case HloOpcode::kGetTupleElement: return ", index=" + std::to_string(in.tuple_index);
    case HloOpcode::kFusion:
      return ", kind=" + fusion_kind_name(in.fusion_kind) + ", calls=%fused_computation." + std::to_string(in.id);
    case HloOpcode::kScatter:
      return ", update_window_dims={trailing}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, to_apply=%" +
             reduce_kind_name(in.reduce_kind);
    default: return "";
  }
}

}  // namespace

std::string shape_text(const HloModule& module, const HloInstruction& in) {
  if (is_multi_output_fusion(in)) {
    std::string s = "(";
    for (const HloInstruction* o : fusion_outputs(in)) s += (s.size() > 1 ? ", " : "") + array_shape_text(o->shape, o->dtype);
    return s + ")";
  }
  if (in.opcode != HloOpcode::kTuple) return array_shape_text(in.shape, in.dtype);
  std::string s = "(";
  for (size_t i = 0; i < in.operands.size(); ++i) s += (i ? ", " : "") + shape_text(module, module.at(in.operands[i]));
  return s + ")";
}

namespace {
// The body of one computation: "%name (params) -> shape {\n instructions }".
void print_computation(std::ostream& os, const HloModule& m, const std::string& title);
}  // namespace

std::string HloModule::to_string() const {
  std::ostringstream os;
  os << "HloModule " << name;
  if (num_partitions > 1) os << ", num_partitions=" << num_partitions;
  os << "\n\n";
  for (const auto& in : instructions) {
    if (in.opcode != HloOpcode::kFusion) continue;
    print_computation(os, *in.fused_computation, "%fused_computation." + std::to_string(in.id));
    os << "\n";
  }
  print_computation(os, *this, "ENTRY %" + name);
  return os.str();
}

namespace {
void print_computation(std::ostream& os, const HloModule& m, const std::string& title) {
  const HloModule& self = m;
  os << title << " (";
  bool first = true;
  for (const auto& in : self.instructions) {
    if (in.opcode != HloOpcode::kParameter) continue;
    os << (first ? "" : ", ") << "p" << in.parameter_number << "." << in.id << ": " << shape_text(self, in);
    first = false;
  }
  os << ") -> " << (self.root >= 0 ? shape_text(self, self.at(self.root)) : "()") << " {\n";
  for (const auto& in : self.instructions) {
    os << "  " << (in.id == self.root ? "ROOT " : "") << "%" << in.name() << " = " << shape_text(self, in) << " "
       << opcode_name(in.opcode) << "(";
    if (in.opcode == HloOpcode::kParameter) os << in.parameter_number;
    if (in.opcode == HloOpcode::kConstant) os << literal_text(in.literal);
    for (size_t i = 0; i < in.operands.size(); ++i) {
      const auto& o = self.at(in.operands[i]);
      os << (i ? ", " : "") << shape_text(self, o) << " %" << o.name();
    }
    const std::string metadata = metadata_attribute(in.metadata);
    os << ")" << attributes(in) << (in.sharding ? ", sharding=" + in.sharding->to_string() : "") << (metadata.empty() ? "" : ", " + metadata)
       << "\n";
  }
  os << "}\n";
}
}  // namespace

}  // namespace lazytrain::hlo
