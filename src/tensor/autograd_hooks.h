// Tensor hooks, retain_grad and torch.autograd.grad over the engine of
// tensor/autograd.h (torch.Tensor.register_hook / retain_grad, torch.autograd.grad).
//
// A hook sees the gradient of its tensor, summed over every use, before it goes
// on: to the tensor's GradFn (a non-leaf) or into its .grad (a leaf). Hooks of
// one tensor run in registration order, each on the previous one's result; a
// retained gradient (retain_grad) is stored after them, as torch does.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tensor/autograd.h"

namespace lazytrain::autograd {

// grad -> the gradient to use instead, or an undefined Tensor to keep grad.
using TensorHook = std::function<Tensor(const Tensor& grad)>;

// Registers `hook` on `t`; returns a handle for remove_hook. Throws Error for a
// tensor that does not require grad (torch's RuntimeError).
int64_t register_hook(const Tensor& t, TensorHook hook);
// Removes a hook (no-op for a handle already removed).
void remove_hook(int64_t handle);
// A non-leaf keeps its gradient in grad() after backward (accumulating over
// backward calls); no-op for a leaf. Throws Error when t does not require grad.
void retain_grad(const Tensor& t);
bool retains_grad(const Tensor& t);

// The engine run_backward uses, with torch's options.
struct EngineOptions {
  bool retain_graph = false;  // keep the GradFns' saved tensors for another backward
  // torch.autograd.grad: capture the gradients of `capture` (in order) instead
  // of accumulating into leaves; GradFns that lead to none of them do not run.
  const std::vector<Tensor>* capture = nullptr;
};
// Back-propagates each root with its gradient (same shapes). Returns the
// captured gradients (undefined where none arrived) when options.capture is set.
std::vector<Tensor> run_engine(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, const EngineOptions& options);

// torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph, create_graph=False,
// allow_unused): grad_outputs may hold undefined Tensors (ones for a one-element
// output). Throws Error (torch's wording) when an output or input does not
// require grad, an implicit gradient is asked of a non-scalar output, or an
// input is unused and !allow_unused (its result is undefined when allowed).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs,
                         bool retain_graph, bool allow_unused);

// ---- engine internals (autograd.cpp) ----
// Whether any hook or retain_grad was ever registered (a fast path when not).
bool any_hooks();
// Runs the hooks and retain_grad of the non-leaf made by `fn` on `grad`.
Tensor run_fn_hooks(const GradFn* fn, Tensor grad);
// Runs the hooks of `leaf` on `grad`.
Tensor run_leaf_hooks(const TensorImpl* leaf, Tensor grad);
// Drops the hooks of a GradFn being destroyed.
void forget_fn_hooks(const GradFn* fn);

}  // namespace lazytrain::autograd
