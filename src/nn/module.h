// Module: a tree of named parameters and submodules, as torch.nn.Module.
//
// Parameter names join the path with dots ("bert.encoder.layer.0.attention.self.query.weight"),
// so they match Hugging Face's state dicts. A tensor registered under two names
// (tied weights) is listed once, under the first name, as PyTorch does.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace lazytrain::nn {

class Module {
 public:
  virtual ~Module() = default;

  // Every distinct parameter with its dotted name, in registration order.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  // Every further name of a tensor registered more than once (tied weights),
  // paired with the name named_parameters() lists it under, in registration
  // order: PyTorch's state_dict() holds both names, e.g.
  // {"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"}.
  std::vector<std::pair<std::string, std::string>> tied_parameters() const;
  // The parameter called `name`; throws Error naming it when absent.
  Tensor parameter(const std::string& name) const;
  // Sets training mode on this module and every submodule (dropout on/off).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

 protected:
  // Registers `tensor` (made requires_grad) as parameter `name`; returns it.
  Tensor register_parameter(const std::string& name, Tensor tensor);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// torch.nn.ModuleList: children named "0", "1", ...
class ModuleList : public Module {
 public:
  template <typename M>
  std::shared_ptr<M> append(std::shared_ptr<M> module) {
    return register_module(std::to_string(size_++), std::move(module));
  }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

// Parameter initialisation on the host (device data, so nothing compiles):
// Hugging Face's _init_weights draws weights ~ N(0, std); `zero_row` (>= 0)
// zeroes one row (an embedding's padding_idx).
Tensor normal_init(const Shape& shape, double std, int64_t zero_row = -1);
// A float32 tensor filled with `value` (biases 0, LayerNorm weights 1).
Tensor constant_init(const Shape& shape, float value);

}  // namespace lazytrain::nn
