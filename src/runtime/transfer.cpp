#include "runtime/transfer.h"

#include <cstdint>
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

namespace {

// Copies the elements of dimensions [dim, ndim) of a strided array into `out`
// row-major; returns the position after the last byte written. A dimension
// whose elements are adjacent (its stride is the item size, innermost) is
// copied as one run.
uint8_t* gather(const uint8_t* src, const Shape& shape, const std::vector<int64_t>& strides, size_t dim, size_t item, uint8_t* out) {
  const int64_t n = shape[dim];
  if (dim + 1 == shape.size()) {
    if (strides[dim] == static_cast<int64_t>(item)) {
      std::memcpy(out, src, static_cast<size_t>(n) * item);
      return out + static_cast<size_t>(n) * item;
    }
    for (int64_t i = 0; i < n; ++i, out += item) std::memcpy(out, src + i * strides[dim], item);
    return out;
  }
  for (int64_t i = 0; i < n; ++i) out = gather(src + i * strides[dim], shape, strides, dim + 1, item, out);
  return out;
}

}  // namespace

Buffer transfer_strided_to_device(const void* data, const Shape& shape, const std::vector<int64_t>& byte_strides, DType dtype,
                                  const Device& device) {
  check(byte_strides.size() == shape.size(), "transfer_strided_to_device",
        std::to_string(byte_strides.size()) + " strides for the " + std::to_string(shape.size()) + " dimensions of " + shape_str(shape));
  TraceMe trace("transfer", "TransferToDevice");
  if (trace) trace.arg("bytes", numel(shape) * itemsize(dtype)).arg("shape", xla_name(dtype) + shape_str(shape)).arg("device", device.to_string());
  ScopedTimer timer("TransferToDeviceTime");
  Buffer b(shape, dtype, device);
  if (b.nbytes() == 0) return b;
  if (shape.empty()) {
    std::memcpy(b.raw(), data, static_cast<size_t>(b.nbytes()));
    return b;
  }
  gather(static_cast<const uint8_t*>(data), shape, byte_strides, 0, static_cast<size_t>(itemsize(dtype)), static_cast<uint8_t*>(b.raw()));
  return b;
}

Buffer alias_host_memory(void* data, int64_t nbytes, const Shape& shape, DType dtype, const Device& device, std::shared_ptr<void> owner) {
  check(device.kind == "cpu", "alias_host_memory", "host memory can only be aliased on a CPU device, not " + device.to_string());
  check(nbytes > 0 && nbytes == numel(shape) * itemsize(dtype), "alias_host_memory",
        std::to_string(nbytes) + " host bytes for " + xla_name(dtype) + shape_str(shape) + " (which needs " +
            std::to_string(numel(shape) * itemsize(dtype)) + ", at least 1)");
  // The aliasing constructor: the Buffer points at `data`, and the last one
  // sharing it releases `owner`.
  return Buffer::external(std::shared_ptr<void>(std::move(owner), data), shape, dtype, device);
}

Buffer copy_buffer(const Buffer& buffer) {
  check(buffer.defined(), "copy_buffer", "the buffer holds no value");
  Buffer b(buffer.shape(), buffer.dtype(), buffer.device());
  if (b.nbytes() > 0) std::memcpy(b.raw(), buffer.raw(), static_cast<size_t>(b.nbytes()));
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
