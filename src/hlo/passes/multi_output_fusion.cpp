#include "hlo/passes/multi_output_fusion.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

namespace {

// Fused instructions in one merged fusion at most (InstructionFusion's limit:
// the C++ compiler's time on one kernel).
constexpr size_t kMaxFusedInstructions = 512;

bool is_loop_fusion(const HloInstruction& in) {
  return in.opcode == HloOpcode::kFusion && in.fusion_kind == FusionKind::kLoop && !is_multi_output_fusion(in);
}

size_t fused_size(const HloInstruction& fusion) { return fusion.fused_computation->instructions.size(); }

// Groups of loop fusions to merge: a union-find over instruction ids.
class Groups {
 public:
  Groups(const HloModule& m, const MultiOutputFusion& rules) : m_(m), rules_(rules), parent_(m.instructions.size()), users_(m.instructions.size()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    members_.resize(m.instructions.size());
    size_.resize(m.instructions.size(), 0);
    for (const HloInstruction& in : m.instructions) {
      members_[static_cast<size_t>(in.id)] = {in.id};
      if (in.opcode == HloOpcode::kFusion) size_[static_cast<size_t>(in.id)] = fused_size(in);
      for (int o : in.operands) users_[static_cast<size_t>(o)].push_back(in.id);
    }
  }

  int find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
    return x;
  }
  const std::vector<int>& members(int root) const { return members_[static_cast<size_t>(root)]; }
  const std::vector<int>& users(int id) const { return users_[static_cast<size_t>(id)]; }

  // Merges the groups of loop fusions `a` and `b` when the rules allow; returns whether they are one group now.
  bool try_merge(int a, int b) {
    const HloInstruction& x = m_.at(a);
    const HloInstruction& y = m_.at(b);
    if (!is_loop_fusion(x) || !is_loop_fusion(y) || numel(x.shape) != numel(y.shape)) return false;
    int ra = find(a), rb = find(b);
    if (ra == rb) return true;
    if (size_[static_cast<size_t>(ra)] + size_[static_cast<size_t>(rb)] > kMaxFusedInstructions) return false;
    if (!rules_.ShouldFuse(m_, x, y)) return false;
    if (reaches_through_another(ra, rb) || reaches_through_another(rb, ra)) return false;
    if (members_[static_cast<size_t>(ra)].size() < members_[static_cast<size_t>(rb)].size()) std::swap(ra, rb);
    parent_[static_cast<size_t>(rb)] = ra;
    auto& into = members_[static_cast<size_t>(ra)];
    into.insert(into.end(), members_[static_cast<size_t>(rb)].begin(), members_[static_cast<size_t>(rb)].end());
    std::sort(into.begin(), into.end());
    members_[static_cast<size_t>(rb)].clear();
    size_[static_cast<size_t>(ra)] += size_[static_cast<size_t>(rb)];
    return true;
  }

 private:
  // Is there a path from group `from` to group `to` through an instruction of
  // neither (with groups already merged counted as one instruction)? Merging
  // them would then make a cycle. Ids are a topological order, so the walk
  // never goes past the last member of `to`.
  bool reaches_through_another(int from, int to) {
    const int last = members(to).back();
    std::vector<bool> expanded(m_.instructions.size(), false);  // by group root
    std::vector<int> stack;
    // The first step leaves `from` for another instruction; a direct edge into `to` is fine.
    for (int member : members(from)) {
      for (int u : users(member)) {
        const int ru = find(u);
        if (u <= last && ru != to && ru != from) stack.push_back(ru);
      }
    }
    while (!stack.empty()) {
      const int root = stack.back();
      stack.pop_back();
      if (expanded[static_cast<size_t>(root)]) continue;
      expanded[static_cast<size_t>(root)] = true;
      for (int member : members(root)) {
        for (int u : users(member)) {
          if (u > last) continue;
          const int ru = find(u);
          if (ru == to) return true;
          if (!expanded[static_cast<size_t>(ru)]) stack.push_back(ru);
        }
      }
    }
    return false;
  }

  const HloModule& m_;
  const MultiOutputFusion& rules_;
  std::vector<int> parent_;
  std::vector<std::vector<int>> users_;
  std::vector<std::vector<int>> members_;  // at each group's root, sorted
  std::vector<size_t> size_;               // at each group's root: fused instructions
};

// The fused computation of `members` (sorted ids of loop fusions): each
// member's computation inlined, a member's value read by another member
// passed directly. `external` receives the outer ids of its parameters,
// `outputs` the members whose value the computation returns (in order).
std::shared_ptr<const HloModule> merge_computations(const HloModule& m, const std::vector<int>& members, const std::vector<bool>& read_outside,
                                                    std::vector<int>& external, std::vector<int>& outputs) {
  HloBuilder b("fused_computation");
  std::map<int, int> value_of_member;  // member id -> its root's id in b
  std::map<int, int> parameter;        // outer id -> parameter id in b
  for (int id : members) {
    const HloInstruction& fusion = m.at(id);
    const HloModule& f = *fusion.fused_computation;
    std::vector<int> local(f.instructions.size(), -1);
    for (const HloInstruction& in : f.instructions) {
      if (in.opcode == HloOpcode::kTuple) break;
      if (in.opcode == HloOpcode::kParameter) {
        const int outer = fusion.operands[static_cast<size_t>(in.parameter_number)];
        if (auto member = value_of_member.find(outer); member != value_of_member.end()) {
          local[static_cast<size_t>(in.id)] = member->second;
        } else if (auto p = parameter.find(outer); p != parameter.end()) {
          local[static_cast<size_t>(in.id)] = p->second;
        } else {
          local[static_cast<size_t>(in.id)] = parameter[outer] = b.parameter(in.shape, in.dtype);
          external.push_back(outer);
        }
        continue;
      }
      std::vector<int> ops;
      for (int o : in.operands) ops.push_back(local[static_cast<size_t>(o)]);
      local[static_cast<size_t>(in.id)] = b.copy(in, std::move(ops));
    }
    value_of_member[id] = local[static_cast<size_t>(f.at(f.root).operands[0])];
  }
  std::vector<int> values;
  for (int id : members) {
    if (!read_outside[static_cast<size_t>(id)]) continue;
    outputs.push_back(id);
    values.push_back(value_of_member.at(id));
  }
  return std::make_shared<HloModule>(b.build(values));
}

}  // namespace

bool MultiOutputFusion::run(HloModule& module) {
  Groups groups(module, *this);
  const size_t n = module.instructions.size();
  std::vector<bool> is_output(n, false);
  for (int o : module.at(module.root).operands) is_output[static_cast<size_t>(o)] = true;
  bool merged = false;
  // Siblings: loop fusions reading the same array of their element count.
  for (const HloInstruction& x : module.instructions) {
    if (x.opcode == HloOpcode::kTuple || x.shape.empty()) continue;
    int first = -1;
    for (int u : groups.users(x.id)) {
      const HloInstruction& user = module.at(u);
      if (!is_loop_fusion(user) || numel(user.shape) != numel(x.shape)) continue;
      if (first < 0) first = u;
      else if (first != u) merged = groups.try_merge(first, u) || merged;
    }
  }
  // Producer-consumer: a loop fusion's value read by a loop fusion, when the
  // value is a step output or every reader is in the consumer's group.
  for (const HloInstruction& c : module.instructions) {
    if (!is_loop_fusion(c)) continue;
    for (int p : c.operands) {
      if (!is_loop_fusion(module.at(p))) continue;
      const auto& readers = groups.users(p);
      const bool all_in = std::all_of(readers.begin(), readers.end(), [&](int u) { return groups.find(u) == groups.find(c.id); });
      if (is_output[static_cast<size_t>(p)] || all_in) merged = groups.try_merge(p, c.id) || merged;
    }
  }
  if (!merged) return false;

  // A member's value is read outside its group (by another instruction or the ROOT).
  std::vector<bool> read_outside(n, false);
  for (const HloInstruction& in : module.instructions) {
    for (int o : in.operands) {
      if (in.opcode == HloOpcode::kTuple || groups.find(o) != groups.find(in.id)) read_outside[static_cast<size_t>(o)] = true;
    }
  }
  // Units in a new topological order: each group becomes one instruction.
  // Ready units go by their last member's old position (close to the old order).
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> dependents(n);
  auto unit = [&](int id) { return groups.find(id); };
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kTuple) continue;
    const int u = unit(in.id);
    for (int o : in.operands) {
      const int uo = unit(o);
      if (uo == u) continue;
      dependents[static_cast<size_t>(uo)].push_back(u);
      ++pending[static_cast<size_t>(u)];
    }
  }
  HloBuilder b(module.name);
  std::vector<int> new_id(n, -1);
  using Entry = std::pair<int, int>;  // (-last member id, unit)
  std::priority_queue<Entry> ready;
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kParameter) new_id[static_cast<size_t>(in.id)] = b.copy(in, {});  // parameters first, in order
  }
  auto finish = [&](int u) {
    for (int d : dependents[static_cast<size_t>(u)]) {
      if (--pending[static_cast<size_t>(d)] == 0) ready.push({-groups.members(d).back(), d});
    }
  };
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kParameter) finish(in.id);
  }
  for (const HloInstruction& in : module.instructions) {
    const int u = unit(in.id);
    if (u == in.id && in.opcode != HloOpcode::kParameter && in.opcode != HloOpcode::kTuple && pending[static_cast<size_t>(u)] == 0) {
      ready.push({-groups.members(u).back(), u});
    }
  }
  std::vector<bool> emitted(n, false);  // a unit may be pushed twice (its last operand a parameter)
  while (!ready.empty()) {
    const int u = ready.top().second;
    ready.pop();
    if (emitted[static_cast<size_t>(u)]) continue;
    emitted[static_cast<size_t>(u)] = true;
    const std::vector<int>& members = groups.members(u);
    if (members.size() == 1) {
      const HloInstruction& in = module.at(u);
      std::vector<int> ops;
      for (int o : in.operands) ops.push_back(new_id[static_cast<size_t>(o)]);
      new_id[static_cast<size_t>(u)] = b.copy(in, std::move(ops));
    } else {
      std::vector<int> external, outputs;
      auto computation = merge_computations(module, members, read_outside, external, outputs);
      std::vector<int> ops;
      for (int e : external) ops.push_back(new_id[static_cast<size_t>(e)]);
      b.set_metadata(module.at(members.back()).metadata);  // the fusion is named for its last member
      const int fusion = b.fusion(computation, std::move(ops), FusionKind::kLoop);
      if (outputs.size() == 1) {
        new_id[static_cast<size_t>(outputs[0])] = fusion;
      } else {
        for (size_t k = 0; k < outputs.size(); ++k) new_id[static_cast<size_t>(outputs[k])] = b.get_tuple_element(fusion, static_cast<int64_t>(k));
      }
      b.set_metadata({});
    }
    finish(u);
  }
  std::vector<int> outputs;
  for (int o : module.at(module.root).operands) outputs.push_back(new_id[static_cast<size_t>(o)]);
  // Groups merged pairwise can still wait on each other through a third
  // (found by a block evaluated twice under FSDP): such units never become
  // ready. Then the module is left as it was, unmerged, rather than broken.
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode != HloOpcode::kTuple && new_id[static_cast<size_t>(in.id)] < 0 && !emitted[static_cast<size_t>(unit(in.id))]) return false;
  }
  module = b.build(outputs);
  return true;
}

}  // namespace lazytrain::hlo
