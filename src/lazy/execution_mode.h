// Execution modes: how soon the ops a thread records run. All four share one
// pipeline (lowering, the compile cache keyed by the graph hash, the disk
// cache, the device's execution queue); they differ only in where the op
// stream is cut into graphs.
//
//   lazy          ops record until mark_step() or a value read (the default,
//                 PyTorch/XLA's): one graph per step, compiled once.
//   debug_eager   each op runs alone as it is called, and the call waits for
//                 it: an execution error (or, with detect_anomaly, a NaN/Inf
//                 result) is thrown by the op itself, naming the user's line.
//   strict_eager  each op runs alone, dispatched to the device's queue without
//                 waiting (one execution in flight, as lazy's steps): a
//                 failure surfaces at the next op or read, naming the line of
//                 the op that failed.
//   fused_eager   the op stream is cut into chunks of fused_eager_chunk_size()
//                 recorded ops (a chunk's graph also holds its inputs and
//                 literals, so it has somewhat more IR nodes), at a value read, at graph_break() and at
//                 mark_step(); each chunk compiles fused, and since the cuts
//                 fall at the same ops every step, chunk graphs hit the cache
//                 from the second step on.
//
// A single-op graph of the eager modes is cached by its hash, which is the
// op's signature (op, attributes, shapes, dtypes of its operands): a second
// call of the same op with other values never compiles. Its compile is a
// quick one (backend::Compiler::compile_quick: no generated kernels).
#pragma once

#include <cstddef>
#include <string>

namespace lazytrain::lazy {

class LazyTensor;

enum class ExecutionMode { kLazy, kDebugEager, kStrictEager, kFusedEager };

// Process-wide (every thread and replica). Switching waits for nothing: ops
// already recorded stay pending until the next cut.
void set_execution_mode(ExecutionMode mode);
ExecutionMode execution_mode();
// "lazy", "debug_eager", "strict_eager", "fused_eager".
std::string execution_mode_name(ExecutionMode mode);
// The mode named `name` (the names above); throws lazytrain::Error naming `what`
// (the flag or call) and the accepted names otherwise.
ExecutionMode parse_execution_mode(const std::string& name, const std::string& what = "set_execution_mode");

// torch.autograd.set_detect_anomaly: every floating-point op result is checked
// for NaN and Inf as soon as it is computed, and the first bad one throws
// lazytrain::Error "[aten::log] produced N NaN/Inf values ... (called from
// file:line)". Checking needs each value, so while it is on every op runs alone
// and waits, as in debug_eager, whatever the mode: a tool for finding the op,
// not for training speed.
void set_detect_anomaly(bool enabled);
bool detect_anomaly();

// Recorded ops per fused_eager chunk (default kDefaultFusedEagerChunkSize: a
// bert-mini training step of about 2400 ops runs as 3 chunks); at least 1.
constexpr size_t kDefaultFusedEagerChunkSize = 1024;
void set_fused_eager_chunk_size(size_t ops);
size_t fused_eager_chunk_size();

// Cuts the op stream here in fused_eager (runs every pending value of this
// thread's current device, as a read does); does nothing in the other modes.
void graph_break();

// Called by the tensor layer for each tensor an op records (tensor/tensor.cpp):
// runs it at once in the eager modes, counts it toward the chunk in fused_eager.
void on_op_recorded(LazyTensor& tensor);
// Called by the GraphExecutor whenever it syncs every pending value of a
// device (mark_step, a read, a chunk): the next chunk starts empty.
void note_graph_cut();

// Sets the mode (and optionally anomaly detection) for a scope, restoring both after.
class ExecutionModeGuard {
 public:
  explicit ExecutionModeGuard(ExecutionMode mode);
  ~ExecutionModeGuard();
  ExecutionModeGuard(const ExecutionModeGuard&) = delete;
  ExecutionModeGuard& operator=(const ExecutionModeGuard&) = delete;

 private:
  ExecutionMode previous_;
};

}  // namespace lazytrain::lazy
