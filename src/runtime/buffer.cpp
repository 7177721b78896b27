#include "runtime/buffer.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace lazytrain::runtime {

Buffer::Buffer(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {
  size_t bytes = static_cast<size_t>(nbytes());
  size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw Error("[Buffer] out of memory allocating " + std::to_string(bytes) + " bytes for " + shape_str(shape_));
  storage_ = std::shared_ptr<void>(p, std::free);
}

Buffer Buffer::reshaped(Shape shape) const {
  check(lazytrain::numel(shape) == numel(), "Buffer", "reshape of " + shape_str(shape_) + " to " + shape_str(shape) +
                                                          " changes the number of elements");
  Buffer b = *this;
  b.shape_ = std::move(shape);
  return b;
}

}  // namespace lazytrain::runtime
