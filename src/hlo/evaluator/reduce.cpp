#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "hlo/evaluator/kernels.h"
#include "core/error.h"
#include "core/scalar_ops.h"

namespace lazytrain::hlo::evaluator {


namespace {

// Sums in double (or int64) so long float reductions stay within PyTorch's error.
template <typename T>
using accum_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;

template <ReduceKind K, typename A>
inline A combine(A acc, A v) {
  if constexpr (K == ReduceKind::kAdd) return acc + v;
  else if constexpr (K == ReduceKind::kMul) return acc * v;
  else if constexpr (K == ReduceKind::kMax) return scalar_ops::Maximum()(v, acc);  // NaN-propagating
  else return scalar_ops::Minimum()(v, acc);
}

// x viewed as [outer, inner]: reduce each row (the reduced dims are a suffix).
// Eight independent partial results per row let the loop vectorize without
// reassociating a single chain.
template <ReduceKind K, typename T>
void reduce_rows(const T* x, T* out, int64_t outer, int64_t inner, accum_t<T> init) {
  using A = accum_t<T>;
#pragma omp parallel for if (outer * inner > kParallelThreshold) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    const T* row = x + o * inner;
    A lanes[8] = {init, init, init, init, init, init, init, init};
    int64_t i = 0;
    for (; i + 8 <= inner; i += 8) {
      for (int k = 0; k < 8; ++k) lanes[k] = combine<K, A>(lanes[k], static_cast<A>(static_cast<compute_t<T>>(row[i + k])));
    }
    for (; i < inner; ++i) lanes[0] = combine<K, A>(lanes[0], static_cast<A>(static_cast<compute_t<T>>(row[i])));
    A acc = lanes[0];
    for (int k = 1; k < 8; ++k) acc = combine<K, A>(acc, lanes[k]);
    out[o] = static_cast<T>(static_cast<compute_t<T>>(acc));
  }
}

// x viewed as [outer, inner]: reduce over outer (the reduced dims are a prefix).
template <ReduceKind K, typename T>
void reduce_columns(const T* x, T* out, int64_t outer, int64_t inner, accum_t<T> init) {
  using A = accum_t<T>;
#pragma omp parallel for if (outer * inner > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < inner; i += 256) {
    const int64_t end = std::min(inner, i + 256);
    A acc[256];
    for (int64_t j = i; j < end; ++j) acc[j - i] = init;
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = x + o * inner;
      for (int64_t j = i; j < end; ++j) acc[j - i] = combine<K, A>(acc[j - i], static_cast<A>(static_cast<compute_t<T>>(row[j])));
    }
    for (int64_t j = i; j < end; ++j) out[j] = static_cast<T>(static_cast<compute_t<T>>(acc[j - i]));
  }
}

// logaddexp over each row, from `init`: m + log(sum exp(v - m)) with m the
// largest value, summed in double. A NaN gives NaN; m = +-inf gives m (as
// torch.logsumexp, which shifts by 0 there: exp(inf) = inf, exp(-inf) = 0).
template <typename T>
void logsumexp_rows(const T* x, T* out, int64_t outer, int64_t inner, double init) {
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
#pragma omp parallel for if (outer * inner > kParallelThreshold) schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = x + o * inner;
      double m = init;
      for (int64_t i = 0; i < inner; ++i) m = scalar_ops::Maximum()(static_cast<double>(static_cast<compute_t<T>>(row[i])), m);
      if (std::isfinite(m)) {
        double s = std::exp(init - m);
        for (int64_t i = 0; i < inner; ++i) s += std::exp(static_cast<double>(static_cast<compute_t<T>>(row[i])) - m);
        m += std::log(s);
      }
      out[o] = static_cast<T>(static_cast<compute_t<T>>(m));
    }
  } else {
    (void)x, (void)out, (void)outer, (void)inner, (void)init;
    throw Error("reduce to_apply=logaddexp needs a floating-point operand");
  }
}

template <typename T>
void reduce_rows(const T* x, T* out, int64_t outer, int64_t inner, ReduceKind kind, accum_t<T> init) {
  switch (kind) {
    case ReduceKind::kLogAddExp: logsumexp_rows<T>(x, out, outer, inner, static_cast<double>(init)); break;
    case ReduceKind::kAdd: reduce_rows<ReduceKind::kAdd>(x, out, outer, inner, init); break;
    case ReduceKind::kMul: reduce_rows<ReduceKind::kMul>(x, out, outer, inner, init); break;
    case ReduceKind::kMax: reduce_rows<ReduceKind::kMax>(x, out, outer, inner, init); break;
    case ReduceKind::kMin: reduce_rows<ReduceKind::kMin>(x, out, outer, inner, init); break;
  }
}

template <typename T>
void reduce_columns(const T* x, T* out, int64_t outer, int64_t inner, ReduceKind kind, accum_t<T> init) {
  switch (kind) {
    case ReduceKind::kAdd: reduce_columns<ReduceKind::kAdd>(x, out, outer, inner, init); break;
    case ReduceKind::kMul: reduce_columns<ReduceKind::kMul>(x, out, outer, inner, init); break;
    case ReduceKind::kMax: reduce_columns<ReduceKind::kMax>(x, out, outer, inner, init); break;
    case ReduceKind::kMin: reduce_columns<ReduceKind::kMin>(x, out, outer, inner, init); break;
    case ReduceKind::kLogAddExp: throw Error("reduce_columns: logaddexp is reduced as rows");
  }
}

}  // namespace

void eval_reduce(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const ArrayRef& x = args[0];
  const ArrayRef& init_buf = args[1];
  const Shape& xs = x.shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t d : in.dimensions) reduced[d] = true;
  // Kept dims first, reduced dims last, each in order.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) if (!reduced[d]) perm.push_back(d);
  for (int64_t d = 0; d < rank; ++d) if (reduced[d]) perm.push_back(d);
  int64_t inner = 1;
  for (int64_t d : in.dimensions) inner *= xs[d];
  const int64_t outer = numel(in.shape);
  bool suffix = true, prefix = true;
  for (int64_t i = 0; i < rank; ++i) suffix = suffix && perm[i] == i;
  for (int64_t i = 0; i < static_cast<int64_t>(in.dimensions.size()); ++i) prefix = prefix && in.dimensions[i] == i;

  dispatch_dtype(x.dtype(), [&]<typename T>() {
    accum_t<T> init = static_cast<accum_t<T>>(static_cast<compute_t<T>>(*init_buf.data<T>()));
    if (suffix) {
      reduce_rows<T>(x.data<T>(), out.data<T>(), outer, inner, in.reduce_kind, init);
    } else if (prefix && in.reduce_kind != ReduceKind::kLogAddExp) {
      reduce_columns<T>(x.data<T>(), out.data<T>(), inner, outer, in.reduce_kind, init);
    } else {
      Shape moved;
      std::vector<int64_t> strides, xstr = contiguous_strides(xs);
      for (int64_t d : perm) {
        moved.push_back(xs[d]);
        strides.push_back(xstr[d]);
      }
      // Uninitialised: strided_copy writes every element.
      std::unique_ptr<T[]> tmp(new T[static_cast<size_t>(numel(moved))]);
      strided_copy(x.raw(), strides, tmp.get(), moved, itemsize(x.dtype()));
      reduce_rows<T>(tmp.get(), out.data<T>(), outer, inner, in.reduce_kind, init);
    }
  });
}

namespace {

// Element i's 32 bits: the high half of splitmix64(seed · c0 + i · golden ratio + c1).
inline uint32_t splitmix_bits_at(uint64_t seed, int64_t i) {
  uint64_t z = seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

}  // namespace

void eval_generator(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const int64_t n = out.numel();
  if (in.opcode == HloOpcode::kIota) {
    const int64_t d = in.dimensions[0];
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < in.shape.size(); ++k) inner *= in.shape[k];
    const int64_t size = in.shape[d];
    dispatch_dtype(in.dtype, [&]<typename T>() {
      T* o = out.data<T>();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<compute_t<T>>((i / inner) % size));
    });
    return;
  }
  // rng-bit-generator: counter-based (splitmix64 of seed and element index), so
  // the bits depend only on the seed and the position, not on thread scheduling.
  const uint64_t seed = static_cast<uint64_t>(*args[0].data<int64_t>());
  int32_t* o = out.data<int32_t>();
#pragma omp parallel for if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(splitmix_bits_at(seed, i));
}

}  // namespace lazytrain::hlo::evaluator
