// Ops whose result shape depends on their input's values: they read the input on the host.
#include "core/error.h"
#include "core/op_location.h"
#include "lazy/execution_mode.h"
#include "runtime/metrics.h"
#include "tensor/lowering.h"

namespace lazytrain {

namespace {
// Lazy mode does not know the values while tracing, so, as PyTorch/XLA does for
// such ops, it runs the pending graph, reads the input on the host and counts
// it in counter "aten::<op>" (a fallback counter: short_metrics_report lists
// it), so a training loop that syncs every step this way shows it.
void count_host_fallback(const char* op) {
  if (lazy::execution_mode() == lazy::ExecutionMode::kLazy) runtime::counter(op).add(1);
}
}  // namespace

Tensor nonzero(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  count_host_fallback("aten::nonzero");
  const std::vector<double> values = x.to_vector<double>(loc);
  const Shape& shape = x.shape();
  std::vector<int64_t> indices;
  int64_t count = 0;
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t flat = 0; flat < values.size(); ++flat) {
    if (values[flat] != 0.0) {
      indices.insert(indices.end(), index.begin(), index.end());
      ++count;
    }
    for (size_t d = shape.size(); d-- > 0;) {  // the next row-major index
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  runtime::DeviceGuard on(x.device());
  return from_vector(indices, {count, static_cast<int64_t>(shape.size())});
}

Tensor masked_select(const Tensor& x, const Tensor& mask, Loc loc) {
  OpLocationScope at(loc);
  check(mask.dtype() == DType::kBool, "aten::masked_select", "expected a bool mask, got " + torch_name(mask.dtype()));
  Shape shape = broadcast_shapes(x.shape(), mask.shape(), "aten::masked_select");
  Tensor flat_mask = reshape(expand(mask, shape), {-1});
  Tensor positions = reshape(nonzero(flat_mask, loc), {-1});
  return index_select(reshape(expand(x, shape), {-1}), 0, positions);
}

}  // namespace lazytrain
