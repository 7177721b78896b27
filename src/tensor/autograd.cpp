#include "tensor/autograd.h"

#include <array>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/iterative_release.h"
#include "core/op_location.h"
#include "tensor/autograd_hooks.h"
#include "tensor/view.h"

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
  forget_fn_hooks(this);
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
    if (t.defined()) {
      e.dtype = t.dtype();
      e.input = t.impl();
      e.version = version(*t.impl());
    }
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

// Formulas that never read their inputs' values: a later in-place write to an
// input cannot change their gradients (torch saves nothing for these either).
bool reads_no_input(const std::string& name) {
  static const std::unordered_set<std::string> kNames = {
      "AddBackward0", "SubBackward0", "NegBackward0", "CloneBackward0", "ViewBackward0", "PermuteBackward0",
      "ExpandBackward0", "SliceBackward0", "CatBackward0", "ToCopyBackward0", "SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1"};
  return kNames.count(name) != 0;
}

// torch's check of saved tensors: an input written in place after the op was
// recorded would give a wrong gradient, so backward stops instead.
void check_saved_versions(const GradFn& fn) {
  if (reads_no_input(fn.name)) return;
  for (const Edge& e : fn.next) {
    auto input = e.input.lock();
    if (!input || version(*input) == e.version) continue;
    throw_error("backward", "one of the variables needed for gradient computation has been modified by an inplace "
                            "operation: [" + torch_name(input->dtype()) + shape_str(input->shape()) + "], which is an input of " +
                            fn.name + ", is at version " + std::to_string(version(*input)) + "; expected version " +
                            std::to_string(e.version) + " instead.", fn.location);
  }
}

void accumulate_into_leaf(TensorImpl& leaf, const Tensor& grad) {
  Tensor g = grad.detach();
  if (g.dtype() != leaf.dtype()) g = to_dtype(g, leaf.dtype());
  std::lock_guard<std::mutex> lock(grad_mutex(leaf));  // (another thread's backward may accumulate into it too)
  if (leaf.grad) g = add(Tensor(leaf.grad), g);
  leaf.grad = g.impl();
}

}  // namespace

std::mutex& grad_mutex(const TensorImpl& leaf) {
  static std::array<std::mutex, 64> stripes;  // a mutex per leaf would grow every tensor
  return stripes[(reinterpret_cast<uintptr_t>(&leaf) / alignof(TensorImpl)) % stripes.size()];
}

void run_backward(const Tensor& root, const Tensor& grad_root) { run_engine({root}, {grad_root}, EngineOptions{}); }

std::vector<Tensor> run_engine(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, const EngineOptions& options) {
  for (const Tensor& root : roots) {
    check(root.requires_grad(), "backward", "element 0 of tensors does not require grad and does not have a grad_fn");
  }
  NoGradGuard no_grad;
  // torch.autograd.grad: where each captured tensor's gradient is found.
  std::unordered_map<const GradFn*, size_t> capture_fn;
  std::unordered_map<const TensorImpl*, size_t> capture_leaf;
  std::vector<Tensor> captured;
  if (options.capture) {
    captured.resize(options.capture->size());
    for (size_t i = 0; i < options.capture->size(); ++i) {
      const Tensor& t = (*options.capture)[i];
      if (t.impl()->grad_fn) capture_fn.emplace(t.impl()->grad_fn.get(), i);
      else capture_leaf.emplace(t.impl().get(), i);
    }
  }
  // A leaf's gradient is summed over its uses first, then hooked and accumulated
  // (torch's AccumulateGrad receives the sum), in the order leaves are first reached.
  std::vector<std::shared_ptr<TensorImpl>> leaf_order;  // owning: the edges are freed before delivery
  std::unordered_map<TensorImpl*, Tensor> leaf_grads;
  auto to_leaf = [&](const std::shared_ptr<TensorImpl>& leaf, const Tensor& g) {
    if (!g.defined()) return;
    if (options.capture && !capture_leaf.count(leaf.get())) return;  // autograd.grad touches no other leaf
    auto it = leaf_grads.find(leaf.get());
    if (it == leaf_grads.end()) {
      leaf_order.push_back(leaf);
      leaf_grads.emplace(leaf.get(), g);
    } else {
      it->second = add(it->second, g);
    }
  };
  std::unordered_map<GradFn*, Tensor> grads;
  std::vector<std::shared_ptr<GradFn>> root_fns;
  for (size_t r = 0; r < roots.size(); ++r) {
    const auto& fn = roots[r].impl()->grad_fn;
    if (!fn) {
      to_leaf(roots[r].impl(), grad_roots[r]);
      continue;
    }
    auto it = grads.find(fn.get());
    if (it == grads.end()) {
      grads.emplace(fn.get(), grad_roots[r]);
      root_fns.push_back(fn);
    } else {
      it->second = add(it->second, grad_roots[r]);
    }
  }
  // Every GradFn reached, children after parents (post-order reversed).
  std::vector<GradFn*> order;
  {
    std::unordered_set<GradFn*> seen;
    std::vector<std::pair<GradFn*, size_t>> stack;
    for (const auto& fn : root_fns) {
      if (!seen.insert(fn.get()).second) continue;
      stack.emplace_back(fn.get(), 0);
      while (!stack.empty()) {
        auto& [fn_now, next_edge] = stack.back();
        check(fn_now->backward != nullptr, "backward",
              "Trying to backward through the graph a second time (its saved tensors were freed after the first backward; "
              "pass retain_graph=True to backward the first time)");
        if (next_edge < fn_now->next.size()) {
          GradFn* child = fn_now->next[next_edge++].fn.get();
          if (child && seen.insert(child).second) stack.emplace_back(child, 0);
        } else {
          order.push_back(fn_now);
          stack.pop_back();
        }
      }
    }
  }
  // autograd.grad runs only the GradFns that lead to a captured tensor (torch prunes the others).
  std::unordered_set<GradFn*> needed;
  for (GradFn* fn : order) {  // children come first in `order`
    bool need = !options.capture || capture_fn.count(fn) > 0;
    for (const Edge& e : fn->next) {
      need = need || (e.fn && needed.count(e.fn.get())) || (e.leaf && capture_leaf.count(e.leaf.get()));
    }
    if (need) needed.insert(fn);
  }
  // Count how many edges reach each GradFn, so each runs once all its gradients arrived.
  std::unordered_map<GradFn*, int> dependencies;
  for (GradFn* fn : order) {
    if (!needed.count(fn)) continue;
    for (const Edge& e : fn->next) {
      if (e.fn && needed.count(e.fn.get())) dependencies[e.fn.get()]++;
    }
  }
  std::vector<std::shared_ptr<GradFn>> ready;
  for (const auto& fn : root_fns) {
    if (needed.count(fn.get()) && dependencies[fn.get()] == 0) ready.push_back(fn);
  }
  while (!ready.empty()) {
    std::shared_ptr<GradFn> fn = std::move(ready.back());
    ready.pop_back();
    std::vector<Tensor> input_grads(fn->next.size());
    if (auto it = grads.find(fn.get()); it != grads.end()) {
      Tensor grad = run_fn_hooks(fn.get(), std::move(it->second));
      grads.erase(it);
      if (auto c = capture_fn.find(fn.get()); c != capture_fn.end()) captured[c->second] = grad;
      OpLocationScope at(fn->location);
      check_saved_versions(*fn);
      input_grads = fn->backward(grad);
    }
    check(input_grads.size() == fn->next.size(), "backward", fn->name + " returned the wrong number of gradients");
    for (size_t i = 0; i < fn->next.size(); ++i) {
      const Edge& e = fn->next[i];
      Tensor g = input_grads[i];
      if (g.defined() && g.dtype() != e.dtype && is_floating_point(e.dtype)) g = to_dtype(g, e.dtype);
      if (e.leaf) to_leaf(e.leaf, g);
      if (!e.fn || !needed.count(e.fn.get())) continue;
      if (g.defined()) {
        auto it = grads.find(e.fn.get());
        if (it == grads.end()) grads.emplace(e.fn.get(), g);
        else it->second = add(it->second, g);
      }
      if (--dependencies[e.fn.get()] == 0) ready.push_back(e.fn);
    }
    if (!options.retain_graph) {  // free the saved tensors and edges
      fn->backward = nullptr;
      fn->next.clear();
    }
  }
  for (const auto& leaf : leaf_order) {
    Tensor g = run_leaf_hooks(leaf.get(), leaf_grads.at(leaf.get()));
    if (auto c = capture_leaf.find(leaf.get()); c != capture_leaf.end()) captured[c->second] = g;
    else accumulate_into_leaf(*leaf, g);
  }
  return captured;
}

}  // namespace autograd
}  // namespace lazytrain
