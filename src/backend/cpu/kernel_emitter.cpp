#include "backend/cpu/kernel_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "core/half.h"

namespace lazytrain::backend::cpu {

namespace {

using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;

// Iterations below this many elements run on one thread.
constexpr int64_t kParallelElements = 1 << 16;
// Inner ranges are cut into chunks of this many elements when rows are few.
constexpr int64_t kChunk = 1 << 14;
// A reduction of fewer rows than this is parallel over rows x chunks of each
// row, of at least kReduceChunk elements and at most kMaxReduceChunks a row
// (partial results live on the stack: at most 7 x 2048 of them).
constexpr int64_t kFewRows = 8;
constexpr int64_t kReduceChunk = 1 << 15;
constexpr int64_t kMaxReduceChunks = 2048;

// The C++ type a value is computed in: bf16 values live in floats that hold
// exactly representable bf16 numbers (every bf16 op rounds its float result, as
// the interpreter's do), and are stored as their upper 16 bits.
std::optional<std::string> ctype(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kBFloat16: return "float";
    case DType::kInt32: return "int32_t";
    case DType::kInt64: return "int64_t";
    case DType::kBool: return "uint8_t";
    default: return std::nullopt;
  }
}

// The C++ type a value is stored in (arguments and outputs).
std::string storage_type(DType t) { return t == DType::kBFloat16 ? "uint16_t" : *ctype(t); }

// `expr` read from storage of dtype `t` into its computation type.
std::string load(DType t, const std::string& expr) { return t == DType::kBFloat16 ? "bf16_to_float(" + expr + ")" : expr; }

std::string literal(const Literal& b) {
  std::ostringstream os;
  switch (b.dtype()) {
    case DType::kFloat32:
    case DType::kBFloat16: {
      float v = b.dtype() == DType::kFloat32 ? *b.data<float>() : static_cast<float>(*b.data<BFloat16>());
      if (std::isnan(v)) return "__builtin_nanf(\"\")";
      if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
      os.precision(9);
      os << std::scientific << v << "f";
      return os.str();
    }
    case DType::kInt32: return "int32_t(" + std::to_string(*b.data<int32_t>()) + ")";
    case DType::kInt64: {
      int64_t v = *b.data<int64_t>();
      return v == INT64_MIN ? "INT64_MIN" : "int64_t(" + std::to_string(v) + "LL)";
    }
    case DType::kBool: return *b.data<uint8_t>() ? "uint8_t(1)" : "uint8_t(0)";
    default: return "0";
  }
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The smallest t with prod(shape[t:]) == inner, or -1.
int64_t split_for(const Shape& shape, int64_t inner) {
  for (int64_t t = static_cast<int64_t>(shape.size()); t >= 0; --t) {
    if (product(shape, static_cast<size_t>(t), shape.size()) == inner) {
      // Prefer the smallest t (leading size-1 dims belong to the inner block).
      int64_t best = t;
      while (best > 0 && shape[static_cast<size_t>(best - 1)] == 1) --best;
      return best;
    }
  }
  return -1;
}

// Dims at or after `t` of broadcast `in` wider than 1: how many there are, and
// how many of them its operand maps (a size-1 dim reads index 0 either way, so
// it is ignored). The inner block reads the operand contiguously when all wide
// dims are mapped, and one element when none is.
std::pair<int64_t, int64_t> wide_inner_dims(const HloInstruction& in, int64_t t) {
  int64_t wide = 0, mapped = 0;
  for (int64_t d = t; d < static_cast<int64_t>(in.shape.size()); ++d) {
    if (in.shape[static_cast<size_t>(d)] == 1) continue;
    ++wide;
    mapped += std::count(in.dimensions.begin(), in.dimensions.end(), d);
  }
  return {wide, mapped};
}

// The functor of core/scalar_ops.h that computes elementwise `in`.
std::string functor(const HloInstruction& in) {
  switch (in.opcode) {
    case HloOpcode::kNegate: return "Negate";
    case HloOpcode::kAbs: return "Abs";
    case HloOpcode::kNot: return "Not";
    case HloOpcode::kExp: return "Exp";
    case HloOpcode::kLog: return "Log";
    case HloOpcode::kSqrt: return "Sqrt";
    case HloOpcode::kRsqrt: return "Rsqrt";
    case HloOpcode::kTanh: return "Tanh";
    case HloOpcode::kErf: return "Erf";
    case HloOpcode::kCosine: return "Cosine";
    case HloOpcode::kSine: return "Sine";
    case HloOpcode::kAdd: return "Add";
    case HloOpcode::kSubtract: return "Subtract";
    case HloOpcode::kMultiply: return "Multiply";
    case HloOpcode::kDivide: return "Divide";
    case HloOpcode::kMaximum: return "Maximum";
    case HloOpcode::kMinimum: return "Minimum";
    case HloOpcode::kPower: return "Power";
    case HloOpcode::kAnd: return "And";
    case HloOpcode::kOr: return "Or";
    case HloOpcode::kShiftRightLogical: return "ShiftRightLogical";
    case HloOpcode::kSelect: return "Select";
    case HloOpcode::kCompare: {
      static const char* names[] = {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"};
      return names[static_cast<int>(in.direction)];
    }
    default: return "";
  }
}

// "Functor()(a, b)": a call of `in`'s functor.
std::string call(const HloInstruction& in, const std::vector<std::string>& args) {
  std::string s = functor(in) + "()(";
  for (size_t k = 0; k < args.size(); ++k) s += (k ? ", " : "") + args[k];
  return s + ")";
}

class Emitter {
 public:
  Emitter(const HloModule& f, Shape iter_shape) : f_(f), iter_(std::move(iter_shape)) {}

  // True when every broadcast from a parameter is affine on an inner block of `inner` elements.
  bool supports_inner(int64_t inner) const {
    for (const auto& in : f_.instructions) {
      if (in.opcode != HloOpcode::kBroadcast) continue;
      if (f_.at(in.operands[0]).shape.empty()) continue;
      int64_t t = split_for(in.shape, inner);
      if (t < 0) return false;
      auto [wide, mapped] = wide_inner_dims(in, t);
      if (mapped != 0 && mapped != wide) return false;
    }
    return true;
  }

  // Per-row setup: base offsets of broadcast reads for row `r` of `inner` elements.
  std::string row_code(int64_t inner) const {
    std::ostringstream os;
    for (const auto& in : f_.instructions) {
      if (in.opcode == HloOpcode::kIota) {
        // An iota along a row dim is constant across the inner loop: one value per row.
        const int64_t d = in.dimensions[0], t = split_for(in.shape, inner);
        if (t >= 0 && d < t) {
          os << "      const int64_t io" << in.id << " = (r / " << product(in.shape, static_cast<size_t>(d) + 1, static_cast<size_t>(t))
             << "LL) % " << in.shape[static_cast<size_t>(d)] << "LL;\n";
        }
      }
      if (in.opcode != HloOpcode::kBroadcast || f_.at(in.operands[0]).shape.empty()) continue;
      const Shape& s = in.shape;
      int64_t t = split_for(s, inner);
      std::vector<int64_t> operand_strides = contiguous_strides(f_.at(in.operands[0]).shape);
      os << "      int64_t b" << in.id << " = 0;\n";
      // Decompose r over the row dims of this broadcast's shape.
      int64_t row_stride = 1;
      for (int64_t d = t - 1; d >= 0; --d) {
        for (size_t k = 0; k < in.dimensions.size(); ++k) {
          if (in.dimensions[k] != d) continue;
          os << "      b" << in.id << " += ((r / " << row_stride << "LL) % " << s[d] << "LL) * " << operand_strides[k] << "LL;\n";
        }
        row_stride *= s[d];
      }
    }
    return os.str();
  }

  // Statements computing every value at linear index i (row r, inner j); returns
  // false for an unsupported instruction. `value_of` maps ids to variable names.
  bool body(std::ostringstream& os, int64_t inner, int stop_before = -1) {
    for (const auto& in : f_.instructions) {
      if (in.id == stop_before || in.opcode == HloOpcode::kTuple) break;
      auto t = ctype(in.dtype);
      if (!t) return refuse(in, "has dtype " + xla_name(in.dtype) + ", which generated kernels do not compute in");
      std::string v = "v" + std::to_string(in.id);
      names_[in.id] = v;
      auto a = [&](size_t k) { return names_.at(in.operands[k]); };
      std::string expr;
      switch (in.opcode) {
        case HloOpcode::kParameter:
          if (in.shape.empty()) expr = load(in.dtype, "p" + std::to_string(in.parameter_number) + "[0]");
          else if (numel(in.shape) == numel(iter_)) expr = load(in.dtype, "p" + std::to_string(in.parameter_number) + "[i]");
          else continue;  // read only through broadcasts
          break;
        case HloOpcode::kConstant:
          if (!in.shape.empty()) return refuse(in, "is a constant array (only scalar constants are emitted)");
          expr = literal(in.literal);
          break;
        case HloOpcode::kBroadcast: {
          const HloInstruction& x = f_.at(in.operands[0]);
          if (x.shape.empty()) {
            names_[in.id] = names_.count(x.id) ? names_.at(x.id) : load(x.dtype, "p" + std::to_string(x.parameter_number) + "[0]");
            continue;
          }
          if (x.opcode != HloOpcode::kParameter) return refuse(in, "broadcasts a value computed inside the fusion (only fusion parameters are broadcast)");
          int64_t tb = split_for(in.shape, inner);
          const int64_t mapped = wide_inner_dims(in, tb).second;
          expr = load(x.dtype, "p" + std::to_string(x.parameter_number) + "[b" + std::to_string(in.id) + (mapped ? " + j" : "") + "]");
          break;
        }
        case HloOpcode::kReshape:
          names_[in.id] = a(0);
          continue;
        case HloOpcode::kIota: {
          // Row dims: the per-row value; the last dim of a one-dim inner block: j;
          // otherwise index arithmetic on j alone.
          const int64_t d = in.dimensions[0], ti = split_for(in.shape, inner);
          const int64_t rank = static_cast<int64_t>(in.shape.size());
          if (ti >= 0 && d < ti) expr = *t + "(io" + std::to_string(in.id) + ")";
          else if (ti == rank - 1 && d == rank - 1) expr = *t + "(j)";
          else if (ti >= 0) {
            expr = *t + "((j / " + std::to_string(product(in.shape, static_cast<size_t>(d) + 1, in.shape.size())) + "LL) % " +
                   std::to_string(in.shape[static_cast<size_t>(d)]) + "LL)";
          } else {
            expr = *t + "((i / " + std::to_string(product(in.shape, static_cast<size_t>(d) + 1, in.shape.size())) + "LL) % " +
                   std::to_string(in.shape[static_cast<size_t>(d)]) + "LL)";
          }
          break;
        }
        case HloOpcode::kConvert:
          if (in.dtype == DType::kBool) expr = "ConvertToPred()(" + a(0) + ")";
          // pred -> float through int32_t: the same 0 or 1, but GCC 12 does not vectorize a loop
          // that converts uint8_t to float (a dropout mask's loop ran scalar, 4x slower).
          else if (f_.at(in.operands[0]).dtype == DType::kBool && is_floating_point(in.dtype)) expr = *t + "(int32_t(" + a(0) + "))";
          else expr = *t + "(" + a(0) + ")";
          break;
        case HloOpcode::kDivide:
          if (!is_floating_point(in.dtype)) return refuse(in, "is an integer division (its division by zero must raise, as the interpreter's does)");
          expr = call(in, {a(0), a(1)});
          break;
        case HloOpcode::kPower:
          if (!is_floating_point(in.dtype)) return refuse(in, "is an integer power");
          expr = call(in, {a(0), a(1)});
          break;
        default: {
          // Every other elementwise op: its functor on the operands (each already of type *t,
          // or pred for select's first).
          if (!hlo::is_elementwise(in.opcode) || functor(in).empty()) return refuse(in, "has no generated form (no functor in core/scalar_ops.h)");
          std::vector<std::string> args;
          for (size_t k = 0; k < in.operands.size(); ++k) args.push_back(a(k));
          expr = call(in, args);
        }
      }
      // A computed bf16 value is rounded to bf16 (loads and constants already are).
      const bool computed = in.opcode != HloOpcode::kParameter && in.opcode != HloOpcode::kConstant && in.opcode != HloOpcode::kBroadcast;
      if (in.dtype == DType::kBFloat16 && computed) expr = "round_to_bf16(" + expr + ")";
      os << "        const " << *t << " " << v << " = " << expr << ";\n";
    }
    return true;
  }

  // `no_alias`: no output is written over an argument that a later statement of the iteration reads (__restrict__).
  std::string params(const std::string& indent, bool no_alias = true) const {
    std::ostringstream os;
    for (const auto& in : f_.instructions) {
      if (in.opcode != HloOpcode::kParameter) continue;
      os << indent << "const " << storage_type(in.dtype) << (no_alias ? "* __restrict__ p" : "* p") << in.parameter_number << " = static_cast<const "
         << storage_type(in.dtype) << "*>(args[" << in.parameter_number << "]);\n";
    }
    return os.str();
  }

  const std::string& name_of(int id) const { return names_.at(id); }
  // Why body() returned false: "<instruction> <reason>".
  const std::string& unsupported() const { return unsupported_; }

 private:
  bool refuse(const HloInstruction& in, const std::string& why) {
    unsupported_ = in.name() + " " + why;
    return false;
  }

  const HloModule& f_;
  Shape iter_;
  std::map<int, std::string> names_;
  std::string unsupported_;
};

// Empty when every value has a dtype generated kernels compute in; else why not.
std::string unsupported_type(const HloModule& f) {
  for (const auto& in : f.instructions) {
    if (in.opcode != HloOpcode::kTuple && !ctype(in.dtype)) return in.name() + " has dtype " + xla_name(in.dtype) + ", which generated kernels do not compute in";
  }
  return "";
}

// Returns nullopt after writing `why` (when given).
std::nullopt_t refuse(std::string* why_not, const std::string& why) {
  if (why_not) *why_not = why;
  return std::nullopt;
}

const char* kNotAffine = "a broadcast reads its operand at an index that is not affine in the loop's inner block";

// `roots`: the values the loop stores (a multi-output fusion's several), of one
// element count; the first one's shape is the iteration space.
std::optional<std::string> emit_loop(const HloModule& f, const std::vector<const HloInstruction*>& roots, const std::string& name,
                                     std::string* why_not) {
  const HloInstruction& root = *roots[0];
  const int64_t n = numel(root.shape);
  Emitter e(f, root.shape);
  // The largest inner block (product of trailing dims) every broadcast reads affinely.
  int64_t inner = 1;
  for (int64_t t = 0; t <= static_cast<int64_t>(root.shape.size()); ++t) {
    int64_t candidate = product(root.shape, static_cast<size_t>(t), root.shape.size());
    if (e.supports_inner(candidate)) {
      inner = candidate;
      break;
    }
  }
  if (!e.supports_inner(inner)) return refuse(why_not, kNotAffine);
  const int64_t rows = inner == 0 ? 0 : n / inner;
  const int64_t chunk = rows < 64 && inner > kChunk ? kChunk : inner;
  const int64_t chunks = chunk == 0 ? 0 : (inner + chunk - 1) / chunk;
  std::ostringstream body;
  if (!e.body(body, inner)) return refuse(why_not, e.unsupported());
  // One output pointer per root: `out`, or out0, out1, ... from the array of a multi-output fusion.
  // A multi-output kernel's pointers are not __restrict__: an element may be
  // written over an argument (in place) that the iteration reads for a later
  // element, so the compiler must keep each load before the stores that may
  // alias it. One output's store comes after every load of its iteration.
  const bool no_alias = roots.size() == 1;
  std::ostringstream outs, stores;
  for (size_t k = 0; k < roots.size(); ++k) {
    const HloInstruction& r = *roots[k];
    const std::string t = storage_type(r.dtype);
    const std::string out = roots.size() == 1 ? "out" : "out" + std::to_string(k);
    const std::string raw = roots.size() == 1 ? "out_raw" : "static_cast<void* const*>(out_raw)[" + std::to_string(k) + "]";
    outs << "  " << t << (no_alias ? "* __restrict__ " : "* ") << out << " = static_cast<" << t << "*>(" << raw << ");\n";
    stores << "        " << out << "[i] = " << (r.dtype == DType::kBFloat16 ? "bf16_bits(" + e.name_of(r.id) + ")" : e.name_of(r.id)) << ";\n";
  }
  std::ostringstream os;
  os << "extern \"C\" void " << name << "(const void* const* args, void* out_raw) {\n"
     << e.params("  ", no_alias) << outs.str()
     << "#pragma omp parallel for collapse(2) schedule(static) if (" << n << "LL >= " << kParallelElements << "LL)\n"
     << "  for (int64_t r = 0; r < " << rows << "LL; ++r) {\n"
     << "    for (int64_t c = 0; c < " << chunks << "LL; ++c) {\n"
     << e.row_code(inner)
     << "      const int64_t j_end = c * " << chunk << "LL + " << chunk << "LL < " << inner << "LL ? c * " << chunk << "LL + " << chunk
     << "LL : " << inner << "LL;\n"
     << "#pragma omp simd\n"
     << "      for (int64_t j = c * " << chunk << "LL; j < j_end; ++j) {\n"
     << "        const int64_t i = r * " << inner << "LL + j;\n"
     << body.str() << stores.str()
     << "      }\n    }\n  }\n}\n";
  return os.str();
}

// Rows of a logaddexp reduce (logsumexp) in one pass over memory: online
// softmax over chunks small enough to stay in L1. Each chunk's max is found,
// the running sum is rescaled to it once (s * exp(m_old - m_new)), and the
// chunk's exp(v - m) is summed from cache, so each element is read from memory
// once and costs one exp, where max-then-sum reads it twice.
std::string online_logsumexp_kernel(const Emitter& e, const std::string& params, const std::string& body, const std::string& value,
                                    const std::string& init, int64_t rows, int64_t inner, int64_t elements, const std::string& name) {
  constexpr int64_t kOnlineChunk = 2048;
  std::ostringstream os;
  const std::string loop = "    for (int64_t j = c0; j < c1; ++j) {\n      const int64_t i = r * " + std::to_string(inner) + "LL + j;\n" + body;
  os << "extern \"C\" void " << name << "(const void* const* args, void* out_raw) {\n"
     << params << "  float* __restrict__ out = static_cast<float*>(out_raw);\n"
     << "#pragma omp parallel for schedule(static) if (" << elements << "LL >= " << kParallelElements << "LL)\n"
     << "  for (int64_t r = 0; r < " << rows << "LL; ++r) {\n"
     << "    const int64_t c = 0; (void)c;\n"
     << e.row_code(inner)
     << "    float m = " << init << ";\n"
     << "    int has_nan = m != m;\n"
     << "    float s = m > -__builtin_inff() && m < __builtin_inff() ? 1.0f : 0.0f;\n"
     << "    for (int64_t c0 = 0; c0 < " << inner << "LL; c0 += " << kOnlineChunk << "LL) {\n"
     << "    const int64_t c1 = c0 + " << kOnlineChunk << "LL < " << inner << "LL ? c0 + " << kOnlineChunk << "LL : " << inner << "LL;\n"
     << "    float cm = -__builtin_inff();\n    int cn = 0;\n"
     << "#pragma omp simd reduction(max:cm) reduction(|:cn)\n"
     << loop << "      cm = " << value << " > cm ? " << value << " : cm;\n      cn |= " << value << " != " << value << ";\n    }\n"
     << "    has_nan |= cn;\n"
     << "    if (cm > m) {\n      s = m == -__builtin_inff() ? 0.0f : s * Exp()(m - cm);\n      m = cm;\n    }\n"
     << "    if (!(m > -__builtin_inff() && m < __builtin_inff())) continue;\n"
     << "    float cs = 0.0f;\n"
     << "#pragma omp simd reduction(+:cs)\n"
     << loop << "      cs += Exp()(" << value << " - m);\n    }\n"
     << "    s += cs;\n    }\n"
     << "    out[r] = has_nan ? __builtin_nanf(\"\") : m > -__builtin_inff() && m < __builtin_inff() ? m + Log()(s) : m;\n  }\n}\n";
  return os.str();
}

std::optional<std::string> emit_reduction(const HloModule& f, const HloInstruction& reduce, const std::string& name, std::string* why_not) {
  const HloInstruction& operand = f.at(reduce.operands[0]);
  // bf16 values are reduced as the interpreter reduces them: read as floats,
  // accumulated as f32 values are (sums and products in double), the result
  // rounded to float and then to bf16 once. A mixed reduce is not emitted.
  const bool bf16 = reduce.dtype == DType::kBFloat16;
  if (bf16 != (operand.dtype == DType::kBFloat16)) return refuse(why_not, reduce.name() + " reduces between bf16 and another type");
  const Shape& s = operand.shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  const auto& dims = reduce.dimensions;
  bool suffix = true;
  for (size_t k = 0; k < dims.size(); ++k) suffix = suffix && dims[k] == rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(k);
  const size_t split = suffix ? static_cast<size_t>(rank) - dims.size() : dims.size();
  const int64_t reduced = suffix ? product(s, split, s.size()) : product(s, 0, split);
  // Counted directly, not as numel / reduced: a reduce over an empty dim keeps its rows (each the init value).
  const int64_t kept = suffix ? product(s, 0, split) : product(s, split, s.size());
  const int64_t inner = suffix ? reduced : kept;
  const int64_t rows = suffix ? kept : reduced;
  Emitter e(f, s);
  if (!e.supports_inner(inner)) return refuse(why_not, kNotAffine);
  std::ostringstream body;
  if (!e.body(body, inner, reduce.id)) return refuse(why_not, e.unsupported());
  const std::string t = *ctype(reduce.dtype), stored = storage_type(reduce.dtype);
  // The accumulator `v` as the output's storage.
  auto store = [&](const std::string& v) { return bf16 ? "float_to_bf16_bits(float(" + v + "))" : t + "(" + v + ")"; };
  const std::string init = literal(f.at(reduce.operands[1]).literal);
  const std::string value = e.name_of(operand.id);
  if (reduce.reduce_kind == hlo::ReduceKind::kLogAddExp) {
    if (!suffix || t != "float" || bf16) {
      return refuse(why_not, reduce.name() + " is a logaddexp reduction over leading dims or of bf16 or integers (only f32 rows are emitted)");
    }
    return online_logsumexp_kernel(e, e.params("  "), body.str(), value, init, rows, inner, numel(s), name);
  }
  std::string combine, omp;
  switch (reduce.reduce_kind) {
    case hlo::ReduceKind::kAdd: combine = "acc + " + value; omp = "+"; break;
    case hlo::ReduceKind::kMul: combine = "acc * " + value; omp = "*"; break;
    case hlo::ReduceKind::kMax: combine = value + " > acc ? " + value + " : acc"; omp = "max"; break;
    case hlo::ReduceKind::kMin: combine = value + " < acc ? " + value + " : acc"; omp = "min"; break;
    case hlo::ReduceKind::kLogAddExp: return std::nullopt;  // emitted above
  }
  // max/min propagate NaN, as the interpreter's do. The row loop's omp max/min
  // reduction may drop a NaN lane, so a NaN is flagged separately; the column
  // loop combines element by element and can propagate it directly.
  const bool float_minmax = t == "float" && (reduce.reduce_kind == hlo::ReduceKind::kMax || reduce.reduce_kind == hlo::ReduceKind::kMin);
  const std::string nan_combine = "(" + value + " != " + value + " || " + combine.substr(0, combine.find(" ?")) + ") ? " + value + " : acc";
  // f32 sums and products accumulate in double, as the interpreter's do: a long
  // float accumulation drifts by up to ~n/2 ulps (2e-4 relative over 57400 terms).
  const bool wide = t == "float" && (reduce.reduce_kind == hlo::ReduceKind::kAdd || reduce.reduce_kind == hlo::ReduceKind::kMul);
  const std::string at = wide ? "double" : t;
  std::ostringstream os;
  os << "extern \"C\" void " << name << "(const void* const* args, void* out_raw) {\n"
     << e.params("  ") << "  " << stored << "* __restrict__ out = static_cast<" << stored << "*>(out_raw);\n";
  // A few long rows (a parameter's squared norm for clipping: one row of
  // millions) are cut into chunks fixed by the shape, reduced in parallel (rows
  // x chunks) and combined in chunk order: no thread count changes the sums.
  const int64_t chunk = std::max<int64_t>(kReduceChunk, (inner + kMaxReduceChunks - 1) / kMaxReduceChunks);
  if (suffix && rows < kFewRows && inner >= 2 * chunk) {
    const int64_t chunks = (inner + chunk - 1) / chunk;
    auto combine_partial = [&](const std::string& v) {
      switch (reduce.reduce_kind) {
        case hlo::ReduceKind::kAdd: return "acc + " + v;
        case hlo::ReduceKind::kMul: return "acc * " + v;
        case hlo::ReduceKind::kMax: return v + " > acc ? " + v + " : acc";
        default: return v + " < acc ? " + v + " : acc";
      }
    };
    const std::string slots = std::to_string(rows * chunks);
    os << "  " << at << " partial[" << slots << "];\n"
       << (float_minmax ? "  int partial_nan[" + slots + "];\n" : "")
       << "#pragma omp parallel for collapse(2) schedule(static)\n"
       << "  for (int64_t r = 0; r < " << rows << "LL; ++r) {\n"
       << "    for (int64_t k = 0; k < " << chunks << "LL; ++k) {\n"
       << "      const int64_t c = 0; (void)c;\n"
       << e.row_code(inner) << "      " << at << " acc = " << init << ";\n"
       << (float_minmax ? "      int has_nan = 0;\n" : "")
       << "      const int64_t j1 = (k + 1) * " << chunk << "LL < " << inner << "LL ? (k + 1) * " << chunk << "LL : " << inner << "LL;\n"
       << "#pragma omp simd reduction(" << omp << ":acc)" << (float_minmax ? " reduction(|:has_nan)" : "") << "\n"
       << "      for (int64_t j = k * " << chunk << "LL; j < j1; ++j) {\n"
       << "        const int64_t i = r * " << inner << "LL + j;\n"
       << body.str() << "        acc = " << combine << ";\n"
       << (float_minmax ? "        has_nan |= " + value + " != " + value + ";\n" : "")
       << "      }\n      partial[r * " << chunks << "LL + k] = acc;\n"
       << (float_minmax ? "      partial_nan[r * " + std::to_string(chunks) + "LL + k] = has_nan;\n" : "")
       << "    }\n  }\n"
       << "  for (int64_t r = 0; r < " << rows << "LL; ++r) {\n"
       << "    " << at << " acc = " << init << ";\n"
       << (float_minmax ? "    int has_nan = 0;\n" : "")
       << "    for (int64_t k = 0; k < " << chunks << "LL; ++k) {\n"
       << "      acc = " << combine_partial("partial[r * " + std::to_string(chunks) + "LL + k]") << ";\n"
       << (float_minmax ? "      has_nan |= partial_nan[r * " + std::to_string(chunks) + "LL + k];\n" : "")
       << "    }\n    out[r] = " << store(float_minmax ? "has_nan ? __builtin_nanf(\"\") : acc" : "acc") << ";\n  }\n}\n";
  } else if (suffix) {
    os << "#pragma omp parallel for schedule(static) if (" << numel(s) << "LL >= " << kParallelElements << "LL)\n"
       << "  for (int64_t r = 0; r < " << rows << "LL; ++r) {\n"
       << "    const int64_t c = 0; (void)c;\n"
       << e.row_code(inner) << "    " << at << " acc = " << init << ";\n"
       << (float_minmax ? "    int has_nan = 0;\n" : "")
       << "#pragma omp simd reduction(" << omp << ":acc)" << (float_minmax ? " reduction(|:has_nan)" : "") << "\n"
       << "    for (int64_t j = 0; j < " << inner << "LL; ++j) {\n"
       << "      const int64_t i = r * " << inner << "LL + j;\n"
       << body.str() << "      acc = " << combine << ";\n"
       << (float_minmax ? "      has_nan |= " + value + " != " + value + ";\n" : "")
       << "    }\n    out[r] = " << store(float_minmax ? "has_nan ? __builtin_nanf(\"\") : acc" : "acc") << ";\n  }\n}\n";
  } else {
    const int64_t block = 512;
    os << "#pragma omp parallel for schedule(static) if (" << numel(s) << "LL >= " << kParallelElements << "LL)\n"
       << "  for (int64_t c0 = 0; c0 < " << inner << "LL; c0 += " << block << "LL) {\n"
       << "    const int64_t c1 = c0 + " << block << "LL < " << inner << "LL ? c0 + " << block << "LL : " << inner << "LL;\n"
       << "    " << at << " accs[" << block << "];\n"
       << "    for (int64_t j = c0; j < c1; ++j) accs[j - c0] = " << init << ";\n"
       << "    for (int64_t r = 0; r < " << rows << "LL; ++r) {\n"
       << e.row_code(inner)
       << "#pragma omp simd\n"
       << "      for (int64_t j = c0; j < c1; ++j) {\n"
       << "        const int64_t i = r * " << inner << "LL + j;\n"
       << body.str() << "        " << at << " acc = accs[j - c0];\n        accs[j - c0] = " << (float_minmax ? nan_combine : combine) << ";\n"
       << "      }\n    }\n"
       << "    for (int64_t j = c0; j < c1; ++j) out[j] = " << store("accs[j - c0]") << ";\n  }\n}\n";
  }
  return os.str();
}

}  // namespace

bool emits_elementwise(const hlo::HloInstruction& in) {
  if (!ctype(in.dtype)) return false;
  switch (in.opcode) {
    case HloOpcode::kConvert: return true;
    case HloOpcode::kDivide:
    case HloOpcode::kPower: return is_floating_point(in.dtype);
    default: return hlo::is_elementwise(in.opcode) && !functor(in).empty();
  }
}

std::optional<std::string> emit_fusion_kernel(const hlo::HloInstruction& fusion, const std::string& name, std::string* why_not) {
  const HloModule& f = *fusion.fused_computation;
  if (const std::string bad = unsupported_type(f); !bad.empty()) return refuse(why_not, bad);
  const HloInstruction& root = f.at(f.at(f.root).operands[0]);
  if (fusion.fusion_kind == hlo::FusionKind::kInput) {
    if (root.opcode != HloOpcode::kReduce) return refuse(why_not, "an input fusion whose root is " + root.name() + ", not a reduce");
    return emit_reduction(f, root, name, why_not);
  }
  if (fusion.fusion_kind != hlo::FusionKind::kLoop) {
    return refuse(why_not, "a " + hlo::fusion_kind_name(fusion.fusion_kind) + " fusion (only loop and input fusions are emitted)");
  }
  return emit_loop(f, hlo::fusion_outputs(fusion), name, why_not);
}

}  // namespace lazytrain::backend::cpu
