#include "lazy/computation_cache.h"

#include <chrono>
#include <cstdio>
#include <functional>

#include "core/error.h"
#include "lazy/ir.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::lazy {

std::string graph_key(uint64_t graph_hash) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(graph_hash));
  return text;
}

CompileTarget::CompileTarget(std::string backend, std::optional<std::string> fingerprint)
    : backend_(std::move(backend)), fingerprint_(std::move(fingerprint)) {
  hash_ = hash_combine(std::hash<std::string>{}(backend_), fingerprint_ ? std::hash<std::string>{}(*fingerprint_) : 0x6e6f6e65ull);
}

CompileTarget CompileTarget::of(const backend::Compiler& compiler, bool for_disk) {
  return CompileTarget(compiler.name(), for_disk ? compiler.cache_fingerprint() : std::nullopt);
}

ComputationCache::ComputationCache(std::string directory) : directory_(std::move(directory)) {}

std::pair<ComputationCache::Entry, bool> ComputationCache::find_or_insert(uint64_t graph_hash, const CompileTarget& target, const Entry& pending) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = memory_.try_emplace(MemoryKey{graph_hash, target.hash()}, pending);
  return {it->second, inserted};
}

void ComputationCache::erase_pending(uint64_t graph_hash, const CompileTarget& target) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = memory_.find(MemoryKey{graph_hash, target.hash()});
  if (it != memory_.end() && it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) memory_.erase(it);
}

void ComputationCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

size_t ComputationCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return memory_.size();
}

std::vector<std::shared_ptr<backend::Executable>> ComputationCache::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<backend::Executable>> out;
  for (const auto& [key, entry] : memory_) {
    if (entry.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
    try {
      if (auto e = entry.get()) out.push_back(std::move(e));
    } catch (const std::exception&) {  // a failed compile: nothing to read
    }
  }
  return out;
}

std::string ComputationCache::disk_key(const CompileTarget& target, uint64_t graph_hash) {
  return runtime::PersistentCache::make_key({"lazytrain-" + target.backend(), target.fingerprint().value_or(""), graph_key(graph_hash)});
}

void ComputationCache::set_directory(std::string directory) {
  std::lock_guard<std::mutex> lock(mutex_);
  directory_ = std::move(directory);
  disk_.reset();
}

runtime::PersistentCache* ComputationCache::disk() {
  if (directory_.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!disk_) disk_.emplace(directory_);  // (throws Error naming the folder)
  return &*disk_;
}

std::unique_ptr<backend::Executable> ComputationCache::load(backend::Compiler& compiler, const CompileTarget& target, uint64_t graph_hash) {
  if (!target.fingerprint()) return nullptr;
  runtime::PersistentCache* cache = disk();
  if (!cache) return nullptr;
  runtime::TraceMe trace("compile", "persistent cache lookup");
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::string> bytes = cache->get(disk_key(target, graph_hash));
  if (!bytes) return nullptr;
  try {
    std::unique_ptr<backend::Executable> executable = compiler.deserialize(*bytes);
    // Read, checksum, decode and load of a hit: what replaces CompileTime.
    runtime::metric("PersistentCacheLoadTime")
        .add_sample(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
    return executable;
  } catch (const Error& err) {
    std::fprintf(stderr, "warning: unusable compile cache entry for graph %s (%s); recompiling\n", graph_key(graph_hash).c_str(), err.what());
    runtime::counter("PersistentCacheCorrupt").add(1);
    return nullptr;
  }
}

std::unique_ptr<backend::Executable> ComputationCache::load(backend::Compiler& compiler, uint64_t graph_hash) {
  return load(compiler, CompileTarget::of(compiler, has_disk()), graph_hash);
}

bool ComputationCache::store(const CompileTarget& target, uint64_t graph_hash, std::string_view serialized) {
  if (!target.fingerprint() || serialized.empty()) return false;
  runtime::PersistentCache* cache = disk();
  return cache && cache->put(disk_key(target, graph_hash), serialized);
}

std::unique_ptr<backend::Executable> ComputationCache::compile(backend::Compiler& compiler, hlo::HloModule module, uint64_t graph_hash) {
  const CompileTarget target = CompileTarget::of(compiler, has_disk());
  std::string serialized;
  std::unique_ptr<backend::Executable> executable =
      compiler.compile(std::move(module), graph_key(graph_hash), target.fingerprint() ? &serialized : nullptr);
  store(target, graph_hash, serialized);
  return executable;
}

}  // namespace lazytrain::lazy
