#include "runtime/transfer.h"

#include <cstring>

#include "core/error.h"
#include "runtime/metrics.h"

namespace lazytrain::runtime {

Buffer transfer_to_device(const void* data, int64_t nbytes, const Shape& shape, DType dtype, const Device& device) {
  ScopedTimer timer("TransferToDeviceTime");
  Buffer b(shape, dtype, device);
  check(nbytes == b.nbytes(), "transfer_to_device",
        std::to_string(nbytes) + " host bytes for " + xla_name(dtype) + shape_str(shape) + ", which needs " + std::to_string(b.nbytes()));
  if (nbytes > 0) std::memcpy(b.raw(), data, static_cast<size_t>(nbytes));
  return b;
}

Buffer transfer_to_device(const Literal& literal, const Device& device) {
  check(literal.defined(), "transfer_to_device", "the literal holds no value");
  return transfer_to_device(literal.raw(), literal.nbytes(), literal.shape(), literal.dtype(), device);
}

Literal transfer_from_device(const Buffer& buffer) {
  check(buffer.defined(), "transfer_from_device", "the buffer holds no value");
  Literal out(buffer.shape(), buffer.dtype());
  if (buffer.nbytes() > 0) std::memcpy(out.mutable_raw(), buffer.raw(), static_cast<size_t>(buffer.nbytes()));
  return out;
}

Buffer copy_to_device(const Buffer& buffer, const Device& device) {
  if (buffer.device() == device) return buffer;
  Buffer b(buffer.shape(), buffer.dtype(), device);
  if (b.nbytes() > 0) std::memcpy(b.raw(), buffer.raw(), static_cast<size_t>(b.nbytes()));
  return b;
}

}  // namespace lazytrain::runtime
