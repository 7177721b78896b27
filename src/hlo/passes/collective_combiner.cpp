#include "hlo/passes/collective_combiner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "hlo/hlo_builder.h"
#include "hlo/passes/dce.h"

namespace lazytrain::hlo {
namespace {

using Groups = std::vector<std::vector<int64_t>>;

// How far the search for a gradient's unit follows its readers: past this,
// the evidence may be partial, so the gradient is left alone.
constexpr size_t kGradientSearchLimit = 512;
// What members of one combined collective share: unit, dtype, reduction, groups.
using Key = std::tuple<std::string, DType, ReduceKind, Groups>;

// The module with each instruction's readers, and the questions the combiner asks of it.
struct Graph {
  explicit Graph(const HloModule& m) : module(m), users(m.instructions.size()), height(m.instructions.size(), 0) {
    for (const HloInstruction& in : m.instructions) {
      for (int o : in.operands) users[static_cast<size_t>(o)].push_back(in.id);
    }
    for (size_t i = m.instructions.size(); i-- > 0;) {
      for (int u : users[i]) height[i] = std::max(height[i], height[static_cast<size_t>(u)] + 1);
    }
  }

  // The unit of an entry parameter: its sharding's op_name ("" : none).
  std::string unit_of_parameter(int id) const {
    const HloInstruction& in = module.at(id);
    return in.opcode == HloOpcode::kParameter && in.sharding ? in.sharding->op_name() : "";
  }

  // The unit of the parameter a reduce-scatter's result updates: the one unit
  // of the outputs (by the ROOT's layouts, which keep the annotations'
  // op_name) and of the parameters of their own shape that the elementwise
  // ops, transposes and reshapes reading the result (and so on) reach; ""
  // when none or several.
  std::string unit_of_gradient(int id) const {
    std::set<std::string> units;
    std::set<int> seen = {id};
    std::queue<int> pending;
    pending.push(id);
    while (!pending.empty()) {
      if (seen.size() >= kGradientSearchLimit) return "";
      const int at = pending.front();
      pending.pop();
      for (int u : users[static_cast<size_t>(at)]) {
        const HloInstruction& user = module.at(u);
        if (u == module.root && user.sharding && user.sharding->kind() == HloSharding::Kind::kTuple) {
          for (size_t k = 0; k < user.operands.size(); ++k) {
            const std::string& unit = user.sharding->tuple_elements()[k].op_name();
            if (user.operands[k] == at && !unit.empty()) units.insert(unit);
          }
          continue;
        }
        const bool follows = is_elementwise(user.opcode) || user.opcode == HloOpcode::kTranspose || user.opcode == HloOpcode::kReshape;
        if (!follows || !seen.insert(u).second) continue;
        for (int o : user.operands) {
          const std::string unit = unit_of_parameter(o);
          if (!unit.empty() && module.at(o).shape == user.shape) units.insert(unit);
        }
        pending.push(u);
      }
    }
    return units.size() == 1 ? *units.begin() : "";
  }

  // Whether an operand of some member depends on a member's result.
  bool interdependent(const std::vector<int>& members) const {
    std::vector<bool> reached(module.instructions.size(), false);
    std::queue<int> pending;
    for (int m : members) pending.push(m);
    while (!pending.empty()) {
      const int at = pending.front();
      pending.pop();
      for (int u : users[static_cast<size_t>(at)]) {
        if (reached[static_cast<size_t>(u)]) continue;
        reached[static_cast<size_t>(u)] = true;
        pending.push(u);
      }
    }
    for (int m : members) {
      if (reached[static_cast<size_t>(module.at(m).operands[0])]) return true;
    }
    return false;
  }

  const HloModule& module;
  std::vector<std::vector<int>> users;
  // The longest path from each instruction to the ROOT: a value needed
  // earlier (the forward's) has a greater height than one needed later.
  std::vector<int> height;
};

Key key_of(const HloInstruction& in, std::string unit) { return {std::move(unit), in.dtype, in.reduce_kind, in.replica_groups}; }

int64_t bytes(const HloInstruction& in) { return numel(in.shape) * itemsize(in.dtype); }

// Appends `ids` (in order) to `sets` cut where a set would pass `threshold`
// bytes (by bytes_of); one that passes it alone stays alone.
void cut_by_bytes(const std::vector<int>& ids, const std::function<int64_t(int)>& bytes_of, int64_t threshold, std::vector<std::vector<int>>& sets) {
  std::vector<int> set;
  int64_t total = 0;
  for (int id : ids) {
    if (!set.empty() && total + bytes_of(id) > threshold) {
      sets.push_back(std::move(set));
      set.clear();
      total = 0;
    }
    set.push_back(id);
    total += bytes_of(id);
  }
  sets.push_back(std::move(set));
}

// Sets of all-gathers of one unit's parameters to combine (each of two or more).
std::vector<std::vector<int>> all_gather_sets(const Graph& g, int64_t threshold) {
  std::map<Key, std::vector<int>> by_key;
  for (const HloInstruction& in : g.module.instructions) {
    if (in.opcode != HloOpcode::kAllGather) continue;
    const std::string unit = g.unit_of_parameter(in.operands[0]);
    if (!unit.empty()) by_key[key_of(in, unit)].push_back(in.id);
  }
  const auto gathered = [&](int id) { return bytes(g.module.at(id)); };
  std::vector<std::vector<int>> sets;
  for (auto& [key, gathers] : by_key) {
    std::stable_sort(gathers.begin(), gathers.end(), [&](int a, int b) { return g.height[static_cast<size_t>(a)] > g.height[static_cast<size_t>(b)]; });
    std::vector<int> pass;  // the gathers of one pass over the unit
    std::set<int> parameters;
    for (int id : gathers) {
      if (!parameters.insert(g.module.at(id).operands[0]).second) {  // the unit again: the next pass over it
        cut_by_bytes(pass, gathered, threshold, sets);
        pass.clear();
        parameters = {g.module.at(id).operands[0]};
      }
      pass.push_back(id);
    }
    cut_by_bytes(pass, gathered, threshold, sets);
  }
  std::erase_if(sets, [](const std::vector<int>& s) { return s.size() < 2; });
  return sets;
}

// Sets of reduce-scatters of one unit's gradients to combine (each of two or more).
std::vector<std::vector<int>> reduce_scatter_sets(const Graph& g, int64_t threshold) {
  std::map<Key, std::vector<int>> by_key;
  for (const HloInstruction& in : g.module.instructions) {
    if (in.opcode != HloOpcode::kReduceScatter) continue;
    const std::string unit = g.unit_of_gradient(in.id);
    if (!unit.empty()) by_key[key_of(in, unit)].push_back(in.id);
  }
  const auto scattered = [&](int id) { return bytes(g.module.at(g.module.at(id).operands[0])); };
  std::vector<std::vector<int>> sets;
  for (auto& [key, scatters] : by_key) cut_by_bytes(scatters, scattered, threshold, sets);
  std::erase_if(sets, [&](const std::vector<int>& s) { return s.size() < 2 || g.interdependent(s); });
  return sets;
}

// An order of the module with the parameters first (in number order), in
// which each set's members come after every member's operand (so the
// combined collective can stand at the set's first member), otherwise as
// close to the module's own as can be; empty when the sets wait on each other.
std::vector<int> order_for(const HloModule& m, const std::vector<std::vector<int>>& sets) {
  std::vector<std::vector<int>> waits_for(m.instructions.size());
  for (const HloInstruction& in : m.instructions) waits_for[static_cast<size_t>(in.id)] = in.operands;
  for (const auto& set : sets) {
    for (int member : set) {
      for (int other : set) waits_for[static_cast<size_t>(member)].push_back(m.at(other).operands[0]);
    }
  }
  std::vector<int> order(static_cast<size_t>(m.num_parameters), -1);
  std::vector<int> pending(m.instructions.size(), 0);
  std::vector<std::vector<int>> released(m.instructions.size());
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;  // the module's own order first
  for (const HloInstruction& in : m.instructions) {
    if (in.opcode == HloOpcode::kParameter) {
      order[static_cast<size_t>(in.parameter_number)] = in.id;
      continue;
    }
    std::set<int> distinct(waits_for[static_cast<size_t>(in.id)].begin(), waits_for[static_cast<size_t>(in.id)].end());
    std::erase_if(distinct, [&](int w) { return m.at(w).opcode == HloOpcode::kParameter; });
    pending[static_cast<size_t>(in.id)] = static_cast<int>(distinct.size());
    for (int w : distinct) released[static_cast<size_t>(w)].push_back(in.id);
    if (distinct.empty()) ready.push(in.id);
  }
  while (!ready.empty()) {
    const int id = ready.top();
    ready.pop();
    if (id != m.root) order.push_back(id);
    for (int r : released[static_cast<size_t>(id)]) {
      if (--pending[static_cast<size_t>(r)] == 0) ready.push(r);
    }
  }
  if (order.size() + 1 != m.instructions.size()) return {};
  return order;
}

// The permutation that puts dimension d first, the others after in order.
std::vector<int64_t> front(int64_t d, size_t rank) {
  std::vector<int64_t> perm = {d};
  for (int64_t k = 0; k < static_cast<int64_t>(rank); ++k) {
    if (k != d) perm.push_back(k);
  }
  return perm;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[static_cast<size_t>(perm[k])] = static_cast<int64_t>(k);
  return inv;
}

Shape permuted(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t k : perm) out.push_back(shape[static_cast<size_t>(k)]);
  return out;
}

// Member x with its collective dimension d moved first (the order a packed member's elements take).
int dimension_first(HloBuilder& b, int x, int64_t d, size_t rank) { return b.transpose(x, front(d, rank)); }

// Each member's result, from slice(i): member i's elements in the packed order
// (its collective dimension first), reshaped and transposed back.
std::vector<int> unpacked(HloBuilder& b, const HloModule& m, const std::vector<int>& members, const std::function<int(size_t)>& slice) {
  std::vector<int> results;
  for (size_t i = 0; i < members.size(); ++i) {
    const HloInstruction& in = m.at(members[i]);
    const std::vector<int64_t> perm = front(in.dimensions[0], in.shape.size());
    results.push_back(b.transpose(b.reshape(slice(i), permuted(in.shape, perm)), inverse(perm)));
  }
  return results;
}

// One all-gather for `members` (operands: `operands`, rebuilt ids); returns each member's result.
std::vector<int> combine_all_gathers(HloBuilder& b, const HloModule& m, const std::vector<int>& members, const std::vector<int>& operands) {
  const HloInstruction& first = m.at(members[0]);
  const auto n = static_cast<int64_t>(first.replica_groups[0].size());
  std::vector<int> flats;
  std::vector<int64_t> offsets = {0};
  for (size_t i = 0; i < members.size(); ++i) {
    const HloInstruction& in = m.at(members[i]);
    const Shape& local = m.at(in.operands[0]).shape;
    flats.push_back(b.reshape(dimension_first(b, operands[i], in.dimensions[0], local.size()), {numel(local)}));
    offsets.push_back(offsets.back() + numel(local));
  }
  const int gathered = b.reshape(b.all_gather(b.concatenate(flats, 0), 0, first.replica_groups), {n, offsets.back()});
  return unpacked(b, m, members, [&](size_t i) { return b.slice(gathered, {0, offsets[i]}, {n, offsets[i + 1]}, {1, 1}); });
}

// One reduce-scatter for `members` (operands: `operands`, rebuilt ids); returns each member's result.
std::vector<int> combine_reduce_scatters(HloBuilder& b, const HloModule& m, const std::vector<int>& members, const std::vector<int>& operands) {
  const HloInstruction& first = m.at(members[0]);
  const auto n = static_cast<int64_t>(first.replica_groups[0].size());
  std::vector<int> blocks;  // [n, one device's share]
  std::vector<int64_t> offsets = {0};
  for (size_t i = 0; i < members.size(); ++i) {
    const HloInstruction& in = m.at(members[i]);
    const Shape& whole = m.at(in.operands[0]).shape;
    blocks.push_back(b.reshape(dimension_first(b, operands[i], in.dimensions[0], whole.size()), {n, numel(whole) / n}));
    offsets.push_back(offsets.back() + numel(whole) / n);
  }
  const int packed = b.reshape(b.concatenate(blocks, 1), {n * offsets.back()});
  const int scattered = b.reduce_scatter(packed, first.reduce_kind, 0, first.replica_groups);
  return unpacked(b, m, members, [&](size_t i) { return b.slice(scattered, {offsets[i]}, {offsets[i + 1]}, {1}); });
}

}  // namespace

bool CollectiveCombiner::run(HloModule& module) {
  const int64_t num_partitions = module.num_partitions;
  const std::optional<HloSharding> output_layout = module.at(module.root).sharding;
  const auto restore = [&] {
    module.num_partitions = num_partitions;
    module.instructions[static_cast<size_t>(module.root)].sharding = output_layout;
  };
  // Without dead instructions, so that the rebuild in a new order keeps every id's place.
  Dce().run(module);
  restore();
  const Graph g(module);
  std::vector<std::vector<int>> sets = all_gather_sets(g, combine_threshold_in_bytes_);
  const size_t gather_sets = sets.size();
  for (auto& set : reduce_scatter_sets(g, combine_threshold_in_bytes_)) sets.push_back(std::move(set));
  if (sets.empty()) return false;
  std::vector<int> order = order_for(module, sets);
  if (order.empty()) {  // reduce-scatter sets wait on each other: combine the all-gathers only
    sets.resize(gather_sets);
    if (sets.empty()) return false;
    order = order_for(module, sets);
    if (order.empty()) return false;
  }
  // Rebuild in that order (each instruction's new id is its position in it).
  std::vector<int> position(module.instructions.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) position[static_cast<size_t>(order[k])] = static_cast<int>(k);
  reorder_module(module, order);
  restore();
  std::map<int, size_t> set_of;  // member (new id) -> its set
  for (size_t s = 0; s < sets.size(); ++s) {
    for (int& member : sets[s]) member = position[static_cast<size_t>(member)];
    std::sort(sets[s].begin(), sets[s].end());
    for (int member : sets[s]) set_of[member] = s;
  }
  std::vector<int> rebuilt(module.instructions.size(), -1);  // id -> rebuilt id
  std::map<int, int> result_of;                              // member -> its unpacked result
  rewrite_module(module, [&](HloBuilder& b, const HloInstruction& in, const std::vector<int>& ops) -> Rewritten {
    auto it = set_of.find(in.id);
    if (it == set_of.end()) return {rebuilt[static_cast<size_t>(in.id)] = b.copy(in, ops), false};
    if (!result_of.count(in.id)) {  // the set's first member: the combined collective stands here
      const std::vector<int>& set = sets[it->second];
      std::vector<int> operands;
      for (int member : set) operands.push_back(rebuilt[static_cast<size_t>(module.at(member).operands[0])]);
      const std::vector<int> results = in.opcode == HloOpcode::kAllGather ? combine_all_gathers(b, module, set, operands)
                                                                           : combine_reduce_scatters(b, module, set, operands);
      for (size_t k = 0; k < set.size(); ++k) result_of[set[k]] = results[k];
    }
    return {rebuilt[static_cast<size_t>(in.id)] = result_of.at(in.id), true};
  });
  restore();
  return true;
}

}  // namespace lazytrain::hlo
