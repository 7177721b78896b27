// Tensors crossing to and from other frameworks (numpy, torch) through DLPack
// without copies where the layout allows (dlpack.cpp), for init_tensor's
// from_dlpack, Tensor.__dlpack__ and _data_ptr.
//
// In: a C-contiguous CPU array whose data is 64-byte aligned (the runtime's
// buffer alignment, runtime/buffer.h) becomes device data over the producer's
// own memory, and keeps the producer alive; any other array is copied. Later
// executions read the array's current bytes (a torch optimizer's param.add_
// between two calls is seen), and the runtime never writes into it. The
// producer must not write the array while an execution reading it runs
// (lazytrain.sync(wait=True) or a read of an output waits for it).
// Counters: DlpackInputAliases; DlpackInputCopies and DlpackInputCopyBytes.
//
// Out: the tensor's materialised device buffer itself (CPU device memory is
// host memory), shared with the consumer while the capsule lives, when no
// other lazytrain value shares its storage; a copy otherwise. Counters:
// DlpackOutputAliases; DlpackOutputCopies and DlpackOutputCopyBytes.
#pragma once

#include <optional>

#include "bindings.h"
#include "runtime/buffer.h"

namespace lazytrain::python {

// Any CPU array a DLPack producer or the buffer protocol hands over (any
// strides and dtype: checked by the import).
using HostArray = nb::ndarray<nb::ro, nb::device::cpu>;

// The DLPack dtype of `dtype` (tensor.cpp).
nb::dlpack::dtype dlpack_dtype(DType dtype);
// The lazytrain dtype of an array's DLPack dtype; TypeError naming `what` for
// one lazytrain has not (float64, uint8, complex, ...) (tensor.cpp).
DType array_dtype(const nb::dlpack::dtype& d, const char* what);

// A tensor with `a`'s values on the current device. copy: None aliases when
// the layout allows and copies otherwise; True always copies; False always
// aliases, BufferError naming the reason when it cannot (not C-contiguous,
// misaligned, empty, or the current device is not a CPU device).
Tensor import_array(const HostArray& a, std::optional<bool> copy);

// A "dltensor" capsule of `t`'s value (syncs and waits). copy: as
// import_array's (False: BufferError when the value must be copied).
nb::object export_dlpack(const Tensor& t, std::optional<bool> copy);

// The device buffer holding `t`'s value (syncs and waits, without the GIL).
runtime::Buffer materialised_buffer(const Tensor& t, const char* what);

}  // namespace lazytrain::python
