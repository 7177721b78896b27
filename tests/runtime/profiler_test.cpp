// The profiler (runtime/profiler.h): a trace of training steps is a Chrome
// trace-event file with the events the header lists, on named thread rows,
// kernels inside their executions; no trace records nothing; errors name the
// directory.
#include "runtime/profiler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/env_vars.h"
#include "core/error.h"
#include "distributed/spawn.h"
#include "lazy/lazy_api.h"
#include "../support/backend_scope.h"
#include "../support/tiny_data_parallel.h"

namespace lazytrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// This process's trace directories, removed when it exits.
struct TraceRoot {
  fs::path path = fs::temp_directory_path() / ("lazytrain_profiler_test_" + std::to_string(::getpid()));
  ~TraceRoot() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

fs::path fresh_dir(const std::string& name) {
  static const TraceRoot root;
  const fs::path dir = root.path / name;
  fs::remove_all(dir);
  return dir;
}

struct ParsedTrace {
  json doc;
  std::map<int64_t, std::string> thread_names;  // tid -> row name
  std::vector<json> events;                     // the "X" events
  std::string process_name;

  // The events of category `cat` (and name `name` when given).
  std::vector<json> of(const std::string& cat, const std::string& name = "") const {
    std::vector<json> out;
    for (const json& e : events) {
      if (e["cat"] == cat && (name.empty() || e["name"] == name)) out.push_back(e);
    }
    return out;
  }
  std::string row(const json& e) const { return thread_names.at(e["tid"].get<int64_t>()); }
};

// LAZYTRAIN_PROFILE records the whole process; these tests start their own traces.
bool whole_process_traced() { return !environment().profile_dir.empty(); }

ParsedTrace parse_trace(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  ParsedTrace t;
  t.doc = json::parse(in);  // throws on invalid JSON
  EXPECT_TRUE(t.doc.contains("traceEvents") && t.doc["traceEvents"].is_array());
  EXPECT_EQ(t.doc["displayTimeUnit"], "ms");
  EXPECT_EQ(t.doc["otherData"]["dropped_events"], 0);
  for (const json& e : t.doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") t.thread_names[e["tid"].get<int64_t>()] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_name") t.process_name = e["args"]["name"];
    if (e["ph"] == "X") t.events.push_back(e);
  }
  return t;
}

// Tiny BERT training: two steps on this thread (cpu:0), then two on two
// replicas (their gradients all-reduced).
void train_tiny_bert() {
  testing_support::TinyRunOptions options;
  options.steps = 2;
  testing_support::train_tiny_replica(options);
  distributed::spawn([&](int) { testing_support::train_tiny_replica(options); }, 2);
}

TEST(Profiler, TrainingStepsMakeAChromeTrace) {
  if (whole_process_traced()) GTEST_SKIP() << "LAZYTRAIN_PROFILE is set: the whole process is traced";
  lazytrain::testing::CpuBackendScope cpu;
  const fs::path dir = fresh_dir("steps");
  EXPECT_FALSE(runtime::is_tracing());
  runtime::start_trace(dir.string());
  EXPECT_TRUE(runtime::is_tracing());
  const std::string expected_path = runtime::trace_path();
  train_tiny_bert();
  lazy::wait_device_ops();
  const std::string path = runtime::stop_trace();
  EXPECT_FALSE(runtime::is_tracing());
  EXPECT_EQ(path, expected_path);

  // <dir>/lazytrain-<host>-<pid>[.N].trace.json
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::string file = fs::path(path).filename().string();
  EXPECT_EQ(fs::path(path).parent_path(), dir);
  EXPECT_EQ(file.rfind("lazytrain-" + std::string(host) + "-" + std::to_string(::getpid()), 0), 0u) << file;
  EXPECT_EQ(file.substr(file.size() - 11), ".trace.json") << file;

  const ParsedTrace t = parse_trace(path);
  EXPECT_EQ(t.process_name, "lazytrain " + std::string(host));
  ASSERT_GT(t.events.size(), 100u);
  for (const json& e : t.events) {
    for (const char* key : {"ph", "ts", "dur", "pid", "tid", "name", "cat"}) ASSERT_TRUE(e.contains(key)) << key << " missing in " << e;
    EXPECT_EQ(e["pid"], static_cast<int64_t>(::getpid()));
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_TRUE(t.thread_names.count(e["tid"].get<int64_t>())) << "no thread_name for " << e;
  }
  std::set<std::string> rows;
  for (const auto& [tid, name] : t.thread_names) rows.insert(name);
  for (const char* row : {"host (trace)", "replica cpu:0 (trace)", "replica cpu:1 (trace)", "device cpu:0 execution", "device cpu:1 execution"}) {
    EXPECT_TRUE(rows.count(row)) << row;
  }

  // The host's side: each mark_step with its graph, the tracing between them, compiles.
  const std::vector<json> steps = t.of("trace", "mark_step");
  EXPECT_EQ(steps.size(), 6u);  // 2 on the host, 2 on each replica
  for (const json& s : steps) {
    EXPECT_GT(s["args"]["ir_nodes"].get<int64_t>(), 50) << s;
    EXPECT_EQ(s["args"]["graph"].get<std::string>().size(), 16u) << s;
  }
  EXPECT_EQ(t.of("trace", "trace (step 2)").size(), 3u);
  std::multiset<std::string> cache;
  for (const json& c : t.of("compile", "compile")) cache.insert(c["args"]["cache"].get<std::string>());
  EXPECT_GE(cache.count("miss"), 2u);        // the step's graph, and the replicas' (with its all-reduce)
  EXPECT_GE(cache.count("memory hit"), 2u);  // the second steps
  EXPECT_FALSE(t.of("compile", "C++ compiler").empty());

  // The devices' side: executions, and inside them kernels, dots, collectives.
  const std::vector<json> executions = t.of("execute");
  ASSERT_GE(executions.size(), 6u);
  for (const json& e : executions) {
    EXPECT_EQ(e["name"].get<std::string>().rfind("SyncTensorsGraph.", 0), 0u) << e;
    EXPECT_EQ(t.row(e).rfind("device cpu:", 0), 0u) << e;
  }
  const std::vector<json> kernels = t.of("kernel"), dots = t.of("dot"), all_reduces = t.of("collective", "all-reduce");
  ASSERT_FALSE(kernels.empty());
  ASSERT_FALSE(dots.empty());
  ASSERT_FALSE(all_reduces.empty());
  for (const json& k : kernels) {
    EXPECT_EQ(k["name"].get<std::string>().rfind("fusion.", 0), 0u) << k;
    EXPECT_NE(k["args"]["shape"].get<std::string>().find('['), std::string::npos) << k;
    EXPECT_FALSE(k["args"]["ops"].get<std::string>().empty()) << k;
  }
  for (const json& d : dots) {
    EXPECT_FALSE(d["args"]["onednn"].get<std::string>().empty()) << d;
    EXPECT_EQ(d["args"]["dtype"], "f32") << d;
    EXPECT_NE(d["args"]["lhs"].get<std::string>().find("f32["), std::string::npos) << d;
  }
  for (const json& a : all_reduces) {
    EXPECT_EQ(a["args"]["replicas"], 2) << a;
    EXPECT_GT(a["args"]["bytes"].get<int64_t>(), 0) << a;
  }
  // Kernels, dots and collectives nest inside an execution of their thread
  // (the devices of one process run their collectives in place by default:
  // CompilerOptions::async_collectives; tests/python/test_spmd.py traces them
  // on the collective threads).
  constexpr double kRounding = 0.002;  // us: ts and dur are each exact to the nanosecond
  for (const std::vector<json>* inner : {&kernels, &dots, &all_reduces}) {
    for (const json& k : *inner) {
      bool inside = false;
      for (const json& e : executions) {
        inside = inside || (e["tid"] == k["tid"] && k["ts"].get<double>() >= e["ts"].get<double>() - kRounding &&
                            k["ts"].get<double>() + k["dur"].get<double>() <= e["ts"].get<double>() + e["dur"].get<double>() + kRounding);
      }
      EXPECT_TRUE(inside) << k << " lies in no execution of its thread";
    }
  }
  // Host-to-device copies (the batches), and waits: the replicas meeting at their all-reduce.
  const std::vector<json> transfers = t.of("transfer", "TransferToDevice");
  ASSERT_FALSE(transfers.empty());
  for (const json& x : transfers) EXPECT_GT(x["args"]["bytes"].get<int64_t>(), 0) << x;
  EXPECT_FALSE(t.of("wait", "replicas meet").empty());
  EXPECT_FALSE(t.of("transfer", "TransferFromDevice").empty());  // the reads of the parameters
}

TEST(Profiler, NothingIsRecordedWhileNoTraceIs) {
  if (whole_process_traced()) GTEST_SKIP() << "LAZYTRAIN_PROFILE is set: the whole process is traced";
  lazytrain::testing::CpuBackendScope cpu;
  testing_support::TinyRunOptions options;
  options.steps = 2;
  testing_support::train_tiny_replica(options);  // no trace on
  lazy::wait_device_ops();
  runtime::start_trace(fresh_dir("off").string());
  const ParsedTrace t = parse_trace(runtime::stop_trace());
  EXPECT_TRUE(t.events.empty()) << t.events.front();
}

TEST(Profiler, EachTraceOfAProcessGetsItsOwnFile) {
  if (whole_process_traced()) GTEST_SKIP() << "LAZYTRAIN_PROFILE is set: the whole process is traced";
  const fs::path dir = fresh_dir("twice");
  runtime::start_trace(dir.string());
  const std::string first = runtime::stop_trace();
  runtime::start_trace(dir.string());
  const std::string second = runtime::stop_trace();
  EXPECT_NE(first, second);
  EXPECT_TRUE(fs::exists(first));
  EXPECT_TRUE(fs::exists(second));
  EXPECT_NE(second.find(std::to_string(::getpid()) + "."), std::string::npos) << second;  // ...-<pid>.N.trace.json
}

TEST(Profiler, ErrorsNameTheDirectory) {
  if (whole_process_traced()) GTEST_SKIP() << "LAZYTRAIN_PROFILE is set: the whole process is traced";
  const fs::path dir = fresh_dir("errors");
  fs::create_directories(dir);
  const fs::path file = dir / "a_file";
  std::ofstream(file) << "x";
  try {
    runtime::start_trace((file / "sub").string());
    FAIL() << "started a trace under a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[profiler] start_trace '" + (file / "sub").string() + "': cannot create the directory"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(runtime::is_tracing());
  EXPECT_THROW(runtime::stop_trace(), Error);  // none recording
  runtime::start_trace(dir.string());
  try {
    runtime::start_trace(dir.string());
    FAIL() << "started a second trace";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a trace is already recording into '" + runtime::trace_path() + "'"), std::string::npos) << e.what();
  }
  runtime::stop_trace();
  try {
    runtime::ScopedTrace trace((file / "sub").string(), "--profile_dir");
    FAIL() << "started a trace under a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[profiler] --profile_dir '"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lazytrain
