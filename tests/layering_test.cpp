// The layering of DESIGN.md §2 as a test: a file under src/<layer>/ may include
// only from the layers that layer stands on. A violation names the file, the
// line and the include.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace lazytrain {
namespace {

namespace fs = std::filesystem;

// What each layer may include (itself included). From DESIGN.md §2: hlo/ and
// runtime/ stand on core/ alone; backends compile HLO for the runtime; the lazy
// graph executor drives a backend; tensors are lazy; nn/optim/models build on
// tensors; data/ is host-only (the DeviceLoader, which moves its batches to a
// device, is distributed/'s, as torch_xla.distributed.parallel_loader); the Trainer takes any Module and a loss, never a
// concrete model (no models/ under train/).
const std::map<std::string, std::set<std::string>>& allowed_includes() {
  static const std::map<std::string, std::set<std::string>> m = [] {
    std::map<std::string, std::set<std::string>> a;
    a["core"] = {"core"};
    a["runtime"] = {"core", "runtime"};
    a["hlo"] = {"core", "hlo"};
    a["backend"] = {"core", "runtime", "hlo", "backend"};
    a["lazy"] = {"core", "runtime", "hlo", "backend", "lazy"};
    a["tensor"] = {"core", "runtime", "hlo", "backend", "lazy", "tensor"};
    const std::set<std::string> below_tensor = a["tensor"];
    a["distributed"] = below_tensor;
    a["distributed"].insert({"data", "distributed"});  // the DeviceLoader moves data's host batches
    a["nn"] = below_tensor;
    a["nn"].insert("nn");
    a["optim"] = below_tensor;
    a["optim"].insert({"nn", "optim"});
    a["models"] = below_tensor;
    a["models"].insert({"nn", "models"});
    a["data"] = {"core", "data"};
    a["train"] = below_tensor;
    a["train"].insert({"nn", "optim", "distributed", "data", "train"});
    return a;
  }();
  return m;
}

// Includes that break the rule today, each removed by a part of issue 9 still
// to land. The test also fails when one of them is gone, so that this list only
// shrinks.
const std::set<std::string>& known_violations() {
  static const std::set<std::string> s = {
      // issue 9 item 1: HLO constants become host Literals; constant folding evaluates in hlo/.
      "src/hlo/hlo_instruction.h: runtime/buffer.h",
      "src/hlo/passes/constant_folding.cpp: backend/registry.h",
  };
  return s;
}

// "src/<layer>/...: <include>" for every include of `source_dir` that its layer may not make.
std::set<std::string> violations(const fs::path& source_dir, std::string* report) {
  const std::regex include_line("^\\s*#\\s*include\\s*\"([a-z_]+)/([^\"]+)\"");
  std::set<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(source_dir / "src")) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), source_dir);
    const std::string layer = rel.begin()->string() == "src" ? std::next(rel.begin())->string() : "";
    auto rule = allowed_includes().find(layer);
    if (rule == allowed_includes().end()) {
      *report += rel.string() + ": layer '" + layer + "' is not in the layer table of " + __FILE__ + "\n";
      continue;
    }
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string to = m[1];
      if (!allowed_includes().count(to) || rule->second.count(to)) continue;  // not a layer (e.g. a system "x/y.h"), or allowed
      const std::string key = rel.string() + ": " + to + "/" + m[2].str();
      found.insert(key);
      if (!known_violations().count(key)) {
        *report += rel.string() + ":" + std::to_string(number) + " includes \"" + to + "/" + m[2].str() + "\", but " + layer +
                   "/ may include only from its own layer and those it stands on\n";
      }
    }
  }
  return found;
}

TEST(Layering, EveryIncludePointsDown) {
  std::string report;
  const std::set<std::string> found = violations(LAZYTRAIN_SOURCE_DIR, &report);
  EXPECT_EQ(report, "");
  for (const std::string& known : known_violations()) {
    EXPECT_TRUE(found.count(known)) << "'" << known << "' is fixed: remove it from known_violations() in " << __FILE__;
  }
}

}  // namespace
}  // namespace lazytrain
