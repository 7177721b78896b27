// Shape: the dimensions of a tensor (row-major, no strides: every buffer is dense).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lazytrain {

using Shape = std::vector<int64_t>;

// Product of the dimensions; 1 for a scalar (rank 0).
int64_t numel(const Shape& shape);
// "[2, 3]", as PyTorch prints torch.Size.
std::string shape_str(const Shape& shape);
// Row-major strides in elements: [3, 1] for [2, 3].
std::vector<int64_t> contiguous_strides(const Shape& shape);
// Wraps a possibly negative dim into [0, rank); throws Error naming `op` when out of range.
int64_t normalize_dim(int64_t dim, int64_t rank, const std::string& op);
// NumPy/PyTorch broadcasting of two shapes; throws Error naming `op` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);

}  // namespace lazytrain
