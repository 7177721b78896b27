#include "lazy/execution_mode.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.h"
#include "core/half.h"
#include "core/op_location.h"
#include "lazy/graph_executor.h"
#include "runtime/transfer.h"

namespace lazytrain::lazy {

namespace {
std::atomic<ExecutionMode> mode{ExecutionMode::kLazy};
std::atomic<bool> anomaly{false};
std::atomic<size_t> chunk_size{kDefaultFusedEagerChunkSize};
// Ops recorded on this thread since the last cut (fused_eager).
thread_local size_t nodes_since_cut = 0;

double value_at(const Literal& values, int64_t i) {
  switch (values.dtype()) {
    case DType::kFloat32: return values.data<float>()[i];
    case DType::kBFloat16: return static_cast<float>(values.data<BFloat16>()[i]);
    case DType::kFloat16: return static_cast<float>(values.data<Half>()[i]);
    default: return 0.0;
  }
}

// torch.autograd.detect_anomaly's check, on the result of `op` called at `where`.
void check_finite(LazyTensor& tensor, const std::string& op, const OpLocation& location) {
  if (!is_floating_point(tensor.dtype())) return;
  const Literal values = runtime::transfer_from_device(tensor.buffer());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (!std::isfinite(value_at(values, i))) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return;
  const std::string where = location_text(location);
  throw Error("[" + op + "] produced " + std::to_string(bad) + " NaN/Inf value" + (bad == 1 ? "" : "s") + " of " +
              std::to_string(values.numel()) + " (first at flat index " + std::to_string(first) + ": " +
              std::to_string(value_at(values, first)) + ") with detect_anomaly on" +
              (where.empty() ? std::string() : " (called from " + where + ")"));
}

void run_alone(LazyTensor& tensor, bool wait) {
  const NodePtr node = tensor.ir_value();  // the op's node: its value becomes device data
  GraphExecutor::get().sync({&tensor}, SyncCause{SyncCause::Kind::kEagerOp, node->location()});
  if (!wait) return;
  tensor.buffer();  // throws the execution's error here, at the op
  if (anomaly) check_finite(tensor, node->op(), node->location());
}
}  // namespace

void set_execution_mode(ExecutionMode m) { mode = m; }
ExecutionMode execution_mode() { return mode; }

std::string execution_mode_name(ExecutionMode m) {
  switch (m) {
    case ExecutionMode::kLazy: return "lazy";
    case ExecutionMode::kDebugEager: return "debug_eager";
    case ExecutionMode::kStrictEager: return "strict_eager";
    case ExecutionMode::kFusedEager: return "fused_eager";
  }
  return "lazy";
}

ExecutionMode parse_execution_mode(const std::string& name, const std::string& what) {
  for (ExecutionMode m : {ExecutionMode::kLazy, ExecutionMode::kDebugEager, ExecutionMode::kStrictEager, ExecutionMode::kFusedEager}) {
    if (execution_mode_name(m) == name) return m;
  }
  throw Error("[" + what + "] unknown execution mode '" + name + "'; expected lazy, debug_eager, strict_eager or fused_eager");
}

void set_detect_anomaly(bool enabled) { anomaly = enabled; }
bool detect_anomaly() { return anomaly; }

void set_fused_eager_chunk_size(size_t ops) { chunk_size = std::max<size_t>(1, ops); }
size_t fused_eager_chunk_size() { return chunk_size; }

void graph_break() {
  if (mode != ExecutionMode::kFusedEager) return;
  GraphExecutor::get().sync_live(runtime::current_device(), SyncCause{SyncCause::Kind::kGraphBreak, {}});
}

void note_graph_cut() { nodes_since_cut = 0; }

void on_op_recorded(LazyTensor& tensor) {
  // A literal is not device memory: it joins the graph of whichever op reads it.
  if (!tensor.has_pending_ir() || tensor.ir_value()->device_neutral()) return;
  if (anomaly) return run_alone(tensor, /*wait=*/true);
  switch (mode.load()) {
    case ExecutionMode::kLazy: return;
    case ExecutionMode::kDebugEager: return run_alone(tensor, /*wait=*/true);
    case ExecutionMode::kStrictEager: return run_alone(tensor, /*wait=*/false);
    case ExecutionMode::kFusedEager:
      if (++nodes_since_cut >= chunk_size) {
        GraphExecutor::get().sync_live(tensor.device(), SyncCause{SyncCause::Kind::kFusedChunk, tensor.ir_value()->location()});
      }
      return;
  }
}

ExecutionModeGuard::ExecutionModeGuard(ExecutionMode m) : previous_(mode.exchange(m)) {}
ExecutionModeGuard::~ExecutionModeGuard() { mode = previous_; }

}  // namespace lazytrain::lazy
