#include "lazy/ir.h"

#include <atomic>
#include <bit>
#include <functional>
#include <sstream>

#include "core/error.h"
#include "core/iterative_release.h"
#include "core/op_location.h"
#include "lazy/sharded_data.h"

namespace lazytrain::lazy {

namespace {
std::atomic<int64_t> next_id{0};

uint64_t hash_string(const std::string& s) { return std::hash<std::string>{}(s); }

uint64_t hash_attr(const Attr& a) {
  uint64_t h = hash_string(a.name);
  h = hash_combine(h, a.value.index());
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, int64_t>) h = hash_combine(h, static_cast<uint64_t>(v));
        // The bits, not std::hash<double>: 0.0 and -0.0 compare (and std::hash) equal, but
        // a graph that divides by one of them must not be served the other's executable.
        else if constexpr (std::is_same_v<V, double>) h = hash_combine(h, std::bit_cast<uint64_t>(v));
        else if constexpr (std::is_same_v<V, std::string>) h = hash_combine(h, hash_string(v));
        else for (int64_t x : v) h = hash_combine(h, static_cast<uint64_t>(x));
      },
      a.value);
  return h;
}

std::string attr_text(const AttrValue& value) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          os << "(";
          for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
          os << ")";
        } else {
          os << v;
        }
      },
      value);
  return os.str();
}
}  // namespace

uint64_t hash_combine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 12) + (seed >> 4));
}

Node::Node(std::string op, std::vector<NodePtr> operands, Shape shape, DType dtype, std::vector<Attr> attrs, LowerFn lower,
           std::optional<hlo::HloSharding> sharding)
    : op_(std::move(op)), operands_(std::move(operands)), shape_(std::move(shape)), dtype_(dtype),
      attrs_(std::move(attrs)), sharding_(std::move(sharding)), lower_(lower), id_(next_id++) {
  device_neutral_ = op_ == "prim::Constant";
  if (const OpLocation* where = current_op_location()) location_ = *where;
  const runtime::Device* from = nullptr;
  for (const NodePtr& o : operands_) {
    if (o->device_neutral()) continue;
    if (from && !(o->device() == *from)) {
      throw Error("[" + op_ + "] expected all tensors to be on the same device, but found at least two devices, " + from->to_string() +
                  " and " + o->device().to_string() + "!");
    }
    from = &o->device();
  }
  device_ = from ? *from : runtime::current_device();
  uint64_t h = hash_string(op_);
  h = hash_combine(h, static_cast<uint64_t>(dtype_));
  for (int64_t d : shape_) h = hash_combine(h, static_cast<uint64_t>(d));
  h = hash_combine(h, shape_.size());
  for (const Attr& a : attrs_) h = hash_combine(h, hash_attr(a));
  if (sharding_) h = hash_combine(h, sharding_->hash());
  local_hash_ = h;
}

Node::Node(std::shared_ptr<runtime::AsyncBuffer> data) : Node("xla::device_data", {}, data->shape(), data->dtype(), {}, nullptr) {
  device_ = data->device();
  data_ = std::move(data);
}

Node::Node(std::shared_ptr<const ShardedData> data, runtime::Device device)
    : Node("xla::device_data", {}, data->shape(), data->dtype(), {}, nullptr, data->sharding()) {
  device_ = std::move(device);
  sharded_ = std::move(data);
}

const runtime::Buffer& Node::data() const { return sharded_ ? sharded_->assembled() : data_->get(); }

Node::~Node() {
  // Only an operand that dies with this node and owns operands itself would recurse.
  bool deep = false;
  for (const NodePtr& o : operands_) deep = deep || (o.use_count() == 1 && !o->operands_.empty());
  if (deep) release_iteratively(std::move(operands_));
}

const AttrValue& Node::find(const std::string& name) const {
  for (const Attr& a : attrs_) {
    if (a.name == name) return a.value;
  }
  throw Error("[" + op_ + "] has no attribute '" + name + "'");
}

int64_t Node::int_attr(const std::string& name) const { return std::get<int64_t>(find(name)); }
double Node::double_attr(const std::string& name) const { return std::get<double>(find(name)); }
const std::vector<int64_t>& Node::ints_attr(const std::string& name) const { return std::get<std::vector<int64_t>>(find(name)); }
const std::string& Node::string_attr(const std::string& name) const { return std::get<std::string>(find(name)); }

std::string Node::to_string(const std::vector<int64_t>& operand_numbers) const {
  std::ostringstream os;
  os << xla_name(dtype_) << "[";
  for (size_t i = 0; i < shape_.size(); ++i) os << (i ? "," : "") << shape_[i];
  os << "]";
  if (!shape_.empty()) {
    os << "{";
    for (size_t i = 0; i < shape_.size(); ++i) os << (i ? "," : "") << shape_.size() - 1 - i;
    os << "}";
  }
  os << " " << op_ << "(";
  for (size_t i = 0; i < operand_numbers.size(); ++i) os << (i ? ", " : "") << "%" << operand_numbers[i];
  os << ")";
  for (const Attr& a : attrs_) os << ", " << a.name << "=" << attr_text(a.value);
  if (sharding_) os << ", sharding=" << sharding_->to_string();
  if (is_device_data()) os << ", device=" << device_.to_string();
  return os.str();
}

NodePtr make_node(std::string op, std::vector<NodePtr> operands, Shape shape, DType dtype, std::vector<Attr> attrs, LowerFn lower) {
  return std::make_shared<const Node>(std::move(op), std::move(operands), std::move(shape), dtype, std::move(attrs), lower);
}

NodePtr make_sharded_node(std::string op, std::vector<NodePtr> operands, Shape shape, DType dtype, hlo::HloSharding sharding,
                          LowerFn lower) {
  return std::make_shared<const Node>(std::move(op), std::move(operands), std::move(shape), dtype, std::vector<Attr>{}, lower,
                                      std::move(sharding));
}

NodePtr make_device_data(runtime::Buffer data) {
  return std::make_shared<const Node>(std::make_shared<runtime::AsyncBuffer>(std::move(data)));
}

NodePtr make_device_data(std::shared_ptr<runtime::AsyncBuffer> data) { return std::make_shared<const Node>(std::move(data)); }

NodePtr make_device_data(std::shared_ptr<const ShardedData> data, const runtime::Device& device) {
  return std::make_shared<const Node>(std::move(data), device);
}

}  // namespace lazytrain::lazy
