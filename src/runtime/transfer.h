// The device boundary: the only way values move between host and device memory
// above runtime/ (torch_xla's ComputationClient::TransferToServer /
// TransferFromServer). Tensor creation from host data, reads (item(),
// to_vector()), checkpoint saving and loading all go through these.
#pragma once

#include "core/literal.h"
#include "runtime/buffer.h"

namespace lazytrain::runtime {

// A new buffer on `device` holding the values of `literal` (same shape and
// dtype). Counts TransferToDeviceTime. Throws Error when the literal has no value.
Buffer transfer_to_device(const Literal& literal, const Device& device);

// The same from `nbytes` host bytes at `data` laid out as `shape` x `dtype`
// (row-major); nbytes must equal numel(shape) * itemsize(dtype) (Error otherwise).
Buffer transfer_to_device(const void* data, int64_t nbytes, const Shape& shape, DType dtype, const Device& device);

// The values of a ready device buffer as a host Literal. The caller times the
// read (TransferFromDeviceTime, which in PyTorch/XLA includes waiting for the
// execution that computes the value).
Literal transfer_from_device(const Buffer& buffer);

// The value of `buffer` on another device (a copy; `buffer` itself when it is
// already on `device`).
Buffer copy_to_device(const Buffer& buffer, const Device& device);

}  // namespace lazytrain::runtime
