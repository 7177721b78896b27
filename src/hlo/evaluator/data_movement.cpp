#include <algorithm>
#include <cstring>
#include <vector>

#include "hlo/evaluator/kernels.h"
#include "core/error.h"

namespace lazytrain::hlo::evaluator {


namespace {

void broadcast(const HloInstruction& in, const ArrayRef& x, const MutableArrayRef& out) {
  if (x.numel() == 1) {  // a scalar: a fill
    const int64_t n = out.numel(), size = itemsize(in.dtype);
    const auto* v = static_cast<const uint8_t*>(x.raw());
    auto* o = static_cast<uint8_t*>(out.raw());
    bool zero = true;
    for (int64_t k = 0; k < size; ++k) zero = zero && v[k] == 0;
    if (zero) {
      std::memset(o, 0, static_cast<size_t>(out.nbytes()));
      return;
    }
    std::vector<int64_t> strides(in.shape.size(), 0);
    strided_copy(x.raw(), strides, out.raw(), in.shape, size);
    (void)n;
    return;
  }
  std::vector<int64_t> strides(in.shape.size(), 0);
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  for (size_t i = 0; i < in.dimensions.size(); ++i) strides[in.dimensions[i]] = xs[i];
  strided_copy(x.raw(), strides, out.raw(), in.shape, itemsize(in.dtype));
}

void transpose(const HloInstruction& in, const ArrayRef& x, const MutableArrayRef& out) {
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  std::vector<int64_t> strides;
  for (int64_t d : in.dimensions) strides.push_back(xs[d]);
  strided_copy(x.raw(), strides, out.raw(), in.shape, itemsize(in.dtype));
}

void slice(const HloInstruction& in, const ArrayRef& x, const MutableArrayRef& out) {
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t offset = 0;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < xs.size(); ++d) {
    offset += in.slice_starts[d] * xs[d];
    strides.push_back(xs[d] * in.slice_strides[d]);
  }
  const auto* base = static_cast<const uint8_t*>(x.raw()) + offset * itemsize(in.dtype);
  strided_copy(base, strides, out.raw(), in.shape, itemsize(in.dtype));
}

// XLA's semantics: each start is clamped into [0, dim - size], so the window always lies inside x.
void dynamic_slice(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const ArrayRef& x = args[0];
  std::vector<int64_t> xs = contiguous_strides(x.shape());
  int64_t offset = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    const ArrayRef& s = args[d + 1];
    const int64_t start = s.dtype() == DType::kInt32 ? *s.data<int32_t>() : *s.data<int64_t>();
    offset += std::clamp<int64_t>(start, 0, x.shape()[d] - in.dimensions[d]) * xs[d];
  }
  const auto* base = static_cast<const uint8_t*>(x.raw()) + offset * itemsize(in.dtype);
  strided_copy(base, xs, out.raw(), in.shape, itemsize(in.dtype));
}

void concatenate(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  int64_t d = in.dimensions[0];
  int64_t outer = 1;
  for (int64_t i = 0; i < d; ++i) outer *= in.shape[i];
  const int64_t elem = itemsize(in.dtype);
  const int64_t out_row = numel(in.shape) / std::max<int64_t>(outer, 1) * elem;
  auto* dst = static_cast<uint8_t*>(out.raw());
  // Each operand's row: its bytes and where it starts in the output's row.
  std::vector<int64_t> row_bytes, column;
  int64_t at = 0;
  for (const ArrayRef& a : args) {
    row_bytes.push_back(a.numel() / std::max<int64_t>(outer, 1) * elem);
    column.push_back(at);
    at += row_bytes.back();
  }
#pragma omp parallel for if (outer > 1 && outer * out_row >= kParallelCopyBytes) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t k = 0; k < args.size(); ++k) {
      const auto* src = static_cast<const uint8_t*>(args[k].raw());
      std::memcpy(dst + o * out_row + column[k], src + o * row_bytes[k], static_cast<size_t>(row_bytes[k]));
    }
  }
}

}  // namespace

void eval_data_movement(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  switch (in.opcode) {
    case HloOpcode::kBroadcast: return broadcast(in, args[0], out);
    case HloOpcode::kReshape: std::memcpy(out.raw(), args[0].raw(), static_cast<size_t>(out.nbytes())); return;
    case HloOpcode::kTranspose: return transpose(in, args[0], out);
    case HloOpcode::kSlice: return slice(in, args[0], out);
    case HloOpcode::kDynamicSlice: return dynamic_slice(in, args, out);
    case HloOpcode::kConcatenate: return concatenate(in, args, out);
    default: throw Error("[hlo evaluator] " + in.name() + " is not a data-movement instruction");
  }
}

template <typename I>
static void check_index(I index, int64_t rows, const HloInstruction& in) {
  if (index < 0 || index >= rows) {
    throw Error("[hlo evaluator " + in.name() + "] index " + std::to_string(static_cast<int64_t>(index)) +
                " is out of range for dimension 0 of size " + std::to_string(rows));
  }
}

void eval_gather(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const ArrayRef& x = args[0];
  const ArrayRef& idx = args[1];
  const int64_t rows = x.shape()[0];
  const int64_t row_bytes = x.nbytes() / std::max<int64_t>(rows, 1);
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  const int64_t n = idx.numel();
  auto run = [&](auto* indices) {
    for (int64_t i = 0; i < n; ++i) {
      check_index(indices[i], rows, in);
      std::memcpy(dst + i * row_bytes, src + indices[i] * row_bytes, row_bytes);
    }
  };
  if (idx.dtype() == DType::kInt64) run(idx.data<int64_t>());
  else run(idx.data<int32_t>());
}

void eval_scatter(const HloInstruction& in, const Operands& args, const MutableArrayRef& out) {
  const ArrayRef& x = args[0];
  const ArrayRef& idx = args[1];
  const ArrayRef& upd = args[2];
  // `out` may be operand 0's own storage (the CPU backend's in-place scatter).
  if (out.raw() != x.raw()) std::memcpy(out.raw(), x.raw(), x.nbytes());
  const int64_t rows = x.shape()[0];
  const int64_t row = x.numel() / std::max<int64_t>(rows, 1);
  const int64_t n = idx.numel();
  dispatch_dtype(in.dtype, [&]<typename T>() {
    if constexpr (std::is_same_v<T, uint8_t>) {
      throw Error("[hlo evaluator " + in.name() + "] scatter-add on pred is not supported");
    } else {
      T* o = out.data<T>();
      const T* u = upd.data<T>();
      auto run = [&](auto* indices) {
        for (int64_t i = 0; i < n; ++i) {
          check_index(indices[i], rows, in);
          T* dst = o + indices[i] * row;
          const T* src = u + i * row;
          for (int64_t j = 0; j < row; ++j) dst[j] = static_cast<T>(static_cast<compute_t<T>>(dst[j]) + static_cast<compute_t<T>>(src[j]));
        }
      };
      if (idx.dtype() == DType::kInt64) run(idx.data<int64_t>());
      else run(idx.data<int32_t>());
    }
  });
}

}  // namespace lazytrain::hlo::evaluator
