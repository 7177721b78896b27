#include "backend/literal_buffer.h"

#include <cstring>

namespace lazytrain::backend {

runtime::Buffer buffer_from_literal(const Literal& literal) {
  runtime::Buffer out(literal.shape(), literal.dtype());
  if (out.nbytes() > 0) std::memcpy(out.raw(), literal.raw(), static_cast<size_t>(out.nbytes()));
  return out;
}

Literal literal_from_buffer(const runtime::Buffer& buffer) {
  Literal out(buffer.shape(), buffer.dtype());
  if (out.nbytes() > 0) std::memcpy(out.mutable_raw(), buffer.raw(), static_cast<size_t>(out.nbytes()));
  return out;
}

}  // namespace lazytrain::backend
