#include "hlo/buffer_assignment.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace lazytrain::hlo {

namespace {

// Union-find over instruction ids: one set per buffer.
class Buffers {
 public:
  explicit Buffers(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
      x = parent_[static_cast<size_t>(x)];
    }
    return x;
  }
  void join(int a, int b) { parent_[static_cast<size_t>(find(a))] = find(b); }

 private:
  std::vector<int> parent_;
};

int64_t bytes_of(const HloInstruction& in) { return is_tuple_shaped(in) ? 0 : numel(in.shape) * itemsize(in.dtype); }

// The instruction that writes `in`'s value: a get-tuple-element's is its multi-output fusion.
int writer_of(const HloModule& m, const HloInstruction& in) {
  return in.opcode == HloOpcode::kGetTupleElement && is_multi_output_fusion(m.at(in.operands[0])) ? in.operands[0] : in.id;
}

}  // namespace

BufferAssignment assign_buffers(const HloModule& module, const BufferAssignmentOptions& options) {
  const size_t n = module.instructions.size();
  for (size_t i = 0; i < n; ++i) {
    check(module.instructions[i].id == static_cast<int>(i), "BufferAssignment", "instruction ids must be their positions");
  }
  BufferAssignment a;
  a.offset.assign(n, -1);
  a.in_place_operand.assign(n, -1);
  a.outlives.assign(n, false);
  std::vector<int> last_use(n, -1);
  std::vector<bool> live_out(n, false), external(n, false);
  for (const HloInstruction& in : module.instructions) {
    for (int o : in.operands) last_use[static_cast<size_t>(o)] = in.id;
    if (in.opcode == HloOpcode::kTuple) {
      for (int o : in.operands) live_out[static_cast<size_t>(o)] = true;
    }
  }
  auto end_of = [&](int id) { return std::max(id, last_use[static_cast<size_t>(id)]); };

  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kTuple) continue;
    external[static_cast<size_t>(in.id)] = options.storage(in) == OutputStorage::kExternal;
  }
  Buffers buffers(n);
  // Per buffer, kept at its set's root as sets join: the members' end of life,
  // and whether a member's storage is made at run time.
  std::vector<int> end(n);
  std::vector<bool> set_external(external);
  for (size_t i = 0; i < n; ++i) end[i] = end_of(static_cast<int>(i));
  auto join = [&](int a_id, int b_id) {
    const auto ra = static_cast<size_t>(buffers.find(a_id)), rb = static_cast<size_t>(buffers.find(b_id));
    if (ra == rb) return;
    buffers.join(static_cast<int>(ra), static_cast<int>(rb));
    end[rb] = std::max(end[ra], end[rb]);
    set_external[rb] = set_external[ra] || set_external[rb];
  };
  for (const HloInstruction& in : module.instructions) {
    if (in.opcode == HloOpcode::kTuple) continue;
    for (size_t k : options.may_alias(in)) join(in.id, in.operands[k]);
  }
  auto set_has_external = [&](int root) { return static_cast<bool>(set_external[static_cast<size_t>(root)]); };
  // In place, in schedule order: into an operand whose whole buffer ends here,
  // read once by this instruction, holding no parameter, constant or other
  // storage made at run time.
  std::vector<int> external_roots;
  for (const HloInstruction& in : module.instructions) {
    // An output outlives the execution, so its storage is made at run time
    // anyway; the backend writes it over a donated argument when it can.
    if (in.opcode == HloOpcode::kTuple || external[static_cast<size_t>(in.id)] || live_out[static_cast<size_t>(in.id)]) continue;
    // A get-tuple-element's value is written by its fusion, over the fusion's operands.
    const HloInstruction& writer = module.at(writer_of(module, in));
    for (size_t k : options.in_place_candidates(in)) {
      const int o = writer.operands[k];
      const int root = buffers.find(o);
      if (end[static_cast<size_t>(root)] != writer.id) continue;
      // No other operand may be read from the same bytes (the same value, or
      // a view of it): the kernel would read what it has already overwritten.
      bool shared = false;
      for (size_t j = 0; j < writer.operands.size(); ++j) {
        if (j != k && buffers.find(writer.operands[j]) == root) shared = true;
      }
      if (shared) continue;
      if (set_has_external(root)) continue;
      if (bytes_of(module.at(o)) != bytes_of(in)) continue;
      a.in_place_operand[static_cast<size_t>(in.id)] = static_cast<int>(k);
      join(in.id, o);
      break;
    }
  }
  // The arena's buffers: every member written into handed storage, none an output.
  struct Interval {
    int root;
    int start, stop;  // inclusive schedule positions
    int64_t size;
    bool in_arena = true;
    bool outlives = false;
    int64_t offset = -1;
  };
  std::vector<Interval> intervals;
  std::vector<int> interval_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (is_tuple_shaped(module.instructions[i])) continue;  // no bytes of its own
    const int root = buffers.find(static_cast<int>(i));
    if (interval_of[static_cast<size_t>(root)] < 0) {
      interval_of[static_cast<size_t>(root)] = static_cast<int>(intervals.size());
      intervals.push_back({root, writer_of(module, module.instructions[i]), end[static_cast<size_t>(root)], 0, true, false, -1});
    }
    Interval& v = intervals[static_cast<size_t>(interval_of[static_cast<size_t>(root)])];
    v.start = std::min(v.start, writer_of(module, module.instructions[i]));
    v.size = std::max(v.size, bytes_of(module.instructions[i]));
    if (external[i] || live_out[i]) v.in_arena = false;
    if (live_out[i]) v.outlives = true;
  }
  // Greedy best fit, largest first (XLA's GlobalDecreasingSizeBestFitHeap): the
  // lowest offset whose bytes no buffer alive at the same time holds.
  std::vector<size_t> order;
  for (size_t v = 0; v < intervals.size(); ++v) {
    if (!intervals[v].in_arena) continue;
    intervals[v].size = std::max<int64_t>(options.alignment, (intervals[v].size + options.alignment - 1) / options.alignment * options.alignment);
    order.push_back(v);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return intervals[x].size > intervals[y].size; });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken;
  for (size_t v : order) {
    Interval& me = intervals[v];
    taken.clear();
    for (size_t p : placed) {
      const Interval& other = intervals[p];
      if (other.start <= me.stop && me.start <= other.stop) taken.emplace_back(other.offset, other.offset + other.size);
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, stop] : taken) {
      if (begin - offset >= me.size) break;
      offset = std::max(offset, stop);
    }
    me.offset = offset;
    placed.push_back(v);
    a.arena_bytes = std::max(a.arena_bytes, offset + me.size);
    a.unpacked_bytes += me.size;
  }
  for (size_t i = 0; i < n; ++i) {
    const int idx = interval_of[static_cast<size_t>(buffers.find(static_cast<int>(i)))];
    if (idx < 0 || is_tuple_shaped(module.instructions[i])) continue;
    const Interval& v = intervals[static_cast<size_t>(idx)];
    a.outlives[i] = v.outlives;
    if (v.offset >= 0) {
      a.offset[i] = v.offset;
      ++a.arena_values;
    }
  }
  return a;
}

}  // namespace lazytrain::hlo
