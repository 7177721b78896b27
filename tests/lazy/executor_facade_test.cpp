// The GraphExecutor is lazy/'s own: the rest of the library, the Python
// bindings, the apps, the tests and the benchmarks call the free functions of
// lazy/lazy_api.h (DESIGN.md, "The execution model"), so the executor's parts
// can change without touching them. A file outside src/lazy/ that names the
// class, or includes its header, fails this test with its path and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lazy/lazy_api.h"

namespace lazytrain {
namespace {

namespace fs = std::filesystem;

std::string files_naming_the_executor(const fs::path& root) {
  const std::string name = std::string("Graph") + "Executor";  // (split: this file does not name it)
  std::string found;
  for (const char* folder : {"src", "apps", "python/src", "tests", "bench"}) {
    const fs::path top = root / folder;
    if (!fs::exists(top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(top)) {
      const fs::path& path = entry.path();
      const std::string ext = path.extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cc")) continue;
      const std::string relative = fs::relative(path, root).generic_string();
      if (relative.rfind("src/lazy/", 0) == 0) continue;
      std::ifstream in(path);
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        // Its header, included (split: this file does not include it).
        if (line.find("#include \"lazy/graph_" + std::string("executor.h\"")) != std::string::npos) {
          found += relative + ":" + std::to_string(number) + ": " + line + "\n";
          continue;
        }
        // The class's name as code: "GraphExecutor::" or "GraphExecutor&" (prose and test names may say it).
        const size_t at = line.find(name);
        if (at == std::string::npos) continue;
        const char next = at + name.size() < line.size() ? line[at + name.size()] : ' ';
        const bool code = next == ':' || next == '&' || next == '*';
        if (code && line.find("//") > at) found += relative + ":" + std::to_string(number) + ": " + line + "\n";
      }
    }
  }
  return found;
}

TEST(ExecutorFacade, NothingOutsideLazyNamesTheGraphExecutor) { EXPECT_EQ(files_naming_the_executor(LAZYTRAIN_SOURCE_DIR), ""); }

TEST(ExecutorFacade, GraphSizeWarningRoundTrips) {
  const size_t before = lazy::graph_size_warning();
  lazy::set_graph_size_warning(123);
  EXPECT_EQ(lazy::graph_size_warning(), 123u);
  lazy::set_graph_size_warning(before);
  EXPECT_EQ(lazy::graph_size_warning(), before);
}

}  // namespace
}  // namespace lazytrain
