// Why a graph missed the compile cache: the difference between it and the
// nearest graph compiled before (PyTorch/XLA's PT_XLA_DEBUG compilation
// analysis, made specific). A new graph after the first step usually means an
// input changed shape (a short last batch, a sequence of another length) or
// the step traced different ops (a Python-level branch, a scalar baked in as a
// constant); the reason names which, with the user's line of the op.
//
// The GraphExecutor fingerprints every graph it compiles (keeping the last
// kRememberedGraphs) and, from the second mark_step of a device on, explains
// each further compile against them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/op_location.h"
#include "core/shape.h"

namespace lazytrain::lazy {

struct GraphSignature;

// What a graph is, node by node, for comparing it with another.
struct GraphFingerprint {
  struct Entry {
    uint64_t local_hash = 0;  // op, shape, dtype, attributes
    uint64_t wiring = 0;      // which earlier entries are its operands
    std::string op;
    Shape shape;
    DType dtype = DType::kFloat32;
    OpLocation where;
    int64_t parameter = -1;   // parameter number of a device-data leaf, else -1
    int64_t first_user = -1;  // index of the first entry reading this one
  };
  uint64_t hash = 0;
  std::vector<Entry> entries;
};
GraphFingerprint fingerprint(const GraphSignature& signature);

// How `graph` differs from the nearest of `earlier` (same node count and
// fewest differing nodes, else the longest common prefix), in one sentence:
//   "input 0 (s64[5, 128], read by aten::embedding at train.cpp:40) was s64[8, 128]
//    in graph 3f..: dimension 0 changed from 8 to 5 (the batch dimension: ...)"
//   "node 17: here aten::mul f32[4] at train.cpp:52, in graph 3f.. aten::add f32[4] at train.cpp:50"
//   "a new kind of graph (987 nodes; ... share only their first 0): another kind of step ..."
// `same_step` is false for that last kind (a graph unlike any before: an
// evaluation, a micro-batch), which is no recompile of a step. Empty when
// `earlier` is empty.
struct RecompileExplanation {
  std::string reason;
  bool same_step = false;
};
RecompileExplanation explain_recompile(const GraphFingerprint& graph, const std::deque<GraphFingerprint>& earlier);

// The executor's record of compiles and their reasons.
class RecompileTracker {
 public:
  static constexpr size_t kRememberedGraphs = 64;
  // One warning line on stderr once a step's graph compiled again this many
  // times after a device's first step (a new kind of graph does not count;
  // --debug_recompiles prints every reason instead).
  static constexpr size_t kDefaultWarningThreshold = 10;

  static RecompileTracker& get();

  // Records a compiled graph; when `explain` (past the device's first step),
  // works out its reason, keeps it (reasons()) and prints it per the settings.
  void on_compile(const GraphSignature& signature, bool explain);

  // --debug_recompiles: print every reason on stderr as "[recompile] ...".
  void set_debug(bool enabled) { debug_ = enabled; }
  bool debug() const { return debug_; }
  void set_warning_threshold(size_t compiles);
  // The reasons found so far in this process (the last 256), oldest first.
  std::vector<std::string> reasons() const;
  // Forgets reasons and fingerprints (tests).
  void clear();

 private:
  mutable std::mutex mutex_;
  std::deque<GraphFingerprint> graphs_;
  std::deque<std::string> reasons_;
  size_t explained_ = 0;
  size_t warning_threshold_ = kDefaultWarningThreshold;
  bool warned_ = false;
  bool debug_ = false;
};

}  // namespace lazytrain::lazy
