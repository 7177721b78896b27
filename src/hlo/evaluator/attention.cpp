#include "hlo/evaluator/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "hlo/custom_call.h"

namespace lazytrain::hlo::evaluator {

namespace {

constexpr int64_t kBlockRows = 32;  // query rows per block (Br)
constexpr int64_t kBlockCols = 64;  // keys per block (Bc)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Problem {
  int64_t batch = 1, L = 0, S = 0, E = 0, Ev = 0;
  float scale = 1.0f;
  bool causal = false;
  float dropout_p = 0.0f;
  uint64_t seed = 0;
  const void* mask = nullptr;
  bool mask_is_pred = false;
  std::vector<int64_t> mask_batch_offset;  // per flattened batch index
  int64_t mask_row_stride = 0, mask_col_stride = 0;
};

Problem describe(const HloInstruction& in, const Operands& args, bool backward) {
  const CustomCallConfig config(in.backend_config);
  Problem p;
  const Shape& qs = args[0].shape();
  const size_t rank = qs.size();
  p.L = qs[rank - 2];
  p.E = qs[rank - 1];
  p.S = args[1].shape()[rank - 2];
  p.Ev = args[2].shape()[rank - 1];
  for (size_t d = 0; d + 2 < rank; ++d) p.batch *= qs[d];
  p.scale = args.at(3).data<float>()[0];
  p.causal = config.number("is_causal") != 0;
  size_t next = backward ? 6 : 4;
  if (config.number("has_mask") != 0) {
    const ArrayRef& m = args.at(next++);
    const Shape& ms = m.shape();
    const std::vector<int64_t> strides = contiguous_strides(ms);
    p.mask = m.raw();
    p.mask_is_pred = m.dtype() == DType::kBool;
    p.mask_row_stride = ms[rank - 2] == 1 ? 0 : strides[rank - 2];
    p.mask_col_stride = ms[rank - 1] == 1 ? 0 : strides[rank - 1];
    p.mask_batch_offset.assign(static_cast<size_t>(p.batch), 0);
    for (int64_t b = 0; b < p.batch; ++b) {
      int64_t rest = b, offset = 0;
      for (int64_t d = static_cast<int64_t>(rank) - 3; d >= 0; --d) {
        const int64_t coord = rest % qs[d];
        rest /= qs[d];
        if (ms[d] != 1) offset += coord * strides[d];
      }
      p.mask_batch_offset[static_cast<size_t>(b)] = offset;
    }
  }
  if (config.number("has_dropout") != 0) {
    p.dropout_p = args.at(next).data<float>()[0];
    p.seed = static_cast<uint64_t>(args.at(next + 1).data<int64_t>()[0]);
  }
  return p;
}

// SplitMix64's finaliser: a counter-based hash, the same on every backend.
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The dropout factor of weight (b, i, j): 0 (dropped) or 1/(1-p).
inline float dropout_factor(const Problem& p, int64_t b, int64_t i, int64_t j) {
  const uint64_t h = mix64(p.seed ^ mix64(static_cast<uint64_t>((b * p.L + i) * p.S + j)));
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  return u >= p.dropout_p ? 1.0f / (1.0f - p.dropout_p) : 0.0f;
}

template <typename T>
void load(const T* src, int64_t n, float* dst, float factor = 1.0f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * factor;
}

// s[r * kBlockCols + c] = the masked score of query i0 + r (q pre-scaled, rows
// [i0, i1)) against key j0 + c (keys [j0, j1)) of batch b; -inf where masked.
void scores(const Problem& p, int64_t b, const float* q, const float* k, int64_t i0, int64_t i1, int64_t j0, int64_t j1, float* s) {
  const int64_t E = p.E;
  for (int64_t r = 0; r < i1 - i0; ++r) {
    const int64_t i = i0 + r;
    for (int64_t c = 0; c < j1 - j0; ++c) {
      const int64_t j = j0 + c;
      float acc = 0.0f;
      const float* qr = q + r * E;
      const float* kc = k + c * E;
#pragma omp simd reduction(+ : acc)
      for (int64_t e = 0; e < E; ++e) acc += qr[e] * kc[e];
      if (p.causal && j > i) {
        acc = kNegInf;
      } else if (p.mask) {
        const int64_t at = p.mask_batch_offset[static_cast<size_t>(b)] + i * p.mask_row_stride + j * p.mask_col_stride;
        if (p.mask_is_pred) {
          if (!static_cast<const uint8_t*>(p.mask)[at]) acc = kNegInf;
        } else {
          acc += static_cast<const float*>(p.mask)[at];
        }
      }
      s[r * kBlockCols + c] = acc;
    }
  }
}

int64_t blocks(int64_t n, int64_t size) { return (n + size - 1) / size; }

template <typename T>
void forward(const Problem& p, const T* q, const T* k, const T* v, float* out) {
  const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev;
  const int64_t row_blocks = blocks(L, kBlockRows);
  const int64_t tasks = p.batch * row_blocks;
#pragma omp parallel for schedule(dynamic) if (tasks > 1 && p.batch * L * S * (E + Ev) > (1 << 18))
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t b = task / row_blocks, i0 = (task % row_blocks) * kBlockRows, i1 = std::min(L, i0 + kBlockRows);
    const int64_t rows = i1 - i0;
    std::vector<float> qb(static_cast<size_t>(rows * E)), kb(static_cast<size_t>(kBlockCols * E)), vb(static_cast<size_t>(kBlockCols * Ev));
    std::vector<float> s(static_cast<size_t>(kBlockRows * kBlockCols)), acc(static_cast<size_t>(rows * Ev), 0.0f);
    std::vector<float> m(static_cast<size_t>(rows), kNegInf), l(static_cast<size_t>(rows), 0.0f);
    load(q + (b * L + i0) * E, rows * E, qb.data(), p.scale);
    const int64_t j_end = p.causal ? std::min(S, i1) : S;
    for (int64_t j0 = 0; j0 < j_end; j0 += kBlockCols) {
      const int64_t j1 = std::min(j_end, j0 + kBlockCols), cols = j1 - j0;
      load(k + (b * S + j0) * E, cols * E, kb.data());
      load(v + (b * S + j0) * Ev, cols * Ev, vb.data());
      scores(p, b, qb.data(), kb.data(), i0, i1, j0, j1, s.data());
      for (int64_t r = 0; r < rows; ++r) {
        float* sr = s.data() + r * kBlockCols;
        float row_max = kNegInf;
        for (int64_t c = 0; c < cols; ++c) row_max = std::max(row_max, sr[c]);
        const float m_new = std::max(m[r], row_max);
        if (m_new == kNegInf) continue;  // every key so far masked
        const float alpha = std::exp(m[r] - m_new);
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
          float w = std::exp(sr[c] - m_new);
          sum += w;
          if (p.dropout_p > 0) w *= dropout_factor(p, b, i0 + r, j0 + c);
          sr[c] = w;
        }
        l[r] = l[r] * alpha + sum;
        m[r] = m_new;
        float* ar = acc.data() + r * Ev;
        for (int64_t e = 0; e < Ev; ++e) ar[e] *= alpha;
        for (int64_t c = 0; c < cols; ++c) {
          const float w = sr[c];
          if (w == 0.0f) continue;
          const float* vc = vb.data() + c * Ev;
#pragma omp simd
          for (int64_t e = 0; e < Ev; ++e) ar[e] += w * vc[e];
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* o = out + (b * L + i0 + r) * (Ev + 1);
      const bool any = l[r] > 0.0f;
      for (int64_t e = 0; e < Ev; ++e) o[e] = any ? acc[r * Ev + e] / l[r] : 0.0f;
      o[Ev] = any ? m[r] + std::log(l[r]) : kNegInf;
    }
  }
}

// The recomputed weights of a block: s holds scores on entry, P = exp(s - lse) on exit.
void weights(const Problem& p, const float* lse, int64_t rows, int64_t cols, float* s) {
  for (int64_t r = 0; r < rows; ++r) {
    float* sr = s + r * kBlockCols;
    for (int64_t c = 0; c < cols; ++c) sr[c] = lse[r] == kNegInf ? 0.0f : std::exp(sr[c] - lse[r]);
  }
  (void)p;
}

// ds = P (dP - D), dP = dout v^T (times the dropout factor); returns ds in `ds`
// and, when dv is given, adds (P * dropout)^T dout into it.
void grad_scores(const Problem& p, int64_t b, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* P, const float* dob,
                 const float* vb, const float* D, float* ds, float* dv) {
  const int64_t Ev = p.Ev;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float w = P[r * kBlockCols + c];
      if (w == 0.0f) {
        ds[r * kBlockCols + c] = 0.0f;
        continue;
      }
      const float drop = p.dropout_p > 0 ? dropout_factor(p, b, i0 + r, j0 + c) : 1.0f;
      const float* dor = dob + r * Ev;
      const float* vc = vb + c * Ev;
      float dp = 0.0f;
#pragma omp simd reduction(+ : dp)
      for (int64_t e = 0; e < Ev; ++e) dp += dor[e] * vc[e];
      ds[r * kBlockCols + c] = w * (dp * drop - D[r]);
      if (dv && drop != 0.0f) {
        const float wd = w * drop;
        float* dvc = dv + c * Ev;
#pragma omp simd
        for (int64_t e = 0; e < Ev; ++e) dvc[e] += wd * dor[e];
      }
    }
  }
}

template <typename T>
void backward(const Problem& p, const T* q, const T* k, const T* v, const float* fwd, const T* dout, float* out) {
  const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev;
  const int64_t per_batch = L * E + S * E + S * Ev;
  // D_i = rowsum(dout * out) and the forward's lse, per row.
  std::vector<float> D(static_cast<size_t>(p.batch * L)), lse(static_cast<size_t>(p.batch * L));
  for (int64_t row = 0; row < p.batch * L; ++row) {
    const float* o = fwd + row * (Ev + 1);
    float d = 0.0f;
    for (int64_t e = 0; e < Ev; ++e) d += static_cast<float>(dout[row * Ev + e]) * o[e];
    D[static_cast<size_t>(row)] = d;
    lse[static_cast<size_t>(row)] = o[Ev];
  }
  const bool parallel = p.batch * L * S * (E + Ev) > (1 << 18);
  // Pass 1: dk, dv, one block of keys per task.
  const int64_t col_blocks = blocks(S, kBlockCols);
#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t task = 0; task < p.batch * col_blocks; ++task) {
    const int64_t b = task / col_blocks, j0 = (task % col_blocks) * kBlockCols, j1 = std::min(S, j0 + kBlockCols), cols = j1 - j0;
    std::vector<float> kb(static_cast<size_t>(cols * E)), vb(static_cast<size_t>(cols * Ev)), dk(static_cast<size_t>(cols * E), 0.0f),
        dv(static_cast<size_t>(cols * Ev), 0.0f);
    std::vector<float> qb(static_cast<size_t>(kBlockRows * E)), dob(static_cast<size_t>(kBlockRows * Ev));
    std::vector<float> s(static_cast<size_t>(kBlockRows * kBlockCols)), ds(static_cast<size_t>(kBlockRows * kBlockCols));
    load(k + (b * S + j0) * E, cols * E, kb.data());
    load(v + (b * S + j0) * Ev, cols * Ev, vb.data());
    for (int64_t i0 = p.causal ? j0 : 0; i0 < L; i0 += kBlockRows) {
      const int64_t i1 = std::min(L, i0 + kBlockRows), rows = i1 - i0;
      load(q + (b * L + i0) * E, rows * E, qb.data(), p.scale);
      load(dout + (b * L + i0) * Ev, rows * Ev, dob.data());
      scores(p, b, qb.data(), kb.data(), i0, i1, j0, j1, s.data());
      weights(p, lse.data() + b * L + i0, rows, cols, s.data());
      grad_scores(p, b, i0, j0, rows, cols, s.data(), dob.data(), vb.data(), D.data() + b * L + i0, ds.data(), dv.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float* qr = qb.data() + r * E;  // q * scale
        for (int64_t c = 0; c < cols; ++c) {
          const float g = ds[static_cast<size_t>(r * kBlockCols + c)];
          if (g == 0.0f) continue;
          float* dkc = dk.data() + c * E;
#pragma omp simd
          for (int64_t e = 0; e < E; ++e) dkc[e] += g * qr[e];
        }
      }
    }
    float* base = out + b * per_batch;
    std::copy(dk.begin(), dk.end(), base + L * E + j0 * E);
    std::copy(dv.begin(), dv.end(), base + L * E + S * E + j0 * Ev);
  }
  // Pass 2: dq, one block of query rows per task.
  const int64_t row_blocks = blocks(L, kBlockRows);
#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t task = 0; task < p.batch * row_blocks; ++task) {
    const int64_t b = task / row_blocks, i0 = (task % row_blocks) * kBlockRows, i1 = std::min(L, i0 + kBlockRows), rows = i1 - i0;
    std::vector<float> qb(static_cast<size_t>(rows * E)), dob(static_cast<size_t>(rows * Ev)), dq(static_cast<size_t>(rows * E), 0.0f);
    std::vector<float> kb(static_cast<size_t>(kBlockCols * E)), vb(static_cast<size_t>(kBlockCols * Ev));
    std::vector<float> s(static_cast<size_t>(kBlockRows * kBlockCols)), ds(static_cast<size_t>(kBlockRows * kBlockCols));
    load(q + (b * L + i0) * E, rows * E, qb.data(), p.scale);
    load(dout + (b * L + i0) * Ev, rows * Ev, dob.data());
    const int64_t j_end = p.causal ? std::min(S, i1) : S;
    for (int64_t j0 = 0; j0 < j_end; j0 += kBlockCols) {
      const int64_t j1 = std::min(j_end, j0 + kBlockCols), cols = j1 - j0;
      load(k + (b * S + j0) * E, cols * E, kb.data());
      load(v + (b * S + j0) * Ev, cols * Ev, vb.data());
      scores(p, b, qb.data(), kb.data(), i0, i1, j0, j1, s.data());
      weights(p, lse.data() + b * L + i0, rows, cols, s.data());
      grad_scores(p, b, i0, j0, rows, cols, s.data(), dob.data(), vb.data(), D.data() + b * L + i0, ds.data(), nullptr);
      for (int64_t r = 0; r < rows; ++r) {
        float* dqr = dq.data() + r * E;
        for (int64_t c = 0; c < cols; ++c) {
          const float g = ds[static_cast<size_t>(r * kBlockCols + c)] * p.scale;
          if (g == 0.0f) continue;
          const float* kc = kb.data() + c * E;
#pragma omp simd
          for (int64_t e = 0; e < E; ++e) dqr[e] += g * kc[e];
        }
      }
    }
    std::copy(dq.begin(), dq.end(), out + b * per_batch + i0 * E);
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
  const Problem p = describe(in, args, false);
  dispatch_floating(in, args[0].dtype(), [&]<typename T>() {
    forward<T>(p, args[0].data<T>(), args[1].data<T>(), args[2].data<T>(), out.data<float>());
  });
}

void sdpa_backward(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const Problem p = describe(in, args, true);
  std::fill(out.data<float>(), out.data<float>() + out.numel(), 0.0f);  // dk, dv of keys no query sees stay 0
  dispatch_floating(in, args[0].dtype(), [&]<typename T>() {
    backward<T>(p, args[0].data<T>(), args[1].data<T>(), args[2].data<T>(), args[4].data<float>(), args[5].data<T>(), out.data<float>());
  });
}

}  // namespace lazytrain::hlo::evaluator
