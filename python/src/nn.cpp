// init_nn: what lazytrain.nn needs from C++ besides ops: parameter
// initialisation from the host generator that manual_seed resets (nn/module.h),
// so a model built in Python draws the same values as one built in C++.
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "nn/module.h"
#include "optim/clip_grad.h"
#include "tensor/host_rand.h"
#include "train/safetensors.h"

namespace lazytrain::python {

using namespace nb::literals;

namespace {

// `values` as a 1-D float32 numpy array that owns them (no copy).
nb::ndarray<nb::numpy, float, nb::ndim<1>> numpy_floats(std::vector<float> values) {
  auto* owned = new std::vector<float>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  size_t shape[1] = {owned->size()};
  return nb::ndarray<nb::numpy, float, nb::ndim<1>>(owned->data(), 1, shape, owner);
}

}  // namespace

void init_nn(nb::module_& m) {
  m.def("_normal_init", &nn::normal_init, "shape"_a, "std"_a, "zero_row"_a = -1,
        "float32 values ~ N(0, std) from the host generator (C++'s nn::normal_init); row zero_row zeroed.");
  m.def("_constant_init", &nn::constant_init, "shape"_a, "value"_a);
  m.def(
      "_host_randn", [](int64_t count) { return numpy_floats(host_randn(count)); },
      "count"_a, "`count` standard-normal float32 values from the host generator, as a numpy array.");
  m.def(
      "_host_rand", [](int64_t count) { return numpy_floats(host_rand(count)); },
      "count"_a, "`count` uniform [0, 1) float32 values from the host generator, as a numpy array.");
  m.def(
      "clip_grad_norm_", [](const std::vector<Tensor>& params, double max_norm) {
        PyOp op;
        return optim::clip_grad_norm_(params, max_norm);
      },
      "parameters"_a, "max_norm"_a,
      "Scales the gradients in place so their global L2 norm is at most max_norm; returns the norm (0-d, lazy).");
  // lazytrain.save / load: safetensors files (train/safetensors.h), written atomically.
  m.def(
      "_save_safetensors",
      [](const std::string& path, const std::map<std::string, Tensor>& tensors, const std::map<std::string, std::string>& metadata) {
        GilRelease release;
        std::map<std::string, train::TensorRecord> records;
        for (const auto& [name, t] : tensors) records[name] = train::to_tensor_record(t.to_literal());
        train::save_safetensors(path, records, metadata);
      },
      "path"_a, "tensors"_a, "metadata"_a);
  m.def(
      "_load_safetensors", [](const std::string& path) {
        std::map<std::string, train::TensorRecord> records;
        {
          GilRelease release;
          records = train::load_safetensors(path);
        }
        std::map<std::string, Tensor> out;
        for (const auto& [name, record] : records) {
          const Literal literal = train::to_literal(record);
          out[name] = from_buffer(literal.raw(), literal.shape(), literal.dtype());
        }
        return out;
      },
      "path"_a);
}

}  // namespace lazytrain::python
