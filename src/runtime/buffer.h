// Buffer: a dense, row-major block of device memory holding one value, on one
// Device.
//
// On CPU devices, device memory is host memory aligned to 64 bytes. Buffers
// share storage (a reshape is a new Buffer over the same bytes); the storage is
// freed when the last Buffer referring to it goes away. Above runtime/, values
// cross the device boundary only through runtime/transfer.h.
//
// External storage: memory the runtime does not own (a DLPack producer's array,
// aliased without a copy: transfer.h alias_host_memory). Its owner may read and
// write it between executions, so the runtime only ever reads it: an external
// Buffer, and every Buffer sharing its storage (reshaped, view), is never
// unique() and never writable(), so no kernel writes over it and it is never
// donated to an executable.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dtype.h"
#include "core/shape.h"
#include "runtime/device.h"

namespace lazytrain::runtime {

class Buffer {
 public:
  Buffer() = default;
  // Allocates uninitialised storage for `shape` elements of `dtype` on `device`
  // (by default the thread's current device: an execution queue's worker runs
  // with its own device current).
  Buffer(Shape shape, DType dtype, Device device = current_device());
  // Same bytes, new shape of equal numel (a bitcast/reshape).
  Buffer reshaped(Shape shape) const;
  // `shape` elements of `dtype` at byte `offset` of this buffer's storage (a
  // slot of an arena, hlo/buffer_assignment.h): the storage lives while any
  // view does. Throws Error when they do not fit.
  Buffer view(int64_t offset, Shape shape, DType dtype) const;
  // A Buffer over external `storage` (see above) holding `shape` x `dtype`:
  // storage.get() must be 64-byte aligned (Error otherwise) and hold
  // numel(shape) * itemsize(dtype) bytes; storage's deleter releases the owner.
  static Buffer external(std::shared_ptr<void> storage, Shape shape, DType dtype, Device device);

  const Shape& shape() const { return shape_; }
  const Device& device() const { return device_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return lazytrain::numel(shape_); }
  int64_t nbytes() const { return numel() * itemsize(dtype_); }
  bool defined() const { return storage_ != nullptr; }
  // True when no other Buffer shares this storage and the runtime owns it
  // (safe to overwrite in place).
  bool unique() const { return !external_ && storage_.use_count() == 1; }
  // False for external storage: the runtime may never write into it, even
  // when the caller donates it (backend/compiler.h Executable::execute).
  bool writable() const { return !external_; }
  bool is_external() const { return external_; }
  // How many Buffers share this storage (0 when undefined).
  long use_count() const { return storage_.use_count(); }

  void* raw() const { return storage_.get(); }
  template <typename T>
  T* data() const { return static_cast<T*>(storage_.get()); }

 private:
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  Device device_;
  std::shared_ptr<void> storage_;
  bool external_ = false;
};

// Counters (runtime/metrics.h): BufferAllocations, every storage a Buffer
// made; BufferCacheMisses, those the caching allocator could not serve from a
// freed block of the same size and took from the system (aligned_alloc).

// Returns the blocks the caching allocator keeps for reuse to the system.
void release_cached_buffers();

}  // namespace lazytrain::runtime
