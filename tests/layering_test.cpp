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
// concrete model (no models/ under train/); pipelines/ stand on models/, data/
// and train/ (a pipeline loads a model directory and its tokenizer).
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

}  // namespace
}  // namespace lazytrain
