// dot as a plain loop: the evaluator's reference, for constant folding. The
// interpreter backend runs dots through oneDNN instead.
#include "hlo/evaluator/kernels.h"
#include "core/error.h"

namespace lazytrain::hlo::evaluator {

namespace {

// Sums in double (floats) or int64 (integers), rounded once to the output type.
template <typename T>
using dot_accum_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;

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
      for (int64_t b = 0; b < batch; ++b) {
        const T* x = lhs.data<T>() + b * m * k;
        const T* y = rhs.data<T>() + b * k * n;
        T* o = out.data<T>() + b * m * n;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            A acc = 0;
            for (int64_t p = 0; p < k; ++p) {
              acc += static_cast<A>(static_cast<compute_t<T>>(x[i * li + p * lp])) * static_cast<A>(static_cast<compute_t<T>>(y[p * rp + j * rj]));
            }
            o[i * n + j] = static_cast<T>(static_cast<compute_t<T>>(acc));
          }
        }
      }
    }
  });
}

}  // namespace lazytrain::hlo::evaluator
