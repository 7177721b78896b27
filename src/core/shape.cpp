#include "core/shape.h"

#include "core/error.h"

namespace lazytrain {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t normalize_dim(int64_t dim, int64_t rank, const std::string& op) {
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r) {
    // torch's IndexError and words, naming the user's line.
    throw IndexError(with_op_location("[" + op + "] Dimension out of range (expected to be in range of [" + std::to_string(-r) + ", " +
                                      std::to_string(r - 1) + "], but got " + std::to_string(dim) + ")"));
  }
  return dim < 0 ? dim + r : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error("[" + op + "] shapes " + shape_str(a) + " and " + shape_str(b) +
                  " cannot be broadcast: size " + std::to_string(da) + " vs " + std::to_string(db) +
                  " at dimension " + std::to_string(i));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace lazytrain
