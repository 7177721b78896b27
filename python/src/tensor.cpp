// init_tensor: lazytrain.Tensor, dtypes and devices, and the ways values
// cross between Python and the device (numpy, the buffer protocol, DLPack).
//
// Every read (item, numpy, a buffer export, __dlpack__) synchronises: it runs
// the tensor's pending graph and waits for it with the GIL released. item,
// numpy and the buffer protocol copy the value into host memory once; the
// array handed to Python owns that copy (writing to it never changes the
// tensor). __dlpack__ shares the device buffer itself where it can, and
// from_dlpack aliases a contiguous, aligned array (dlpack.h); from_numpy and
// tensor() copy their data onto the device once.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.h"
#include "core/error.h"
#include "dlpack.h"
#include "core/half.h"
#include "runtime/device.h"
#include "tensor/tensor.h"

namespace lazytrain::python {

using namespace nb::literals;

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  using nb::dlpack::dtype_code;
  switch (dtype) {
    case DType::kFloat32: return {static_cast<uint8_t>(dtype_code::Float), 32, 1};
    case DType::kBFloat16: return {static_cast<uint8_t>(dtype_code::Bfloat), 16, 1};
    case DType::kFloat16: return {static_cast<uint8_t>(dtype_code::Float), 16, 1};
    case DType::kInt32: return {static_cast<uint8_t>(dtype_code::Int), 32, 1};
    case DType::kInt64: return {static_cast<uint8_t>(dtype_code::Int), 64, 1};
    case DType::kBool: return {static_cast<uint8_t>(dtype_code::Bool), 8, 1};
  }
  return {};
}

namespace {

// The tensor's value on the host: syncs and copies once, without the GIL.
Literal read(const Tensor& t, const char* what) {
  check(t.defined(), what, "use of an undefined tensor");
  PyWait wait;
  (void)what;
  return t.to_literal(*current_op_location());
}

// An array over `literal`'s bytes, owned by a capsule holding the Literal.
template <typename... Framework>
nb::ndarray<Framework...> as_ndarray(Literal literal) {
  auto* owner = new Literal(std::move(literal));
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<Literal*>(p); });
  std::vector<size_t> shape(owner->shape().begin(), owner->shape().end());
  return nb::ndarray<Framework...>(owner->mutable_raw(), shape.size(), shape.data(), keep, nullptr,
                                   dlpack_dtype(owner->dtype()), nb::device::cpu::value);
}

// The dtype and shape of a C-contiguous CPU array; TypeError naming `what` for
// a dtype lazytrain has not.
std::pair<DType, Shape> array_layout(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& a, const char* what);

// Host bytes of a C-contiguous CPU array copied onto the current device.
Tensor from_array(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& a, const char* what) {
  const auto [dtype, shape] = array_layout(a, what);
  return from_buffer(a.data(), shape, dtype);
}

// The value as a Python scalar of the tensor's kind (torch: int for integer
// tensors, bool for bool, float otherwise).
nb::object scalar_object(double value, DType dtype) {
  if (dtype == DType::kBool) return nb::bool_(value != 0.0);
  if (dtype == DType::kInt32 || dtype == DType::kInt64) return nb::int_(static_cast<int64_t>(value));
  return nb::float_(value);
}

nb::object item(const Tensor& t) {
  check(t.defined(), "Tensor.item", "use of an undefined tensor");
  double value = 0;
  {
    PyWait wait;
    value = t.item(*current_op_location());
  }
  return scalar_object(value, t.dtype());
}

// `t.grad = g`: torch's checks (THPVariable_set_grad): a gradient has the
// tensor's dtype, device and size; RuntimeError (LazytrainError) otherwise.
void assign_grad(const Tensor& t, const std::optional<Tensor>& g) {
  if (g) {
    check(g->defined(), "Tensor.grad", "use of an undefined tensor");
    check(g->dtype() == t.dtype(), "Tensor.grad",
          "attempting to assign a gradient with dtype '" + torch_name(g->dtype()) + "' to a tensor with dtype '" + torch_name(t.dtype()) +
              "'. The gradient must match the tensor's dtype");
    check(g->device() == t.device(), "Tensor.grad",
          "attempting to assign a gradient on " + g->device().to_string() + " to a tensor on " + t.device().to_string() +
              ". The gradient must be on the tensor's device");
    check(g->shape() == t.shape(), "Tensor.grad",
          "attempting to assign a gradient of size '" + shape_str(g->shape()) + "' to a tensor of size '" + shape_str(t.shape()) +
              "'. Please ensure that the gradient and the tensor are the same size");
  }
  t.set_grad(g ? *g : Tensor());
}

// ---- the buffer protocol (memoryview(t), numpy.asarray(t) without __array__) ----
const char* buffer_format(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f";
    case DType::kFloat16: return "e";
    case DType::kInt32: return "i";
    case DType::kInt64: return "q";
    case DType::kBool: return "?";
    case DType::kBFloat16: return nullptr;
  }
  return nullptr;
}

struct ExportedBuffer {
  Literal literal;
  std::vector<Py_ssize_t> shape, strides;
};

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  Tensor* t = nullptr;
  if (!nb::try_cast<Tensor*>(nb::handle(self), t) || t == nullptr || !t->defined()) {
    PyErr_SetString(PyExc_BufferError, "lazytrain.Tensor: undefined tensor");
    return -1;
  }
  const char* format = buffer_format(t->dtype());
  if (format == nullptr) {
    PyErr_SetString(PyExc_BufferError, "lazytrain.Tensor: bfloat16 has no buffer format; use t.float() first");
    return -1;
  }
  auto* exported = new ExportedBuffer();
  try {
    exported->literal = read(*t, "Tensor.__buffer__");
  } catch (const std::exception& e) {
    delete exported;
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
  const Shape& shape = exported->literal.shape();
  const Py_ssize_t item = static_cast<Py_ssize_t>(itemsize(t->dtype()));
  exported->shape.assign(shape.begin(), shape.end());
  exported->strides.resize(shape.size());
  Py_ssize_t stride = item;
  for (size_t i = shape.size(); i-- > 0;) {
    exported->strides[i] = stride;
    stride *= static_cast<Py_ssize_t>(shape[i]);
  }
  view->obj = self;
  Py_INCREF(self);
  view->buf = exported->literal.mutable_raw();
  view->len = static_cast<Py_ssize_t>(exported->literal.nbytes());
  view->readonly = 0;
  view->itemsize = item;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
  view->ndim = static_cast<int>(shape.size());
  view->shape = (flags & PyBUF_ND) ? exported->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) ? exported->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = exported;
  return 0;
}

void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<ExportedBuffer*>(view->internal); }

PyType_Slot tensor_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(tensor_releasebuffer)},
    {0, nullptr},
};

}  // namespace

std::optional<DType> dtype_of(const nb::dlpack::dtype& d) {
  using nb::dlpack::dtype_code;
  const auto code = static_cast<dtype_code>(d.code);
  if (d.lanes != 1) return std::nullopt;
  if (code == dtype_code::Float && d.bits == 32) return DType::kFloat32;
  if (code == dtype_code::Float && d.bits == 16) return DType::kFloat16;
  if (code == dtype_code::Bfloat && d.bits == 16) return DType::kBFloat16;
  if (code == dtype_code::Int && d.bits == 32) return DType::kInt32;
  if (code == dtype_code::Int && d.bits == 64) return DType::kInt64;
  if (code == dtype_code::Bool && d.bits == 8) return DType::kBool;
  return std::nullopt;
}

nb::object numpy_from_literal(Literal literal) { return nb::cast(as_ndarray<nb::numpy>(std::move(literal))); }

namespace {

// NumPy's name of a DLPack dtype (float64, uint8, complex64, ...), for errors.
std::string numpy_name(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  std::string kind;
  switch (static_cast<dtype_code>(d.code)) {
    case dtype_code::Int: kind = "int"; break;
    case dtype_code::UInt: kind = "uint"; break;
    case dtype_code::Float: kind = "float"; break;
    case dtype_code::Bfloat: kind = "bfloat"; break;
    case dtype_code::Complex: kind = "complex"; break;
    case dtype_code::Bool: return "bool";
    default: kind = "dlpack type code " + std::to_string(d.code) + " of ";
  }
  std::string name = kind + std::to_string(d.bits);
  if (d.lanes != 1) name += " x" + std::to_string(d.lanes) + " lanes";
  return name;
}

std::pair<DType, Shape> array_layout(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& a, const char* what) {
  const DType dtype = array_dtype(a.dtype(), what);
  Shape shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  return {dtype, shape};
}

}  // namespace

DType array_dtype(const nb::dlpack::dtype& d, const char* what) {
  const std::optional<DType> dtype = dtype_of(d);
  if (!dtype) {
    const bool float64 = d.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Float) && d.bits == 64;
    throw nb::type_error((std::string(what) + ": unsupported dtype " + numpy_name(d) + "; expected float32, bfloat16, float16, int32, int64 or bool" +
                          (float64 ? " (convert it with .astype(np.float32))" : ""))
                             .c_str());
  }
  return *dtype;
}

Literal literal_from_array(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& a, const char* what) {
  const auto [dtype, shape] = array_layout(a, what);
  Literal out(shape, dtype);
  if (out.nbytes() > 0) std::memcpy(out.mutable_raw(), a.data(), static_cast<size_t>(out.nbytes()));
  return out;
}

void init_tensor(nb::module_& m) {
  nb::enum_<DType>(m, "dtype", "Element types (torch.dtype's names: lazytrain.float32, ...)")
      .value("float32", DType::kFloat32)
      .value("bfloat16", DType::kBFloat16)
      .value("float16", DType::kFloat16)
      .value("int32", DType::kInt32)
      .value("int64", DType::kInt64)
      .value("bool", DType::kBool)
      .def_prop_ro("is_floating_point", [](DType d) { return is_floating_point(d); })
      .def_prop_ro("itemsize", [](DType d) { return itemsize(d); })
      .def("__repr__", [](DType d) { return "lazytrain." + torch_name(d); })
      .def("__str__", [](DType d) { return "lazytrain." + torch_name(d); });

  nb::class_<runtime::Device>(m, "device", "A device, as torch.device: 'cpu:0', 'cpu:1' (one per replica)")
      .def("__init__", [](runtime::Device* self, const std::string& text) { new (self) runtime::Device(runtime::parse_device(text)); },
           "device"_a, "Parses 'cpu' or 'cpu:N'; LazytrainError for anything else.")
      .def_prop_ro("type", [](const runtime::Device& d) { return d.kind; })
      .def_prop_ro("index", [](const runtime::Device& d) { return d.ordinal; })
      .def("__str__", &runtime::Device::to_string)
      .def("__repr__", [](const runtime::Device& d) { return "device(type='" + d.kind + "', index=" + std::to_string(d.ordinal) + ")"; })
      .def("__eq__", [](const runtime::Device& a, const runtime::Device& b) { return a == b; })
      .def("__hash__", [](const runtime::Device& d) { return std::hash<std::string>()(d.to_string()); });

  nb::class_<Tensor> tensor(m, "Tensor", nb::type_slots(tensor_slots),
                            "A lazy tensor: ops record a graph; sync() or a read runs it (tensor/tensor.h).");
  tensor.def(nb::init<>())
      .def(nb::init<const Tensor&>(), "other"_a, "A handle to the same tensor (Parameter wraps a tensor this way).")
      .def_prop_ro("shape", [](const Tensor& t) { return nb::tuple(nb::cast(t.shape())); }, "The sizes, as a tuple.")
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("device", &Tensor::device)
      .def_prop_ro("ndim", &Tensor::dim)
      .def_prop_ro("is_leaf", [](const Tensor& t) { return t.impl()->grad_fn == nullptr; },
                   "True for tensors made by the user (and results of ops that need no gradient).")
      .def_prop_ro("_defined", &Tensor::defined)
      .def_prop_rw(
          "requires_grad", &Tensor::requires_grad, [](Tensor& t, bool v) { t.requires_grad_(v); },
          "Whether backward() accumulates a gradient into this leaf.")
      .def_prop_rw(
          "grad", [](const Tensor& t) -> std::optional<Tensor> {
            Tensor g = t.grad();
            return g.defined() ? std::optional<Tensor>(g) : std::nullopt;
          },
          &assign_grad, nb::for_setter(nb::arg("grad").none()),
          "The accumulated gradient (None before backward() or after zero_grad()). Assigning one of another size, "
          "dtype or device raises RuntimeError, as torch.")
      .def_prop_rw(
          "data", [](const Tensor& t) { return t.detach(); },
          [](const Tensor& t, const Tensor& v) { t.set_data(v); },
          "The value without autograd history; assigning replaces the value in place (same shape and dtype).")
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("requires_grad_", [](Tensor& t, bool v) -> Tensor& { return t.requires_grad_(v); }, "requires_grad"_a = true,
           nb::rv_policy::reference)
      .def("detach", &Tensor::detach, "The same value, no autograd history (no copy).")
      .def(
          "backward",
          [](const Tensor& t, std::optional<Tensor> gradient) {
            PyOp op;
            t.backward(gradient ? *gradient : Tensor());
          },
          "gradient"_a = nb::none(),
          "Accumulates gradients into the leaves (records the backward graph; nothing runs until sync()).")
      .def("item", &item, "The value of a one-element tensor as a Python number (synchronises).")
      .def("_is_same", &Tensor::is_same)
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl().get()); })
      .def(
          "numpy", [](const Tensor& t) {
            if (t.dtype() == DType::kBFloat16) {
              throw nb::type_error("Got unsupported ScalarType BFloat16: numpy has no bfloat16; use t.float().numpy()");
            }
            return as_ndarray<nb::numpy>(read(t, "Tensor.numpy"));
          },
          "The value as a numpy array (synchronises; the array owns a host copy).")
      .def(
          "__dlpack__",
          [](const Tensor& t, nb::handle /*stream*/, nb::kwargs kwargs) {
            std::optional<bool> copy;
            if (kwargs.contains("copy") && !kwargs["copy"].is_none()) copy = nb::cast<bool>(kwargs["copy"]);
            return export_dlpack(t, copy);
          },
          "stream"_a = nb::none(), "kwargs"_a,
          "DLPack export of the value (synchronises). The capsule shares the tensor's device buffer (no copy) unless "
          "another lazytrain value shares it too, or copy=True; a consumer such as torch.from_dlpack then writes into "
          "the tensor's value. copy=False raises BufferError where only a copy can be exported.")
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); }, "(kDLCPU, 0).");
  def_tensor_ops(tensor);

  m.def(
      "from_numpy", [](nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> a) {
        PyOp op;
        return from_array(a, "from_numpy");
      },
      "array"_a,
      "A tensor with a C-contiguous CPU array's values (copied onto the device once; float32, float16, int32, int64, bool).");
  m.def("from_dlpack", &import_array, "array"_a, "copy"_a = nb::none(),
        "A tensor from any DLPack producer on the CPU (numpy, torch). A C-contiguous array whose data is 64-byte "
        "aligned is aliased, not copied (the producer is kept alive; later executions read its current values, and "
        "lazytrain never writes into it); any other is copied onto the device once. copy=True always copies; "
        "copy=False raises BufferError when the array cannot be aliased. Counted as DlpackInputAliases, or "
        "DlpackInputCopies and DlpackInputCopyBytes.");
  m.def(
      "_data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(materialised_buffer(t, "_data_ptr()").raw()); }, "tensor"_a,
      "The address of the device buffer holding the tensor's value (synchronises), as torch's data_ptr().");
}

}  // namespace lazytrain::python
