#include "runtime/transfer.h"

#include <cstring>

#include "core/error.h"
#include "runtime/metrics.h"
#include "runtime/profiler.h"

namespace lazytrain::runtime {

Buffer transfer_to_device(const void* data, int64_t nbytes, const Shape& shape, DType dtype, const Device& device) {
  TraceMe trace("transfer", "TransferToDevice");
  if (trace) trace.arg("bytes", nbytes).arg("shape", xla_name(dtype) + shape_str(shape)).arg("device", device.to_string());
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
  TraceMe trace("transfer", "TransferFromDevice");
  if (trace) trace.arg("bytes", buffer.nbytes()).arg("shape", xla_name(buffer.dtype()) + shape_str(buffer.shape())).arg("device", buffer.device().to_string());
  Literal out(buffer.shape(), buffer.dtype());
  if (buffer.nbytes() > 0) std::memcpy(out.mutable_raw(), buffer.raw(), static_cast<size_t>(buffer.nbytes()));
  return out;
}

Buffer copy_to_device(const Buffer& buffer, const Device& device) {
  if (buffer.device() == device) return buffer;
  TraceMe trace("transfer", "CopyToDevice");
  if (trace) trace.arg("bytes", buffer.nbytes()).arg("from", buffer.device().to_string()).arg("to", device.to_string());
  Buffer b(buffer.shape(), buffer.dtype(), device);
  if (b.nbytes() > 0) std::memcpy(b.raw(), buffer.raw(), static_cast<size_t>(b.nbytes()));
  return b;
}

}  // namespace lazytrain::runtime
