#include "hlo/passes/latency_hiding_scheduler.h"

#include <algorithm>
#include <map>

#include "hlo/collective_cases.h"
#include "hlo/cost_analysis.h"

namespace lazytrain::hlo {

namespace {

int64_t bytes_of(const HloInstruction& in) { return is_tuple_shaped(in) ? 0 : numel(in.shape) * itemsize(in.dtype); }

// 2 * (elements of the result) * (size of the contracted dimensions), as cost_analysis.h counts.
double dot_flops(const HloModule& module, const HloInstruction& dot) {
  int64_t contracted = 1;
  const HloInstruction& lhs = module.at(dot.operands[0]);
  for (int64_t d : dot.dot.lhs_contracting_dimensions) contracted *= lhs.shape[static_cast<size_t>(d)];
  return 2.0 * static_cast<double>(numel(dot.shape)) * static_cast<double>(contracted);
}

// Moves the element at `from` to position `to` (before what was there), shifting those between.
void move_element(std::vector<int>& order, size_t from, size_t to) {
  if (from == to) return;
  const int id = order[from];
  order.erase(order.begin() + static_cast<std::ptrdiff_t>(from));
  order.insert(order.begin() + static_cast<std::ptrdiff_t>(to), id);
}

// The scheduling state: the order (ROOT left out) and each instruction's users.
struct Schedule {
  const HloModule& module;
  std::vector<int> order;
  std::vector<std::vector<int>> users;

  explicit Schedule(const HloModule& m) : module(m), users(m.instructions.size()) {
    for (const auto& in : m.instructions) {
      if (in.id == m.root) continue;
      order.push_back(in.id);
      for (int o : in.operands) users[static_cast<size_t>(o)].push_back(in.id);
    }
  }
  bool is_start(size_t k) const { return is_async_collective_start(module.at(order[k]).opcode); }
  bool is_done(size_t k) const { return is_async_collective_done(module.at(order[k]).opcode); }
  bool is_element(size_t k) const { return module.at(order[k]).opcode == HloOpcode::kGetTupleElement; }
  size_t position(int id) const { return static_cast<size_t>(std::find(order.begin(), order.end(), id) - order.begin()); }
};

// Step 1: each done just before its first reader (the end when only the ROOT reads it).
void sink_dones(Schedule& s) {
  std::vector<int> dones;
  for (int id : s.order) {
    if (is_async_collective_done(s.module.at(id).opcode)) dones.push_back(id);
  }
  for (int done : dones) {
    const size_t from = s.position(done);
    size_t first_reader = s.order.size();
    for (int u : s.users[static_cast<size_t>(done)]) {
      if (u != s.module.root) first_reader = std::min(first_reader, s.position(u));
    }
    move_element(s.order, from, first_reader - 1);  // readers come after `from`, so the slot shifts by one
  }
}

// Step 2: each start up past compute worth its exchange, not past its operand or the previous start.
void hoist_starts(Schedule& s, const std::vector<double>& seconds) {
  size_t previous_start_end = static_cast<size_t>(s.module.num_parameters);  // parameters stay first; then: after the previous start
  for (size_t k = 0; k < s.order.size(); ++k) {
    if (!s.is_start(k)) continue;
    const HloInstruction& start = s.module.at(s.order[k]);
    const size_t operand_end = s.position(start.operands[0]) + 1;
    const size_t limit = std::max(previous_start_end, operand_end);
    double covered = 0;
    size_t slot = k;
    while (slot > limit && covered < seconds[static_cast<size_t>(start.id)]) {
      --slot;
      if (!s.is_start(slot) && !s.is_done(slot)) covered += seconds[static_cast<size_t>(s.order[slot])];
    }
    while (slot < k && s.is_element(slot)) ++slot;  // never between a multi-output fusion and its elements
    move_element(s.order, k, slot);
    previous_start_end = slot + 1;
  }
}

// Step 3: the estimate's clock; a done whose exchange would still run lets
// ready, independent compute from the lookahead go first.
void fill_waits(Schedule& s, const std::vector<double>& seconds, int64_t lookahead) {
  const HloModule& m = s.module;
  std::vector<bool> scheduled(m.instructions.size(), false);
  std::map<int, double> finishes;  // start -> when its exchange ends
  double now = 0, stream_free = 0;
  auto ready = [&](int id) {
    for (int o : m.at(id).operands) {
      if (!scheduled[static_cast<size_t>(o)]) return false;
    }
    return true;
  };
  auto run = [&](size_t k) {
    const HloInstruction& in = m.at(s.order[k]);
    if (is_async_collective_start(in.opcode)) {
      stream_free = std::max(stream_free, now) + seconds[static_cast<size_t>(in.id)];
      finishes[in.id] = stream_free;
    } else if (is_async_collective_done(in.opcode)) {
      now = std::max(now, finishes[in.operands[0]]);
    } else {
      now += seconds[static_cast<size_t>(in.id)];
    }
    scheduled[static_cast<size_t>(in.id)] = true;
  };
  for (size_t k = 0; k < s.order.size(); ++k) {
    if (s.is_done(k)) {
      const double finish = finishes[m.at(s.order[k]).operands[0]];
      const size_t end = std::min(s.order.size(), k + 1 + static_cast<size_t>(lookahead));
      for (size_t j = k + 1; j < end && now < finish; ++j) {
        const HloInstruction& candidate = m.at(s.order[j]);
        // Another done may go first when its exchange ends no later (started
        // earlier, FIFO): what reads it becomes ready to fill the wait.
        const bool earlier_done = is_async_collective_done(candidate.opcode) && ready(candidate.id) &&
                                  finishes[candidate.operands[0]] <= finish;
        if (is_async_collective_start(candidate.opcode) || (is_async_collective_done(candidate.opcode) && !earlier_done)) continue;
        if (candidate.opcode == HloOpcode::kGetTupleElement || !ready(candidate.id)) continue;
        move_element(s.order, j, k);  // before the done, which moves to k + 1
        run(k++);
        // A multi-output fusion's elements (right after it, at j + 1 ...) come along at once.
        for (size_t e = j + 1; e < s.order.size() && s.is_element(e) && m.at(s.order[e]).operands[0] == candidate.id; j = e++) {
          move_element(s.order, e, k);
          run(k++);
        }
      }
    }
    run(k);
  }
}

}  // namespace

double estimated_seconds(const HloModule& module, const HloInstruction& in, const LatencyEstimate& estimate) {
  switch (in.opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kReshape:
    HLO_COLLECTIVE_DONE_CASES: return 0;
    default: break;
  }
  const int64_t operand_bytes = in.operands.empty() ? 0 : bytes_of(module.at(in.operands[0]));
  if (is_collective(in.opcode)) {
    // Bytes each replica sends and receives: an all-reduce reduces and gathers its value.
    const HloOpcode kind = synchronous_collective(in.opcode);
    const int64_t moved = kind == HloOpcode::kAllGather ? bytes_of(in) : kind == HloOpcode::kAllReduce ? 2 * bytes_of(in) : operand_bytes;
    return estimate.collective_latency_seconds + static_cast<double>(moved) / estimate.collective_bytes_per_second;
  }
  double flops = 0;
  if (in.opcode == HloOpcode::kDot) flops = dot_flops(module, in);
  if (in.opcode == HloOpcode::kFusion) flops = static_cast<double>(dot_flop_count(*in.fused_computation));
  int64_t bytes = bytes_of(in);
  for (int o : in.operands) bytes += bytes_of(module.at(o));
  return flops / estimate.flops_per_second + static_cast<double>(bytes) / estimate.bytes_per_second;
}

bool LatencyHidingScheduler::run(HloModule& module) {
  const bool has_starts = std::any_of(module.instructions.begin(), module.instructions.end(),
                                      [](const HloInstruction& in) { return is_async_collective_start(in.opcode); });
  if (!has_starts) return false;
  std::vector<double> seconds(module.instructions.size(), 0);
  for (const auto& in : module.instructions) seconds[static_cast<size_t>(in.id)] = estimated_seconds(module, in, estimate_);

  Schedule s(module);
  sink_dones(s);
  hoist_starts(s, seconds);
  fill_waits(s, seconds, estimate_.lookahead);

  return reorder_module(module, s.order);
}

}  // namespace lazytrain::hlo
