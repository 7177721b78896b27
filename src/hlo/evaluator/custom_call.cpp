// The custom-call kernels of hlo/custom_call.h: topk here, attention in attention.cpp.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "hlo/custom_call.h"
#include "hlo/evaluator/attention.h"
#include "hlo/evaluator/kernels.h"

namespace lazytrain::hlo::evaluator {

namespace {

template <typename T>
void topk(const ArrayRef& x, int64_t dim, int64_t k, bool largest, int64_t* out) {
  using C = compute_t<T>;
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t n = s[dim];
  const T* data = x.data<T>();
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto value = [&](int64_t j) { return static_cast<C>(data[(o * n + j) * inner + i]); };
      // NaN above every number (torch.topk); ties: the lower index first.
      auto before = [&](int64_t a, int64_t b) {
        const C va = value(a), vb = value(b);
        const bool na = va != va, nb = vb != vb;
        if (na != nb) return largest ? na : nb;
        if (!na && va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      // `before` is a total order, so a full sort (torch.sort: k == n) is as deterministic and O(n log n).
      if (k == n) std::sort(order.begin(), order.end(), before);
      else std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t t = 0; t < k; ++t) out[(o * k + t) * inner + i] = order[static_cast<size_t>(t)];
    }
  }
}

}  // namespace

void eval_custom_call(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  if (in.custom_call_target == kSdpaForwardTarget) return sdpa_forward(in, args, out);
  if (in.custom_call_target == kSdpaBackwardTarget) return sdpa_backward(in, args, out);
  if (in.custom_call_target == kTopKTarget) {
    const CustomCallConfig config(in.backend_config);
    const int64_t dim = static_cast<int64_t>(config.number("dim")), k = static_cast<int64_t>(config.number("k"));
    const bool largest = config.number("largest") != 0;
    dispatch_dtype(args[0].dtype(), [&]<typename T>() { topk<T>(args[0], dim, k, largest, out.data<int64_t>()); });
    return;
  }
  if (in.custom_call_target == kShardingTarget) {
    // An annotation only: the value passes unchanged (a module that was never partitioned).
    std::memcpy(out.raw(), args[0].raw(), static_cast<size_t>(out.nbytes()));
    return;
  }
  throw Error("[hlo evaluator] " + in.name() + ": unknown custom_call_target '" + in.custom_call_target + "'");
}

}  // namespace lazytrain::hlo::evaluator
