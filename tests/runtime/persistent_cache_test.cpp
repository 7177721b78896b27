// Tests for runtime::PersistentCache: round trips, counters, key digests,
// detection of corrupt entries, write failures and concurrent writers/readers
// (threads and forked processes) sharing one directory. Each test uses a fresh
// temp directory, removed afterwards.
#include "core/env_vars.h"
#include "runtime/persistent_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "runtime/metrics.h"

namespace lazytrain::runtime {
namespace {

namespace fs = std::filesystem;

class PersistentCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int sequence = 0;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::temp_directory_path() / ("lazytrain_pcache_" + std::to_string(::getpid()) + "_" +
                                         info->name() + "_" + std::to_string(sequence++)))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (fs::exists(dir_, ec)) {  // give back write permission so everything can be removed
      for (const auto& entry : fs::recursive_directory_iterator(dir_, ec)) {
        if (entry.is_directory()) fs::permissions(entry.path(), fs::perms::owner_all, ec);
      }
      fs::permissions(dir_, fs::perms::owner_all, ec);
    }
    fs::remove_all(dir_, ec);
  }

  // Every regular file under dir_ whose name starts with ".tmp.".
  std::vector<std::string> temp_files() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      if (entry.is_regular_file() && entry.path().filename().string().rfind(".tmp.", 0) == 0) {
        found.push_back(entry.path().string());
      }
    }
    return found;
  }

  static std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::string dir_;
};

// A ~100 KB payload identified by (writer, iteration) in its first 8 bytes;
// the length and the rest depend on both, so a torn or mixed file is caught.
std::string make_payload(uint32_t writer, uint32_t iteration) {
  std::string bytes(100 * 1024 + (writer * 131 + iteration * 7) % 1000, '\0');
  for (int i = 0; i < 4; ++i) {
    bytes[i] = static_cast<char>((writer >> (8 * i)) & 0xFF);
    bytes[4 + i] = static_cast<char>((iteration >> (8 * i)) & 0xFF);
  }
  uint64_t state = (static_cast<uint64_t>(writer) << 32 | iteration) * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 8; i < bytes.size(); ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    bytes[i] = static_cast<char>(state & 0xFF);
  }
  return bytes;
}

bool is_valid_payload(const std::string& bytes, uint32_t writers, uint32_t iterations) {
  if (bytes.size() < 8) return false;
  uint32_t writer = 0, iteration = 0;
  for (int i = 0; i < 4; ++i) {
    writer |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    iteration |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[4 + i])) << (8 * i);
  }
  return writer < writers && iteration < iterations && bytes == make_payload(writer, iteration);
}

TEST_F(PersistentCacheTest, RoundTripsBytes) {
  PersistentCache cache(dir_ + "/nested/cache");  // parents are created
  EXPECT_TRUE(fs::is_directory(dir_ + "/nested/cache"));
  const std::string key = PersistentCache::make_key({"graph-1234", "cpu", "gcc-12.2 -O3"});
  const std::string binary("\x7f" "ELF\0\0\x01\xff", 8);
  const std::string big = make_payload(3, 5);
  ASSERT_TRUE(cache.put(key, binary));
  EXPECT_EQ(cache.path_for(key), dir_ + "/nested/cache/" + key.substr(0, 2) + "/" + key + ".bin");
  EXPECT_TRUE(fs::is_regular_file(cache.path_for(key)));
  EXPECT_EQ(fs::file_size(cache.path_for(key)),
            PersistentCache::kHeaderSize + key.size() + binary.size());
  EXPECT_EQ(cache.get(key), binary);
  ASSERT_TRUE(cache.put(key, big));  // overwrite
  EXPECT_EQ(cache.get(key), big);
  const std::string empty_key = PersistentCache::make_key({"empty"});
  ASSERT_TRUE(cache.put(empty_key, ""));
  EXPECT_EQ(cache.get(empty_key), std::string());
  // A second cache object on the same directory (another process, next run) sees it.
  PersistentCache again(dir_ + "/nested/cache");
  EXPECT_EQ(again.get(key), big);
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(PersistentCacheTest, CountsMissThenHit) {
  PersistentCache cache(dir_);
  const std::string key = PersistentCache::make_key({"g", "cpu"});
  const int64_t hit0 = counter_value("PersistentCacheHit");
  const int64_t miss0 = counter_value("PersistentCacheMiss");
  EXPECT_EQ(cache.get(key), std::nullopt);
  EXPECT_EQ(counter_value("PersistentCacheMiss"), miss0 + 1);
  EXPECT_EQ(counter_value("PersistentCacheHit"), hit0);
  ASSERT_TRUE(cache.put(key, "so-bytes"));
  EXPECT_EQ(cache.get(key), "so-bytes");
  EXPECT_EQ(cache.get(key), "so-bytes");
  EXPECT_EQ(counter_value("PersistentCacheHit"), hit0 + 2);
  EXPECT_EQ(counter_value("PersistentCacheMiss"), miss0 + 1);
}

TEST_F(PersistentCacheTest, MakeKeyIsStableAndSeparatesParts) {
  const std::string key = PersistentCache::make_key({"graph", "cpu", "v1"});
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key, PersistentCache::make_key({"graph", "cpu", "v1"}));
  // Pinned: a change here invalidates every cache directory on disk.
  EXPECT_EQ(PersistentCache::make_key({"ab", "c"}), "0495f5d642268de789c0956437b7f76d");
  EXPECT_NE(PersistentCache::make_key({"ab", "c"}), PersistentCache::make_key({"a", "bc"}));
  EXPECT_NE(PersistentCache::make_key({"abc"}), PersistentCache::make_key({"ab", "c"}));
  EXPECT_NE(PersistentCache::make_key({"a"}), PersistentCache::make_key({"a", ""}));
  EXPECT_NE(PersistentCache::make_key({}), PersistentCache::make_key({""}));
  EXPECT_NE(PersistentCache::make_key({"x", "y"}), PersistentCache::make_key({"y", "x"}));
  // Both halves change when one bit of input does.
  const std::string k1 = PersistentCache::make_key({"graph", "cpu", "v1"});
  const std::string k2 = PersistentCache::make_key({"graph", "cpu", "v3"});
  EXPECT_NE(k1.substr(0, 16), k2.substr(0, 16));
  EXPECT_NE(k1.substr(16), k2.substr(16));
}

TEST_F(PersistentCacheTest, ChecksumIsCrc32c) {
  EXPECT_EQ(PersistentCache::checksum("123456789"), 0xE3069283u);
  EXPECT_EQ(PersistentCache::checksum(""), 0u);
  // Continuing a checksum equals checksumming the concatenation, at every split.
  const std::string data = make_payload(1, 2).substr(0, 41);
  for (size_t split = 0; split <= data.size(); ++split) {
    EXPECT_EQ(PersistentCache::checksum(std::string_view(data).substr(split),
                                        PersistentCache::checksum(data.substr(0, split))),
              PersistentCache::checksum(data))
        << "split " << split;
  }
}

TEST_F(PersistentCacheTest, DetectsCountsAndDeletesCorruptEntries) {
  PersistentCache cache(dir_);
  const std::string key = PersistentCache::make_key({"corrupt"});
  const std::string payload = make_payload(0, 1);
  const std::string path = cache.path_for(key);
  ASSERT_TRUE(cache.put(key, payload));
  const std::string good = read_file(path);
  ASSERT_EQ(good.size(), PersistentCache::kHeaderSize + key.size() + payload.size());

  const size_t payload_at = PersistentCache::kHeaderSize + key.size();
  std::string truncated = good.substr(0, good.size() - 100);
  std::string header_only = good.substr(0, 20);
  std::string flipped = good;
  flipped[payload_at + payload.size() / 2] ^= 0x01;
  std::string wrong_magic = good;
  wrong_magic[0] = 'X';
  std::string wrong_version = good;
  wrong_version[8] = 99;
  std::string wrong_key = good;
  wrong_key[PersistentCache::kHeaderSize] ^= 0x01;
  std::string longer = good + "trailing";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", truncated},         {"header only", header_only},
      {"flipped payload byte", flipped}, {"wrong magic", wrong_magic},
      {"wrong version", wrong_version}, {"wrong key", wrong_key},
      {"trailing bytes", longer},       {"empty file", ""}};
  for (const auto& [name, bytes] : cases) {
    SCOPED_TRACE(name);
    write_file(path, bytes);
    const int64_t corrupt0 = counter_value("PersistentCacheCorrupt");
    const int64_t miss0 = counter_value("PersistentCacheMiss");
    const int64_t hit0 = counter_value("PersistentCacheHit");
    EXPECT_EQ(cache.get(key), std::nullopt);
    EXPECT_EQ(counter_value("PersistentCacheCorrupt"), corrupt0 + 1);
    EXPECT_EQ(counter_value("PersistentCacheMiss"), miss0 + 1);
    EXPECT_FALSE(fs::exists(path)) << "corrupt entry was not deleted";
    // Then it is a plain miss, not corrupt again.
    EXPECT_EQ(cache.get(key), std::nullopt);
    EXPECT_EQ(counter_value("PersistentCacheCorrupt"), corrupt0 + 1);
    EXPECT_EQ(counter_value("PersistentCacheMiss"), miss0 + 2);
    EXPECT_EQ(counter_value("PersistentCacheHit"), hit0);
    // And a fresh put repairs it.
    ASSERT_TRUE(cache.put(key, payload));
    EXPECT_EQ(cache.get(key), payload);
  }
}

TEST_F(PersistentCacheTest, ConstructorNamesAnUncreatableDirectory) {
  fs::create_directories(dir_);
  write_file(dir_ + "/a_file", "x");
  const std::string bad = dir_ + "/a_file/cache";  // a parent is a regular file
  try {
    PersistentCache cache(bad);
    FAIL() << "expected lazytrain::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[PersistentCache] '" + bad + "'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(PersistentCache(dir_ + "/a_file"), Error);  // exists, not a directory
  EXPECT_THROW(PersistentCache(""), Error);
}

TEST_F(PersistentCacheTest, ConstructorRejectsAReadOnlyDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  try {
    PersistentCache cache(dir_);
    FAIL() << "expected lazytrain::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[PersistentCache] '" + dir_ + "': directory is not writable"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PersistentCacheTest, PutIntoReadOnlyDirectoryReturnsFalse) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  PersistentCache cache(dir_);
  const std::string existing = PersistentCache::make_key({"existing"});
  ASSERT_TRUE(cache.put(existing, "old"));
  const auto read_only = fs::perms::owner_read | fs::perms::owner_exec;
  fs::permissions(dir_ + "/" + existing.substr(0, 2), read_only);
  fs::permissions(dir_, read_only);
  const int64_t errors0 = counter_value("PersistentCacheWriteError");
  EXPECT_FALSE(cache.put(existing, "new"));  // folder exists, temp file cannot be created
  const std::string fresh = PersistentCache::make_key({"fresh"});
  EXPECT_FALSE(cache.put(fresh, "new"));  // folder cannot be created
  EXPECT_EQ(counter_value("PersistentCacheWriteError"), errors0 + 2);
  EXPECT_TRUE(temp_files().empty());
  EXPECT_EQ(cache.get(existing), "old");
  EXPECT_EQ(cache.get(fresh), std::nullopt);
}

TEST_F(PersistentCacheTest, PutIntoBlockedFolderReturnsFalse) {
  // Works as root too: the entry's folder name is taken by a regular file.
  PersistentCache cache(dir_);
  const std::string key = PersistentCache::make_key({"blocked"});
  write_file(dir_ + "/" + key.substr(0, 2), "not a folder");
  const int64_t errors0 = counter_value("PersistentCacheWriteError");
  EXPECT_FALSE(cache.put(key, "bytes"));
  EXPECT_EQ(counter_value("PersistentCacheWriteError"), errors0 + 1);
  EXPECT_EQ(cache.get(key), std::nullopt);
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(PersistentCacheTest, RejectsMalformedKeys) {
  PersistentCache cache(dir_);
  EXPECT_THROW(cache.get(""), Error);
  EXPECT_THROW(cache.put("a", "x"), Error);
  EXPECT_THROW(cache.put("../escape", "x"), Error);
  EXPECT_THROW(cache.path_for("a/b"), Error);
  EXPECT_THROW(cache.get(std::string(129, 'a')), Error);
}

// LAZYTRAIN_CACHE_DIR fills CompilerOptions::cache_dir (read once, in core/env_vars);
// a backend opens its cache from there.
TEST_F(PersistentCacheTest, FromEnvironment) {
  auto env_with = [](const char* value) {
    return parse_environment([value](const char* name) { return std::string(name) == "LAZYTRAIN_CACHE_DIR" ? value : nullptr; });
  };
  EXPECT_EQ(env_with(nullptr).cache_dir, "");
  EXPECT_EQ(env_with("").cache_dir, "");
  const std::string dir = dir_ + "/env";
  ASSERT_EQ(env_with(dir.c_str()).cache_dir, dir);
  PersistentCache cache(env_with(dir.c_str()).cache_dir);
  EXPECT_EQ(cache.directory(), dir);
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(cache.put("k0", "v"));
  EXPECT_EQ(cache.get("k0"), "v");
}

constexpr uint32_t kWriters = 4;
constexpr uint32_t kReaders = 2;
constexpr uint32_t kIterations = 200;

// One writer: put then get the shared key. Returns the number of bad reads.
int run_writer(PersistentCache& cache, const std::string& key, uint32_t writer) {
  int bad = 0;
  for (uint32_t i = 0; i < kIterations; ++i) {
    if (!cache.put(key, make_payload(writer, i))) ++bad;
    std::optional<std::string> got = cache.get(key);
    if (got && !is_valid_payload(*got, kWriters, kIterations)) ++bad;
  }
  return bad;
}

// One reader: gets the shared key until `done`; counts torn reads and hits.
int run_reader(PersistentCache& cache, const std::string& key, const std::atomic<bool>& done,
               int min_reads, int* hits_out) {
  int bad = 0, hits = 0;
  for (int n = 0; n < min_reads || !done.load(); ++n) {
    std::optional<std::string> got = cache.get(key);
    if (!got) continue;
    ++hits;
    if (!is_valid_payload(*got, kWriters, kIterations)) ++bad;
  }
  if (hits_out) *hits_out = hits;
  return bad;
}

TEST_F(PersistentCacheTest, ConcurrentThreadsNeverSeeTornEntries) {
  PersistentCache cache(dir_);
  const std::string key = PersistentCache::make_key({"shared", "threads"});
  const int64_t corrupt0 = counter_value("PersistentCacheCorrupt");
  std::atomic<int> bad{0};
  std::atomic<int> reader_hits{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> writers, readers;
  for (uint32_t r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      int hits = 0;
      bad += run_reader(cache, key, done, 50, &hits);
      reader_hits += hits;
    });
  }
  for (uint32_t w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] { bad += run_writer(cache, key, w); });
  }
  for (auto& t : writers) t.join();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reader_hits.load(), 0);
  EXPECT_EQ(counter_value("PersistentCacheCorrupt"), corrupt0);
  std::optional<std::string> last = cache.get(key);
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(is_valid_payload(*last, kWriters, kIterations));
  EXPECT_TRUE(temp_files().empty());
}

TEST_F(PersistentCacheTest, ConcurrentProcessesNeverSeeTornEntries) {
  PersistentCache cache(dir_);
  const std::string key = PersistentCache::make_key({"shared", "processes"});
  ASSERT_EQ(cache.get(key), std::nullopt);  // registers the counters before forking
  const int64_t corrupt0 = counter_value("PersistentCacheCorrupt");
  // Children exit 0 when every read was a valid payload or a miss and no
  // corrupt entry was seen; readers stop when the writers have finished
  // (signalled by a marker file), after at least 50 reads.
  const std::string done_marker = dir_ + "/writers-done";
  std::vector<pid_t> writers, readers;
  for (uint32_t w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int bad = run_writer(cache, key, w);
      ::_exit(bad == 0 && counter_value("PersistentCacheCorrupt") == corrupt0 ? 0 : 1);
    }
    writers.push_back(pid);
  }
  for (uint32_t r = 0; r < kReaders; ++r) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      for (int n = 0; n < 50 || !fs::exists(done_marker); ++n) {
        std::optional<std::string> got = cache.get(key);
        if (got && !is_valid_payload(*got, kWriters, kIterations)) ++bad;
      }
      ::_exit(bad == 0 && counter_value("PersistentCacheCorrupt") == corrupt0 ? 0 : 1);
    }
    readers.push_back(pid);
  }
  auto wait_ok = [](pid_t pid) {
    int status = 0;
    return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  for (pid_t pid : writers) EXPECT_TRUE(wait_ok(pid)) << "writer " << pid;
  write_file(done_marker, "");
  for (pid_t pid : readers) EXPECT_TRUE(wait_ok(pid)) << "reader " << pid;
  std::optional<std::string> last = cache.get(key);
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(is_valid_payload(*last, kWriters, kIterations));
  EXPECT_TRUE(temp_files().empty());
}

}  // namespace
}  // namespace lazytrain::runtime
