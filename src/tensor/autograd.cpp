#include "tensor/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/iterative_release.h"
#include "core/op_location.h"

namespace lazytrain {

namespace {
thread_local bool grad_enabled = true;
}

bool is_grad_enabled() { return grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }
EnableGradGuard::EnableGradGuard() : previous_(grad_enabled) { grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { grad_enabled = previous_; }

namespace autograd {

GradFn::~GradFn() {
  if (!next.empty() || backward) release_iteratively(std::make_pair(std::move(next), std::move(backward)));
}

Tensor record(Tensor output, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward) {
  if (!grad_enabled) return output;
  bool any = false;
  for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!any) return output;
  auto fn = std::make_shared<GradFn>();
  fn->name = name;
  if (const OpLocation* where = current_op_location()) fn->location = *where;
  for (const Tensor& t : inputs) {
    Edge e;
    if (t.defined()) e.dtype = t.dtype();
    if (t.defined() && t.requires_grad()) {
      if (t.impl()->grad_fn) e.fn = t.impl()->grad_fn;
      else e.leaf = t.impl();
    }
    fn->next.push_back(std::move(e));
  }
  fn->backward = std::move(backward);
  output.impl()->requires_grad = true;
  output.impl()->grad_fn = std::move(fn);
  return output;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const Shape& g = grad.shape();
  size_t lead = g.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < g.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && g[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  }
  Tensor s = dims.empty() ? grad : sum(grad, dims, true);
  return reshape(s, shape);
}

namespace {

void accumulate_into_leaf(TensorImpl& leaf, const Tensor& grad) {
  Tensor g = grad.detach();
  if (g.dtype() != leaf.dtype()) g = to_dtype(g, leaf.dtype());
  if (leaf.grad) g = add(Tensor(leaf.grad), g);
  leaf.grad = g.impl();
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_root) {
  check(root.requires_grad(), "backward", "element 0 of tensors does not require grad and does not have a grad_fn");
  NoGradGuard no_grad;
  if (!root.impl()->grad_fn) {
    accumulate_into_leaf(*root.impl(), grad_root);
    return;
  }
  // Count how many edges reach each GradFn, so each runs once all its gradients arrived.
  std::unordered_map<GradFn*, int> dependencies;
  std::vector<GradFn*> stack = {root.impl()->grad_fn.get()};
  std::unordered_set<GradFn*> seen = {stack.back()};
  while (!stack.empty()) {
    GradFn* fn = stack.back();
    stack.pop_back();
    check(fn->backward != nullptr, "backward",
          "Trying to backward through the graph a second time (its saved tensors were freed after the first backward)");
    for (const Edge& e : fn->next) {
      if (!e.fn) continue;
      dependencies[e.fn.get()]++;
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  std::unordered_map<GradFn*, Tensor> grads = {{root.impl()->grad_fn.get(), grad_root}};
  std::vector<std::shared_ptr<GradFn>> ready = {root.impl()->grad_fn};
  while (!ready.empty()) {
    std::shared_ptr<GradFn> fn = std::move(ready.back());
    ready.pop_back();
    std::vector<Tensor> input_grads(fn->next.size());
    if (auto it = grads.find(fn.get()); it != grads.end()) {
      Tensor grad = std::move(it->second);
      grads.erase(it);
      OpLocationScope at(fn->location);
      input_grads = fn->backward(grad);
    }
    check(input_grads.size() == fn->next.size(), "backward", fn->name + " returned the wrong number of gradients");
    for (size_t i = 0; i < fn->next.size(); ++i) {
      const Edge& e = fn->next[i];
      Tensor g = input_grads[i];
      if (g.defined() && g.dtype() != e.dtype && is_floating_point(e.dtype)) g = to_dtype(g, e.dtype);
      if (e.leaf && g.defined()) accumulate_into_leaf(*e.leaf, g);
      if (!e.fn) continue;
      if (g.defined()) {
        auto it = grads.find(e.fn.get());
        if (it == grads.end()) grads.emplace(e.fn.get(), g);
        else it->second = add(it->second, g);
      }
      if (--dependencies[e.fn.get()] == 0) ready.push_back(e.fn);
    }
    // Free the saved tensors and edges (retain_graph=False).
    fn->backward = nullptr;
    fn->next.clear();
  }
}

}  // namespace autograd
}  // namespace lazytrain
