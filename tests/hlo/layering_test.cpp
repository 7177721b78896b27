// DESIGN.md's layering rule for hlo/: it stands on core/ alone (a constant is a
// host Literal; passes never call a backend). Every project include under
// src/hlo names core/ or hlo/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

TEST(Layering, HloIncludesOnlyCoreAndHlo) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(LAZYTRAIN_SOURCE_DIR) / "src" / "hlo";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const size_t at = line.find("#include \"");
      if (at == std::string::npos) continue;
      const std::string target = line.substr(at + 10);
      EXPECT_TRUE(target.rfind("core/", 0) == 0 || target.rfind("hlo/", 0) == 0)
          << entry.path().string() << ":" << number << ": " << line;
    }
  }
  EXPECT_GT(files, 10);
}

}  // namespace
