// The device boundary: the only way values move between host and device memory
// above runtime/ (torch_xla's ComputationClient::TransferToServer /
// TransferFromServer). Tensor creation from host data, reads (item(),
// to_vector()), checkpoint saving and loading all go through these.
#pragma once

#include <memory>
#include <vector>

#include "core/literal.h"
#include "runtime/buffer.h"

namespace lazytrain::runtime {

// A new buffer on `device` holding the values of `literal` (same shape and
// dtype). Counts TransferToDeviceTime. Throws Error when the literal has no value.
Buffer transfer_to_device(const Literal& literal, const Device& device);

// The same from `nbytes` host bytes at `data` laid out as `shape` x `dtype`
// (row-major); nbytes must equal numel(shape) * itemsize(dtype) (Error otherwise).
Buffer transfer_to_device(const void* data, int64_t nbytes, const Shape& shape, DType dtype, const Device& device);

// The same from a strided host array: element [i0, i1, ...] of `shape` lies at
// data + sum(ik * byte_strides[k]) (strides may be zero or negative); the
// buffer holds them row-major. Error when byte_strides has not one entry per
// dimension.
Buffer transfer_strided_to_device(const void* data, const Shape& shape, const std::vector<int64_t>& byte_strides, DType dtype,
                                  const Device& device);

// Zero-copy import: a buffer on CPU `device` over `nbytes` host bytes at `data`
// (row-major `shape` x `dtype`) that the runtime does not own. Nothing is
// copied: later reads see what the owner writes there. The buffer is external
// (buffer.h: the runtime never writes into it); `owner` is released when the
// last Buffer sharing the bytes goes, on whichever thread that is. Error when
// `device` is not a CPU device, `data` is not 64-byte aligned, or nbytes is not
// numel(shape) * itemsize(dtype) or is 0.
Buffer alias_host_memory(void* data, int64_t nbytes, const Shape& shape, DType dtype, const Device& device, std::shared_ptr<void> owner);

// A new buffer on `buffer`'s device holding a copy of its values (the runtime
// owns it: never external).
Buffer copy_buffer(const Buffer& buffer);

// The values of a ready device buffer as a host Literal. The caller times the
// read (TransferFromDeviceTime, which in PyTorch/XLA includes waiting for the
// execution that computes the value).
Literal transfer_from_device(const Buffer& buffer);

// The value of `buffer` on another device (a copy; `buffer` itself when it is
// already on `device`).
Buffer copy_to_device(const Buffer& buffer, const Device& device);

}  // namespace lazytrain::runtime
