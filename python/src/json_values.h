// Python values <-> the nlohmann::json values the C++ Trainer keeps (a
// training argument's value, a log_history entry, on_log's logs), converted
// object by object: no JSON text crosses the boundary. Need the GIL.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include <nlohmann/json.hpp>

namespace lazytrain::python {

namespace nb = nanobind;

// null -> None, bool, int, float, str, list, dict.
inline nb::object python_value(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return nb::none();
    case nlohmann::json::value_t::boolean:
      return nb::bool_(v.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return nb::int_(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return nb::int_(v.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return nb::float_(v.get<double>());
    case nlohmann::json::value_t::string:
      return nb::str(v.get_ref<const std::string&>().c_str(), v.get_ref<const std::string&>().size());
    case nlohmann::json::value_t::array: {
      nb::list out;
      for (const nlohmann::json& item : v) out.append(python_value(item));
      return out;
    }
    case nlohmann::json::value_t::object: {
      nb::dict out;
      for (const auto& [key, item] : v.items()) out[nb::str(key.c_str(), key.size())] = python_value(item);
      return out;
    }
    default:  // binary: never in the Trainer's values
      return nb::none();
  }
}

// None, bool, int (or an object with __index__, numpy's integers), float,
// str, list or tuple, dict with str keys. TypeError naming `what` for
// anything else (as json.dumps refuses it).
inline nlohmann::json json_value(nb::handle v, const std::string& what) {
  PyObject* o = v.ptr();
  if (o == Py_None) return nullptr;
  if (PyBool_Check(o)) return o == Py_True;
  if (PyFloat_Check(o)) return PyFloat_AsDouble(o);
  if (PyLong_Check(o) || PyIndex_Check(o)) {
    const nb::object index = nb::steal(PyNumber_Index(o));
    if (!index.is_valid()) throw nb::python_error();
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow == 0) return int64_t(value);
    if (overflow > 0) {
      const unsigned long long big = PyLong_AsUnsignedLongLong(index.ptr());
      if (!PyErr_Occurred()) return uint64_t(big);
      PyErr_Clear();
    }
    throw nb::value_error((what + ": the integer " + nb::cast<std::string>(nb::str(v)) + " does not fit in 64 bits").c_str());
  }
  if (PyUnicode_Check(o)) return nb::cast<std::string>(v);
  if (PyList_Check(o) || PyTuple_Check(o)) {
    nlohmann::json out = nlohmann::json::array();
    for (nb::handle item : v) out.push_back(json_value(item, what));
    return out;
  }
  if (PyDict_Check(o)) {
    nlohmann::json out = nlohmann::json::object();
    for (auto [key, item] : nb::borrow<nb::dict>(v)) {
      if (!PyUnicode_Check(key.ptr())) throw nb::type_error((what + ": a dict key is not a str").c_str());
      const std::string name = nb::cast<std::string>(key);
      out[name] = json_value(item, what + " '" + name + "'");
    }
    return out;
  }
  throw nb::type_error((what + ": expected None, a bool, int, float, str, list or dict, got " +
                        nb::cast<std::string>(nb::str(nb::handle((PyObject*)Py_TYPE(o)).attr("__name__"))))
                           .c_str());
}

}  // namespace lazytrain::python
