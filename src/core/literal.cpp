#include "core/literal.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace lazytrain {

namespace {

std::shared_ptr<uint8_t[]> allocate(int64_t nbytes) {
  // One byte at least, so that an empty literal is still defined().
  return std::shared_ptr<uint8_t[]>(new uint8_t[static_cast<size_t>(std::max<int64_t>(nbytes, 1))]());
}

}  // namespace

Literal::Literal(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype), bytes_(allocate(nbytes())) {}

void* Literal::mutable_raw() {
  if (bytes_ && bytes_.use_count() > 1) {
    std::shared_ptr<uint8_t[]> own = allocate(nbytes());
    std::memcpy(own.get(), bytes_.get(), static_cast<size_t>(nbytes()));
    bytes_ = std::move(own);
  }
  return bytes_.get();
}

Literal Literal::reshaped(Shape shape) const {
  check(lazytrain::numel(shape) == numel(), "literal",
        "cannot reshape " + shape_str(shape_) + " to " + shape_str(shape) + ": element counts differ");
  Literal out = *this;
  out.shape_ = std::move(shape);
  return out;
}

bool Literal::operator==(const Literal& other) const {
  if (shape_ != other.shape_ || dtype_ != other.dtype_ || defined() != other.defined()) return false;
  if (bytes_ == other.bytes_ || nbytes() == 0) return true;
  return std::memcmp(raw(), other.raw(), static_cast<size_t>(nbytes())) == 0;
}

}  // namespace lazytrain
