#include "runtime/profiler.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

#include "core/atomic_file.h"
#include "core/env_vars.h"
#include "core/error.h"
#include "core/thread_name.h"
#include "runtime/chrome_trace.h"
#include "runtime/metrics.h"

namespace lazytrain::runtime {

namespace profiler_detail {
std::atomic<int> state{kUnknown};
}  // namespace profiler_detail

namespace {

using profiler_detail::kOff;
using profiler_detail::kOn;
using profiler_detail::kUnknown;

// A thread's events of one session: a chain of fixed-size chunks that only the
// thread appends to. An event is written, then published by a release store of
// its chunk's count, so stop_trace reads every published event while the
// thread goes on recording, without a lock.
struct Chunk {
  static constexpr size_t kEvents = 512;
  TraceEvent events[kEvents];
  std::atomic<size_t> count{0};
  std::atomic<Chunk*> next{nullptr};
};

struct ThreadBuffer {
  ThreadBuffer(uint64_t session_id, int64_t thread) : session(session_id), thread_id(thread), first(new Chunk), tail(first) {}
  ~ThreadBuffer() {
    for (Chunk* c = first; c != nullptr;) {
      Chunk* next = c->next.load(std::memory_order_relaxed);
      delete c;
      c = next;
    }
  }
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;

  // The owning thread only.
  void append(TraceEvent&& event) {
    if (recorded >= kMaxEventsPerThread) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    size_t n = tail->count.load(std::memory_order_relaxed);
    if (n == Chunk::kEvents) {
      Chunk* fresh = new Chunk;
      tail->next.store(fresh, std::memory_order_release);
      tail = fresh;
      n = 0;
    }
    tail->events[n] = std::move(event);
    tail->count.store(n + 1, std::memory_order_release);
    ++recorded;
  }

  // Any thread: the events published so far.
  std::vector<const TraceEvent*> published() const {
    std::vector<const TraceEvent*> out;
    for (const Chunk* c = first; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
      const size_t n = c->count.load(std::memory_order_acquire);
      for (size_t i = 0; i < n; ++i) out.push_back(&c->events[i]);
    }
    return out;
  }

  const uint64_t session;
  const int64_t thread_id;
  Chunk* const first;
  Chunk* tail;            // the owning thread's
  int64_t recorded = 0;   // the owning thread's
  std::atomic<int64_t> dropped{0};
};

struct Session {
  uint64_t id = 0;
  bool from_environment = false;  // started by LAZYTRAIN_PROFILE
  std::string path;
  int64_t start_ns = 0;
  std::string start_time;  // wall clock, ISO 8601 (UTC)
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};

struct Profiler {
  std::mutex mutex;
  std::optional<Session> session;
  std::atomic<uint64_t> session_id{0};  // the recording session's id; 0: none
  std::atomic<int64_t> session_start_ns{0};
  uint64_t sessions_started = 0;
  bool exit_hook = false;
  std::once_flag environment_read;
};

Profiler& profiler() {
  static Profiler* p = new Profiler();  // never destroyed: the exit hook and late threads use it
  return *p;
}

// The calling thread's buffer of the session recording now (its first event
// of a session registers a new one; the old one lives on until then).
thread_local std::shared_ptr<ThreadBuffer> this_thread_buffer;

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string utc_now_iso() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The row name of a thread nobody named: the main thread is the host's tracing thread.
std::string row_name(int64_t thread_id) {
  std::string name = thread_name(thread_id);
  if (!name.empty()) return name;
  if (thread_id == static_cast<int64_t>(::getpid())) return "host (trace)";
  return "thread " + std::to_string(thread_id);
}

// stop_trace(), saying on stderr where the file went; for destructors and exit.
void stop_and_say_where() noexcept {
  if (profiler().session_id.load() == 0) return;
  try {
    const std::string path = stop_trace();
    std::fprintf(stderr, "lazytrain: profile trace written to %s (open it at ui.perfetto.dev or chrome://tracing)\n", path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lazytrain: %s\n", e.what());
  }
}

// Creates `log_dir` if missing; Error naming `origin` and the directory when it cannot be made or written.
void prepare_directory(const std::string& log_dir, const std::string& origin) {
  check(!log_dir.empty(), "profiler", origin + ": expected a directory for the trace file, got an empty path");
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec || !std::filesystem::is_directory(log_dir)) {
    throw Error("[profiler] " + origin + " '" + log_dir + "': cannot create the directory for the trace file (" +
                (ec ? ec.message() : std::string("not a directory")) + ")");
  }
  if (::access(log_dir.c_str(), W_OK) != 0) {
    throw Error("[profiler] " + origin + " '" + log_dir + "': the directory is not writable");
  }
}

// <log_dir>/lazytrain-<host>-<pid>[.<session>].trace.json
std::string trace_file(const std::string& log_dir, uint64_t session) {
  const std::string suffix = session == 1 ? "" : "." + std::to_string(session);
  return (std::filesystem::path(log_dir) / ("lazytrain-" + host_name() + "-" + std::to_string(::getpid()) + suffix + ".trace.json")).string();
}

// Starts a session; `p.mutex` held.
void start_locked(Profiler& p, const std::string& log_dir, const std::string& origin) {
  if (p.session) {
    throw Error("[profiler] " + origin + ": a trace is already recording into '" + p.session->path +
                "'; stop_trace() it first (LAZYTRAIN_PROFILE starts one for the whole process)");
  }
  prepare_directory(log_dir, origin);
  ++p.sessions_started;
  Session s;
  s.id = p.sessions_started;
  s.from_environment = origin == "LAZYTRAIN_PROFILE";
  s.path = trace_file(log_dir, s.id);
  s.start_ns = now_ns();
  s.start_time = utc_now_iso();
  p.session = std::move(s);
  p.session_start_ns.store(p.session->start_ns, std::memory_order_relaxed);
  p.session_id.store(p.session->id, std::memory_order_release);
  profiler_detail::state.store(kOn, std::memory_order_relaxed);
  if (!p.exit_hook) {
    std::atexit(stop_and_say_where);
    p.exit_hook = true;
  }
}

void read_environment_once(Profiler& p) {
  std::call_once(p.environment_read, [&p] {
    std::string dir;
    try {
      dir = environment().profile_dir;
    } catch (const Error&) {
      // A malformed variable is reported where it is used; no trace from here.
    }
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!dir.empty() && !p.session) {
      try {
        start_locked(p, dir, "LAZYTRAIN_PROFILE");
      } catch (const Error& e) {
        // At the first event of some thread: no caller to throw to. Said once, then off.
        std::fprintf(stderr, "error: %s; no trace is recorded\n", e.what());
      }
    }
    if (!p.session) profiler_detail::state.store(kOff, std::memory_order_relaxed);
  });
}

}  // namespace

namespace profiler_detail {

bool tracing_from_environment() {
  read_environment_once(profiler());
  return state.load(std::memory_order_relaxed) == kOn;
}

void record(TraceEvent&& event) {
  Profiler& p = profiler();
  const uint64_t id = p.session_id.load(std::memory_order_acquire);
  if (id == 0) return;  // stopped while the event was open
  std::shared_ptr<ThreadBuffer>& buffer = this_thread_buffer;
  if (!buffer || buffer->session != id) {
    auto fresh = std::make_shared<ThreadBuffer>(id, current_thread_id());
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.session || p.session->id != id) return;
    p.session->buffers.push_back(fresh);
    buffer = std::move(fresh);
  }
  buffer->append(std::move(event));
}

}  // namespace profiler_detail

void start_trace(const std::string& log_dir) {
  Profiler& p = profiler();
  read_environment_once(p);
  std::lock_guard<std::mutex> lock(p.mutex);
  start_locked(p, log_dir, "start_trace");
}

ScopedTrace::ScopedTrace(const std::string& log_dir, const std::string& flag) {
  if (log_dir.empty()) return;
  Profiler& p = profiler();
  read_environment_once(p);
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.session && p.session->from_environment) {
    // The flag overrides LAZYTRAIN_PROFILE: the process's trace goes to its directory instead.
    prepare_directory(log_dir, flag);
    p.session->path = trace_file(log_dir, p.session->id);
    p.session->from_environment = false;
  } else {
    start_locked(p, log_dir, flag);
  }
  started_ = true;
}

ScopedTrace::~ScopedTrace() {
  if (started_) stop_and_say_where();
}

std::string stop_trace() {
  Profiler& p = profiler();
  Session s;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    check(p.session.has_value(), "profiler", "stop_trace: no trace is recording (start_trace(dir), --profile_dir or LAZYTRAIN_PROFILE starts one)");
    s = std::move(*p.session);
    p.session.reset();
    p.session_id.store(0, std::memory_order_release);
    profiler_detail::state.store(kOff, std::memory_order_relaxed);
  }
  ChromeTrace trace;
  trace.pid = static_cast<int64_t>(::getpid());
  trace.process_name = "lazytrain " + host_name();
  trace.start_ns = s.start_ns;
  trace.start_time = s.start_time;
  for (const auto& buffer : s.buffers) {
    ChromeTrace::Thread thread;
    thread.id = buffer->thread_id;
    thread.name = row_name(buffer->thread_id);
    thread.events = buffer->published();
    trace.dropped_events += buffer->dropped.load(std::memory_order_relaxed);
    trace.threads.push_back(std::move(thread));
  }
  if (trace.dropped_events > 0) {
    std::fprintf(stderr, "warning: [profiler] %lld events were dropped (a thread keeps at most %lld a trace): the trace ends early on those threads\n",
                 static_cast<long long>(trace.dropped_events), static_cast<long long>(kMaxEventsPerThread));
  }
  AtomicFileWriter file(s.path, "profiler");
  write_chrome_trace(trace, [&](std::string_view bytes) { file.write(bytes); });
  file.commit();
  return s.path;
}

std::string trace_path() {
  Profiler& p = profiler();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.session ? p.session->path : std::string();
}

void TraceMe::begin(const char* category, std::string_view name) {
  event_.emplace();
  event_->category = category;
  event_->name = name;
  event_->begin_ns = now_ns();
}

void TraceMe::end() {
  if (!event_) return;
  event_->duration_ns = now_ns() - event_->begin_ns;
  profiler_detail::record(std::move(*event_));
  event_.reset();
}

TraceMe& TraceMe::name(std::string_view name) {
  if (event_) event_->name = name;
  return *this;
}

TraceMe& TraceMe::arg(const char* key, int64_t value) {
  if (event_) event_->args.emplace_back(key, value);
  return *this;
}

TraceMe& TraceMe::arg(const char* key, double value) {
  if (event_) event_->args.emplace_back(key, value);
  return *this;
}

TraceMe& TraceMe::arg(const char* key, std::string value) {
  if (event_) event_->args.emplace_back(key, std::move(value));
  return *this;
}

void record_span(const char* category, std::string name, int64_t begin_ns, int64_t end_ns,
                 std::vector<std::pair<const char*, TraceArgValue>> args) {
  if (!is_tracing() || begin_ns < profiler().session_start_ns.load(std::memory_order_relaxed)) return;
  TraceEvent event;
  event.category = category;
  event.name = std::move(name);
  event.begin_ns = begin_ns;
  event.duration_ns = end_ns - begin_ns;
  event.args = std::move(args);
  profiler_detail::record(std::move(event));
}

}  // namespace lazytrain::runtime
