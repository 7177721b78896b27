// ComputationCache: where a compiled graph is found again (PyTorch/XLA's
// computation cache; DESIGN.md, "The execution model"). Two tiers:
//
//   memory  the executables of this process, by graph hash and compile target;
//           an entry is a shared future, so one compile serves every device
//           (thread) that asks for the graph while it compiles.
//   disk    a folder shared by processes and runs (runtime::PersistentCache:
//           atomic, checksummed entries), keyed by the graph hash, the backend's
//           name and its compile fingerprint (flags, toolchain, build). The
//           backend supplies only the bytes: Compiler::compile(module, key,
//           &serialized) and Compiler::deserialize(bytes).
//
// A backend plugs in by implementing those two and Compiler::cache_fingerprint;
// the executor and this cache are the same for every backend.
//
// Metrics (PyTorch/XLA's and runtime/persistent_cache.h's names): the disk tier
// counts PersistentCacheHit, PersistentCacheMiss, PersistentCacheCorrupt (an
// entry the backend cannot load, which is recompiled), PersistentCacheWriteError,
// and samples PersistentCacheLoadTime (read, checksum and deserialize of a hit).
// CompileTime, CachedCompile and UncachedCompile are the executor's.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/compiler.h"
#include "runtime/persistent_cache.h"

namespace lazytrain::lazy {

// Who compiles a graph: its executable is the same for the same graph and the
// same target. `fingerprint` is Compiler::cache_fingerprint() (nullopt: the
// backend cannot store its executables now, so the disk tier is skipped).
class CompileTarget {
 public:
  CompileTarget() = default;
  CompileTarget(std::string backend, std::optional<std::string> fingerprint);
  // The target of `compiler` (asks it for its fingerprint only when `for_disk`:
  // a backend may run its toolchain to say it).
  static CompileTarget of(const backend::Compiler& compiler, bool for_disk);

  const std::string& backend() const { return backend_; }
  const std::optional<std::string>& fingerprint() const { return fingerprint_; }
  uint64_t hash() const { return hash_; }  // of the backend and the fingerprint

 private:
  std::string backend_;
  std::optional<std::string> fingerprint_;
  uint64_t hash_ = 0;
};

class ComputationCache {
 public:
  using Entry = std::shared_future<std::shared_ptr<backend::Executable>>;

  // `directory`: the disk tier's folder (made at its first use; Error then if
  // it cannot be created or written), or empty for the memory tier alone.
  explicit ComputationCache(std::string directory = "");

  // ---- memory tier ----
  // The entry of (graph_hash, target), or, when there is none, `pending`
  // stored under it: .second tells whether `pending` was stored (the caller
  // then compiles and fulfils it).
  std::pair<Entry, bool> find_or_insert(uint64_t graph_hash, const CompileTarget& target, const Entry& pending);
  // Removes the entry of (graph_hash, target) if it is still pending (a
  // compile that failed: the next ask compiles again).
  void erase_pending(uint64_t graph_hash, const CompileTarget& target);
  // Forgets every entry of the memory tier (not the disk's).
  void clear();
  // How many entries the memory tier holds (compiled or compiling).
  size_t size() const;
  // The executables of the memory tier whose compile finished.
  std::vector<std::shared_ptr<backend::Executable>> ready() const;

  // ---- disk tier ----
  bool has_disk() const { return !directory_.empty(); }
  // Moves the disk tier to `directory` (empty: none); the memory tier stays.
  // For configuration, while nothing compiles.
  void set_directory(std::string directory);
  const std::string& directory() const { return directory_; }
  // The executable stored for (graph_hash, target), made by
  // `compiler.deserialize`; nullptr without a disk tier or a fingerprint, on a
  // miss, or for an entry the backend cannot load (counted as
  // PersistentCacheCorrupt, with a one-line warning; it is recompiled).
  std::unique_ptr<backend::Executable> load(backend::Compiler& compiler, const CompileTarget& target, uint64_t graph_hash);
  // The same for `compiler`'s own target (CompileTarget::of).
  std::unique_ptr<backend::Executable> load(backend::Compiler& compiler, uint64_t graph_hash);
  // Stores `serialized` (from Compiler::compile) for (graph_hash, target).
  // Returns false without a disk tier or a fingerprint, for empty bytes, or
  // when the write failed (never throws for I/O: a cache must not stop training).
  bool store(const CompileTarget& target, uint64_t graph_hash, std::string_view serialized);
  // Compiles `module` with `compiler` (graph_hash names its dumps) and stores
  // it in the disk tier: compile and store() in one call, for tools and tests.
  std::unique_ptr<backend::Executable> compile(backend::Compiler& compiler, hlo::HloModule module, uint64_t graph_hash);

  // The disk entry's key: a digest of the backend, the fingerprint and the graph hash.
  static std::string disk_key(const CompileTarget& target, uint64_t graph_hash);

 private:
  using MemoryKey = std::pair<uint64_t, uint64_t>;  // (graph hash, target hash)
  struct MemoryKeyHash {
    size_t operator()(const MemoryKey& key) const { return static_cast<size_t>(key.first ^ (key.second * 0x9e3779b97f4a7c15ull)); }
  };
  runtime::PersistentCache* disk();

  mutable std::mutex mutex_;  // guards the memory tier and the disk tier's opening
  std::unordered_map<MemoryKey, Entry, MemoryKeyHash> memory_;
  std::string directory_;
  std::optional<runtime::PersistentCache> disk_;  // opened at the first use
};

// A graph hash as the 16 hex digits that name its dumps and disk entries.
std::string graph_key(uint64_t graph_hash);

}  // namespace lazytrain::lazy
