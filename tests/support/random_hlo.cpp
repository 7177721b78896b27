#include "random_hlo.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/error.h"
#include "hlo/hlo_builder.h"

namespace lazytrain::testing {

namespace {

using hlo::ComparisonDirection;
using hlo::HloBuilder;
using hlo::HloOpcode;
using hlo::ReduceKind;

constexpr int kNoGrid = 1 << 20;         // q of arbitrary floats: on no grid
constexpr double kExactUnits = 0x1p24;   // grid values stay exact below 2^24 units
constexpr int64_t kMaxElements = 1 << 17;
constexpr double kMaxBound = 1e4;        // f32 values beyond this are scaled down
constexpr double kMaxIntBound = 1 << 20; // integer values beyond this are clamped
constexpr double kTranscendentalUlps = 4;

// One value of a random graph, with what the generator knows about it.
struct Val {
  int id = -1;
  Shape shape;
  DType dtype = DType::kFloat32;
  double lo = 0, hi = 0;  // every element lies in [lo, hi]
  double err = 0;         // first-order rounding error over eps (~err * 2^-24 absolute); 0: computed exactly
  int q = 0;              // exact f32 values are multiples of 2^-q (kNoGrid: unknown)
  bool trans = false;     // a transcendental contributed
  std::string expr;
  double bound() const { return std::max(std::fabs(lo), std::fabs(hi)); }
  bool exact() const { return err == 0; }
};

std::string shorten(const std::string& s) { return s.size() <= 60 ? s : s.substr(0, 57) + "..."; }

bool grid_ok(double bound, int q) { return q < kNoGrid && std::ldexp(bound, q) <= kExactUnits; }

int add_q(int a, int b) { return std::min(kNoGrid, a + b); }

class Generator {
 public:
  Generator(uint64_t seed, const RandomHloOptions& options) : rng_(seed), options_(options), b_("random_hlo") {}

  RandomHloCase run(uint64_t seed) {
    RandomHloCase c;
    c.seed = seed;
    std::vector<int> outputs;
    for (int g = 0; g < options_.graphs; ++g) {
      pool_.clear();
      for (const Val& v : graph()) {
        if (options_.only_graph >= 0 && options_.only_graph != g) continue;
        outputs.push_back(v.id);
        c.outputs.push_back(describe(v, g));
      }
    }
    c.module = b_.build(outputs);
    c.arguments = std::move(args_);
    for (const auto& [k, n] : counts_) c.step_counts.emplace_back(k, n);
    return c;
  }

 private:
  // ---- graphs ----

  std::vector<Val> graph() {
    Shape s = random_shape(rng_.chance(options_.large_probability));
    Val cur;
    const int64_t r = rng_.below(100);
    if (r < 70) cur = source_f32(s);
    else if (r < 85) cur = source_int(s, int_type());
    else cur = exact_pred(s);
    const int steps = static_cast<int>(rng_.range(options_.min_steps, options_.max_steps));
    for (int k = 0; k < steps; ++k) {
      std::optional<Val> next;
      if (cur.dtype == DType::kFloat32) next = step_f32(cur);
      else if (is_int(cur.dtype)) next = step_int(cur);
      else next = step_pred(cur);
      if (!next) next = fallback(cur);
      cur = tame(*next);
      keep(cur);
    }
    std::vector<Val> outs = {cur};
    // A second output: an intermediate value, which then has users inside and outside fusions.
    if (pool_.size() > 1 && rng_.chance(0.5)) {
      const Val& other = pool_[static_cast<size_t>(rng_.below(static_cast<int64_t>(pool_.size())))];
      if (other.id != cur.id) outs.push_back(other);
    }
    return outs;
  }

  Val fallback(const Val& x) {
    count("fallback");
    if (x.dtype == DType::kBool) return unary(HloOpcode::kNot, x);
    return binary(HloOpcode::kAdd, x, operand_like(x));
  }

  RandomOutput describe(const Val& v, int g) const {
    RandomOutput o;
    o.graph = g;
    o.expression = v.expr;
    o.transcendental = v.trans;
    o.lo = v.lo;
    o.hi = v.hi;
    if (v.dtype != DType::kFloat32 || v.exact()) {
      o.exact = true;
    } else {
      o.rtol = v.trans ? 1e-4 : 1e-5;
      o.atol = std::max(1e-6, o.rtol * v.err);
    }
    return o;
  }

  // s32 mostly, s64 (the type of PyTorch's integer tensors) sometimes.
  DType int_type() {
    if (rng_.chance(0.7)) return DType::kInt32;
    count("s64");
    return DType::kInt64;
  }
  static bool is_int(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

  // ---- shapes ----

  int64_t random_dim() { return rng_.chance(0.2) ? 1 : rng_.range(2, 7); }

  Shape random_shape(bool large) {
    if (!large) {
      Shape s(static_cast<size_t>(rng_.below(5)));
      for (auto& d : s) d = random_dim();
      return s;
    }
    count("large-shape");
    static const std::vector<int64_t> lasts = {1000, 1031, 2048, 4100, 17000};
    Shape s(static_cast<size_t>(rng_.range(1, 4)));
    for (auto& d : s) d = random_dim();
    s.back() = rng_.pick(lasts);
    for (size_t i = 0; numel(s) > kMaxElements; i = (i + 1) % s.size()) s[i] = std::max<int64_t>(1, s[i] / 2);
    return s;
  }

  // Dims of `s` kept by a broadcast from a lower rank: an increasing random subset.
  std::vector<int64_t> random_subset(size_t rank, size_t count) {
    std::vector<int64_t> all(rank);
    for (size_t i = 0; i < rank; ++i) all[i] = static_cast<int64_t>(i);
    shuffle(all);
    all.resize(count);
    std::sort(all.begin(), all.end());
    return all;
  }

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(rng_.below(static_cast<int64_t>(i)))]);
  }

  // ---- leaves ----

  enum class Kind { kUniform, kGrid, kPositive };

  Val param(const Shape& s, DType t, Kind kind = Kind::kUniform) {
    runtime::Buffer buf(s, t);
    const int64_t n = numel(s);
    Val v;
    v.dtype = t;
    if (t == DType::kFloat32) {
      float* p = buf.data<float>();
      switch (kind) {
        case Kind::kUniform:
          for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(-2.0 + 4.0 * rng_.unit());
          v.lo = -2, v.hi = 2, v.q = kNoGrid;
          break;
        case Kind::kGrid:
          for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng_.range(-12, 12)) * 0.25f;
          v.lo = -3, v.hi = 3, v.q = 2;
          break;
        case Kind::kPositive:
          for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(0.5 + 2.5 * rng_.unit());
          v.lo = 0.5, v.hi = 3, v.q = kNoGrid;
          break;
      }
    } else if (t == DType::kInt32) {
      int32_t* p = buf.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(rng_.range(-20, 20));
      v.lo = -20, v.hi = 20;
    } else if (t == DType::kInt64) {
      int64_t* p = buf.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = rng_.range(-20, 20);
      v.lo = -20, v.hi = 20;
    } else {
      uint8_t* p = buf.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = rng_.chance(0.5) ? 1 : 0;
      v.lo = 0, v.hi = 1;
    }
    v.id = b_.parameter(s, t);
    v.shape = s;
    v.expr = "p" + std::to_string(args_.size());
    args_.push_back(std::move(buf));
    keep(v);
    return v;
  }

  Kind random_kind() {
    const int64_t r = rng_.below(10);
    return r < 6 ? Kind::kUniform : r < 8 ? Kind::kGrid : Kind::kPositive;
  }

  // A scalar constant broadcast to `s` (the scalar itself for rank 0).
  Val constant(double value, const Shape& s, DType t) {
    Val v;
    v.id = b_.full(value, s, t);
    v.shape = s;
    v.dtype = t;
    v.lo = v.hi = value;
    v.q = 2;  // constants are multiples of 1/4
    v.expr = std::to_string(value).substr(0, 5);
    return v;
  }

  Val iota(const Shape& s, DType t) {
    count("iota");
    Val v;
    const int64_t d = rng_.below(static_cast<int64_t>(s.size()));
    v.id = b_.iota(s, t, d);
    v.shape = s;
    v.dtype = t;
    v.lo = 0, v.hi = static_cast<double>(s[static_cast<size_t>(d)] - 1);
    v.q = 0;
    v.expr = "iota" + std::to_string(d);
    return v;
  }

  // A parameter of a lower rank (or a scalar parameter) broadcast to `s`.
  Val broadcast_param(const Shape& s, DType t, Kind kind) {
    const size_t keep_rank = s.empty() ? 0 : static_cast<size_t>(rng_.below(static_cast<int64_t>(s.size())));
    std::vector<int64_t> dims = random_subset(s.size(), keep_rank);
    Shape ps;
    for (int64_t d : dims) ps.push_back(s[static_cast<size_t>(d)]);
    count(ps.empty() ? "broadcast-scalar-param" : "broadcast-param");
    Val p = param(ps, t, kind);
    return broadcast(p, s, dims);
  }

  Val source_f32(const Shape& s) {
    const int64_t r = rng_.below(100);
    if (r < 60 || s.empty()) return param(s, DType::kFloat32, random_kind());
    if (r < 85) return broadcast_param(s, DType::kFloat32, random_kind());
    return iota(s, DType::kFloat32);
  }

  Val source_int(const Shape& s, DType t) {
    const int64_t r = rng_.below(100);
    if (r < 60 || s.empty()) return param(s, t);
    if (r < 80) return broadcast_param(s, t, Kind::kUniform);
    return iota(s, t);
  }

  // A second operand for a binary op on `x`: same shape and dtype.
  Val operand_like(const Val& x) {
    const Shape& s = x.shape;
    const DType t = x.dtype;
    if (t == DType::kBool) return exact_pred(s);
    const int64_t r = rng_.below(100);
    if (r < 25) {
      std::vector<Val> same;
      for (const Val& v : pool_) {
        if (v.shape == s && v.dtype == t && v.id != x.id) same.push_back(v);
      }
      if (!same.empty()) {
        count("reuse");
        return rng_.pick(same);
      }
    }
    if (r < 45) return param(s, t, random_kind());
    if (r < 65 && !s.empty()) return broadcast_param(s, t, random_kind());
    if (r < 78) {
      count("broadcast-constant");
      static const std::vector<double> floats = {0.5, 2.0, -1.5, 0.25, 3.0, 1.0, -0.75};
      static const std::vector<double> ints = {-3, 1, 2, 5, 7};
      return constant(rng_.pick(t == DType::kFloat32 ? floats : ints), s, t);
    }
    if (r < 88 && !s.empty()) return iota(s, t);
    if (r < 94) {
      count("self");
      return x;
    }
    return param(s, t, random_kind());
  }

  // An exactly computed value of shape `s` (for compares and converts).
  Val exact_value(const Shape& s, DType t) {
    const int64_t r = rng_.below(100);
    if (r < 20) {
      std::vector<Val> same;
      for (const Val& v : pool_) {
        if (v.shape == s && v.dtype == t && v.exact()) same.push_back(v);
      }
      if (!same.empty()) return rng_.pick(same);
    }
    if (r < 50) return param(s, t, Kind::kGrid);
    if (r < 70 && !s.empty()) return broadcast_param(s, t, Kind::kGrid);
    if (r < 85 && !s.empty()) return iota(s, t);
    return constant(t == DType::kFloat32 ? 0.25 * static_cast<double>(rng_.range(-8, 8)) : static_cast<double>(rng_.range(0, 5)), s, t);
  }

  Val exact_pred(const Shape& s, const Val* candidate = nullptr) {
    const int64_t r = rng_.below(100);
    if (r < 12) return param(s, DType::kBool);
    DType t = candidate ? candidate->dtype : rng_.chance(0.7) ? DType::kFloat32 : int_type();
    Val a = candidate ? *candidate : exact_value(s, t);
    Val b = exact_value(s, t);
    static const std::vector<ComparisonDirection> dirs = {ComparisonDirection::kEq, ComparisonDirection::kNe, ComparisonDirection::kLt,
                                                          ComparisonDirection::kLe, ComparisonDirection::kGt, ComparisonDirection::kGe};
    Val p = compare(a, b, rng_.pick(dirs));
    if (r < 22) p = unary(HloOpcode::kNot, p);
    else if (r < 30) p = binary(rng_.chance(0.5) ? HloOpcode::kAnd : HloOpcode::kOr, p, param(s, DType::kBool));
    return p;
  }

  // ---- value transforms that keep inputs in range ----

  // x scaled into [-limit, limit]: by an exact power of two, or through tanh.
  Val bounded(const Val& x, double limit) {
    if (x.bound() <= limit) return x;
    if (limit >= 1 && rng_.chance(0.3)) return unary(HloOpcode::kTanh, x);
    const int k = static_cast<int>(std::ceil(std::log2(x.bound() / limit)));
    return binary(HloOpcode::kMultiply, x, constant(std::ldexp(1.0, -k), x.shape, x.dtype));
  }

  // |x| + 0.5 (x itself when already >= 0.5): a value >= 0.5 for log, sqrt, rsqrt, pow and divide.
  Val positive(const Val& x) {
    if (x.lo >= 0.5 && x.hi <= 1e3) return x;
    Val y = bounded(x, 64);
    return binary(HloOpcode::kAdd, unary(HloOpcode::kAbs, y), constant(0.5, y.shape, y.dtype));
  }

  Val tame(const Val& x) {
    if (x.dtype == DType::kFloat32 && x.bound() > kMaxBound) return bounded(x, kMaxBound / 16);
    if (is_int(x.dtype) && x.bound() > kMaxIntBound) {
      Val y = binary(HloOpcode::kMaximum, x, constant(-1000, x.shape, x.dtype));
      return binary(HloOpcode::kMinimum, y, constant(1000, x.shape, x.dtype));
    }
    return x;
  }

  // ---- steps ----

  std::optional<Val> step_f32(const Val& x) {
    const int64_t r = rng_.below(100);
    if (r < 12) {
      static const std::vector<HloOpcode> ops = {HloOpcode::kNegate, HloOpcode::kAbs, HloOpcode::kTanh, HloOpcode::kErf, HloOpcode::kSine};
      return unary(rng_.pick(ops), x);
    }
    if (r < 20) return unary(HloOpcode::kExp, bounded(x, 8));
    if (r < 28) {
      static const std::vector<HloOpcode> ops = {HloOpcode::kLog, HloOpcode::kSqrt, HloOpcode::kRsqrt};
      return unary(rng_.pick(ops), positive(x));
    }
    if (r < 46) {
      static const std::vector<HloOpcode> ops = {HloOpcode::kAdd, HloOpcode::kSubtract, HloOpcode::kMultiply, HloOpcode::kMaximum,
                                                 HloOpcode::kMinimum};
      return binary(rng_.pick(ops), x, operand_like(x));
    }
    if (r < 51) {
      Val d = positive(operand_like(x));
      return rng_.chance(0.7) ? binary(HloOpcode::kDivide, x, d) : binary(HloOpcode::kDivide, d, positive(x));
    }
    if (r < 55) return power(x);
    if (r < 63) return select_step(x);
    if (r < 67) return convert_step(x);
    if (r < 73) return broadcast_step(x);
    if (r < 78) return reshape_step(x);
    if (r < 89) return reduce_step(x);
    if (r < 92) return transpose_step(x);
    if (r < 95) return slice_step(x);
    return dot_step(x);
  }

  std::optional<Val> step_int(const Val& x) {
    const int64_t r = rng_.below(100);
    if (r < 22) {
      static const std::vector<HloOpcode> ops = {HloOpcode::kAdd, HloOpcode::kSubtract, HloOpcode::kMaximum, HloOpcode::kMinimum};
      return binary(rng_.pick(ops), x, operand_like(x));
    }
    if (r < 30) {
      Val y = operand_like(x);
      if (x.bound() * y.bound() >= kMaxIntBound) return std::nullopt;
      return binary(HloOpcode::kMultiply, x, y);
    }
    if (r < 36) return unary(rng_.chance(0.5) ? HloOpcode::kNegate : HloOpcode::kAbs, x);
    if (r < 46) return select_step(x);
    if (r < 58) return reduce_step(x);
    if (r < 72) {
      count("convert-int-f32");
      Val f = convert(x, DType::kFloat32);
      return rng_.chance(0.5) ? binary(HloOpcode::kMultiply, f, operand_like(f)) : f;
    }
    if (r < 80) return broadcast_step(x);
    if (r < 86) return reshape_step(x);
    if (r < 90) return transpose_step(x);
    if (r < 94) return slice_step(x);
    count("convert-pred-int");
    return binary(HloOpcode::kAdd, x, convert(exact_pred(x.shape, &x), x.dtype));
  }

  std::optional<Val> step_pred(const Val& x) {
    const int64_t r = rng_.below(100);
    if (r < 20) return unary(HloOpcode::kNot, x);
    if (r < 40) return binary(rng_.chance(0.5) ? HloOpcode::kAnd : HloOpcode::kOr, x, exact_pred(x.shape));
    if (r < 65) {
      count("select");
      Val a = rng_.chance(0.8) ? source_f32(x.shape) : source_int(x.shape, int_type());
      return select(x, a, operand_like(a));
    }
    if (r < 82) {
      count("convert-pred");
      return convert(x, rng_.chance(0.7) ? DType::kFloat32 : int_type());
    }
    if (r < 88) return broadcast_step(x);
    if (r < 94) return reshape_step(x);
    return rng_.chance(0.5) ? transpose_step(x) : slice_step(x);
  }

  std::optional<Val> power(const Val& x) {
    count("power");
    Val base = positive(bounded(x, 16));
    if (rng_.chance(0.5)) {
      static const std::vector<double> exponents = {2.0, 0.5, -1.0, 3.0, 1.5, -0.5};
      return binary(HloOpcode::kPower, base, constant(rng_.pick(exponents), x.shape, x.dtype));
    }
    return binary(HloOpcode::kPower, base, bounded(operand_like(x), 2));
  }

  std::optional<Val> select_step(const Val& x) {
    count("select");
    Val p = exact_pred(x.shape, x.exact() && rng_.chance(0.5) ? &x : nullptr);
    Val y = operand_like(x);
    return rng_.chance(0.5) ? select(p, x, y) : select(p, y, x);
  }

  std::optional<Val> convert_step(const Val& x) {
    if (x.exact() && x.bound() < kMaxIntBound && rng_.chance(0.7)) {
      count("convert-f32-int-f32");
      Val i = convert(x, int_type());
      if (rng_.chance(0.6)) i = binary(rng_.chance(0.5) ? HloOpcode::kAdd : HloOpcode::kMaximum, i, operand_like(i));
      return convert(i, DType::kFloat32);
    }
    count("convert-pred-f32");
    Val pf = convert(exact_pred(x.shape), DType::kFloat32);
    return binary(rng_.chance(0.5) ? HloOpcode::kMultiply : HloOpcode::kAdd, x, pf);
  }

  // x broadcast into a higher rank, then combined with a value of that shape.
  std::optional<Val> broadcast_step(const Val& x) {
    if (x.shape.size() >= 4) return std::nullopt;
    const size_t rank = static_cast<size_t>(rng_.range(static_cast<int64_t>(x.shape.size()) + 1, 4));
    std::vector<int64_t> dims = random_subset(rank, x.shape.size());
    Shape s(rank, 0);
    for (size_t i = 0; i < dims.size(); ++i) s[static_cast<size_t>(dims[i])] = x.shape[i];
    for (auto& d : s) {
      if (d == 0) d = random_dim();
    }
    if (numel(s) > kMaxElements) return std::nullopt;
    count(x.shape.empty() ? "broadcast-scalar-value" : "broadcast-value");
    Val y = broadcast(x, s, dims);
    if (y.dtype == DType::kBool || rng_.chance(0.2)) return y;
    return binary(rng_.chance(0.5) ? HloOpcode::kAdd : HloOpcode::kMultiply, y, operand_like(y));
  }

  std::optional<Val> reshape_step(const Val& x) {
    int64_t n = numel(x.shape);
    std::vector<int64_t> factors;
    for (int64_t p = 2; p * p <= n; ++p) {
      while (n % p == 0) {
        factors.push_back(p);
        n /= p;
      }
    }
    if (n > 1) factors.push_back(n);
    shuffle(factors);
    const size_t rank = factors.empty() ? static_cast<size_t>(rng_.below(3)) : static_cast<size_t>(rng_.range(1, 4));
    Shape s(rank, 1);
    for (int64_t f : factors) s[static_cast<size_t>(rng_.below(static_cast<int64_t>(rank)))] *= f;
    if (s == x.shape) return std::nullopt;
    count("reshape");
    return reshape(x, s);
  }

  std::optional<Val> reduce_step(const Val& x) {
    const size_t rank = x.shape.size();
    if (rank == 0) return std::nullopt;
    std::vector<int64_t> dims;
    const int64_t mode = rng_.below(100);
    std::string what;
    if (mode < 35) {
      what = "reduce-trailing";
      const size_t k = static_cast<size_t>(rng_.range(1, static_cast<int64_t>(rank)));
      for (size_t d = rank - k; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
    } else if (mode < 65) {
      what = "reduce-leading";
      const size_t k = static_cast<size_t>(rng_.range(1, static_cast<int64_t>(rank)));
      for (size_t d = 0; d < k; ++d) dims.push_back(static_cast<int64_t>(d));
    } else if (mode < 85 && rank >= 3) {
      what = "reduce-middle";
      if (rng_.chance(0.5)) {
        dims = {rng_.range(1, static_cast<int64_t>(rank) - 2)};
      } else {
        dims = {0, 2};  // not contiguous
      }
    } else {
      what = "reduce-random";
      dims = random_subset(rank, static_cast<size_t>(rng_.range(1, static_cast<int64_t>(rank))));
    }
    if (dims.size() == rank) what = "reduce-all";
    int64_t n = 1;
    for (int64_t d : dims) n *= x.shape[static_cast<size_t>(d)];
    ReduceKind kind = rng_.chance(0.5) ? ReduceKind::kAdd : rng_.chance(0.5) ? ReduceKind::kMax : ReduceKind::kMin;
    Val in = x;
    if (kind == ReduceKind::kAdd && is_int(x.dtype) && static_cast<double>(n) * x.bound() >= kMaxIntBound) kind = ReduceKind::kMax;
    if (n <= 8 && rng_.chance(0.2)) {
      // A product of a few values kept within [-1.5, 1.5] (integers: while it stays small).
      if (x.dtype == DType::kFloat32) in = bounded(x, 1.5);
      if (std::pow(in.bound(), static_cast<double>(n)) < kMaxIntBound) {
        kind = ReduceKind::kMul;
        count("reduce-multiply");
      }
    }
    if (kind != ReduceKind::kMul && x.dtype == DType::kFloat32 && rng_.chance(0.2)) {
      kind = ReduceKind::kLogAddExp;  // logsumexp: the online-softmax kernel on rows
      count("reduce-logaddexp");
    }
    count(what);
    Val red = reduce(in, dims, kind);
    if (!rng_.chance(0.5)) return red;
    // Broadcast back and combine with the operand (softmax's x - max(x), layer norm's x / sum).
    count("reduce-broadcast-back");
    std::vector<int64_t> kept;
    for (size_t d = 0; d < rank; ++d) {
      if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) kept.push_back(static_cast<int64_t>(d));
    }
    Val back = broadcast(tame(red), x.shape, kept);
    if (x.dtype == DType::kFloat32 && rng_.chance(0.4)) return binary(HloOpcode::kDivide, x, positive(back));
    return binary(HloOpcode::kSubtract, x, back);
  }

  std::optional<Val> transpose_step(const Val& x) {
    if (x.shape.size() < 2) return std::nullopt;
    std::vector<int64_t> perm(x.shape.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    shuffle(perm);
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) std::swap(perm[0], perm[1]);
    count("transpose");
    Val v = x;
    v.id = b_.transpose(x.id, perm);
    v.shape = b_.shape(v.id);
    v.expr = shorten("transpose(" + x.expr + ")");
    return v;
  }

  std::optional<Val> slice_step(const Val& x) {
    if (x.shape.empty()) return std::nullopt;
    std::vector<int64_t> starts, limits, strides;
    for (int64_t d : x.shape) {
      const int64_t start = rng_.below(d);
      starts.push_back(start);
      limits.push_back(rng_.range(start + 1, d));
      strides.push_back(rng_.chance(0.6) ? 1 : rng_.range(2, 3));
    }
    count("slice");
    Val v = x;
    v.id = b_.slice(x.id, starts, limits, strides);
    v.shape = b_.shape(v.id);
    v.expr = shorten("slice(" + x.expr + ")");
    return v;
  }

  std::optional<Val> dot_step(const Val& x) {
    const size_t rank = x.shape.size();
    if (rank < 2 || x.dtype != DType::kFloat32) return std::nullopt;
    const int64_t k = x.shape[rank - 1];
    const int64_t n = random_dim();
    if (numel(x.shape) * n > (1 << 21)) return std::nullopt;
    Shape rs(x.shape.begin(), x.shape.end() - 2);
    Val y;
    const bool transposed = rng_.chance(0.3);
    if (transposed) {
      rs.push_back(n);
      rs.push_back(k);
      Val p = param(rs, DType::kFloat32, random_kind());
      std::vector<int64_t> perm;
      for (size_t i = 0; i + 2 < rank; ++i) perm.push_back(static_cast<int64_t>(i));
      perm.push_back(static_cast<int64_t>(rank) - 1);
      perm.push_back(static_cast<int64_t>(rank) - 2);
      y = p;
      y.id = b_.transpose(p.id, perm);
      y.shape = b_.shape(y.id);
    } else {
      rs.push_back(k);
      rs.push_back(n);
      y = param(rs, DType::kFloat32, random_kind());
    }
    count(transposed ? "dot-transposed" : "dot");
    // Products of all sign combinations, times the contracted size.
    const double c[] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
    Val v;
    v.id = b_.matmul(x.id, y.id);
    v.shape = b_.shape(v.id);
    v.dtype = DType::kFloat32;
    const double kd = static_cast<double>(k);
    v.lo = kd * std::min(0.0, *std::min_element(c, c + 4));
    v.hi = kd * std::max(0.0, *std::max_element(c, c + 4));
    v.q = add_q(x.q, y.q);
    const bool exact = x.exact() && y.exact() && grid_ok(kd * x.bound() * y.bound(), v.q);
    v.err = exact ? 0 : kd * (x.err * y.bound() + y.err * x.bound() + x.bound() * y.bound());
    v.trans = x.trans || y.trans;
    v.expr = shorten("dot(" + x.expr + ", " + y.expr + ")");
    return v;
  }

  // ---- instructions with their value ranges ----

  Val unary(HloOpcode op, const Val& x) {
    Val v = x;
    v.expr = shorten(hlo::opcode_name(op) + "(" + x.expr + ")");
    const double b = x.bound();
    switch (op) {
      case HloOpcode::kNegate:
        v.lo = -x.hi, v.hi = -x.lo;
        break;
      case HloOpcode::kAbs:
        if (x.lo >= 0) v.lo = x.lo, v.hi = x.hi;
        else if (x.hi <= 0) v.lo = -x.hi, v.hi = -x.lo;
        else v.lo = 0, v.hi = b;
        break;
      case HloOpcode::kNot:
        break;
      case HloOpcode::kExp:
        v.lo = std::exp(x.lo), v.hi = std::exp(x.hi);
        v.err = v.hi * (x.err + kTranscendentalUlps);
        break;
      case HloOpcode::kLog:
        v.lo = std::log(x.lo), v.hi = std::log(x.hi);
        v.err = x.err / x.lo + kTranscendentalUlps * std::max(1.0, v.bound());
        break;
      case HloOpcode::kSqrt:
        v.lo = std::sqrt(x.lo), v.hi = std::sqrt(x.hi);
        v.err = x.err / (2 * v.lo) + 2 * v.hi;
        break;
      case HloOpcode::kRsqrt:
        v.lo = 1 / std::sqrt(x.hi), v.hi = 1 / std::sqrt(x.lo);
        v.err = x.err * 0.5 * std::pow(x.lo, -1.5) + kTranscendentalUlps * v.hi;
        break;
      case HloOpcode::kTanh:
        v.lo = std::tanh(x.lo), v.hi = std::tanh(x.hi);
        v.err = x.err + kTranscendentalUlps;
        break;
      case HloOpcode::kErf:
        v.lo = std::erf(x.lo), v.hi = std::erf(x.hi);
        v.err = 1.13 * x.err + kTranscendentalUlps;
        break;
      case HloOpcode::kSine:  // |sin'| <= 1
        v.lo = -1, v.hi = 1;
        v.err = x.err + kTranscendentalUlps;
        break;
      default: throw Error("[random hlo] unexpected unary " + hlo::opcode_name(op));
    }
    if (op != HloOpcode::kNegate && op != HloOpcode::kAbs && op != HloOpcode::kNot) {
      v.q = kNoGrid;
      if (op != HloOpcode::kSqrt) v.trans = true;
    }
    count(hlo::opcode_name(op));
    v.id = b_.unary(op, x.id);
    keep(v);
    return v;
  }

  Val binary(HloOpcode op, const Val& a, const Val& c) {
    Val v = a;
    v.trans = a.trans || c.trans;
    v.expr = shorten(hlo::opcode_name(op) + "(" + a.expr + ", " + c.expr + ")");
    const bool both_exact = a.exact() && c.exact();
    auto rounded = [&](int q, double extra) {
      v.q = q;
      v.err = both_exact && grid_ok(v.bound(), q) ? 0 : extra + v.bound();
    };
    switch (op) {
      case HloOpcode::kAdd:
        v.lo = a.lo + c.lo, v.hi = a.hi + c.hi;
        rounded(std::max(a.q, c.q), a.err + c.err);
        break;
      case HloOpcode::kSubtract:
        v.lo = a.lo - c.hi, v.hi = a.hi - c.lo;
        rounded(std::max(a.q, c.q), a.err + c.err);
        break;
      case HloOpcode::kMultiply: {
        const double p[] = {a.lo * c.lo, a.lo * c.hi, a.hi * c.lo, a.hi * c.hi};
        v.lo = *std::min_element(p, p + 4), v.hi = *std::max_element(p, p + 4);
        rounded(add_q(a.q, c.q), a.err * c.bound() + c.err * a.bound());
        break;
      }
      case HloOpcode::kDivide: {
        if (!(c.lo >= 0.5)) throw Error("[random hlo] divisor not bounded away from 0");
        const double p[] = {a.lo / c.lo, a.lo / c.hi, a.hi / c.lo, a.hi / c.hi};
        v.lo = *std::min_element(p, p + 4), v.hi = *std::max_element(p, p + 4);
        v.q = kNoGrid;
        v.err = a.err / c.lo + c.err * a.bound() / (c.lo * c.lo) + v.bound();
        break;
      }
      case HloOpcode::kMaximum:
      case HloOpcode::kMinimum:
        if (op == HloOpcode::kMaximum) v.lo = std::max(a.lo, c.lo), v.hi = std::max(a.hi, c.hi);
        else v.lo = std::min(a.lo, c.lo), v.hi = std::min(a.hi, c.hi);
        v.q = std::max(a.q, c.q);
        v.err = std::max(a.err, c.err);
        count(hlo::opcode_name(op));
        break;
      case HloOpcode::kPower: {
        if (!(a.lo >= 0.5)) throw Error("[random hlo] power base not bounded away from 0");
        const double p[] = {std::pow(a.lo, c.lo), std::pow(a.lo, c.hi), std::pow(a.hi, c.lo), std::pow(a.hi, c.hi)};
        v.lo = *std::min_element(p, p + 4), v.hi = *std::max_element(p, p + 4);
        const double big = v.bound();
        v.q = kNoGrid;
        v.err = a.err * c.bound() * big / a.lo + c.err * std::max(std::fabs(std::log(a.lo)), std::fabs(std::log(a.hi))) * big +
                kTranscendentalUlps * big;
        v.trans = true;
        break;
      }
      case HloOpcode::kAnd:
      case HloOpcode::kOr:
        v.lo = 0, v.hi = 1, v.err = 0;
        break;
      default: throw Error("[random hlo] unexpected binary " + hlo::opcode_name(op));
    }
    if (a.dtype != DType::kFloat32) v.err = 0;  // integers are exact (the generator avoids overflow)
    v.id = b_.binary(op, a.id, c.id);
    keep(v);
    return v;
  }

  Val compare(const Val& a, const Val& c, ComparisonDirection d) {
    if (!a.exact() || !c.exact()) throw Error("[random hlo] compare of inexact values");
    count("compare");
    Val v;
    v.id = b_.compare(a.id, c.id, d);
    v.shape = a.shape;
    v.dtype = DType::kBool;
    v.lo = 0, v.hi = 1;
    v.expr = shorten(hlo::direction_name(d) + "(" + a.expr + ", " + c.expr + ")");
    keep(v);
    return v;
  }

  Val select(const Val& p, const Val& a, const Val& c) {
    Val v = a;
    v.lo = std::min(a.lo, c.lo), v.hi = std::max(a.hi, c.hi);
    v.err = std::max(a.err, c.err);
    v.q = std::max(a.q, c.q);
    v.trans = a.trans || c.trans;
    v.id = b_.select(p.id, a.id, c.id);
    v.expr = shorten("select(" + p.expr + ", " + a.expr + ", " + c.expr + ")");
    keep(v);
    return v;
  }

  Val convert(const Val& x, DType t) {
    Val v = x;
    v.dtype = t;
    v.expr = shorten("convert(" + x.expr + ")");
    if (x.dtype == DType::kFloat32 && t != DType::kFloat32 && !x.exact()) throw Error("[random hlo] convert of an inexact value");
    if (is_int(t) && x.dtype == DType::kFloat32) v.lo = std::trunc(x.lo), v.hi = std::trunc(x.hi);
    if (t == DType::kBool) v.lo = 0, v.hi = 1;
    if (t == DType::kFloat32 && x.dtype != DType::kFloat32) {
      v.q = 0;
      v.err = 0;
    }
    if (t != DType::kFloat32) v.err = 0;
    v.id = b_.convert(x.id, t);
    keep(v);
    return v;
  }

  Val broadcast(const Val& x, const Shape& s, const std::vector<int64_t>& dims) {
    Val v = x;
    v.id = b_.broadcast(x.id, s, dims);
    v.shape = s;
    v.expr = shorten("bcast(" + x.expr + ")");
    return v;
  }

  Val reshape(const Val& x, const Shape& s) {
    Val v = x;
    v.id = b_.reshape(x.id, s);
    v.shape = s;
    v.expr = shorten("reshape(" + x.expr + ")");
    return v;
  }

  Val reduce(const Val& x, const std::vector<int64_t>& dims, ReduceKind kind) {
    Val v = x;
    v.id = b_.reduce(x.id, dims, kind);
    v.shape = b_.shape(v.id);
    double n = 1;
    for (int64_t d : dims) n *= static_cast<double>(x.shape[static_cast<size_t>(d)]);
    if (kind == ReduceKind::kAdd) {
      v.lo = n * std::min(0.0, x.lo), v.hi = n * std::max(0.0, x.hi);
      if (x.dtype == DType::kFloat32) v.err = x.exact() && grid_ok(n * x.bound(), x.q) ? 0 : n * (x.err + x.bound());
    } else if (kind == ReduceKind::kMul) {
      const double big = std::pow(x.bound(), n);
      v.lo = x.lo >= 0 ? std::pow(x.lo, n) : -big, v.hi = big;
      v.q = std::min<double>(kNoGrid, x.q * n) >= kNoGrid ? kNoGrid : static_cast<int>(x.q * n);
      if (x.dtype == DType::kFloat32) {
        v.err = x.exact() && grid_ok(big, v.q) ? 0 : n * std::pow(x.bound(), n - 1) * x.err + n * big;
      }
    } else if (kind == ReduceKind::kLogAddExp) {
      // max(x) <= logsumexp(x) <= max(x) + log(n). The softmax weights sum to 1,
      // so an input error passes through once; the sum of n exponentials adds up
      // to n rounding errors of exp relative to the sum, and log and the final add
      // one of the result each.
      v.lo = x.lo, v.hi = x.hi + std::log(n);
      v.err = x.err + kTranscendentalUlps * (n + 1) + v.bound();
      v.q = kNoGrid;
      v.trans = true;
    }
    v.expr = shorten("reduce-" + hlo::reduce_kind_name(kind) + "(" + x.expr + ")");
    keep(v);
    return v;
  }

  void keep(const Val& v) {
    if (v.id >= 0) pool_.push_back(v);
  }
  void count(const std::string& what) { ++counts_[what]; }

  RawRng rng_;
  RandomHloOptions options_;
  HloBuilder b_;
  std::vector<runtime::Buffer> args_;
  std::vector<Val> pool_;
  std::map<std::string, int> counts_;
};

}  // namespace

RandomHloCase make_random_hlo_case(uint64_t seed, const RandomHloOptions& options) {
  return Generator(seed, options).run(seed);
}

}  // namespace lazytrain::testing
