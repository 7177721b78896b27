// Helpers shared by the tests of src/data: where the shared data lives, and
// scratch files that are removed when the test ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <unistd.h>

namespace lazytrain::data::testing {

// $LAZYTRAIN_DATA_DIR (set by ctest), else LAZYTRAIN_SOURCE_DIR/../shared/data.
inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("LAZYTRAIN_DATA_DIR"); env != nullptr && *env != '\0') return env;
#ifdef LAZYTRAIN_SOURCE_DIR
  return std::filesystem::path(LAZYTRAIN_SOURCE_DIR) / ".." / "shared" / "data";
#else
  return std::filesystem::path("..") / "shared" / "data";
#endif
}

inline std::filesystem::path bert_vocab() { return data_dir() / "bert-base-uncased" / "vocab.txt"; }

// A file under the temp directory holding `contents`, deleted on destruction.
class ScratchFile {
 public:
  explicit ScratchFile(std::string_view contents) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("lazytrain_data_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" +
             info->name() + "_" + std::to_string(counter_++) + ".txt");
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace lazytrain::data::testing
