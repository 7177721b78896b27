#include "core/literal.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "core/half.h"

namespace lazytrain {

namespace {

std::shared_ptr<uint8_t[]> allocate(int64_t nbytes) {
  // One byte at least, so that an empty literal is still defined().
  return std::shared_ptr<uint8_t[]>(new uint8_t[static_cast<size_t>(std::max<int64_t>(nbytes, 1))]());
}

}  // namespace

Literal::Literal(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype), bytes_(allocate(nbytes())) {}

Literal Literal::scalar(double value, DType dtype) {
  Literal out({}, dtype);
  switch (dtype) {
    case DType::kFloat32: *out.data<float>() = static_cast<float>(value); break;
    case DType::kBFloat16: *out.data<BFloat16>() = BFloat16(static_cast<float>(value)); break;
    case DType::kFloat16: *out.data<Half>() = static_cast<Half>(static_cast<float>(value)); break;
    case DType::kInt32: *out.data<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kInt64: *out.data<int64_t>() = static_cast<int64_t>(value); break;
    case DType::kBool: *out.data<uint8_t>() = value != 0.0; break;
  }
  return out;
}

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

namespace {

template <typename T>
bool all_equal(const Literal& literal, double value) {
  const T* data = literal.data<T>();
  for (int64_t i = 0; i < literal.numel(); ++i) {
    // Integers exactly; floating types (bf16, f16 included) through float.
    double element;
    if constexpr (std::is_integral_v<T>) {
      element = static_cast<double>(data[i]);
    } else {
      element = static_cast<double>(static_cast<float>(data[i]));
    }
    if (element != value) return false;
  }
  return true;
}

}  // namespace

bool all_elements_equal(const Literal& literal, double value) {
  switch (literal.dtype()) {
    case DType::kFloat32: return all_equal<float>(literal, value);
    case DType::kBFloat16: return all_equal<BFloat16>(literal, value);
    case DType::kFloat16: return all_equal<Half>(literal, value);
    case DType::kInt32: return all_equal<int32_t>(literal, value);
    case DType::kInt64: return all_equal<int64_t>(literal, value);
    case DType::kBool: {
      const uint8_t* data = literal.data<uint8_t>();
      for (int64_t i = 0; i < literal.numel(); ++i) {
        if ((data[i] != 0 ? 1.0 : 0.0) != value) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace lazytrain
