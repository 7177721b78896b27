#include "hlo/passes/all_reduce_reassociate.h"

#include <set>

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

bool AllReduceReassociate::run(HloModule& module) {
  std::vector<int> users(module.instructions.size(), 0);
  for (const HloInstruction& in : module.instructions) {
    for (int o : in.operands) ++users[static_cast<size_t>(o)];
  }
  std::set<int> made;           // all-reduces this pass made (in the rebuilt module), each read once
  std::set<int> rewritten;      // old instructions this pass replaced
  bool merged = false;
  const auto sums = [](const HloInstruction& r) { return r.opcode == HloOpcode::kAllReduce && r.reduce_kind == ReduceKind::kAdd; };
  rewrite_module(module, [&](HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) -> Rewritten {
    // Rebuilt id `id` (of old instruction `old`, -1 when unknown) is a sum all-reduce read only once.
    const auto single_sum = [&](int id, int old) {
      return sums(b.at(id)) && (made.count(id) > 0 || (old >= 0 && users[static_cast<size_t>(old)] == 1));
    };
    const auto replace = [&](int id) {
      rewritten.insert(in.id);
      return Rewritten{id, true};
    };
    if (in.opcode == HloOpcode::kReshape && single_sum(ops[0], in.operands[0])) {
      // reshape(all-reduce(x)) -> all-reduce(reshape(x)): the sum's add may come after a reshape.
      const std::vector<std::vector<int64_t>> groups = b.at(ops[0]).replica_groups;
      const int reshaped = b.reshape(b.at(ops[0]).operands[0], in.shape);
      const int reduced = b.all_reduce(reshaped, ReduceKind::kAdd, groups);
      made.insert(reduced);
      return replace(reduced);
    }
    if (in.opcode != HloOpcode::kAdd || in.operands[0] == in.operands[1]) return {};
    for (int side = 0; side < 2; ++side) {
      const int p = ops[static_cast<size_t>(side)], q = ops[static_cast<size_t>(1 - side)];
      const int old_p = in.operands[static_cast<size_t>(side)], old_q = in.operands[static_cast<size_t>(1 - side)];
      if (!single_sum(q, old_q)) continue;
      if (single_sum(p, old_p) && b.at(p).replica_groups == b.at(q).replica_groups) {
        // all-reduce(a) + all-reduce(b) -> all-reduce(a + b)
        const std::vector<std::vector<int64_t>> groups = b.at(q).replica_groups;
        const int sum = b.binary(HloOpcode::kAdd, b.at(p).operands[0], b.at(q).operands[0]);
        const int reduced = b.all_reduce(sum, ReduceKind::kAdd, groups);
        made.insert(reduced);
        merged = true;
        return replace(reduced);
      }
      // (all-reduce(a) + x) + all-reduce(b) -> all-reduce(a + b) + x, the inner add read only here
      if (b.at(p).opcode != HloOpcode::kAdd || users[static_cast<size_t>(old_p)] != 1) continue;
      const bool copied = !rewritten.count(old_p);
      for (int k = 0; k < 2; ++k) {
        const int inner = b.at(p).operands[static_cast<size_t>(k)], other = b.at(p).operands[static_cast<size_t>(1 - k)];
        const int old_inner = copied ? module.at(old_p).operands[static_cast<size_t>(k)] : -1;
        if (!single_sum(inner, old_inner) || b.at(inner).replica_groups != b.at(q).replica_groups) continue;
        const std::vector<std::vector<int64_t>> groups = b.at(q).replica_groups;
        const int sum = b.binary(HloOpcode::kAdd, b.at(inner).operands[0], b.at(q).operands[0]);
        const int reduced = b.all_reduce(sum, ReduceKind::kAdd, groups);
        made.insert(reduced);
        merged = true;
        return replace(b.binary(HloOpcode::kAdd, reduced, other));
      }
    }
    return {};
  });
  return merged;
}

}  // namespace lazytrain::hlo
