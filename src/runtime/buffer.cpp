#include "runtime/buffer.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "runtime/metrics.h"

namespace lazytrain::runtime {

namespace {

// A caching allocator, as PyTorch's CUDA one: freed blocks are kept by exact
// size (a multiple of 64 bytes) and handed out again, so a training loop that
// makes the same buffers every step (its batch, dropout seeds, kept outputs)
// takes none from the system after the first steps, and a large block never
// pays the kernel's first-touch page faults twice. At most kMaxCachedBytes are
// kept; an allocation the system refuses first returns them all and retries.
class BlockCache {
 public:
  static BlockCache& get() {
    static BlockCache* cache = new BlockCache();  // never destroyed: buffers may outlive statics
    return *cache;
  }

  void* allocate(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= bytes;
        return p;
      }
    }
    static Counter& misses = counter("BufferCacheMisses");
    misses.add(1);
    void* p = std::aligned_alloc(64, bytes);
    if (!p) {
      release_all();
      p = std::aligned_alloc(64, bytes);
    }
    return p;
  }

  void release(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_bytes_ + bytes <= kMaxCachedBytes) {
        free_[bytes].push_back(p);
        cached_bytes_ += bytes;
        return;
      }
    }
    std::free(p);
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
    }
    free_.clear();
    cached_bytes_ = 0;
  }

 private:
  static constexpr size_t kMaxCachedBytes = size_t{8} << 30;
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

}  // namespace

void release_cached_buffers() { BlockCache::get().release_all(); }

Buffer::Buffer(Shape shape, DType dtype, Device device) : shape_(std::move(shape)), dtype_(dtype), device_(std::move(device)) {
  size_t bytes = static_cast<size_t>(nbytes());
  size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  static Counter& allocations = counter("BufferAllocations");
  allocations.add(1);
  void* p = BlockCache::get().allocate(rounded);
  if (!p) throw Error("[Buffer] out of memory allocating " + std::to_string(bytes) + " bytes for " + shape_str(shape_));
  storage_ = std::shared_ptr<void>(p, [rounded](void* q) { BlockCache::get().release(q, rounded); });
}

Buffer Buffer::view(int64_t offset, Shape shape, DType dtype) const {
  const int64_t bytes = lazytrain::numel(shape) * itemsize(dtype);
  check(offset >= 0 && offset + bytes <= nbytes(), "Buffer",
        "a view of " + std::to_string(bytes) + " bytes at " + std::to_string(offset) + " passes the end of " + std::to_string(nbytes()));
  Buffer b;
  b.shape_ = std::move(shape);
  b.dtype_ = dtype;
  b.device_ = device_;
  b.storage_ = std::shared_ptr<void>(storage_, static_cast<uint8_t*>(storage_.get()) + offset);
  b.external_ = external_;
  return b;
}

Buffer Buffer::external(std::shared_ptr<void> storage, Shape shape, DType dtype, Device device) {
  check(storage != nullptr, "Buffer", "external storage is null");
  check(reinterpret_cast<uintptr_t>(storage.get()) % 64 == 0, "Buffer",
        "external storage at " + std::to_string(reinterpret_cast<uintptr_t>(storage.get())) + " is not aligned to 64 bytes");
  Buffer b;
  b.shape_ = std::move(shape);
  b.dtype_ = dtype;
  b.device_ = std::move(device);
  b.storage_ = std::move(storage);
  b.external_ = true;
  return b;
}

Buffer Buffer::reshaped(Shape shape) const {
  check(lazytrain::numel(shape) == numel(), "Buffer", "reshape of " + shape_str(shape_) + " to " + shape_str(shape) +
                                                          " changes the number of elements");
  Buffer b = *this;
  b.shape_ = std::move(shape);
  return b;
}

}  // namespace lazytrain::runtime
