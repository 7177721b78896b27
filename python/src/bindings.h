// Shared by the files of lazytrain._C: one init_* per C++ area (module.cpp
// calls them), and the scope every binding of a tensor op opens first.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>

#include "core/literal.h"
#include "core/op_location.h"
#include "lazy/execution_mode.h"
#include "tensor/tensor.h"

namespace lazytrain::python {

namespace nb = nanobind;

// The user's Python line: the innermost frame outside the lazytrain package
// (python_location.cpp). Needs the GIL.
OpLocation caller_location();
// Tells caller_location which files are lazytrain's own (the package folder).
void set_package_dir(const std::string& dir);
// Files under `dir` are skipped too (torch's folder, for torch tensors).
void add_internal_dir(const std::string& dir);
// The location caller_location gives when no frame is outside the skipped
// files (torch's autograd thread running a backward: the backward() call's
// line); an empty `file` clears it.
void set_fallback_location(const std::string& file, const std::string& function, uint32_t line);

// The GIL given up for a wait and taken back after it, and taken by a C++
// thread that calls Python (replicas, the Trainer's loss and collate
// functions): the time spent waiting for it is the metric GilWaitTime
// (replica threads trace in turn; this is what that costs them).
void record_gil_wait(int64_t since_ns);

class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() {
    const int64_t start = gil_clock_ns();
    PyEval_RestoreThread(state_);
    record_gil_wait(start);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;
  static int64_t gil_clock_ns();

 private:
  PyThreadState* state_;
};

class GilAcquire {
 public:
  GilAcquire() {
    const int64_t start = GilRelease::gil_clock_ns();
    state_ = PyGILState_Ensure();
    record_gil_wait(start);
  }
  ~GilAcquire() { PyGILState_Release(state_); }
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  PyGILState_STATE state_;
};

// Opened by every binding of a tensor op before it calls C++: the op's IR
// nodes, shape errors and execution failures name the user's Python line
// (the outermost OpLocationScope wins, core/op_location.h). In the eager
// modes an op runs (and may wait) at once, so the GIL is released for it.
class PyOp {
 public:
  PyOp() : scope_(caller_location()) {
    if (lazy::execution_mode() != lazy::ExecutionMode::kLazy || lazy::detect_anomaly()) release_.emplace();
  }

 private:
  OpLocationScope scope_;
  std::optional<GilRelease> release_;
};

// The same for a call that waits (sync, reads, compiled functions): always
// without the GIL, so other Python threads run meanwhile.
class PyWait {
 public:
  PyWait() : scope_(caller_location()) {}

 private:
  OpLocationScope scope_;
  GilRelease release_;
};

// Host arrays (tensor.cpp): `literal` as a numpy array that owns it (no
// copy), and the bytes of a C-contiguous CPU array (float32, bfloat16,
// float16, int32, int64 or bool) copied into a Literal; TypeError naming
// `what` for another dtype.
nb::object numpy_from_literal(Literal literal);
Literal literal_from_array(const nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>& a, const char* what);
// The lazytrain dtype of a DLPack/numpy dtype (float32, float16, bfloat16,
// int32, int64, bool), or nullopt for any other (tensor.cpp).
std::optional<DType> dtype_of(const nb::dlpack::dtype& d);

// Error translation (errors.cpp): IndexError for lazytrain::IndexError, and the
// caller's line on every error that names none; after LazytrainError exists.
void init_error_locations(nb::module_& m);
void init_tensor(nb::module_& m);
// Views and in-place writes (tensor/view.h): the hooks python/lazytrain/_views.py installs.
void init_views(nb::module_& m);
void init_ops(nb::module_& m);
// The Tensor methods and operators that spell ops (ops.cpp), added by init_tensor.
void def_tensor_ops(nb::class_<Tensor>& tensor);
// The arithmetic, comparison, bitwise and where operators, methods and
// functions, with torch's type promotion (arith_ops.cpp).
void def_arith_operators(nb::class_<Tensor>& tensor);
void init_arith_ops(nb::module_& m);
void init_runtime(nb::module_& m);
void init_metrics(nb::module_& m);
void init_profiler(nb::module_& m);
void init_nn(nb::module_& m);
void init_optim(nb::module_& m);
void init_autograd_api(nb::module_& m);
void init_distributed(nb::module_& m);
void init_spmd(nb::module_& m);
void init_models(nb::module_& m);
void init_trainer(nb::module_& m);
void init_data(nb::module_& m);
void init_parallel_loader(nb::module_& m);
void init_tokenizers(nb::module_& m);

}  // namespace lazytrain::python
