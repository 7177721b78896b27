// Shared by the files of lazytrain._C: one init_* per C++ area (module.cpp
// calls them), and the scope every binding of a tensor op opens first.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>

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
  std::optional<nb::gil_scoped_release> release_;
};

// The same for a call that waits (sync, reads, compiled functions): always
// without the GIL, so other Python threads run meanwhile.
class PyWait {
 public:
  PyWait() : scope_(caller_location()) {}

 private:
  OpLocationScope scope_;
  nb::gil_scoped_release release_;
};

void init_tensor(nb::module_& m);
void init_ops(nb::module_& m);
// The Tensor methods and operators that spell ops (ops.cpp), added by init_tensor.
void def_tensor_ops(nb::class_<Tensor>& tensor);
void init_runtime(nb::module_& m);
void init_metrics(nb::module_& m);
void init_nn(nb::module_& m);
void init_optim(nb::module_& m);
void init_distributed(nb::module_& m);
void init_models(nb::module_& m);
void init_tokenizers(nb::module_& m);

}  // namespace lazytrain::python
