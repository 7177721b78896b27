// dot as a plain loop, the reference every backend's dot is compared with
// (the CPU backend's is oneDNN, kernels/onednn_matmul.h). Each output element
// is sum_p lhs[i, p] * rhs[p, j] added in order of p, from 0, in the type the
// frameworks accumulate in: f32 for f32, bf16 and f16 (rounded once to the
// output type, as a bf16 matmul does), and the integer type itself, wrapping,
// for s32 and s64 (as XLA and torch compute integer matmuls). The loops are
// blocked so that a block of the output row and of rhs stay in cache; the
// blocking changes no sum's order.
#include <algorithm>
#include <memory>

#include "core/error.h"
#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo::evaluator {

namespace {

// f32 for the floating types; the unsigned twin of an integer type, whose
// arithmetic wraps (the signed type's overflow would be undefined).
template <typename T>
struct DotAccum {
  using type = float;
};
template <typename T>
  requires std::is_integral_v<T>
struct DotAccum<T> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using dot_accum_t = typename DotAccum<T>::type;

constexpr int64_t kColumnBlock = 256;  // output columns a block of the loops keeps in L1 (1 KiB of f32)
constexpr int64_t kDepthBlock = 128;   // rhs rows of a block: 128 x 256 f32, 128 KiB, in L2

// One batch element: c[m, n] = a[m, k] b[k, n], all row-major in A.
template <typename A>
void matmul(const A* a, const A* b, A* c, int64_t m, int64_t n, int64_t k) {
  std::fill(c, c + m * n, A{0});
#pragma omp parallel for schedule(static) if (m * n * k > (int64_t{1} << 18) && m > 1)
  for (int64_t i = 0; i < m; ++i) {
    A* ci = c + i * n;
    for (int64_t j0 = 0; j0 < n; j0 += kColumnBlock) {
      const int64_t j1 = std::min(n, j0 + kColumnBlock);
      for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
        const int64_t p1 = std::min(k, p0 + kDepthBlock);
        for (int64_t p = p0; p < p1; ++p) {
          const A x = a[i * k + p];
          const A* bp = b + p * n;
          for (int64_t j = j0; j < j1; ++j) ci[j] += x * bp[j];
        }
      }
    }
  }
}

}  // namespace

void eval_dot(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const ArrayRef& lhs = args[0];
  const ArrayRef& rhs = args[1];
  // Shape inference allows [batch..., m, k] @ [batch..., k, n] up to transposition
  // of the last two dims of each side, one contracting dim each.
  const size_t nb = in.dot.lhs_batch_dimensions.size();
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const bool lhs_k_last = in.dot.lhs_contracting_dimensions[0] == static_cast<int64_t>(nb) + 1;
  const bool rhs_k_first = in.dot.rhs_contracting_dimensions[0] == static_cast<int64_t>(nb);
  const int64_t m = ls[lhs_k_last ? nb : nb + 1], k = ls[lhs_k_last ? nb + 1 : nb];
  const int64_t n = rs[rhs_k_first ? nb + 1 : nb];
  int64_t batch = 1;
  for (size_t d = 0; d < nb; ++d) batch *= ls[d];
  // Element strides of (i, p) in lhs and (p, j) in rhs.
  const int64_t li = lhs_k_last ? k : 1, lp = lhs_k_last ? 1 : m;
  const int64_t rp = rhs_k_first ? n : 1, rj = rhs_k_first ? 1 : k;
  dispatch_dtype(in.dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, uint8_t>) {
      throw Error("[hlo evaluator " + in.name() + "] dot on pred is not supported");
    } else {
      using A = dot_accum_t<T>;
      // Each batch element's operands as row-major a [m, k] and b [k, n] in the
      // accumulation type (exact: bf16 and f16 widen to f32 exactly), its result in c.
      std::unique_ptr<A[]> a(new A[static_cast<size_t>(m * k)]), b(new A[static_cast<size_t>(k * n)]), c(new A[static_cast<size_t>(m * n)]);
      for (int64_t e = 0; e < batch; ++e) {
        const T* x = lhs.data<T>() + e * m * k;
        const T* y = rhs.data<T>() + e * k * n;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < k; ++p) a[i * k + p] = static_cast<A>(static_cast<compute_t<T>>(x[i * li + p * lp]));
        for (int64_t p = 0; p < k; ++p)
          for (int64_t j = 0; j < n; ++j) b[p * n + j] = static_cast<A>(static_cast<compute_t<T>>(y[p * rp + j * rj]));
        matmul(a.get(), b.get(), c.get(), m, n, k);
        T* o = out.data<T>() + e * m * n;
        for (int64_t x2 = 0; x2 < m * n; ++x2) o[x2] = static_cast<T>(static_cast<compute_t<T>>(c[x2]));
      }
    }
  });
}

}  // namespace lazytrain::hlo::evaluator
