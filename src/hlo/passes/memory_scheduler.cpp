#include "hlo/passes/memory_scheduler.h"

#include <algorithm>
#include <limits>
#include <queue>


namespace lazytrain::hlo {

namespace {

// A multi-output fusion's bytes are counted at its get-tuple-elements, which run right after it.
int64_t bytes_of(const HloInstruction& in) {
  if (in.opcode == HloOpcode::kParameter || is_tuple_shaped(in)) return 0;
  return numel(in.shape) * itemsize(in.dtype);
}

// Each distinct operand once (x * x reads x once).
std::vector<int> distinct_operands(const HloInstruction& in) {
  std::vector<int> ops = in.operands;
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

}  // namespace

int64_t peak_live_bytes(const HloModule& module) {
  const size_t n = module.instructions.size();
  std::vector<int> last_use(n, -1);
  for (const auto& in : module.instructions) {
    for (int o : in.operands) last_use[static_cast<size_t>(o)] = in.id;
  }
  for (int o : module.at(module.root).operands) last_use[static_cast<size_t>(o)] = static_cast<int>(n);
  std::vector<int64_t> freed_after(n + 1, 0);
  int64_t live = 0, peak = 0;
  for (const auto& in : module.instructions) {
    live += bytes_of(in);
    peak = std::max(peak, live);
    if (last_use[static_cast<size_t>(in.id)] >= 0) freed_after[static_cast<size_t>(last_use[static_cast<size_t>(in.id)])] += bytes_of(in);
    live -= freed_after[static_cast<size_t>(in.id)];
  }
  return peak;
}

bool MemoryScheduler::run(HloModule& module) {
  const size_t n = module.instructions.size();
  const int root = module.root;
  std::vector<std::vector<int>> users(n), operands(n);  // operands: each distinct one once
  std::vector<int> remaining_uses(n, 0), pending(n, 0);
  for (const auto& in : module.instructions) {
    if (in.id == root) continue;
    const std::vector<int>& ops = operands[static_cast<size_t>(in.id)] = distinct_operands(in);
    pending[static_cast<size_t>(in.id)] = static_cast<int>(ops.size());
    for (int o : ops) {
      users[static_cast<size_t>(o)].push_back(in.id);
      ++remaining_uses[static_cast<size_t>(o)];
    }
  }
  // The ROOT's operands stay alive to the end: never freed by another user.
  for (int o : module.at(root).operands) remaining_uses[static_cast<size_t>(o)] += 1;

  auto priority = [&](int id) {
    // A multi-output fusion's elements are read at once: its values are made there.
    if (module.at(id).opcode == HloOpcode::kGetTupleElement) return std::numeric_limits<int64_t>::max();
    int64_t freed = 0;
    for (int o : operands[static_cast<size_t>(id)]) {
      if (remaining_uses[static_cast<size_t>(o)] == 1) freed += bytes_of(module.at(o));
    }
    return freed - bytes_of(module.at(id));
  };
  // Max priority first; among equals the smaller id (the original order).
  // Entries go stale when an operand's other users run; a popped entry is
  // checked against its current priority and pushed back when it changed.
  using Entry = std::pair<int64_t, int>;  // (priority, -id)
  std::priority_queue<Entry> ready;
  std::vector<bool> scheduled(n, false);
  std::vector<int> order;
  order.reserve(n);
  for (const auto& in : module.instructions) {
    if (in.opcode != HloOpcode::kParameter) continue;
    order.push_back(in.id);
    scheduled[static_cast<size_t>(in.id)] = true;
    for (int u : users[static_cast<size_t>(in.id)]) --pending[static_cast<size_t>(u)];
  }
  for (const auto& in : module.instructions) {
    if (!scheduled[static_cast<size_t>(in.id)] && in.id != root && pending[static_cast<size_t>(in.id)] == 0) ready.push({priority(in.id), -in.id});
  }
  while (!ready.empty()) {
    const auto [p, negative_id] = ready.top();
    ready.pop();
    const int id = -negative_id;
    if (scheduled[static_cast<size_t>(id)]) continue;
    if (const int64_t now = priority(id); now != p) {
      ready.push({now, negative_id});
      continue;
    }
    order.push_back(id);
    scheduled[static_cast<size_t>(id)] = true;
    for (int o : operands[static_cast<size_t>(id)]) {
      // Down to one user: running that user now frees o, so it moves up.
      if (--remaining_uses[static_cast<size_t>(o)] != 1) continue;
      for (int u : users[static_cast<size_t>(o)]) {
        if (!scheduled[static_cast<size_t>(u)] && pending[static_cast<size_t>(u)] == 0) ready.push({priority(u), -u});
      }
    }
    for (int u : users[static_cast<size_t>(id)]) {
      if (--pending[static_cast<size_t>(u)] == 0) ready.push({priority(u), -u});
    }
  }
  return reorder_module(module, order);
}

}  // namespace lazytrain::hlo
