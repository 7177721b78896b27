// Reverse-mode autograd, recorded lazily: gradient formulas are ordinary tensor
// ops, so forward, backward and the optimizer update land in one graph per step.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/op_location.h"
#include "tensor/tensor.h"

namespace lazytrain::autograd {

// Where the gradient of one input goes: the GradFn that produced it, or the leaf
// tensor that accumulates it. Both null: the input needs no gradient.
struct Edge {
  std::shared_ptr<GradFn> fn;
  std::shared_ptr<TensorImpl> leaf;
  // The input's dtype: a gradient arriving in another dtype is converted to it,
  // as PyTorch's engine does (a bf16 matmul under autocast gets a bf16 gradient
  // even when its output was promoted to f32 downstream).
  DType dtype = DType::kFloat32;
  // The input itself and its version (tensor/view.h) when the op was recorded:
  // backward refuses to run a formula whose input was written in place since.
  std::weak_ptr<TensorImpl> input;
  uint64_t version = 0;
};

// Computes the gradients of an op's inputs from the gradient of its output; an
// undefined Tensor means "no gradient" for that input.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct GradFn {
  std::string name;  // PyTorch's: "MulBackward0", "MmBackward0", ...
  std::vector<Edge> next;
  BackwardFn backward;  // null once the graph was freed by backward()
  // Where the user called the forward op (core/op_location.h): its gradient
  // ops are recorded there, so backward's errors and IR name that line.
  OpLocation location;

  GradFn() = default;
  // Releases `next` and `backward` (whose closure may hold tensors with GradFns
  // of their own) without recursing down the chain: any depth frees in constant stack.
  ~GradFn();
  GradFn(const GradFn&) = delete;
  GradFn& operator=(const GradFn&) = delete;
};

// When grad mode is on and some input requires grad, attaches a GradFn named
// `name` to `output` (which becomes requires_grad) and returns it.
Tensor record(Tensor output, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward);

// Runs backward from `root` with `grad_root` (same shape). See Tensor::backward.
void run_backward(const Tensor& root, const Tensor& grad_root);

// Guards `leaf`'s grad field (read, set, accumulated): threads running
// backward into one parameter at once add up, as torch's AccumulateGrad lock.
std::mutex& grad_mutex(const TensorImpl& leaf);

// Sums `grad` down to `shape` over the dims that broadcasting expanded.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace lazytrain::autograd
