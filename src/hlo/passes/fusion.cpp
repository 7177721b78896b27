#include "hlo/passes/fusion.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "hlo/hlo_builder.h"

namespace lazytrain::hlo {

namespace {

bool is_elementwise(const HloInstruction& in) { return hlo::is_elementwise(in.opcode); }

// Instructions in one fusion at most: the generated kernel of a longer chain
// (a loop missing mark_step()) would take the C++ compiler minutes; such a chain
// is cut into several fusions instead. Transformer fusions hold a few dozen.
constexpr size_t kMaxFusedInstructions = 512;

bool is_scalar_constant(const HloInstruction& in) { return in.opcode == HloOpcode::kConstant && in.shape.empty(); }

// Can a loop fusion hold `in` at all (each element computed at the root's linear index)?
bool loop_fusible_opcode(const HloInstruction& in) {
  if (is_elementwise(in)) return true;
  switch (in.opcode) {
    case HloOpcode::kReshape:
    case HloOpcode::kBroadcast:
    case HloOpcode::kIota: return true;
    case HloOpcode::kConstant: return in.shape.empty();
    default: return false;
  }
}

bool is_generator(const HloInstruction& in) {
  return in.opcode == HloOpcode::kBroadcast || in.opcode == HloOpcode::kIota || is_scalar_constant(in);
}

// Worth recomputing in each consumer instead of materialising once: values made
// from nothing but broadcasts, iotas and constants (masks, fills).
bool cheap_generated(const HloModule& m, const HloInstruction& in) {
  if (is_generator(in)) return true;
  if (!is_elementwise(in) || is_expensive(in.opcode)) return false;
  return std::all_of(in.operands.begin(), in.operands.end(), [&](int o) { return is_generator(m.at(o)); });
}

// One-array chains (see GroupBuilder::cheap_op_of_one_array) are at most this many
// ops long: a convert and a shift of the logits above their materialised array.
constexpr int kMaxCheapChain = 3;

struct Group {
  int root = -1;
  std::set<int> members;  // includes root; sorted = def-before-use order
  int reduce = -1;        // kInput: the reduce that consumes `root`
};

class GroupBuilder {
 public:
  GroupBuilder(const HloModule& m, const InstructionFusion& rules)
      : m_(m),
        rules_(rules),
        users_(m.instructions.size()),
        owner_(m.instructions.size(), -1),
        materialised_(m.instructions.size(), -1) {
    for (const auto& in : m.instructions) {
      for (int o : in.operands) users_[o].push_back(in.id);
    }
  }

  std::vector<Group> build() {
    // Consumers first: when an operand is considered, all its users have been.
    for (int id = static_cast<int>(m_.instructions.size()) - 1; id >= 0; --id) {
      const HloInstruction& in = m_.at(id);
      if (owner_[id] >= 0 || !is_elementwise(in) || !loop_fusible(in)) continue;
      if (absorbed_by_every_user(in)) continue;
      Group g;
      g.root = id;
      g.members.insert(id);
      int index = static_cast<int>(groups_.size());
      owner_[id] = index;
      grow(g, index, id);
      if (count_compute(g) >= 1) attach_reduce(g);
      if (count_compute(g) >= 1 && (g.members.size() >= 2 || g.reduce >= 0 || rules_.ShouldFuseAlone(m_, in))) {
        groups_.push_back(std::move(g));
      } else {
        for (int mem : g.members) if (owner_[mem] == index) owner_[mem] = -1;
        owner_[id] = -2;  // not fused; never a member either
      }
    }
    add_lone_reduces();
    return groups_;
  }

 private:
  // Can `in` be computed inside a loop fusion: the opcode, and the backend's rules.
  bool loop_fusible(const HloInstruction& in) const { return loop_fusible_opcode(in) && rules_.ShouldFuse(m_, in); }

  // Materialised whatever fusion decides: no loop fusion computes it (a dot, a
  // parameter, a scatter), or a user reads it as an array of its own (a gather, a
  // dot, a broadcast, the module's outputs), directly or through reshapes.
  // Memoised: it depends on the graph alone, and a value with many users is
  // asked once per user's fusion.
  bool materialised(const HloInstruction& x) const {
    int8_t& known = materialised_[static_cast<size_t>(x.id)];
    if (known < 0) {
      known = !loop_fusible_opcode(x) || std::any_of(users_[x.id].begin(), users_[x.id].end(), [&](int u) {
        const HloInstruction& user = m_.at(u);
        if (user.opcode == HloOpcode::kReshape) return materialised(user);
        return user.opcode == HloOpcode::kBroadcast || (!loop_fusible_opcode(user) && user.opcode != HloOpcode::kReduce);
      });
    }
    return known != 0;
  }

  // Worth recomputing in each consumer instead of materialising once (a fusion
  // takes it though other users remain outside): values made from nothing but
  // broadcasts, iotas and constants (masks, fills). Anything that reads a real
  // array is not: duplicating it re-reads its inputs in every consumer, and
  // through a chain of such ops (the residual stream of a transformer) each
  // backward kernel would recompute the whole forward pass.
  //
  // So is a cheap elementwise op of one materialised array and otherwise only of
  // generators, when its result is no narrower than that array, or a short chain
  // of such ops above it: a widening convert (bf16 weight gradients under
  // autocast), the logits shifted by a row's value (the loss and its gradient),
  // and under autocast the f32 copy of the bf16 logits under that shift. Each
  // consumer reading the array moves no more bytes than writing the result once
  // and reading it in every consumer, and nothing but these few ops is
  // recomputed. An op that must be materialised anyway is read, not recomputed.
  bool cheap(const HloInstruction& in) const {
    if (cheap_generated(m_, in)) return true;
    return !materialised(in) && cheap_op_of_one_array(in);
  }
  bool cheap_op_of_one_array(const HloInstruction& in, int depth = 1) const {
    if (!is_elementwise(in) || is_expensive(in.opcode)) return false;
    int arrays = 0;
    for (int o : in.operands) {
      const HloInstruction& x = m_.at(o);
      if (is_generator(x)) continue;
      if (itemsize(in.dtype) < itemsize(x.dtype)) return false;
      if (!materialised(x) && !(depth < kMaxCheapChain && cheap_op_of_one_array(x, depth + 1))) return false;
      ++arrays;
    }
    return arrays == 1;
  }

  // Pulls operands of `start` into the group while the rules allow: a depth-first
  // walk (operands in order, each one's own operands before the next), with an
  // explicit stack so that a chain of any length fuses in constant stack.
  void grow(Group& g, int index, int start) {
    std::vector<std::pair<int, size_t>> stack = {{start, 0}};  // (instruction, next operand)
    while (!stack.empty()) {
      const int id = stack.back().first;
      const HloInstruction& in = m_.at(id);
      // A broadcast reads its operand from outside the fusion, except a scalar constant.
      if (in.opcode == HloOpcode::kBroadcast || stack.back().second >= in.operands.size()) {
        stack.pop_back();
        continue;
      }
      const int o = in.operands[stack.back().second++];
      const HloInstruction& op = m_.at(o);
      if (g.members.count(o) || !loop_fusible(op)) continue;
      // (More users than members: not all inside, without scanning a value read a million times.)
      const bool all_users_inside = users_[o].size() <= g.members.size() &&
                                    std::all_of(users_[o].begin(), users_[o].end(), [&](int u) { return g.members.count(u) > 0; });
      if (!all_users_inside && !cheap(op)) continue;
      if (owner_[o] == -2 && !cheap(op)) continue;
      g.members.insert(o);
      if (all_users_inside && owner_[o] == -1) owner_[o] = index;
      // A full group stops growing; the rest of the chain forms groups of its own.
      if (g.members.size() >= kMaxFusedInstructions) return;
      stack.push_back({o, 0});
    }
  }

  int count_compute(const Group& g) const {
    int n = 0;
    for (int mem : g.members) n += is_elementwise(m_.at(mem)) ? 1 : 0;
    return n;
  }

  // A reduce a kernel can compute: over leading or trailing dims, from a scalar
  // constant, and allowed by the backend's rules.
  bool reduce_fusible(const HloInstruction& r) const {
    if (r.opcode != HloOpcode::kReduce || !is_scalar_constant(m_.at(r.operands[1]))) return false;
    if (!rules_.ShouldFuseReduce(m_, r)) return false;
    const int64_t rank = static_cast<int64_t>(m_.at(r.operands[0]).shape.size());
    const auto& dims = r.dimensions;
    if (dims.empty()) return false;
    bool prefix = true, suffix = true;
    for (size_t i = 0; i < dims.size(); ++i) {
      prefix = prefix && dims[i] == static_cast<int64_t>(i);
      suffix = suffix && dims[i] == rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(i);
    }
    return prefix || suffix;
  }

  // A reduce whose operand is this group's root (and its only user) becomes
  // part of the fusion (kInput).
  void attach_reduce(Group& g) {
    if (users_[g.root].size() != 1) return;
    const HloInstruction& r = m_.at(users_[g.root][0]);
    if (r.operands[0] == g.root && reduce_fusible(r)) g.reduce = r.id;
  }

  // A reduce no group took (its operand is a dot, a parameter, another fusion
  // or has other users) becomes a kInput fusion of its own, so that the backend
  // runs a generated kernel for it rather than an interpreted reduce: the
  // softmax max and sum over a vocabulary-sized dot, a bias gradient's column sum.
  // A chain of cheap ops above one materialised array (the logits shifted by a
  // row's value, and under autocast their f32 copy) feeding a lone reduce is
  // computed inside the reduce's kernel too.
  void add_lone_reduces() {
    std::set<int> taken;
    for (const Group& g : groups_) taken.insert(g.reduce);
    for (const HloInstruction& in : m_.instructions) {
      if (taken.count(in.id) || !reduce_fusible(in)) continue;
      Group g;
      g.root = in.id;
      g.reduce = in.id;
      // The chain of cheap ops above the reduce's operand, down to its materialised array.
      for (int x = in.operands[0]; x >= 0;) {
        const HloInstruction& link = m_.at(x);
        if (!loop_fusible(link) || !cheap(link) || cheap_generated(m_, link)) break;
        if (g.members.empty()) g.root = x;
        g.members.insert(x);
        x = -1;
        for (int o : link.operands) {
          if (is_generator(m_.at(o))) {
            if (loop_fusible(m_.at(o))) g.members.insert(o);
          } else {
            x = o;
          }
        }
      }
      groups_.push_back(std::move(g));
    }
  }

  // A cheap op of one array whose every user computes it in its own kernel
  // (loop fusions take it as a cheap member; a reduce of it gets it in
  // add_lone_reduces) forms no fusion of its own: it is never materialised.
  bool absorbed_by_every_user(const HloInstruction& in) const {
    if (materialised(in) || !cheap_op_of_one_array(in) || users_[in.id].empty()) return false;
    return std::all_of(users_[in.id].begin(), users_[in.id].end(), [&](int u) {
      const HloInstruction& user = m_.at(u);
      if (user.opcode == HloOpcode::kReduce) return user.operands[0] == in.id && reduce_fusible(user);
      return is_elementwise(user) && loop_fusible(user);
    });
  }

  const HloModule& m_;
  const InstructionFusion& rules_;
  std::vector<std::vector<int>> users_;
  std::vector<int> owner_;  // group index for members with all users inside; -1 none; -2 tried as root, not fused
  mutable std::vector<int8_t> materialised_;  // per instruction: -1 not yet known, else materialised()
  std::vector<Group> groups_;
};

// Builds the fused computation of `g`; `external` receives the outer ids of its parameters.
std::shared_ptr<const HloModule> make_fused_computation(const HloModule& m, const Group& g, std::vector<int>& external) {
  HloBuilder b("fused_computation");
  std::map<int, int> local;      // member id -> fused id
  std::map<int, int> parameter;  // outer id read from outside -> fused parameter id
  auto operand_id = [&](int o) {
    auto it = parameter.find(o);
    if (it != parameter.end()) return it->second;
    int p = b.parameter(m.at(o).shape, m.at(o).dtype);
    external.push_back(o);
    parameter[o] = p;
    return p;
  };
  std::vector<int> order(g.members.begin(), g.members.end());
  if (g.reduce >= 0) order.push_back(g.reduce);
  for (int id : order) {
    const HloInstruction& in = m.at(id);
    std::vector<int> ops;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      int o = in.operands[k];
      // A broadcast always reads from outside the fusion (affine indexing).
      if (g.members.count(o) && in.opcode != HloOpcode::kBroadcast) ops.push_back(local.at(o));
      else if (id == g.reduce && k == 1) ops.push_back(b.copy(m.at(o), {}));  // the init constant
      else ops.push_back(operand_id(o));
    }
    local[id] = b.copy(in, ops);
  }
  return std::make_shared<HloModule>(b.build({local.at(order.back())}));
}

}  // namespace

bool InstructionFusion::run(HloModule& module) {
  std::vector<Group> groups = GroupBuilder(module, *this).build();
  if (groups.empty()) return false;
  // The outer instruction each group replaces: its reduce, else its root.
  std::map<int, const Group*> replaced;
  for (const Group& g : groups) replaced[g.reduce >= 0 ? g.reduce : g.root] = &g;
  HloBuilder b(module.name);
  std::vector<int> new_id(module.instructions.size(), -1);
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kTuple) continue;
    auto it = replaced.find(in.id);
    if (it != replaced.end()) {
      std::vector<int> external;
      auto computation = make_fused_computation(module, *it->second, external);
      std::vector<int> ops;
      for (int e : external) ops.push_back(new_id[e]);
      b.set_metadata(in.metadata);  // the fusion is named for the instruction it replaces
      new_id[in.id] = b.fusion(computation, ops, it->second->reduce >= 0 ? FusionKind::kInput : FusionKind::kLoop);
      b.set_metadata({});
      continue;
    }
    std::vector<int> ops;
    bool available = true;
    for (int o : in.operands) {
      available = available && new_id[o] >= 0;
      ops.push_back(new_id[o]);
    }
    // Members absorbed into a fusion have no outer copy; nothing outside uses them.
    if (available) new_id[in.id] = b.copy(in, ops);
  }
  std::vector<int> outputs;
  for (int o : module.at(module.root).operands) outputs.push_back(new_id[o]);
  module = b.build(outputs);
  return true;
}

}  // namespace lazytrain::hlo
