// How lazytrain's C++ errors reach Python: torch's exception types, and the
// user's file and line on every error a call raised.
//
// lazytrain::IndexError (a dimension out of range) is IndexError, as torch's;
// any other lazytrain::Error is LazytrainError (a RuntimeError, module.cpp).
// An error whose message names no line yet gets " (called from file:line)":
// the Python frame that made the failing call (python_location.cpp), so the
// errors of bindings that open no op scope (backward, item, .data =,
// requires_grad_, a device name) name the line as the ops' shape errors do.
// An execution's failure keeps its message: it names the op's line, and a
// second read of the failed value says the same.
#include "bindings.h"
#include "core/error.h"
#include "lazy/lazy_api.h"

namespace lazytrain::python {

namespace {

PyObject* lazytrain_error = nullptr;  // _C.LazytrainError, kept for the process

std::string located(const char* message) {
  std::string text = message;
  if (text.find("(called from ") != std::string::npos) return text;
  const OpLocation where = caller_location();
  return where.known() ? text + " (called from " + location_text(where) + ")" : text;
}

void translate(const std::exception_ptr& error, void*) {
  try {
    std::rethrow_exception(error);
  } catch (const lazy::ExecutionError& e) {
    PyErr_SetString(lazytrain_error, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, located(e.what()).c_str());
  } catch (const Error& e) {
    PyErr_SetString(lazytrain_error, located(e.what()).c_str());
  }
}

}  // namespace

void init_error_locations(nb::module_& m) {
  lazytrain_error = m.attr("LazytrainError").ptr();
  Py_INCREF(lazytrain_error);
  nb::register_exception_translator(&translate, nullptr);  // tried before the one module.cpp registered
}

}  // namespace lazytrain::python
