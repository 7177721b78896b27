// The arithmetic, comparison, bitwise and where operators and functions
// (x + 1, 2 ** x, x // y, x & y, lt.mul(x, 2.0), lt.where(c, x, 0.0)) with
// torch's type promotion (tensor/type_promotion.h): a Python number's kind
// (bool, int, float) takes part, never its value, and a numpy array is a
// tensor operand. Each binding is one function that inspects its operand, so
// the hot operators cost one type check more than a plain call.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "bindings.h"
#include "core/error.h"
#include "tensor/tensor.h"

namespace lazytrain::python {
namespace {

using namespace nb::literals;

// A Python number (bool, int, float, or a numpy scalar) as a Scalar; nullopt
// for anything else. A tensor is never one (it has __index__ and __float__).
std::optional<Scalar> py_scalar(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) throw nb::value_error("Overflow when unpacking long long");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  if (nb::isinstance<Tensor>(h)) return std::nullopt;
  // numpy scalars (np.float32(2.0), np.int64(3), np.bool_(True)); a 0-d array is a tensor operand.
  static nb::object generic = nb::module_::import_("numpy").attr("generic");
  if (!nb::isinstance(h, generic)) return std::nullopt;
  nb::object v = h.attr("item")();
  if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr())) return py_scalar(v);
  return std::nullopt;
}

// A numpy array operand as a tensor on `like`'s device (torch takes arrays
// where it takes tensors); nullopt for anything else.
std::optional<Tensor> py_array(nb::handle h, const Tensor& like) {
  static nb::object ndarray = nb::module_::import_("numpy").attr("ndarray");
  if (!nb::isinstance(h, ndarray)) return std::nullopt;
  nb::object t = nb::module_::import_("lazytrain").attr("tensor")(h, "device"_a = like.device());
  return nb::cast<Tensor>(t);
}

// Runs `f` (a tensor op) under PyOp and hands its result to Python.
template <typename F>
nb::object run(F&& f) {
  Tensor out;
  {
    PyOp op;
    out = f();
  }
  return nb::cast(std::move(out));
}

// a OP b for b a tensor, a number or a numpy array: tt(a, tensor) or ts(a,
// number); NotImplemented for anything else (Python then tries b's reflected
// operator, or raises TypeError).
template <typename TT, typename TS>
nb::object binary(const Tensor& a, nb::handle b, TT tt, TS ts) {
  if (nb::isinstance<Tensor>(b)) {
    const Tensor& bt = nb::cast<const Tensor&>(b);
    return run([&] { return tt(a, bt); });
  }
  if (std::optional<Scalar> s = py_scalar(b)) return run([&] { return ts(a, *s); });
  if (std::optional<Tensor> t = py_array(b, a)) return run([&] { return tt(a, *t); });
  return nb::borrow(Py_NotImplemented);
}

// b OP a (the reflected operator, b not a tensor): the number becomes a's
// wrapped-number operand on the left.
template <typename TT>
nb::object reflected(const Tensor& a, nb::handle b, TT tt) {
  if (std::optional<Scalar> s = py_scalar(b)) return run([&] { return tt(wrap_scalar(*s, a), a); });
  if (std::optional<Tensor> t = py_array(b, a)) return run([&] { return tt(*t, a); });
  return nb::borrow(Py_NotImplemented);
}

// op(a, wrap_scalar(s, a)): the tensor-number form of a tensor-tensor op.
#define LT_TS(fn) [](const Tensor& x, Scalar s) { return fn(x, wrap_scalar(s, x)); }
#define LT_TT(fn) [](const Tensor& x, const Tensor& y) { return fn(x, y); }

Tensor sub_tensor(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor sub_scalar(const Tensor& a, Scalar s) { return sub(a, s); }

// A method's or function's result: NotImplemented (an operand of another
// type) becomes torch's TypeError; only operators hand it back to Python.
nb::object or_type_error(nb::object out, const char* name) {
  if (out.is(nb::handle(Py_NotImplemented))) {
    throw nb::type_error((std::string(name) + "(): argument 'other' must be a Tensor or a number").c_str());
  }
  return out;
}

// add/sub(other, alpha=): other * alpha added (subtracted).
nb::object add_alpha(const Tensor& a, nb::handle b, double alpha) {
  if (alpha == 1.0) return binary(a, b, LT_TT(add), [](const Tensor& x, Scalar s) { return add(x, s); });
  return binary(a, b, [alpha](const Tensor& x, const Tensor& y) { return add(x, y, alpha); },
                [alpha](const Tensor& x, Scalar s) { return add(x, wrap_scalar(s, x), alpha); });
}
nb::object sub_alpha(const Tensor& a, nb::handle b, double alpha) {
  if (alpha == 1.0) return binary(a, b, sub_tensor, sub_scalar);
  return binary(a, b, [alpha](const Tensor& x, const Tensor& y) { return sub(x, y, alpha); },
                [alpha](const Tensor& x, Scalar s) { return sub(x, wrap_scalar(s, x), alpha); });
}

// ~x: bitwise on integers, logical on bool; floating x is a TypeError in torch.
nb::object invert(const Tensor& a) {
  if (is_floating_point(a.dtype())) {
    throw nb::type_error("~ (operator.invert) is only implemented on integer and Boolean-type tensors");
  }
  return run([&] { return bitwise_not(a); });
}

// torch.div(a, b, rounding_mode=): None true division; "floor" floor_divide; "trunc"
// toward zero: integers floor_divide one up where it went below zero inexactly,
// floats trunc(a / b) as floor(|q|) with q's sign (floor_divide(q, 1) is exact).
Tensor trunc_divide(const Tensor& a, const Tensor& b) {
  const Tensor q0 = floor_divide(a, b);
  if (!is_floating_point(q0.dtype())) {
    const Tensor zero = wrap_scalar(Scalar(int64_t{0}), q0), one = wrap_scalar(Scalar(int64_t{1}), q0);
    return where(logical_and(lt(q0, zero), ne(remainder(a, b), zero)), add(q0, one), q0);
  }
  const Tensor q = div(a, b), zero = wrap_scalar(Scalar(0.0), q), one = wrap_scalar(Scalar(1.0), q);
  return where(lt(q, zero), neg(floor_divide(neg(q), one)), floor_divide(q, one));
}

nb::object div_rounding(const Tensor& a, nb::handle b, const std::optional<std::string>& mode) {
  if (!mode) return binary(a, b, LT_TT(div), LT_TS(div));
  if (*mode == "floor") return binary(a, b, LT_TT(floor_divide), LT_TS(floor_divide));
  if (*mode == "trunc") return binary(a, b, LT_TT(trunc_divide), LT_TS(trunc_divide));
  throw nb::value_error(("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + *mode + "'").c_str());
}

// torch.where(condition, input, other): tensors or numbers on either side.
nb::object where3(const Tensor& c, nb::handle a, nb::handle b) {
  const bool at = nb::isinstance<Tensor>(a), bt = nb::isinstance<Tensor>(b);
  std::optional<Scalar> as = at ? std::nullopt : py_scalar(a), bs = bt ? std::nullopt : py_scalar(b);
  if (!at && !as) throw nb::type_error("where(): argument 'input' must be a Tensor or a number");
  if (!bt && !bs) throw nb::type_error("where(): argument 'other' must be a Tensor or a number");
  if (at && bt) return run([&] { return where(c, nb::cast<const Tensor&>(a), nb::cast<const Tensor&>(b)); });
  if (at) return run([&] { return where(c, nb::cast<const Tensor&>(a), *bs); });
  if (bt) return run([&] { return where(c, *as, nb::cast<const Tensor&>(b)); });
  return run([&] { return where(c, *as, *bs); });
}

// torch.where(condition): nonzero(condition, as_tuple=True), one int64 index
// tensor per dim (a 0-d condition counts as 1-d).
nb::tuple where1(const Tensor& c) {
  std::vector<Tensor> cols;
  {
    PyOp op;
    Tensor nz = nonzero(c);
    const int64_t dims = std::max<int64_t>(c.dim(), 1);
    for (int64_t i = 0; i < dims; ++i) cols.push_back(squeeze(slice(nz, 1, i, i + 1), 1));
  }
  nb::list out;
  for (Tensor& t : cols) out.append(nb::cast(std::move(t)));
  return nb::tuple(out);
}

}  // namespace

void def_arith_operators(nb::class_<Tensor>& c) {
  c.def("__add__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(add), [](const Tensor& x, Scalar s) { return add(x, s); }); }, nb::arg("other").none())
      .def("__radd__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(add)); }, nb::arg("other").none())
      .def("__sub__", [](const Tensor& a, nb::handle b) { return binary(a, b, sub_tensor, sub_scalar); }, nb::arg("other").none())
      .def("__rsub__", [](const Tensor& a, nb::handle b) {
        // A bool number on the left is refused as on the right (wrapping it may promote it away).
        std::optional<Scalar> s = py_scalar(b);
        if (s && s->kind == Scalar::Kind::kBool) return run([&] { return sub(a, *s); });
        return reflected(a, b, sub_tensor);
      }, nb::arg("other").none())
      .def("__mul__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(mul), [](const Tensor& x, Scalar s) { return mul(x, s); }); }, nb::arg("other").none())
      .def("__rmul__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(mul)); }, nb::arg("other").none())
      .def("__truediv__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(div), [](const Tensor& x, Scalar s) { return div(x, s); }); }, nb::arg("other").none())
      .def("__rtruediv__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(div)); }, nb::arg("other").none())
      .def("__floordiv__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(floor_divide), LT_TS(floor_divide)); }, nb::arg("other").none())
      .def("__rfloordiv__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(floor_divide)); }, nb::arg("other").none())
      .def("__mod__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(remainder), LT_TS(remainder)); }, nb::arg("other").none())
      .def("__rmod__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(remainder)); }, nb::arg("other").none())
      .def("__pow__", [](const Tensor& a, nb::handle b) {
        return binary(a, b, [](const Tensor& x, const Tensor& e) { return pow(x, e); }, [](const Tensor& x, Scalar e) { return pow(x, e); });
      }, nb::arg("other").none())
      .def("__rpow__", [](const Tensor& a, nb::handle b) { return reflected(a, b, [](const Tensor& x, const Tensor& e) { return pow(x, e); }); }, nb::arg("other").none())
      .def("__and__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(bitwise_and), LT_TS(bitwise_and)); }, nb::arg("other").none())
      .def("__rand__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(bitwise_and)); }, nb::arg("other").none())
      .def("__or__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(bitwise_or), LT_TS(bitwise_or)); }, nb::arg("other").none())
      .def("__ror__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(bitwise_or)); }, nb::arg("other").none())
      .def("__xor__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(bitwise_xor), LT_TS(bitwise_xor)); }, nb::arg("other").none())
      .def("__rxor__", [](const Tensor& a, nb::handle b) { return reflected(a, b, LT_TT(bitwise_xor)); }, nb::arg("other").none())
      .def("__invert__", &invert)
      .def("__neg__", [](const Tensor& a) { return run([&] { return neg(a); }); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return run([&] { return abs(a); }); })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return run([&] { return matmul(a, b); }); })
      .def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return run([&] { return matmul(b, a); }); })
      .def("__eq__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(eq), LT_TS(eq)); }, nb::arg("other").none())
      .def("__ne__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(ne), LT_TS(ne)); }, nb::arg("other").none())
      .def("__lt__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(lt), LT_TS(lt)); }, nb::arg("other").none())
      .def("__le__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(le), LT_TS(le)); }, nb::arg("other").none())
      .def("__gt__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(gt), LT_TS(gt)); }, nb::arg("other").none())
      .def("__ge__", [](const Tensor& a, nb::handle b) { return binary(a, b, LT_TT(ge), LT_TS(ge)); }, nb::arg("other").none());
  // Method spellings (x.mul(2), x.eq(y), x.where(c, y), ...).
#define LT_METHOD(name) \
  c.def(#name, [](const Tensor& a, nb::handle b) { return or_type_error(binary(a, b, LT_TT(name), LT_TS(name)), #name); }, "other"_a)
  LT_METHOD(mul);
  c.def("div", &div_rounding, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none());
  LT_METHOD(floor_divide);
  LT_METHOD(remainder);
  LT_METHOD(maximum);
  LT_METHOD(minimum);
  LT_METHOD(eq);
  LT_METHOD(ne);
  LT_METHOD(lt);
  LT_METHOD(le);
  LT_METHOD(gt);
  LT_METHOD(ge);
  LT_METHOD(bitwise_and);
  LT_METHOD(bitwise_or);
  LT_METHOD(bitwise_xor);
#undef LT_METHOD
  c.def("add", [](const Tensor& a, nb::handle b, double alpha) { return or_type_error(add_alpha(a, b, alpha), "add"); }, "other"_a,
        nb::kw_only(), "alpha"_a = 1.0);
  c.def("sub", [](const Tensor& a, nb::handle b, double alpha) { return or_type_error(sub_alpha(a, b, alpha), "sub"); }, "other"_a,
        nb::kw_only(), "alpha"_a = 1.0);
  c.def("pow", [](const Tensor& a, nb::handle b) {
    return or_type_error(binary(a, b, [](const Tensor& x, const Tensor& e) { return pow(x, e); }, [](const Tensor& x, Scalar e) { return pow(x, e); }), "pow");
  }, "exponent"_a);
  c.def("bitwise_not", [](const Tensor& a) { return run([&] { return bitwise_not(a); }); });
  c.def("where", [](const Tensor& self, const Tensor& condition, nb::handle other) { return where3(condition, nb::cast(self), other); },
        "condition"_a, "other"_a, "torch.Tensor.where: where(condition, self, other).");
}

void init_arith_ops(nb::module_& m) {
  static const char* kFunctionDoc =
      "torch's function of the same name: input and other (a tensor, a Python number or a numpy array) broadcast; "
      "the result dtype is torch.result_type(input, other) (bool for comparisons, float32 for div of integers). "
      "RuntimeError (LazytrainError) naming the op and the caller's line for shapes that do not broadcast and for "
      "dtypes torch refuses (bitwise on floats, floor_divide/remainder of bools); TypeError for another operand type.";
#define LT_FUNCTION(name)                                                                                          \
  m.def(#name, [](const Tensor& a, nb::handle b) { return or_type_error(binary(a, b, LT_TT(name), LT_TS(name)), #name); }, \
        "input"_a, "other"_a, kFunctionDoc)
  LT_FUNCTION(mul);
  m.def("div", [](const Tensor& a, nb::handle b, const std::optional<std::string>& mode) {
    nb::object out = div_rounding(a, b, mode);
    if (out.is(nb::handle(Py_NotImplemented))) throw nb::type_error("div(): argument 'other' must be a Tensor or a number");
    return out;
  }, "input"_a, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none());
  LT_FUNCTION(floor_divide);
  LT_FUNCTION(maximum);
  LT_FUNCTION(minimum);
  LT_FUNCTION(eq);
  LT_FUNCTION(ne);
  LT_FUNCTION(lt);
  LT_FUNCTION(le);
  LT_FUNCTION(gt);
  LT_FUNCTION(ge);
  LT_FUNCTION(bitwise_and);
  LT_FUNCTION(bitwise_or);
  LT_FUNCTION(bitwise_xor);
  LT_FUNCTION(logical_and);
  LT_FUNCTION(logical_or);
#undef LT_FUNCTION
  m.def("add", [](const Tensor& a, nb::handle b, double alpha) { return or_type_error(add_alpha(a, b, alpha), "add"); },
        "input"_a, "other"_a, nb::kw_only(), "alpha"_a = 1.0);
  m.def("sub", [](const Tensor& a, nb::handle b, double alpha) { return or_type_error(sub_alpha(a, b, alpha), "sub"); },
        "input"_a, "other"_a, nb::kw_only(), "alpha"_a = 1.0);
  // remainder and pow also take a number first (torch.remainder(3, t), torch.pow(2, t)).
  m.def("remainder", [](nb::handle a, nb::handle b) {
    if (nb::isinstance<Tensor>(a)) return or_type_error(binary(nb::cast<const Tensor&>(a), b, LT_TT(remainder), LT_TS(remainder)), "remainder");
    return or_type_error(reflected(nb::cast<const Tensor&>(b), a, LT_TT(remainder)), "remainder");
  }, "input"_a, "other"_a);
  m.def("pow", [](nb::handle a, nb::handle b) {
    auto tt = [](const Tensor& x, const Tensor& e) { return pow(x, e); };
    if (nb::isinstance<Tensor>(a)) return or_type_error(binary(nb::cast<const Tensor&>(a), b, tt, [](const Tensor& x, Scalar e) { return pow(x, e); }), "pow");
    return or_type_error(reflected(nb::cast<const Tensor&>(b), a, tt), "pow");
  }, "input"_a, "exponent"_a);
  m.def("bitwise_not", [](const Tensor& a) { return run([&] { return bitwise_not(a); }); }, "input"_a);
  m.def("result_type", [](nb::handle a, nb::handle b) {
    auto operand = [](nb::handle h) {
      if (nb::isinstance<Tensor>(h)) return promotion_operand(nb::cast<const Tensor&>(h));
      std::optional<Scalar> s = py_scalar(h);
      if (!s) throw nb::type_error("result_type(): arguments must be tensors or numbers");
      return promotion_operand(*s);
    };
    return result_type({operand(a), operand(b)});
  }, "tensor1"_a, "tensor2"_a, "torch.result_type: the dtype an arithmetic op of the two (tensors or numbers) gives.");
  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); }, "type1"_a, "type2"_a,
        "torch.promote_types: the smallest dtype both cast to safely (bool < int32 < int64 < float16/bfloat16 < float32).");
  m.def("can_cast", [](DType from, DType to) { return can_cast(from, to); }, "from_"_a, "to"_a, "torch.can_cast: false where the cast lowers the category (float to integer, integer to bool).");
  m.def("where", &where3, "condition"_a, "input"_a, "other"_a,
        "torch.where: input where condition (bool) else other, broadcasting all three; tensors or numbers, the result "
        "dtype their result_type.");
  m.def("where", &where1, "condition"_a, "torch.where(condition): nonzero(condition, as_tuple=True).");
}

#undef LT_TS
#undef LT_TT

}  // namespace lazytrain::python
