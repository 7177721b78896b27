// Writes a profile (runtime/profiler.h) in the Chrome trace-event format, the
// JSON that chrome://tracing, Perfetto (ui.perfetto.dev) and torch.profiler's
// export_chrome_trace use. Format: "Trace Event Format",
// https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/profiler.h"

namespace lazytrain::runtime {

struct ChromeTrace {
  struct Thread {
    int64_t id = 0;     // "tid": the kernel's thread id
    std::string name;   // the row's name ("thread_name" metadata)
    std::vector<const TraceEvent*> events;
  };
  int64_t pid = 0;
  std::string process_name;
  int64_t start_ns = 0;     // steady clock at start_trace: ts 0
  std::string start_time;   // the same moment, wall clock (ISO 8601), for otherData
  int64_t dropped_events = 0;
  std::vector<Thread> threads;
};

// Streams `trace` to `write` as one JSON object:
//   {"traceEvents": [metadata "M" events (process_name; thread_name and
//    thread_sort_index for each thread: the host's tracing threads first, then
//    device execution threads, then loaders, then the rest), then each
//    thread's "X"/"i" events sorted by begin time (an enclosing event before
//    the ones it encloses)], "displayTimeUnit": "ms",
//    "otherData": {"start_time", "dropped_events", "clock": "steady"}}
// ts and dur are microseconds with three decimals (exact nanoseconds), ts
// counted from `start_ns`; events that began before it are left out.
void write_chrome_trace(const ChromeTrace& trace, const std::function<void(std::string_view)>& write);

}  // namespace lazytrain::runtime
