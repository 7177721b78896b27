#include "nn/module.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace lazytrain::nn {

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
  if (!tensor.requires_grad()) tensor.requires_grad_(true);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : parameters_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> all, unique;
  collect("", all);
  std::unordered_set<const TensorImpl*> seen;
  for (auto& entry : all) {
    if (seen.insert(entry.second.impl().get()).second) unique.push_back(std::move(entry));
  }
  return unique;
}

std::vector<std::pair<std::string, std::string>> Module::tied_parameters() const {
  std::vector<std::pair<std::string, Tensor>> all;
  collect("", all);
  std::unordered_map<const TensorImpl*, std::string> first;
  std::vector<std::pair<std::string, std::string>> tied;
  for (const auto& [name, t] : all) {
    auto [it, inserted] = first.emplace(t.impl().get(), name);
    if (!inserted) tied.emplace_back(name, it->second);
  }
  return tied;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

Tensor Module::parameter(const std::string& name) const {
  for (auto& [n, t] : named_parameters()) {
    if (n == name) return t;
  }
  throw Error("[Module] no parameter named '" + name + "'");
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

Tensor normal_init(const Shape& shape, double std, int64_t zero_row) {
  std::vector<float> values = host_randn(numel(shape));
  for (float& v : values) v = static_cast<float>(v * std);
  if (zero_row >= 0) {
    const int64_t width = shape.size() > 1 ? numel(shape) / shape[0] : 1;
    std::fill(values.begin() + zero_row * width, values.begin() + (zero_row + 1) * width, 0.0f);
  }
  return from_vector(values, shape);
}

Tensor constant_init(const Shape& shape, float value) { return from_vector(std::vector<float>(static_cast<size_t>(numel(shape)), value), shape); }

}  // namespace lazytrain::nn
