// The profiler: a timeline of what every lazytrain thread did, written as a
// Chrome trace-event JSON file (the format torch.profiler exports; Perfetto at
// ui.perfetto.dev and chrome://tracing open it).
//
// Turned on by start_trace(dir) (PyTorch/XLA's torch_xla.debug.profiler
// start_trace / stop_trace), by the CLI's --profile_dir DIR, or for any
// process by LAZYTRAIN_PROFILE=DIR (core/env_vars.h: tracing starts at the
// first event and the file is written at exit). stop_trace() writes
//   <dir>/lazytrain-<host>-<pid>.trace.json
// (a second session of one process: lazytrain-<host>-<pid>.2.trace.json, ...).
//
// The file (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
//   {"traceEvents": [
//      {"ph": "M", "name": "process_name", "pid": P, "tid": T, "args": {"name": "lazytrain <host>"}},
//      {"ph": "M", "name": "thread_name", "pid": P, "tid": T, "args": {"name": "device cpu:0 execution"}},
//      {"ph": "X", "name": "fusion.57", "cat": "kernel", "pid": P, "tid": T, "ts": 1234.567, "dur": 89.012,
//       "args": {"shape": "f32[4,128,768]", ...}}, ...],
//    "displayTimeUnit": "ms", "otherData": {...}}
// ts and dur are microseconds (to the nanosecond) since start_trace; pid is
// the process id, tid the kernel's thread id (core/thread_name.h), whose name
// is the row's: "host (trace)" (the main thread), "device cpu:N execution",
// "replica cpu:N (trace)", "loader", "loader (to device)", "loader worker N".
// Within a thread, "X" events nest: a kernel lies inside its execution.
//
// Categories ("cat") and what records them:
//   trace        mark_step (graph hash, IR nodes, outputs) and the host's
//                time since the thread's previous mark_step ("trace (step N)":
//                the ops that built this graph, and any reads in between,
//                whose waits show as "wait" events inside it)
//   compile      a graph's compile or cache lookup (graph hash, cache:
//                memory/disk hit or miss), and inside it lowering, HLO passes,
//                kernel emission and the C++ compiler run
//   execute      each executable run on a device thread (module, graph hash)
//   kernel       each generated fused kernel (HLO name, output shape)
//   dot          each oneDNN dot (name, operand shapes, dtype, oneDNN's
//                implementation, e.g. "brg:avx512_core")
//   interpreter  each instruction run by the interpreter's kernels (gather,
//                scatter, ...), a fused kernel's fallback among them
//   transfer     host<->device copies (bytes)
//   collective   all-reduce, all-gather, reduce-scatter, rendezvous (bytes,
//                replicas)
//   wait         DeviceLockWait, reads that wait for an execution, replicas
//                waiting for each other
//   loader       the DeviceLoader's host batches and their copies
//   governor     the thread governor's windows and thread-count changes
//   python       lazytrain.debug.profiler.Trace scopes (user annotations)
//
// Cost: when no trace is on, a TraceMe costs one relaxed atomic load. When
// on, events go to a buffer of the recording thread (no lock); a thread keeps
// at most kMaxEventsPerThread events a session, later ones are dropped and
// counted (the file's otherData.dropped_events, and a line on stderr).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace lazytrain::runtime {

// An event argument's value ("args" in the file).
using TraceArgValue = std::variant<int64_t, double, std::string>;

// One complete ("X") event: a begin time and a duration on one thread.
struct TraceEvent {
  int64_t begin_ns = 0;     // steady clock (runtime::now_ns())
  int64_t duration_ns = 0;
  const char* category = "";  // a string literal (see the list above)
  std::string name;
  std::vector<std::pair<const char*, TraceArgValue>> args;  // keys: string literals
};

namespace profiler_detail {
enum State : int { kUnknown = 0, kOff = 1, kOn = 2 };
extern std::atomic<int> state;
// Reads LAZYTRAIN_PROFILE once (starting a trace when it names a directory).
bool tracing_from_environment();
void record(TraceEvent&& event);
}  // namespace profiler_detail

// True while a trace is recording: one relaxed atomic load (the first call
// also reads LAZYTRAIN_PROFILE, once per process).
inline bool is_tracing() {
  const int s = profiler_detail::state.load(std::memory_order_relaxed);
  if (s == profiler_detail::kOn) return true;
  if (s == profiler_detail::kOff) return false;
  return profiler_detail::tracing_from_environment();
}

// Starts recording into `log_dir` (created if missing). Throws Error naming
// the directory when it cannot be created or written, or when a trace is
// already recording.
void start_trace(const std::string& log_dir);

// Stops recording and writes the trace file (atomically: core/atomic_file.h);
// returns its path. Events recorded by other threads up to this call are in
// it. Throws Error when no trace is recording or the file cannot be written
// (the trace is stopped either way).
std::string stop_trace();

// The file stop_trace() will write ("" when no trace is recording).
std::string trace_path();

// A trace from construction to destruction, for a command's flag (the CLI's
// --profile_dir): nothing when `log_dir` is empty; else start_trace(log_dir)
// (its errors name `flag`), and at destruction stop_trace(), saying on stderr
// where the file went (or why it could not be written). The flag overrides
// LAZYTRAIN_PROFILE: a trace that variable started goes to `log_dir` instead
// (with the events it already holds).
class ScopedTrace {
 public:
  ScopedTrace(const std::string& log_dir, const std::string& flag);
  ~ScopedTrace();
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

 private:
  bool started_ = false;
};

// Events a thread may keep per session; the rest are dropped and counted.
constexpr int64_t kMaxEventsPerThread = 1'000'000;

// A scoped "X" event, XLA's TraceMe: begins at construction, recorded on
// destruction on the calling thread. Inactive (and free but for the load of
// is_tracing()) when no trace records; name and arguments that cost something
// to make belong behind `if (trace)`:
//   TraceMe trace("kernel");
//   if (trace) trace.name(in.name()).arg("shape", shape_text(in));
class TraceMe {
 public:
  explicit TraceMe(const char* category, std::string_view name = {}) {
    if (is_tracing()) begin(category, name);
  }
  ~TraceMe() {
    if (event_) end();
  }
  TraceMe(const TraceMe&) = delete;
  TraceMe& operator=(const TraceMe&) = delete;

  explicit operator bool() const { return event_.has_value(); }
  // Sets the event's name; each arg() adds one argument. No-ops when inactive.
  TraceMe& name(std::string_view name);
  TraceMe& arg(const char* key, int64_t value);
  TraceMe& arg(const char* key, double value);
  TraceMe& arg(const char* key, std::string value);
  // Ends the event now (the destructor then records nothing more).
  void end();

 private:
  void begin(const char* category, std::string_view name);
  std::optional<TraceEvent> event_;
};

// Records a complete event from `begin_ns` to `end_ns` (steady clock,
// runtime::now_ns()) on the calling thread: a span no scope covered, such as
// the host's tracing between two mark_steps. Nothing when no trace is on or
// `begin_ns` lies before its start.
void record_span(const char* category, std::string name, int64_t begin_ns, int64_t end_ns,
                 std::vector<std::pair<const char*, TraceArgValue>> args = {});

}  // namespace lazytrain::runtime
