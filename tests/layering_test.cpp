// The layering of DESIGN.md §2 as a test: a file under src/<layer>/ may include
// only from the layers that layer stands on. A violation names the file, the
// line and the include.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace lazytrain {
namespace {

namespace fs = std::filesystem;

// What each layer may include (itself included). From DESIGN.md §2: hlo/ and
// runtime/ stand on core/ alone; backends compile HLO for the runtime; the lazy
// graph executor drives a backend; tensors are lazy; nn/optim/models build on
// tensors; data/ is host-only (the DeviceLoader, which moves its batches to a
// device, is distributed/'s, as torch_xla.distributed.parallel_loader); the Trainer takes any Module and a loss, never a
// concrete model (no models/ under train/); pipelines/ stand on models/, data/
// and train/ (a pipeline loads a model directory and its tokenizer). kernels/
// (the CPU backend's fast host kernels: oneDNN matmul, attention, vector math)
// stands on core/ alone and only backend/ uses it: hlo/, whose evaluator is the
// reference those kernels are compared with, may not.
const std::map<std::string, std::set<std::string>>& allowed_includes() {
  static const std::map<std::string, std::set<std::string>> m = [] {
    std::map<std::string, std::set<std::string>> a;
    a["core"] = {"core"};
    a["kernels"] = {"core", "kernels"};
    a["runtime"] = {"core", "runtime"};
    a["hlo"] = {"core", "hlo"};
    a["backend"] = {"core", "kernels", "runtime", "hlo", "backend"};
    a["lazy"] = {"core", "runtime", "hlo", "backend", "lazy"};
    a["tensor"] = {"core", "runtime", "hlo", "backend", "lazy", "tensor"};
    const std::set<std::string> below_tensor = a["tensor"];
    a["distributed"] = below_tensor;
    a["distributed"].insert({"data", "nn", "optim", "distributed"});  // the DeviceLoader moves data's host batches; optimizer_step steps an optimizer
    a["nn"] = below_tensor;
    a["nn"].insert("nn");
    a["optim"] = below_tensor;
    a["optim"].insert({"nn", "optim"});
    a["models"] = below_tensor;
    a["models"].insert({"nn", "models"});
    a["data"] = {"core", "data"};
    a["train"] = below_tensor;
    a["train"].insert({"nn", "optim", "distributed", "data", "train"});
    // Pipelines (fill-mask) need a model and its tokenizer together, as transformers.pipelines.
    a["pipelines"] = a["train"];
    a["pipelines"].insert({"models", "pipelines"});
    return a;
  }();
  return m;
}

// One line per include under `source_dir`/src that its layer may not make.
std::string violations(const fs::path& source_dir) {
  std::string report;
  const std::regex include_line("^\\s*#\\s*include\\s*\"([a-z_]+)/([^\"]+)\"");
  for (const auto& entry : fs::recursive_directory_iterator(source_dir / "src")) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), source_dir);
    const std::string layer = rel.begin()->string() == "src" ? std::next(rel.begin())->string() : "";
    auto rule = allowed_includes().find(layer);
    if (rule == allowed_includes().end()) {
      report += rel.string() + ": layer '" + layer + "' is not in the layer table of " + __FILE__ + "\n";
      continue;
    }
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string to = m[1];
      if (!allowed_includes().count(to) || rule->second.count(to)) continue;  // not a layer (e.g. a system "x/y.h"), or allowed
      report += rel.string() + ":" + std::to_string(number) + " includes \"" + to + "/" + m[2].str() + "\", but " + layer +
                "/ may include only from its own layer and those it stands on\n";
    }
  }
  return report;
}

TEST(Layering, EveryIncludePointsDown) { EXPECT_EQ(violations(LAZYTRAIN_SOURCE_DIR), ""); }

// The reference shares no kernel with what it checks: every header that the
// HLO evaluator (src/hlo/evaluator/) and the interpreter backend
// (src/backend/interpreter/) include, directly or through other headers of
// src/, is free of kernels/, of the CPU backend (backend/cpu/) and of oneDNN.
// (The link side: tests/backend/interpreter_objects_test.sh reads their object files.)
std::string reference_violations(const fs::path& source_dir) {
  const fs::path src = source_dir / "src";
  const std::regex quoted("^\\s*#\\s*include\\s*\"([^\"]+)\"");
  const std::regex angled("^\\s*#\\s*include\\s*<([^>]+)>");
  auto forbidden = [](const std::string& header) {
    return header.rfind("kernels/", 0) == 0 || header.rfind("backend/cpu/", 0) == 0 || header.find("dnnl") != std::string::npos;
  };
  std::string report;
  std::vector<std::pair<fs::path, std::string>> work;  // a file and the chain of includes that reached it
  for (const char* root : {"hlo/evaluator", "backend/interpreter"}) {
    for (const auto& entry : fs::recursive_directory_iterator(src / root)) {
      if (entry.is_regular_file()) work.emplace_back(entry.path(), fs::relative(entry.path(), source_dir).string());
    }
  }
  std::set<fs::path> seen;
  while (!work.empty()) {
    auto [file, chain] = work.back();
    work.pop_back();
    if (!seen.insert(file).second) continue;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      std::string header;
      if (std::regex_search(line, m, quoted) || std::regex_search(line, m, angled)) header = m[1];
      if (header.empty()) continue;
      if (forbidden(header)) {
        report += chain + " includes \"" + header + "\": the reference may use no kernel of the backends it checks\n";
        continue;
      }
      if (fs::exists(src / header)) work.emplace_back(src / header, chain + " -> " + header);
    }
  }
  return report;
}

TEST(Layering, TheInterpreterAndEvaluatorIncludeNoKernelsAndNoOneDnn) {
  EXPECT_EQ(reference_violations(LAZYTRAIN_SOURCE_DIR), "");
  // The check sees a violation: a header of kernels/ is one.
  const fs::path scratch = fs::temp_directory_path() / ("layering_reference_" + std::to_string(::getpid()));
  fs::create_directories(scratch / "src/hlo/evaluator");
  fs::create_directories(scratch / "src/backend/interpreter");
  fs::create_directories(scratch / "src/core");
  std::ofstream(scratch / "src/hlo/evaluator/dot.cpp") << "#include \"core/helper.h\"\n";
  std::ofstream(scratch / "src/core/helper.h") << "#include \"kernels/onednn_matmul.h\"\n";
  std::ofstream(scratch / "src/backend/interpreter/dot.cpp") << "#include <oneapi/dnnl/dnnl.hpp>\n";
  const std::string report = reference_violations(scratch);
  fs::remove_all(scratch);
  EXPECT_NE(report.find("src/hlo/evaluator/dot.cpp -> core/helper.h includes \"kernels/onednn_matmul.h\""), std::string::npos) << report;
  EXPECT_NE(report.find("src/backend/interpreter/dot.cpp includes \"oneapi/dnnl/dnnl.hpp\""), std::string::npos) << report;
}

}  // namespace
}  // namespace lazytrain
