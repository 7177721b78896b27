#include <cmath>
#include <cstring>

#include "hlo/evaluator/kernels.h"
#include "hlo/evaluator/vector_math.h"
#include "core/error.h"

namespace lazytrain::hlo::evaluator {


namespace {

template <typename T, typename F>
void map_unary(const ArrayRef& x, const MutableArrayRef& out, F f) {
  const T* a = x.data<T>();
  T* o = out.data<T>();
  const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(f(static_cast<compute_t<T>>(a[i])));
}

template <typename T, typename R, typename F>
void map_binary(const ArrayRef& x, const ArrayRef& y, const MutableArrayRef& out, F f) {
  const T* a = x.data<T>();
  const T* b = y.data<T>();
  R* o = out.data<R>();
  const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<R>(f(static_cast<compute_t<T>>(a[i]), static_cast<compute_t<T>>(b[i])));
}

template <typename T>
void unary(const HloInstruction& in, const ArrayRef& x, const MutableArrayRef& out) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    if (has_vector_kernel(in.opcode)) {
      vector_unary(in.opcode, x.data<float>(), out.data<float>(), x.numel());
      return;
    }
  }
  switch (in.opcode) {
    case HloOpcode::kNegate: map_unary<T>(x, out, [](C v) { return -v; }); break;
    case HloOpcode::kAbs: map_unary<T>(x, out, [](C v) { return v < 0 ? -v : v; }); break;
    case HloOpcode::kNot: map_unary<T>(x, out, [](C v) { return !v; }); break;
    default:
      if constexpr (std::is_floating_point_v<C>) {
        switch (in.opcode) {
          case HloOpcode::kExp: map_unary<T>(x, out, [](C v) { return std::exp(v); }); break;
          case HloOpcode::kLog: map_unary<T>(x, out, [](C v) { return std::log(v); }); break;
          case HloOpcode::kSqrt: map_unary<T>(x, out, [](C v) { return std::sqrt(v); }); break;
          case HloOpcode::kRsqrt: map_unary<T>(x, out, [](C v) { return C(1) / std::sqrt(v); }); break;
          case HloOpcode::kTanh: map_unary<T>(x, out, [](C v) { return std::tanh(v); }); break;
          case HloOpcode::kErf: map_unary<T>(x, out, [](C v) { return std::erf(v); }); break;
          case HloOpcode::kCosine: map_unary<T>(x, out, [](C v) { return std::cos(v); }); break;
          default: throw Error("[hlo evaluator] unhandled unary " + in.name());
        }
      } else {
        throw Error("[hlo evaluator] " + in.name() + " needs a floating-point operand");
      }
  }
}

template <typename T>
void binary(const HloInstruction& in, const ArrayRef& x, const ArrayRef& y, const MutableArrayRef& out) {
  using C = compute_t<T>;
  switch (in.opcode) {
    case HloOpcode::kAdd: map_binary<T, T>(x, y, out, [](C a, C b) { return a + b; }); break;
    case HloOpcode::kSubtract: map_binary<T, T>(x, y, out, [](C a, C b) { return a - b; }); break;
    case HloOpcode::kMultiply: map_binary<T, T>(x, y, out, [](C a, C b) { return a * b; }); break;
    case HloOpcode::kDivide:
      if constexpr (std::is_integral_v<C>) {
        if (y.numel() > 0) {
          for (int64_t i = 0; i < y.numel(); ++i) check(y.data<T>()[i] != 0, "hlo evaluator " + in.name(), "integer division by zero");
        }
      }
      map_binary<T, T>(x, y, out, [](C a, C b) { return a / b; });
      break;
    case HloOpcode::kMaximum: map_binary<T, T>(x, y, out, [](C a, C b) { return (a != a || a > b) ? a : b; }); break;
    case HloOpcode::kMinimum: map_binary<T, T>(x, y, out, [](C a, C b) { return (a != a || a < b) ? a : b; }); break;
    case HloOpcode::kPower: map_binary<T, T>(x, y, out, [](C a, C b) { return static_cast<C>(std::pow(a, b)); }); break;
    case HloOpcode::kAnd:
      if constexpr (std::is_integral_v<C>) map_binary<T, T>(x, y, out, [](C a, C b) { return a & b; });
      break;
    case HloOpcode::kOr:
      if constexpr (std::is_integral_v<C>) map_binary<T, T>(x, y, out, [](C a, C b) { return a | b; });
      break;
    case HloOpcode::kShiftRightLogical:
      if constexpr (std::is_same_v<C, int32_t>) {
        map_binary<T, T>(x, y, out, [](C a, C b) {
          return static_cast<C>(b >= 32 || b < 0 ? 0u : static_cast<uint32_t>(a) >> b);
        });
      }
      break;
    default: throw Error("[hlo evaluator] unhandled binary " + in.name());
  }
}

template <typename T>
void compare(const HloInstruction& in, const ArrayRef& x, const ArrayRef& y, const MutableArrayRef& out) {
  using C = compute_t<T>;
  switch (in.direction) {
    case ComparisonDirection::kEq: map_binary<T, uint8_t>(x, y, out, [](C a, C b) { return a == b; }); break;
    case ComparisonDirection::kNe: map_binary<T, uint8_t>(x, y, out, [](C a, C b) { return a != b; }); break;
    case ComparisonDirection::kLt: map_binary<T, uint8_t>(x, y, out, [](C a, C b) { return a < b; }); break;
    case ComparisonDirection::kLe: map_binary<T, uint8_t>(x, y, out, [](C a, C b) { return a <= b; }); break;
    case ComparisonDirection::kGt: map_binary<T, uint8_t>(x, y, out, [](C a, C b) { return a > b; }); break;
    case ComparisonDirection::kGe: map_binary<T, uint8_t>(x, y, out, [](C a, C b) { return a >= b; }); break;
  }
}

template <typename T>
void select(const ArrayRef& p, const ArrayRef& a, const ArrayRef& b, const MutableArrayRef& out) {
  const uint8_t* pp = p.data<uint8_t>();
  const T* aa = a.data<T>();
  const T* bb = b.data<T>();
  T* o = out.data<T>();
  const int64_t n = out.numel();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = pp[i] ? aa[i] : bb[i];
}

template <typename U, typename T>
U convert_value(T v) {
  if constexpr (std::is_same_v<U, uint8_t>) {
    return static_cast<compute_t<T>>(v) != 0;
  } else if constexpr (std::is_same_v<U, BFloat16> || std::is_same_v<U, Half>) {
    return static_cast<U>(static_cast<float>(static_cast<compute_t<T>>(v)));
  } else {
    return static_cast<U>(static_cast<compute_t<T>>(v));
  }
}

void convert(const HloInstruction& in, const ArrayRef& x, const MutableArrayRef& out) {
  const int64_t n = x.numel();
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    dispatch_dtype(in.dtype, [&]<typename U>() {
      const T* a = x.data<T>();
      U* o = out.data<U>();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
      for (int64_t i = 0; i < n; ++i) o[i] = convert_value<U>(a[i]);
    });
  });
}

}  // namespace

void eval_elementwise(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  if (in.opcode == HloOpcode::kConvert) return convert(in, args[0], out);
  DType t = args[in.opcode == HloOpcode::kSelect ? 1 : 0].dtype();
  dispatch_dtype(t, [&]<typename T>() {
    if (in.opcode == HloOpcode::kSelect) select<T>(args[0], args[1], args[2], out);
    else if (in.opcode == HloOpcode::kCompare) compare<T>(in, args[0], args[1], out);
    else if (is_elementwise_unary(in.opcode)) unary<T>(in, args[0], out);
    else binary<T>(in, args[0], args[1], out);
  });
}

}  // namespace lazytrain::hlo::evaluator
