// Tests for lazy::ComputationCache: the memory tier (hit, miss, pending
// entries), keys that differ by backend and compile fingerprint, the disk tier
// across cache instances, corrupt and truncated entries, and forked processes
// sharing one cache folder. A toy backend whose executable adds a constant
// keeps the children free of threads (fork-safe) and makes a wrong load visible.
#include "lazy/computation_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/metrics.h"

namespace lazytrain::lazy {
namespace {

namespace fs = std::filesystem;

// Adds offset() to each element of argument 0 (f32).
class ToyExecutable : public backend::Executable {
 public:
  explicit ToyExecutable(float offset) : offset_(offset) {}
  std::vector<runtime::Buffer> execute(const std::vector<runtime::Buffer>& arguments) override {
    runtime::Buffer out(arguments.at(0).shape(), DType::kFloat32);
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = arguments[0].data<float>()[i] + offset_;
    return {out};
  }
  const hlo::HloModule& module() const override { return module_; }
  float offset() const { return offset_; }

 private:
  float offset_;
  hlo::HloModule module_;
};

// The offset of a module named "toy.<offset>". Its bytes: "toy <offset>\n"
// and 64 KiB that depend on the offset (a torn or mixed entry fails to load).
class ToyCompiler : public backend::Compiler {
 public:
  ToyCompiler(std::string name, std::optional<std::string> fingerprint) : name_(std::move(name)), fingerprint_(std::move(fingerprint)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<backend::Executable> compile(hlo::HloModule module) override {
    ++compiles;
    return std::make_unique<ToyExecutable>(std::stof(module.name.substr(4)));
  }
  std::unique_ptr<backend::Executable> compile(hlo::HloModule module, const std::string& graph_key, std::string* serialized) override {
    (void)graph_key;
    auto executable = compile(std::move(module));
    if (serialized) *serialized = bytes_of(static_cast<ToyExecutable&>(*executable).offset());
    return executable;
  }
  std::unique_ptr<backend::Executable> deserialize(std::string_view bytes) override {
    const size_t newline = bytes.find('\n');
    check(bytes.substr(0, 4) == "toy " && newline != std::string_view::npos, "toy backend", "not a toy executable");
    const float offset = std::stof(std::string(bytes.substr(4, newline - 4)));
    check(bytes == bytes_of(offset), "toy backend", "a damaged toy executable");
    return std::make_unique<ToyExecutable>(offset);
  }
  std::optional<std::string> cache_fingerprint() const override { return fingerprint_; }

  static std::string bytes_of(float offset) {
    std::string out = "toy " + std::to_string(offset) + "\n";
    for (int i = 0; i < 65536; ++i) out += static_cast<char>('a' + (i * 7 + static_cast<int>(offset)) % 26);
    return out;
  }
  int compiles = 0;

 private:
  std::string name_;
  std::optional<std::string> fingerprint_;
};

hlo::HloModule toy_module(float offset) {
  hlo::HloModule module;
  module.name = "toy." + std::to_string(offset);
  return module;
}

float offset_of(const std::unique_ptr<backend::Executable>& executable) {
  return executable ? static_cast<const ToyExecutable&>(*executable).offset() : -1.0f;
}

class ComputationCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("lazytrain_computation_cache_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

std::shared_ptr<backend::Executable> ready_value(float offset) { return std::make_shared<ToyExecutable>(offset); }

TEST_F(ComputationCacheTest, MemoryTierHitsMissesAndForgetsFailedCompiles) {
  ComputationCache cache;
  const CompileTarget target("toy", "flags");
  std::promise<std::shared_ptr<backend::Executable>> first;
  auto [entry, inserted] = cache.find_or_insert(7, target, first.get_future().share());
  EXPECT_TRUE(inserted);  // a miss: the caller compiles
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.ready().empty());  // still compiling
  std::promise<std::shared_ptr<backend::Executable>> second;
  auto [again, inserted_again] = cache.find_or_insert(7, target, second.get_future().share());
  EXPECT_FALSE(inserted_again);  // a hit: the first asker's entry
  first.set_value(ready_value(1.5f));
  EXPECT_EQ(static_cast<const ToyExecutable&>(*again.get()).offset(), 1.5f);
  ASSERT_EQ(cache.ready().size(), 1u);
  cache.erase_pending(7, target);  // ready: kept
  EXPECT_EQ(cache.size(), 1u);

  std::promise<std::shared_ptr<backend::Executable>> failing;
  EXPECT_TRUE(cache.find_or_insert(8, target, failing.get_future().share()).second);
  cache.erase_pending(8, target);  // a compile that failed: asked again, compiled again
  EXPECT_EQ(cache.size(), 1u);
  std::promise<std::shared_ptr<backend::Executable>> retry;
  EXPECT_TRUE(cache.find_or_insert(8, target, retry.get_future().share()).second);
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
}

TEST_F(ComputationCacheTest, KeysDifferByBackendAndFlags) {
  ComputationCache cache(dir_);
  const CompileTarget a("toy", "-O3"), b("other", "-O3"), c("toy", "-O2");
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_NE(a.hash(), c.hash());
  EXPECT_EQ(a.hash(), CompileTarget("toy", "-O3").hash());
  std::promise<std::shared_ptr<backend::Executable>> pa, pb, pc;
  EXPECT_TRUE(cache.find_or_insert(42, a, pa.get_future().share()).second);
  EXPECT_TRUE(cache.find_or_insert(42, b, pb.get_future().share()).second);
  EXPECT_TRUE(cache.find_or_insert(42, c, pc.get_future().share()).second);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_NE(ComputationCache::disk_key(a, 42), ComputationCache::disk_key(b, 42));
  EXPECT_NE(ComputationCache::disk_key(a, 42), ComputationCache::disk_key(c, 42));
  EXPECT_NE(ComputationCache::disk_key(a, 42), ComputationCache::disk_key(a, 43));
  EXPECT_EQ(ComputationCache::disk_key(a, 42), ComputationCache::disk_key(CompileTarget("toy", "-O3"), 42));

  // On disk: an entry is loaded only by a compiler of the same backend and flags.
  ToyCompiler toy_o3("toy", "-O3"), other_o3("other", "-O3"), toy_o2("toy", "-O2"), toy_unstorable("toy", std::nullopt);
  EXPECT_EQ(offset_of(cache.compile(toy_o3, toy_module(3.0f), 42)), 3.0f);
  EXPECT_EQ(offset_of(cache.load(toy_o3, 42)), 3.0f);
  EXPECT_EQ(cache.load(other_o3, 42), nullptr);
  EXPECT_EQ(cache.load(toy_o2, 42), nullptr);
  EXPECT_EQ(cache.load(toy_unstorable, 42), nullptr);  // no fingerprint: the disk tier is skipped
  EXPECT_FALSE(cache.store(CompileTarget("toy", std::nullopt), 42, ToyCompiler::bytes_of(3.0f)));
}

TEST_F(ComputationCacheTest, DiskTierSurvivesANewCacheInstance) {
  ToyCompiler compiler("toy", "v1");
  {
    ComputationCache first(dir_);
    EXPECT_EQ(offset_of(first.compile(compiler, toy_module(2.5f), 0xabcdef)), 2.5f);
  }
  EXPECT_EQ(compiler.compiles, 1);
  const int64_t hits = runtime::counter_value("PersistentCacheHit");
  ComputationCache second(dir_);
  std::unique_ptr<backend::Executable> loaded = second.load(compiler, 0xabcdef);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(compiler.compiles, 1);  // loaded, not compiled
  EXPECT_EQ(runtime::counter_value("PersistentCacheHit"), hits + 1);
  auto load_time = runtime::metric_data("PersistentCacheLoadTime");
  ASSERT_TRUE(load_time);
  EXPECT_GE(load_time->total_samples, 1);
  runtime::Buffer x({3}, DType::kFloat32);
  for (int i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i);
  std::vector<runtime::Buffer> y = loaded->execute({x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].data<float>()[0], 2.5f);
  EXPECT_EQ(y[0].data<float>()[2], 4.5f);
  EXPECT_EQ(second.load(compiler, 0xabcdee), nullptr);  // another graph: a miss
  EXPECT_EQ(ComputationCache("").load(compiler, 0xabcdef), nullptr);  // no folder: no disk tier
}

TEST_F(ComputationCacheTest, CorruptOrTruncatedEntryIsAMissNotACrash) {
  ComputationCache cache(dir_);
  ToyCompiler compiler("toy", "v1");
  const CompileTarget target = CompileTarget::of(compiler, true);
  // Bytes the backend cannot load (the file itself is intact): counted, recompiled.
  ASSERT_TRUE(cache.store(target, 1, "toy 1.0\nnot the right payload"));
  const int64_t corrupt0 = runtime::counter_value("PersistentCacheCorrupt");
  EXPECT_EQ(cache.load(compiler, target, 1), nullptr);
  EXPECT_EQ(runtime::counter_value("PersistentCacheCorrupt"), corrupt0 + 1);
  ASSERT_TRUE(cache.store(target, 1, "garbage"));
  EXPECT_EQ(cache.load(compiler, target, 1), nullptr);

  // A file cut short (a crash of another writer's disk, a copy that stopped):
  // the checksum rejects it, the entry is deleted, the next store is loaded.
  EXPECT_EQ(offset_of(cache.compile(compiler, toy_module(4.0f), 2)), 4.0f);
  const runtime::PersistentCache files(dir_);
  const std::string path = files.path_for(ComputationCache::disk_key(target, 2));
  ASSERT_TRUE(fs::exists(path));
  fs::resize_file(path, fs::file_size(path) / 2);
  EXPECT_EQ(ComputationCache(dir_).load(compiler, 2), nullptr);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(offset_of(cache.compile(compiler, toy_module(4.0f), 2)), 4.0f);
  EXPECT_EQ(offset_of(ComputationCache(dir_).load(compiler, 2)), 4.0f);
}

// N processes, one folder: each loads a graph every process uses and one of
// its own, compiling and storing on a miss, many times over. Every load is
// the right executable or a miss; no entry is ever torn or mixed.
TEST_F(ComputationCacheTest, ConcurrentProcessesShareOneFolder) {
  constexpr int kProcesses = 6;
  constexpr int kRounds = 25;
  constexpr uint64_t kShared = 0x5a5a;
  { ComputationCache(dir_).load(*std::make_unique<ToyCompiler>("toy", "v1"), kShared); }  // registers the counters before forking
  const int64_t corrupt0 = runtime::counter_value("PersistentCacheCorrupt");
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int wrong = 0;
      try {
        ToyCompiler compiler("toy", "v1");
        for (int round = 0; round < kRounds; ++round) {
          ComputationCache cache(dir_);  // a new instance each round: every hit is the disk's
          for (const auto& [hash, offset] : {std::pair<uint64_t, float>{kShared, 1.0f}, {0x1000 + static_cast<uint64_t>(p), 10.0f + p}}) {
            std::unique_ptr<backend::Executable> executable = cache.load(compiler, hash);
            if (!executable) executable = cache.compile(compiler, toy_module(offset), hash);
            if (offset_of(executable) != offset) ++wrong;
          }
        }
      } catch (...) {
        ++wrong;
      }
      ::_exit(wrong == 0 && runtime::counter_value("PersistentCacheCorrupt") == corrupt0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
  }
  ToyCompiler compiler("toy", "v1");
  ComputationCache cache(dir_);
  EXPECT_EQ(offset_of(cache.load(compiler, kShared)), 1.0f);
  for (int p = 0; p < kProcesses; ++p) EXPECT_EQ(offset_of(cache.load(compiler, 0x1000 + static_cast<uint64_t>(p))), 10.0f + p);
  EXPECT_EQ(compiler.compiles, 0);
  EXPECT_EQ(runtime::counter_value("PersistentCacheCorrupt"), corrupt0);
  // No writer's temporary file is left behind.
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    if (entry.is_regular_file()) {
      EXPECT_EQ(entry.path().extension(), ".bin") << entry.path();
    }
  }
}

}  // namespace
}  // namespace lazytrain::lazy
