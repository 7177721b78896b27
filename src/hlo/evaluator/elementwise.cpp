#include <algorithm>
#include <cmath>
#include <cstring>

#include "hlo/evaluator/kernels.h"
#include "core/error.h"
#include "core/scalar_ops.h"

namespace lazytrain::hlo::evaluator {


namespace {

namespace ops = scalar_ops;

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
  switch (in.opcode) {
    case HloOpcode::kNegate: map_unary<T>(x, out, ops::Negate()); break;
    case HloOpcode::kAbs: map_unary<T>(x, out, ops::Abs()); break;
    case HloOpcode::kNot: map_unary<T>(x, out, ops::Not()); break;
    default:
      if constexpr (std::is_floating_point_v<C>) {
        switch (in.opcode) {
          case HloOpcode::kExp: map_unary<T>(x, out, ops::Exp()); break;
          case HloOpcode::kLog: map_unary<T>(x, out, ops::Log()); break;
          case HloOpcode::kSqrt: map_unary<T>(x, out, ops::Sqrt()); break;
          case HloOpcode::kRsqrt: map_unary<T>(x, out, ops::Rsqrt()); break;
          case HloOpcode::kTanh: map_unary<T>(x, out, ops::Tanh()); break;
          case HloOpcode::kErf: map_unary<T>(x, out, ops::Erf()); break;
          case HloOpcode::kCosine: map_unary<T>(x, out, ops::Cosine()); break;
          case HloOpcode::kSine: map_unary<T>(x, out, ops::Sine()); break;
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
    case HloOpcode::kAdd: map_binary<T, T>(x, y, out, ops::Add()); break;
    case HloOpcode::kSubtract: map_binary<T, T>(x, y, out, ops::Subtract()); break;
    case HloOpcode::kMultiply: map_binary<T, T>(x, y, out, ops::Multiply()); break;
    case HloOpcode::kDivide:
      if constexpr (std::is_integral_v<C>) {
        if (y.numel() > 0) {
          for (int64_t i = 0; i < y.numel(); ++i) check(y.data<T>()[i] != 0, "hlo evaluator " + in.name(), "integer division by zero");
        }
      }
      map_binary<T, T>(x, y, out, ops::Divide());
      break;
    case HloOpcode::kMaximum: map_binary<T, T>(x, y, out, ops::Maximum()); break;
    case HloOpcode::kMinimum: map_binary<T, T>(x, y, out, ops::Minimum()); break;
    case HloOpcode::kPower: map_binary<T, T>(x, y, out, ops::Power()); break;
    case HloOpcode::kAnd:
      if constexpr (std::is_integral_v<C>) map_binary<T, T>(x, y, out, ops::And());
      break;
    case HloOpcode::kOr:
      if constexpr (std::is_integral_v<C>) map_binary<T, T>(x, y, out, ops::Or());
      break;
    case HloOpcode::kShiftRightLogical:
      if constexpr (std::is_same_v<C, int32_t>) map_binary<T, T>(x, y, out, ops::ShiftRightLogical());
      break;
    default: throw Error("[hlo evaluator] unhandled binary " + in.name());
  }
}

template <typename T>
void compare(const HloInstruction& in, const ArrayRef& x, const ArrayRef& y, const MutableArrayRef& out) {
  switch (in.direction) {
    case ComparisonDirection::kEq: map_binary<T, uint8_t>(x, y, out, ops::Equal()); break;
    case ComparisonDirection::kNe: map_binary<T, uint8_t>(x, y, out, ops::NotEqual()); break;
    case ComparisonDirection::kLt: map_binary<T, uint8_t>(x, y, out, ops::Less()); break;
    case ComparisonDirection::kLe: map_binary<T, uint8_t>(x, y, out, ops::LessEqual()); break;
    case ComparisonDirection::kGt: map_binary<T, uint8_t>(x, y, out, ops::Greater()); break;
    case ComparisonDirection::kGe: map_binary<T, uint8_t>(x, y, out, ops::GreaterEqual()); break;
  }
}

template <typename T>
void select(const ArrayRef& p, const ArrayRef& a, const ArrayRef& b, const MutableArrayRef& out) {
  // Selected as bits: exact for every value, NaN payloads included.
  using Bits = std::conditional_t<sizeof(T) == 1, uint8_t,
                                  std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  const uint8_t* pp = p.data<uint8_t>();
  const Bits* aa = a.data<Bits>();
  const Bits* bb = b.data<Bits>();
  Bits* o = out.data<Bits>();
  const int64_t n = out.numel();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = ops::Select()(pp[i] != 0, aa[i], bb[i]);
}

template <typename U, typename T>
U convert_value(T v) {
  if constexpr (std::is_same_v<U, uint8_t>) {
    return ops::ConvertToPred()(static_cast<compute_t<T>>(v));
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
