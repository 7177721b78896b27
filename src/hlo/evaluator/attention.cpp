// Attention by its formula (attention.h), in double, row by row.
#include "hlo/evaluator/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "hlo/custom_call.h"

namespace lazytrain::hlo::evaluator {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The custom-call's operands and keys.
struct Attention {
  int64_t batch = 1, L = 0, S = 0, E = 0, Ev = 0;
  double scale = 1;
  bool causal = false;
  const ArrayRef* mask = nullptr;
  std::vector<int64_t> mask_batch_offset;  // element offset of batch index b's [L, S] mask
  int64_t mask_row_stride = 0, mask_col_stride = 0;
  double dropout_p = 0;
  uint64_t seed = 0;
};

Attention read(const HloInstruction& in, const Operands& args, bool backward) {
  const CustomCallConfig config(in.backend_config);
  Attention a;
  const Shape& qs = args[0].shape();
  const size_t rank = qs.size();
  a.L = qs[rank - 2], a.E = qs[rank - 1], a.S = args[1].shape()[rank - 2], a.Ev = args[2].shape()[rank - 1];
  for (size_t d = 0; d + 2 < rank; ++d) a.batch *= qs[d];
  a.scale = args.at(3).data<float>()[0];
  a.causal = config.number("is_causal") != 0;
  size_t next = backward ? 6 : 4;
  if (config.number("has_mask") != 0) {
    a.mask = &args.at(next++);
    const Shape& ms = a.mask->shape();
    const std::vector<int64_t> strides = contiguous_strides(ms);
    a.mask_row_stride = ms[rank - 2] == 1 ? 0 : strides[rank - 2];  // a dim of 1 broadcasts
    a.mask_col_stride = ms[rank - 1] == 1 ? 0 : strides[rank - 1];
    for (int64_t b = 0; b < a.batch; ++b) {
      int64_t rest = b, offset = 0;
      for (int64_t d = static_cast<int64_t>(rank) - 3; d >= 0; --d) {
        if (ms[d] != 1) offset += rest % qs[d] * strides[d];
        rest /= qs[d];
      }
      a.mask_batch_offset.push_back(offset);
    }
  }
  if (config.number("has_dropout") != 0) {
    a.dropout_p = args.at(next).data<float>()[0];
    a.seed = static_cast<uint64_t>(args.at(next + 1).data<int64_t>()[0]);
  }
  return a;
}

// SplitMix64's finaliser.
uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Weight (b, i, j)'s dropout factor: 1/(1 - p) if kept, else 0; 1 without dropout.
double dropout(const Attention& a, int64_t b, int64_t i, int64_t j) {
  if (a.dropout_p <= 0) return 1;
  const uint64_t bits = mix64(a.seed ^ mix64(static_cast<uint64_t>((b * a.L + i) * a.S + j))) >> 40;
  const double uniform = static_cast<double>(bits) / 16777216.0;
  return uniform >= a.dropout_p ? 1 / (1 - a.dropout_p) : 0;
}

// Query row i of batch index b: P (the softmax of its masked scores, all 0
// for a row whose every score is -inf) and its logsumexp.
template <typename T>
double softmax_row(const Attention& a, const T* q, const T* k, int64_t b, int64_t i, std::vector<double>& p) {
  const T* qi = q + (b * a.L + i) * a.E;
  double m = kNegInf;
  bool nan = false;
  for (int64_t j = 0; j < a.S; ++j) {
    const T* kj = k + (b * a.S + j) * a.E;
    double s = 0;
    for (int64_t e = 0; e < a.E; ++e) s += static_cast<double>(static_cast<float>(qi[e])) * static_cast<double>(static_cast<float>(kj[e]));
    s *= a.scale;
    if (a.causal && j > i) s = kNegInf;
    if (a.mask) {
      const int64_t at = a.mask_batch_offset[static_cast<size_t>(b)] + i * a.mask_row_stride + j * a.mask_col_stride;
      if (a.mask->dtype() == DType::kBool) {
        if (!a.mask->data<uint8_t>()[at]) s = kNegInf;
      } else {
        s += a.mask->data<float>()[at];
      }
    }
    nan = nan || std::isnan(s);
    m = std::max(m, s);
    p[static_cast<size_t>(j)] = s;
  }
  if (nan) m = kNaN;
  if (m == kNegInf) {
    std::fill(p.begin(), p.end(), 0.0);
    return kNegInf;
  }
  double l = 0;
  for (double& pj : p) l += (pj = std::exp(pj - m));
  for (double& pj : p) pj /= l;
  return m + std::log(l);
}

template <typename T>
void forward(const Attention& a, const T* q, const T* k, const T* v, float* out) {
  const int64_t rows = a.batch * a.L;
#pragma omp parallel if (rows * a.S * (a.E + a.Ev) > (1 << 16))
  {
    std::vector<double> p(static_cast<size_t>(a.S)), o(static_cast<size_t>(a.Ev));
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t b = row / a.L, i = row % a.L;
      const double lse = softmax_row(a, q, k, b, i, p);
      std::fill(o.begin(), o.end(), 0.0);
      for (int64_t j = 0; j < a.S; ++j) {
        const double w = p[static_cast<size_t>(j)] * dropout(a, b, i, j);
        if (w == 0) continue;  // a masked or dropped key adds nothing (its v may be anything finite)
        const T* vj = v + (b * a.S + j) * a.Ev;
        for (int64_t e = 0; e < a.Ev; ++e) o[static_cast<size_t>(e)] += w * static_cast<float>(vj[e]);
      }
      float* r = out + row * (a.Ev + 1);
      for (int64_t e = 0; e < a.Ev; ++e) r[e] = static_cast<float>(o[static_cast<size_t>(e)]);
      r[a.Ev] = static_cast<float>(lse);
    }
  }
}

template <typename T>
void backward(const Attention& a, const T* q, const T* k, const T* v, const T* dout, float* out) {
  const int64_t L = a.L, S = a.S, E = a.E, Ev = a.Ev;
  // One batch index per task: its gradients are its own.
#pragma omp parallel for schedule(dynamic) if (a.batch > 1 && a.batch * L * S * (E + Ev) > (1 << 16))
  for (int64_t b = 0; b < a.batch; ++b) {
    std::vector<double> p(static_cast<size_t>(S)), dq(static_cast<size_t>(L * E)), dk(static_cast<size_t>(S * E), 0.0),
        dv(static_cast<size_t>(S * Ev), 0.0), o(static_cast<size_t>(Ev)), ds(static_cast<size_t>(S));
    std::fill(dq.begin(), dq.end(), 0.0);
    for (int64_t i = 0; i < L; ++i) {
      softmax_row(a, q, k, b, i, p);
      const T* di = dout + (b * L + i) * Ev;
      const T* qi = q + (b * L + i) * E;
      // The forward's output row, and D_i = dout_i . out_i.
      std::fill(o.begin(), o.end(), 0.0);
      for (int64_t j = 0; j < S; ++j) {
        const double w = p[static_cast<size_t>(j)] * dropout(a, b, i, j);
        if (w == 0) continue;
        for (int64_t e = 0; e < Ev; ++e) o[static_cast<size_t>(e)] += w * static_cast<float>(v[(b * S + j) * Ev + e]);
      }
      double D = 0;
      for (int64_t e = 0; e < Ev; ++e) D += static_cast<float>(di[e]) * o[static_cast<size_t>(e)];
      for (int64_t j = 0; j < S; ++j) {
        const double pj = p[static_cast<size_t>(j)];
        if (pj == 0) {  // masked (or an exp that underflowed): no gradient through it
          ds[static_cast<size_t>(j)] = 0;
          continue;
        }
        const double drop = dropout(a, b, i, j);
        const T* vj = v + (b * S + j) * Ev;
        double dp = 0;
        for (int64_t e = 0; e < Ev; ++e) dp += static_cast<float>(di[e]) * static_cast<double>(static_cast<float>(vj[e]));
        ds[static_cast<size_t>(j)] = pj * (dp * drop - D);
        for (int64_t e = 0; e < Ev; ++e) dv[static_cast<size_t>(j * Ev + e)] += pj * drop * static_cast<float>(di[e]);
      }
      for (int64_t j = 0; j < S; ++j) {
        const double d = ds[static_cast<size_t>(j)] * a.scale;
        if (d == 0) continue;
        const T* kj = k + (b * S + j) * E;
        for (int64_t e = 0; e < E; ++e) {
          dq[static_cast<size_t>(i * E + e)] += d * static_cast<float>(kj[e]);
          dk[static_cast<size_t>(j * E + e)] += d * static_cast<float>(qi[e]);
        }
      }
    }
    float* base = out + b * (L * E + S * E + S * Ev);
    for (size_t x = 0; x < dq.size(); ++x) base[x] = static_cast<float>(dq[x]);
    for (size_t x = 0; x < dk.size(); ++x) base[static_cast<size_t>(L * E) + x] = static_cast<float>(dk[x]);
    for (size_t x = 0; x < dv.size(); ++x) base[static_cast<size_t>(L * E + S * E) + x] = static_cast<float>(dv[x]);
  }
}

template <typename F>
void dispatch_floating(const HloInstruction& in, DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: f.template operator()<float>(); return;
    case DType::kBFloat16: f.template operator()<BFloat16>(); return;
    case DType::kFloat16: f.template operator()<Half>(); return;
    default: throw Error("[hlo evaluator] " + in.name() + ": attention needs f32, bf16 or f16 operands, got " + xla_name(dtype));
  }
}

}  // namespace

void sdpa_forward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const Attention a = read(in, args, false);
  dispatch_floating(in, args[0].dtype(), [&]<typename T>() {
    forward<T>(a, args[0].data<T>(), args[1].data<T>(), args[2].data<T>(), out.data<float>());
  });
}

void sdpa_backward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const Attention a = read(in, args, true);
  dispatch_floating(in, args[0].dtype(), [&]<typename T>() {
    backward<T>(a, args[0].data<T>(), args[1].data<T>(), args[2].data<T>(), args[5].data<T>(), out.data<float>());
  });
}

}  // namespace lazytrain::hlo::evaluator
