#include "lazy/recompile_reasons.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/op_location.h"
#include "lazy/graph_executor.h"

namespace lazytrain::lazy {

namespace {

std::string hash_text(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string type_text(const GraphFingerprint::Entry& e) { return xla_name(e.dtype) + shape_str(e.shape); }

std::string at(const GraphFingerprint::Entry& e) {
  const std::string where = location_text(e.where);
  return where.empty() ? "" : " at " + where;
}

bool same(const GraphFingerprint::Entry& a, const GraphFingerprint::Entry& b) {
  return a.local_hash == b.local_hash && a.wiring == b.wiring;
}

// "input 0 (s64[5,128], read by aten::embedding at x.cpp:4) was s64[8,128] in graph H: dimension 0 changed from 8 to 5"
std::string explain_input(const GraphFingerprint& graph, const GraphFingerprint::Entry& now, const GraphFingerprint::Entry& then,
                          const std::string& nearest) {
  std::string text = "input " + std::to_string(now.parameter) + " (" + type_text(now);
  if (now.first_user >= 0) {
    const auto& user = graph.entries[static_cast<size_t>(now.first_user)];
    text += ", read by " + user.op + at(user);
  }
  text += ") was " + type_text(then) + " in graph " + nearest;
  if (now.dtype != then.dtype) return text + ": its dtype changed from " + torch_name(then.dtype) + " to " + torch_name(now.dtype);
  if (now.shape.size() != then.shape.size()) {
    return text + ": its rank changed from " + std::to_string(then.shape.size()) + " to " + std::to_string(now.shape.size());
  }
  for (size_t d = 0; d < now.shape.size(); ++d) {
    if (now.shape[d] != then.shape[d]) {
      text += ": dimension " + std::to_string(d) + " changed from " + std::to_string(then.shape[d]) + " to " + std::to_string(now.shape[d]);
      if (d == 0) text += " (the batch dimension: a short last batch? pad it, or drop it with dataloader_drop_last)";
      return text;
    }
  }
  return text;
}

std::string explain_node(const GraphFingerprint::Entry& now, const GraphFingerprint::Entry& then, size_t index,
                         const std::string& nearest) {
  std::string text = "node " + std::to_string(index) + ": here " + now.op + " " + type_text(now) + at(now) + ", in graph " +
                     nearest + " " + then.op + " " + type_text(then) + at(then);
  if (now.op == then.op && now.shape == then.shape && now.dtype == then.dtype) {
    text += now.local_hash != then.local_hash ? " (other attributes: a number baked into the op?)" : " (other operands)";
  }
  return text;
}

}  // namespace

GraphFingerprint fingerprint(const GraphSignature& sig) {
  GraphFingerprint fp;
  fp.hash = sig.hash;
  fp.entries.reserve(sig.post_order.size());
  std::unordered_map<const Node*, size_t> position;
  int64_t parameters = 0;
  for (const Node* node : sig.post_order) {
    GraphFingerprint::Entry e;
    e.local_hash = node->local_hash();
    for (const NodePtr& o : node->operands()) {
      const size_t p = position.at(o.get());
      e.wiring = hash_combine(e.wiring, p);
      if (fp.entries[p].first_user < 0) fp.entries[p].first_user = static_cast<int64_t>(fp.entries.size());
    }
    e.op = node->op();
    e.shape = node->shape();
    e.dtype = node->dtype();
    e.where = node->location();
    if (node->is_device_data()) e.parameter = parameters++;
    position[node] = fp.entries.size();
    fp.entries.push_back(std::move(e));
  }
  return fp;
}

RecompileExplanation explain_recompile(const GraphFingerprint& graph, const std::deque<GraphFingerprint>& earlier) {
  if (earlier.empty()) return {};
  // The nearest: same size with the fewest differing nodes, else the longest common prefix.
  const GraphFingerprint* nearest = nullptr;
  size_t best_differences = SIZE_MAX, best_prefix = 0;
  for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {  // the most recent wins ties
    const GraphFingerprint& g = *it;
    if (g.entries.size() == graph.entries.size()) {
      size_t differences = 0;
      for (size_t i = 0; i < g.entries.size(); ++i) differences += !same(g.entries[i], graph.entries[i]);
      if (differences < best_differences) {
        best_differences = differences;
        nearest = &g;
      }
    } else if (best_differences == SIZE_MAX) {
      size_t prefix = 0;
      const size_t n = std::min(g.entries.size(), graph.entries.size());
      while (prefix < n && same(g.entries[prefix], graph.entries[prefix])) ++prefix;
      if (!nearest || prefix > best_prefix) {
        best_prefix = prefix;
        nearest = &g;
      }
    }
  }
  const std::string name = hash_text(nearest->hash);
  if (nearest->entries.size() == graph.entries.size()) {
    // An input of another shape or dtype explains everything downstream of it.
    for (size_t i = 0; i < graph.entries.size(); ++i) {
      const auto& now = graph.entries[i];
      const auto& then = nearest->entries[i];
      if (now.parameter >= 0 && then.parameter >= 0 && (now.shape != then.shape || now.dtype != then.dtype)) {
        return {explain_input(graph, now, then, name), true};
      }
    }
    for (size_t i = 0; i < graph.entries.size(); ++i) {
      if (!same(graph.entries[i], nearest->entries[i])) return {explain_node(graph.entries[i], nearest->entries[i], i, name), true};
    }
    return {"the same nodes as graph " + name + " with its outputs in another order", true};
  }
  // Of another size: the same step grown or cut elsewhere when most of it is
  // shared, else another kind of graph altogether.
  const size_t smaller = std::min(graph.entries.size(), nearest->entries.size());
  if (best_prefix * 10 < smaller * 9) {
    return {"a new kind of graph (" + std::to_string(graph.entries.size()) + " nodes; the nearest of the " + std::to_string(earlier.size()) +
                " compiled before, graph " + name + ", has " + std::to_string(nearest->entries.size()) +
                " and they share only their first " + std::to_string(best_prefix) +
                "): another kind of step (evaluation, a gradient-accumulation micro-batch, a fused_eager chunk), not a changed input",
            false};
  }
  std::string text = "it has " + std::to_string(graph.entries.size()) + " nodes where the nearest, graph " + name + ", has " +
                     std::to_string(nearest->entries.size());
  if (best_prefix < smaller) {
    text += "; they part at " + explain_node(graph.entries[best_prefix], nearest->entries[best_prefix], best_prefix, name);
  } else if (best_prefix < graph.entries.size()) {
    const auto& extra = graph.entries[best_prefix];
    text += "; it goes on past the end of that graph with " + extra.op + at(extra) + " (more ops traced before the cut)";
  } else {
    text += "; it stops where that graph goes on (fewer ops traced before the cut)";
  }
  return {text, true};
}

RecompileTracker& RecompileTracker::get() {
  static RecompileTracker tracker;
  return tracker;
}

void RecompileTracker::set_warning_threshold(size_t compiles) {
  std::lock_guard<std::mutex> lock(mutex_);
  warning_threshold_ = compiles;
  warned_ = false;
}

void RecompileTracker::on_compile(const GraphSignature& signature, bool explain) {
  GraphFingerprint fp = fingerprint(signature);
  std::lock_guard<std::mutex> lock(mutex_);
  if (explain && !graphs_.empty()) {
    const RecompileExplanation why = explain_recompile(fp, graphs_);
    const std::string line = "graph " + hash_text(fp.hash) + " (" + std::to_string(fp.entries.size()) + " nodes) compiled: " + why.reason;
    if (debug_) std::fprintf(stderr, "[recompile] %s\n", line.c_str());
    // A new kind of graph is expected now and then; the same step compiling again is what costs.
    explained_ += why.same_step;
    if (why.same_step && !debug_ && !warned_ && warning_threshold_ > 0 && explained_ >= warning_threshold_) {
      warned_ = true;
      std::fprintf(stderr, "warning: [mark_step] a step's graph compiled again %zu times after the first step; the latest: %s (--debug_recompiles prints every reason)\n",
                   explained_, why.reason.c_str());
    }
    reasons_.push_back(line);
    if (reasons_.size() > 256) reasons_.pop_front();
  }
  graphs_.push_back(std::move(fp));
  if (graphs_.size() > kRememberedGraphs) graphs_.pop_front();
}

std::vector<std::string> RecompileTracker::reasons() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {reasons_.begin(), reasons_.end()};
}

void RecompileTracker::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  graphs_.clear();
  reasons_.clear();
  explained_ = 0;
  warned_ = false;
}

}  // namespace lazytrain::lazy
