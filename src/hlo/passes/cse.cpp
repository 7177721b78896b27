#include "hlo/passes/cse.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

size_t mix_all(size_t h, const std::vector<int64_t>& values) {
  h = mix(h, values.size());
  for (int64_t v : values) h = mix(h, static_cast<size_t>(v));
  return h;
}

// A hash of everything `same_value` compares, except literal bytes beyond the first few.
size_t hash_instruction(const HloInstruction& in) {
  size_t h = mix(static_cast<size_t>(in.opcode), static_cast<size_t>(in.dtype));
  h = mix_all(h, in.shape);
  h = mix(h, in.operands.size());
  for (int o : in.operands) h = mix(h, static_cast<size_t>(o));
  h = mix_all(h, in.dimensions);
  h = mix_all(h, in.slice_starts);
  h = mix_all(h, in.slice_limits);
  h = mix_all(h, in.slice_strides);
  if (in.opcode == HloOpcode::kConstant) {
    size_t n = static_cast<size_t>(std::min<int64_t>(in.literal.nbytes(), 64));
    h = mix(h, std::hash<std::string_view>()(std::string_view(static_cast<const char*>(in.literal.raw()), n)));
  }
  h = mix(h, std::hash<std::string>()(in.custom_call_target));
  h = mix(h, std::hash<std::string>()(in.backend_config));
  h = mix(h, static_cast<size_t>(in.tuple_index));
  if (in.sharding) h = mix(h, std::hash<std::string>()(in.sharding->to_string()));
  return mix(h, std::hash<const void*>()(in.fused_computation.get()));
}

bool same_dot(const DotDimensionNumbers& a, const DotDimensionNumbers& b) {
  return a.lhs_batch_dimensions == b.lhs_batch_dimensions && a.rhs_batch_dimensions == b.rhs_batch_dimensions &&
         a.lhs_contracting_dimensions == b.lhs_contracting_dimensions &&
         a.rhs_contracting_dimensions == b.rhs_contracting_dimensions;
}

// True when `a` and `b` (operands already canonical) compute the same value.
bool same_value(const HloInstruction& a, const HloInstruction& b) {
  return a.opcode == b.opcode && a.dtype == b.dtype && a.shape == b.shape && a.operands == b.operands &&
         a.dimensions == b.dimensions && a.slice_starts == b.slice_starts && a.slice_limits == b.slice_limits &&
         a.slice_strides == b.slice_strides && a.direction == b.direction && a.reduce_kind == b.reduce_kind &&
         same_dot(a.dot, b.dot) && a.parameter_number == b.parameter_number &&
         a.fused_computation == b.fused_computation && a.fusion_kind == b.fusion_kind &&
         a.custom_call_target == b.custom_call_target && a.backend_config == b.backend_config && a.tuple_index == b.tuple_index &&
         a.sharding == b.sharding && (a.opcode != HloOpcode::kConstant || a.literal == b.literal);
}

}  // namespace

bool Cse::run(HloModule& module) {
  std::unordered_multimap<size_t, int> seen;  // hash → id in the new module
  return rewrite_module(module, [&](HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) {
    if (never_merged(in.opcode)) return Rewritten{};
    int id = b.copy(in, ops);
    size_t h = hash_instruction(b.at(id));
    auto [first, last] = seen.equal_range(h);
    for (auto it = first; it != last; ++it) {
      // A match: the copy just made is dead and build() drops it.
      if (same_value(b.at(it->second), b.at(id))) return Rewritten{it->second, true};
    }
    seen.emplace(h, id);
    return Rewritten{id, false};
  });
}

}  // namespace lazytrain::hlo
