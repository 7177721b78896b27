#include "runtime/chrome_trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace lazytrain::runtime {

namespace {

// Nanoseconds as microseconds with exactly three decimals ("1234.567").
std::string microseconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return text;
}

std::string json_string(std::string_view text) { return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string value_text(const TraceArgValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return nlohmann::json(*d).dump();
  return json_string(std::get<std::string>(value));
}

// Rows top to bottom: tracing threads, device threads, loaders, the rest.
int64_t sort_index(const std::string& name) {
  if (name.rfind("host", 0) == 0) return 0;
  if (name.rfind("replica", 0) == 0) return 1;
  if (name.rfind("device", 0) == 0) return 2;
  if (name.rfind("loader", 0) == 0) return 3;
  return 4;
}

}  // namespace

void write_chrome_trace(const ChromeTrace& trace, const std::function<void(std::string_view)>& write) {
  const std::string pid = std::to_string(trace.pid);
  bool first = true;
  auto emit = [&](const std::string& event) {
    write(first ? "\n" : ",\n");
    write(event);
    first = false;
  };
  write("{\"traceEvents\": [");
  emit("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + pid + ", \"tid\": " + pid + ", \"args\": {\"name\": " +
       json_string(trace.process_name) + "}}");
  std::vector<const ChromeTrace::Thread*> threads;
  for (const ChromeTrace::Thread& t : trace.threads) threads.push_back(&t);
  std::stable_sort(threads.begin(), threads.end(), [](const ChromeTrace::Thread* a, const ChromeTrace::Thread* b) {
    return std::make_pair(sort_index(a->name), a->name) < std::make_pair(sort_index(b->name), b->name);
  });
  for (size_t k = 0; k < threads.size(); ++k) {
    const std::string tid = std::to_string(threads[k]->id);
    emit("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid + ", \"tid\": " + tid + ", \"args\": {\"name\": " +
         json_string(threads[k]->name) + "}}");
    emit("{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": " + pid + ", \"tid\": " + tid + ", \"args\": {\"sort_index\": " +
         std::to_string(k) + "}}");
  }
  for (const ChromeTrace::Thread* thread : threads) {
    std::vector<const TraceEvent*> events;
    for (const TraceEvent* e : thread->events) {
      if (e->begin_ns >= trace.start_ns) events.push_back(e);
    }
    // By begin time; of two that begin together, the longer (enclosing) one first.
    std::stable_sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->begin_ns != b->begin_ns ? a->begin_ns < b->begin_ns : a->duration_ns > b->duration_ns;
    });
    const std::string tid = std::to_string(thread->id);
    for (const TraceEvent* e : events) {
      std::string line = "{\"ph\": \"X\", \"name\": " + json_string(e->name) + ", \"cat\": " + json_string(e->category) +
                         ", \"pid\": " + pid + ", \"tid\": " + tid + ", \"ts\": " + microseconds(e->begin_ns - trace.start_ns);
      line += ", \"dur\": " + microseconds(e->duration_ns);
      if (!e->args.empty()) {
        line += ", \"args\": {";
        for (size_t i = 0; i < e->args.size(); ++i) {
          line += (i ? ", " : "") + json_string(e->args[i].first) + ": " + value_text(e->args[i].second);
        }
        line += "}";
      }
      emit(line + "}");
    }
  }
  write("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"start_time\": " + json_string(trace.start_time) +
        ", \"clock\": \"steady\", \"dropped_events\": " + std::to_string(trace.dropped_events) + "}}\n");
}

}  // namespace lazytrain::runtime
