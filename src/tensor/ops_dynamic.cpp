// Ops whose result shape depends on their input's values: eager modes only.
#include "core/error.h"
#include "core/op_location.h"
#include "lazy/execution_mode.h"
#include "tensor/lowering.h"

namespace lazytrain {

namespace {
void require_eager(const char* op, const std::string& alternative, Loc loc) {
  if (lazy::execution_mode() != lazy::ExecutionMode::kLazy) return;
  throw_error(op,
              "the result's shape depends on the input's values, which lazy mode does not know while tracing (a graph per "
              "distinct count, and a host read every step); keep the shape static with " + alternative +
                  ", or run this in an eager mode (set_execution_mode(debug_eager | strict_eager | fused_eager), --execution_mode)",
              loc);
}
}  // namespace

Tensor nonzero(const Tensor& x, Loc loc) {
  OpLocationScope at(loc);
  require_eager("aten::nonzero", "a mask (x != 0) used through where/masked_fill", loc);
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
  require_eager("aten::masked_select", "where(mask, x, 0) or masked_fill (then a sum or mean over the kept elements)", loc);
  Shape shape = broadcast_shapes(x.shape(), mask.shape(), "aten::masked_select");
  Tensor flat_mask = reshape(expand(mask, shape), {-1});
  Tensor positions = reshape(nonzero(flat_mask, loc), {-1});
  return index_select(reshape(expand(x, shape), {-1}), 0, positions);
}

}  // namespace lazytrain
