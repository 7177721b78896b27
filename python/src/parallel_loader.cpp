// init_parallel_loader: distributed/parallel_loader.h's DeviceLoader (its
// queues and its two threads) over a Python iterable of batches, behind
// lazytrain.distributed.parallel_loader (PyTorch/XLA's MpDeviceLoader).
//
// Python hands a `fetch` callable that returns the next batch's leaves (numpy
// arrays and lazytrain Tensors, flattened in Python) or None at the end. The
// loader thread takes the GIL only to call it and to copy the arrays into C++
// buffers; the transfer thread makes device tensors from those buffers without
// the GIL; next() waits without the GIL. No Python object is kept by the C++
// threads, and close() (or the destructor) stops both threads with the GIL
// released before it lets go of `fetch`, so they never wait on each other.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "core/error.h"
#include "distributed/parallel_loader.h"
#include "runtime/device.h"
#include "tensor/ops.h"

namespace lazytrain::python {
namespace {

using namespace nb::literals;

// One leaf of a batch on the host: an array's bytes, or a tensor passed through.
struct HostLeaf {
  std::vector<std::byte> bytes;
  Shape shape;
  DType dtype = DType::kFloat32;
  Tensor tensor;  // defined: a lazytrain Tensor of the batch
};
using HostBatch = std::vector<HostLeaf>;
using DeviceBatch = std::vector<Tensor>;
using Loader = distributed::DeviceLoader<HostBatch, DeviceBatch>;

// Needs the GIL.
HostLeaf host_leaf(nb::handle leaf) {
  HostLeaf h;
  if (nb::isinstance<Tensor>(leaf)) {
    h.tensor = nb::cast<Tensor>(leaf);
    return h;
  }
  nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> a;
  if (!nb::try_cast(leaf, a)) {
    throw Error(std::string("[MpDeviceLoader] a batch holds a ") + nb::inst_name(leaf).c_str() +
                ": expected C-contiguous numpy arrays or lazytrain Tensors");
  }
  const std::optional<DType> dtype = dtype_of(a.dtype());
  if (!dtype) throw Error("[MpDeviceLoader] a batch array has an unsupported dtype: expected float32, float16, int32, int64 or bool");
  h.dtype = *dtype;
  for (size_t i = 0; i < a.ndim(); ++i) h.shape.push_back(static_cast<int64_t>(a.shape(i)));
  h.bytes.resize(a.nbytes());
  if (a.nbytes() > 0) std::memcpy(h.bytes.data(), a.data(), a.nbytes());
  return h;
}

// On the transfer thread, its device current, without the GIL.
DeviceBatch to_device(HostBatch&& batch) {
  const runtime::Device device = runtime::current_device();
  DeviceBatch out;
  out.reserve(batch.size());
  for (HostLeaf& leaf : batch) {
    if (leaf.tensor.defined()) {
      out.push_back(leaf.tensor.device() == device ? leaf.tensor : leaf.tensor.to(device));
    } else {
      out.push_back(from_buffer(leaf.bytes.data(), leaf.shape, leaf.dtype));
    }
  }
  return out;
}

class PyDeviceLoader {
 public:
  PyDeviceLoader(nb::object fetch, const runtime::Device& device, int loader_prefetch_size, int device_prefetch_size)
      : fetch_(std::move(fetch)) {
    distributed::DeviceLoaderOptions options;
    options.loader_prefetch_size = loader_prefetch_size;
    options.device_prefetch_size = device_prefetch_size;
    runtime::DeviceGuard guard(device);  // the loader sends its batches to the device current at its construction
    loader_ = std::make_unique<Loader>([this] { return fetch_next(); }, &to_device, options);
  }
  ~PyDeviceLoader() { close(); }
  PyDeviceLoader(const PyDeviceLoader&) = delete;
  PyDeviceLoader& operator=(const PyDeviceLoader&) = delete;

  // mark_step() (from the second call on), then the next batch's tensors;
  // None after the last. Raises what the loader or the transfer raised.
  std::optional<DeviceBatch> next() {
    check(loader_ != nullptr, "MpDeviceLoader", "next() after close()");
    PyWait wait;
    return loader_->next();
  }

  // Stops both threads (each finishes the call it is in) and drops `fetch`.
  void close() {
    if (loader_) {
      nb::gil_scoped_release release;
      loader_.reset();
    }
    fetch_.reset();
  }

 private:
  std::optional<HostBatch> fetch_next() {
    nb::gil_scoped_acquire acquire;
    if (!fetch_.is_valid()) return std::nullopt;
    nb::object leaves;
    try {
      leaves = fetch_();
    } catch (nb::python_error& e) {  // a backstop: the Python side hands its errors over as batches
      throw Error(std::string("[MpDeviceLoader] ") + e.what());
    }
    if (leaves.is_none()) return std::nullopt;
    HostBatch batch;
    for (nb::handle leaf : leaves) batch.push_back(host_leaf(leaf));
    return batch;
  }

  nb::object fetch_;
  std::unique_ptr<Loader> loader_;
};

}  // namespace

void init_parallel_loader(nb::module_& m) {
  nb::class_<PyDeviceLoader>(m, "_DeviceLoader",
                             "distributed/parallel_loader.h's DeviceLoader over a Python fetch(): "
                             "the threads and queues of MpDeviceLoader.")
      .def(nb::init<nb::object, const runtime::Device&, int, int>(), "fetch"_a, "device"_a, "loader_prefetch_size"_a,
           "device_prefetch_size"_a)
      .def("next", &PyDeviceLoader::next,
           "mark_step() (from the second call on), then the next batch's tensors (None after the last); the GIL released.")
      .def("close", &PyDeviceLoader::close, "Stops the threads (the GIL released while they finish).");
}

}  // namespace lazytrain::python
