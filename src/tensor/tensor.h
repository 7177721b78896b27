// Tensor: the user-facing lazy tensor, with PyTorch's names and semantics.
//
// Every op records a lazy IR node and returns at once; values are computed at
// mark_step() or when read (item(), to_vector()). Shapes and dtypes are checked
// when the op is called, so shape errors name the op and the caller's line.
// Ops live in tensor/ops.h as free functions (torch.* names); methods here are
// the Tensor.* spellings of the same ops.
#pragma once

#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "core/literal.h"
#include "core/op_location.h"
#include "lazy/lazy_tensor.h"
#include "runtime/device.h"

namespace lazytrain {

namespace autograd {
struct GradFn;
}

class Tensor;
struct ViewInfo;

// The shared state behind a Tensor handle: its lazy value plus autograd fields.
struct TensorImpl : lazy::LazyTensor {
  using lazy::LazyTensor::LazyTensor;
  bool requires_grad = false;
  std::shared_ptr<autograd::GradFn> grad_fn;  // the op that made it; null for leaves
  std::shared_ptr<TensorImpl> grad;            // accumulated gradient (leaves)
  // Views and in-place writes (tensor/view.h): set when this tensor is a view.
  std::shared_ptr<ViewInfo> view;
  // Bumped by every in-place write (torch's _version); a view reads its base's.
  uint64_t version = 0;
  // The detached aliases of this base (x.detach(), x.data): they hold it weakly,
  // so a write pushes the new value to them at once.
  std::vector<std::weak_ptr<TensorImpl>> detached_aliases;
};

class Tensor {
 public:
  Tensor() = default;
  // Wraps an IR value in a new registered tensor.
  explicit Tensor(lazy::NodePtr value);
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  // size(dim), dim may be negative.
  int64_t size(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const { return lazytrain::numel(shape()); }
  DType dtype() const;
  // Where the tensor lives: its IR value's device (runtime::DeviceGuard picks
  // the device of tensors made from nothing; ops keep their inputs' device).
  runtime::Device device() const;
  // The current value (a copy: another thread may replace it meanwhile, lazy/lazy_tensor.h).
  lazy::NodePtr ir_value() const;
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  // True when both handles share one tensor.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- reading values (synchronises: runs the pending graph) ----
  // A read runs every pending value of the tensor's device (lazy/graph_executor.h,
  // sync_live) and is recorded as a host transfer at the caller's line
  // (lazy/step_analysis.h).
  // The single value of a one-element tensor, as double.
  double item(OpLocation loc = std::source_location::current()) const;
  // All values in row-major order, converted to T (float, double, int64_t, int32_t, uint8_t).
  template <typename T>
  std::vector<T> to_vector(OpLocation loc = std::source_location::current()) const;
  // The values as a host Literal (shape and dtype kept), through the device
  // boundary (runtime::transfer_from_device); waits for a pending value.
  Literal to_literal(OpLocation loc = std::source_location::current()) const;

  // ---- autograd ----
  bool requires_grad() const;
  // Marks a leaf as needing a gradient; returns *this.
  Tensor& requires_grad_(bool requires_grad = true);
  // The accumulated gradient of a leaf (undefined Tensor when none).
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  // Reverse-mode autodiff from this tensor: a scalar (or `gradient` of this
  // shape). Accumulates into leaves' grad(); frees the graph (PyTorch's
  // retain_graph=False). Throws Error when called twice on one graph.
  void backward(const Tensor& gradient = Tensor()) const;
  // Same value, no autograd history.
  Tensor detach() const;

  // In-place value replacement keeping identity (param.data = value): shape and
  // dtype must match (Error otherwise). Records no autograd history. A tensor
  // laid out over devices (distributed/spmd.h mark_sharding) keeps its layout:
  // a materialised value in another layout is cut into its tiles; a tensor
  // never laid out stays whole (tiles given to it are assembled).
  void set_data(const Tensor& value) const;

  // ---- Tensor.* spellings of ops in tensor/ops.h ----
  Tensor to(DType dtype) const;
  // The same values on `device` (a copy through the device boundary; *this when
  // already there). Gradients flow back to this tensor's device.
  Tensor to(const runtime::Device& device) const;
  Tensor view(const Shape& shape, OpLocation loc = std::source_location::current()) const;
  Tensor reshape(const Shape& shape, OpLocation loc = std::source_location::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const { return transpose(0, 1); }
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor expand(const Shape& shape, OpLocation loc = std::source_location::current()) const;
  Tensor sum(std::vector<int64_t> dims = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> dims = {}, bool keepdim = false) const;
  Tensor matmul(const Tensor& other, OpLocation loc = std::source_location::current()) const;
  Tensor pow(double exponent) const;
  Tensor sqrt() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor neg() const;
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  // x[start:end:step] along dim (PyTorch's Tensor.slice / narrow with a step).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor sigmoid() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
  Tensor cumsum(int64_t dim) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sections, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;

 private:
  Literal read_literal(const char* read, OpLocation loc) const;
  template <typename T>
  static std::vector<T> literal_values(const Literal& values);
  std::shared_ptr<TensorImpl> impl_;
};

// Returns whether ops record autograd history on this thread (torch.is_grad_enabled()).
bool is_grad_enabled();

// torch.no_grad(): ops inside the scope record no autograd history.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// torch.enable_grad(): ops inside the scope record autograd history, also
// inside a NoGradGuard or a backward pass (nn/checkpoint.h recomputes there).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace lazytrain

#include "tensor/ops.h"
