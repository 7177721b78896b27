#include "tensor/tensor.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "core/op_location.h"
#include "lazy/execution_mode.h"
#include "lazy/sharded_data.h"
#include "lazy/step_analysis.h"
#include "runtime/metrics.h"
#include "runtime/transfer.h"
#include "tensor/autograd.h"
#include "tensor/lowering.h"
#include "tensor/view.h"

namespace lazytrain {

Tensor::Tensor(lazy::NodePtr value) : impl_(std::make_shared<TensorImpl>(std::move(value))) {
  lazy::register_live_tensor(impl_);
}

namespace {
const TensorImpl& deref(const std::shared_ptr<TensorImpl>& impl) {
  check(impl != nullptr, "Tensor", "use of an undefined tensor");
  return *impl;
}
}  // namespace

const Shape& Tensor::shape() const { return deref(impl_).shape(); }
DType Tensor::dtype() const { return deref(impl_).dtype(); }
lazy::NodePtr Tensor::ir_value() const {
  if (deref(impl_).view) refresh_view(*impl_);  // a view whose base was written since
  return impl_->ir_value();
}
int64_t Tensor::size(int64_t dim) const { return shape()[normalize_dim(dim, this->dim(), "Tensor.size")]; }

runtime::Device Tensor::device() const { return deref(impl_).device(); }

Literal Tensor::to_literal(Loc loc) const { return read_literal("to_literal()", loc); }

Literal Tensor::read_literal(const char* read, Loc loc) const {
  ir_value();  // a view whose base was written since takes its new value
  OpLocationScope at(loc);
  const bool ran_graph = impl_->has_pending_ir();
  impl_->sync();  // compiles and launches a pending value (not part of the transfer)
  lazy::note_host_transfer(device(), read, *current_op_location(), ran_graph);
  // A read, as PyTorch/XLA times it: waiting for the execution, then the copy.
  runtime::ScopedTimer timer("TransferFromDeviceTime");
  return runtime::transfer_from_device(impl_->buffer());
}

Tensor Tensor::to(const runtime::Device& device) const {
  if (this->device() == device) return *this;
  impl_->sync();
  Tensor out(lazy::make_device_data(runtime::copy_to_device(impl_->buffer(), device)));
  return autograd::record(out, "ToCopyBackward0", {*this}, [from = this->device()](const Tensor& g) {
    return std::vector<Tensor>{g.to(from)};
  });
}

template <typename T>
std::vector<T> Tensor::to_vector(Loc loc) const {
  return literal_values<T>(read_literal("to_vector()", loc));
}

template <typename T>
std::vector<T> Tensor::literal_values(const Literal& b) {
  std::vector<T> out(static_cast<size_t>(b.numel()));
  const int64_t n = b.numel();
  auto copy = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<double>(p[i]));
  };
  switch (b.dtype()) {
    case DType::kFloat32: copy(b.data<float>()); break;
    case DType::kBFloat16: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<float>(b.data<BFloat16>()[i])); break;
    case DType::kFloat16: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<float>(b.data<Half>()[i])); break;
    case DType::kInt32: copy(b.data<int32_t>()); break;
    case DType::kInt64: for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(b.data<int64_t>()[i]); break;
    case DType::kBool: copy(b.data<uint8_t>()); break;
  }
  return out;
}
template std::vector<float> Tensor::to_vector<float>(Loc) const;
template std::vector<double> Tensor::to_vector<double>(Loc) const;
template std::vector<int64_t> Tensor::to_vector<int64_t>(Loc) const;
template std::vector<int32_t> Tensor::to_vector<int32_t>(Loc) const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>(Loc) const;

double Tensor::item(Loc loc) const {
  check(numel() == 1, "Tensor.item", "a Tensor with " + std::to_string(numel()) + " elements cannot be converted to Scalar");
  return literal_values<double>(read_literal("item()", loc))[0];
}

bool Tensor::requires_grad() const { return deref(impl_).requires_grad; }

Tensor& Tensor::requires_grad_(bool value) {
  deref(impl_);
  check(!impl_->grad_fn || value, "requires_grad_", "you can only change requires_grad flags of leaf variables");
  check(!value || is_floating_point(dtype()), "requires_grad_", "only Tensors of floating point dtype can require gradients");
  impl_->requires_grad = value;
  return *this;
}

Tensor Tensor::grad() const {
  deref(impl_);
  std::lock_guard<std::mutex> lock(autograd::grad_mutex(*impl_));
  return impl_->grad ? Tensor(impl_->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& grad) const {
  deref(impl_);
  std::lock_guard<std::mutex> lock(autograd::grad_mutex(*impl_));
  impl_->grad = grad.defined() ? grad.impl() : nullptr;
}

void Tensor::backward(const Tensor& gradient) const {
  Tensor g = gradient;
  if (!g.defined()) {
    check(numel() == 1, "backward", "grad can be implicitly created only for scalar outputs, got " + shape_str(shape()));
    runtime::DeviceGuard on_output_device(device());
    g = ones(shape(), dtype());
  }
  check(g.shape() == shape(), "backward", "gradient has shape " + shape_str(g.shape()) + ", expected " + shape_str(shape()));
  autograd::run_backward(*this, g);
}

Tensor Tensor::detach() const { return Tensor(ir_value()); }

void Tensor::set_data(const Tensor& value) const {
  deref(impl_);
  check(value.shape() == shape() && value.dtype() == dtype(), "set_data",
        "new value is " + torch_name(value.dtype()) + shape_str(value.shape()) + ", expected " + torch_name(dtype()) + shape_str(shape()));
  const lazy::NodePtr& data = value.ir_value();
  const std::optional<hlo::HloSharding>& layout = impl_->sharding_spec();
  if (layout && layout->is_tiled() && data->is_device_data() && !(data->sharded_data() && data->sharded_data()->sharding() == *layout && data->sharded_data()->sharding().op_name() == layout->op_name())) {
    // A tensor laid out over devices (mark_sharding) keeps its layout, op_name
    // included (the graph hashes it): loaded data is cut into its tiles now (a
    // pending value is annotated at the sync).
    impl_->set_ir_value(lazy::make_device_data(lazy::ShardedData::split_locally(data->data(), *layout), impl_->device()));
    return;
  }
  if (!(layout && layout->is_tiled()) && data->sharded_data()) {
    // A tensor never laid out stays whole: tiles loaded into it (an FSDP model's
    // state_dict into a plain one) are assembled.
    impl_->set_ir_value(lazy::make_device_data(data->data()));
    return;
  }
  impl_->set_ir_value(data);
}

Tensor Tensor::to(DType d) const { return to_dtype(*this, d); }
Tensor Tensor::view(const Shape& s, OpLocation loc) const { return lazytrain::view(*this, s, loc); }
Tensor Tensor::reshape(const Shape& s, OpLocation loc) const { return lazytrain::reshape(*this, s, loc); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return lazytrain::transpose(*this, a, b); }
Tensor Tensor::permute(const std::vector<int64_t>& d) const { return lazytrain::permute(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return lazytrain::unsqueeze(*this, d); }
Tensor Tensor::squeeze(int64_t d) const { return lazytrain::squeeze(*this, d); }
Tensor Tensor::expand(const Shape& s, OpLocation loc) const { return lazytrain::expand(*this, s, loc); }
Tensor Tensor::sum(std::vector<int64_t> d, bool k) const { return lazytrain::sum(*this, std::move(d), k); }
Tensor Tensor::mean(std::vector<int64_t> d, bool k) const { return lazytrain::mean(*this, std::move(d), k); }
Tensor Tensor::matmul(const Tensor& o, OpLocation loc) const { return lazytrain::matmul(*this, o, loc); }
Tensor Tensor::pow(double e) const { return lazytrain::pow(*this, e); }
Tensor Tensor::sqrt() const { return lazytrain::sqrt(*this); }
Tensor Tensor::exp() const { return lazytrain::exp(*this); }
Tensor Tensor::log() const { return lazytrain::log(*this); }
Tensor Tensor::neg() const { return lazytrain::neg(*this); }
Tensor Tensor::masked_fill(const Tensor& m, double v) const { return lazytrain::masked_fill(*this, m, v); }
Tensor Tensor::softmax(int64_t d) const { return lazytrain::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return lazytrain::log_softmax(*this, d); }
Tensor Tensor::argmax(int64_t d, bool k) const { return lazytrain::argmax(*this, d, k); }
Tensor Tensor::slice(int64_t d, int64_t s, int64_t e, int64_t st) const { return lazytrain::slice(*this, d, s, e, st); }
Tensor Tensor::sigmoid() const { return lazytrain::sigmoid(*this); }
Tensor Tensor::sin() const { return lazytrain::sin(*this); }
Tensor Tensor::cos() const { return lazytrain::cos(*this); }
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const { return lazytrain::clamp(*this, min, max); }
Tensor Tensor::cumsum(int64_t dim) const { return lazytrain::cumsum(*this, dim); }
Tensor Tensor::tril(int64_t diagonal) const { return lazytrain::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return lazytrain::triu(*this, diagonal); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return lazytrain::gather(*this, dim, index); }
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const { return lazytrain::scatter_add(*this, dim, index, src); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return lazytrain::topk(*this, k, dim, largest, sorted);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return lazytrain::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sections, int64_t dim) const { return lazytrain::split(*this, sections, dim); }
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return lazytrain::chunk(*this, chunks, dim); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const { return lazytrain::repeat_interleave(*this, repeats, dim); }

namespace detail {

Tensor make_op(std::string op, const std::vector<Tensor>& inputs, Shape shape, DType dtype, std::vector<Attr> attrs, lazy::LowerFn lower) {
  std::vector<lazy::NodePtr> operands;
  operands.reserve(inputs.size());
  for (const Tensor& t : inputs) operands.push_back(t.ir_value());
  Tensor out(lazy::make_node(std::move(op), std::move(operands), std::move(shape), dtype, std::move(attrs), lower));
  lazy::on_op_recorded(*out.impl());  // runs it now in the eager modes (lazy/execution_mode.h)
  return out;
}

Tensor constant(double value, DType dtype) {
  return make_op("prim::Constant", {}, {}, dtype, {{"value", value}},
                 +[](LoweringContext& c, const Node& n) { return hlo::scalar(c.builder(), n.double_attr("value"), n.dtype()).id(); });
}

DType scalar_result_dtype(const Tensor& x, double value) {
  if (is_floating_point(x.dtype())) return x.dtype();
  if (value != static_cast<double>(static_cast<int64_t>(value))) return DType::kFloat32;
  return x.dtype() == DType::kBool ? DType::kInt64 : x.dtype();
}

XlaOp operand_as(LoweringContext& c, const Node& n, size_t i, DType dtype, const Shape& shape) {
  return broadcast_to(convert(operand(c, n, i), dtype), shape);
}

}  // namespace detail
}  // namespace lazytrain
