// Tensor hooks, retain_grad and autograd::grad (tensor/autograd_hooks.h). The
// hooks live in tables keyed by the GradFn (a non-leaf: its one output is the
// tensor) or by the leaf's TensorImpl, so that neither struct grows a field.
#include "tensor/autograd_hooks.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "tensor/ops.h"

namespace lazytrain::autograd {
namespace {

struct HookEntry {
  int64_t id;
  TensorHook fn;
};

struct FnHooks {
  std::vector<HookEntry> hooks;
  std::vector<std::weak_ptr<TensorImpl>> retainers;  // tensors that retain_grad()
};

struct LeafHooks {
  std::weak_ptr<TensorImpl> owner;  // an entry whose owner died is stale (its address may be reused)
  std::vector<HookEntry> hooks;
};

struct Tables {
  std::mutex mutex;
  std::unordered_map<const GradFn*, FnHooks> fns;
  std::unordered_map<const TensorImpl*, LeafHooks> leaves;
  std::unordered_map<int64_t, std::pair<const GradFn*, const TensorImpl*>> handles;
  int64_t next_id = 1;
};

Tables& tables() {
  static Tables* t = new Tables();  // never destroyed: GradFns may die during static destruction
  return *t;
}

std::atomic<bool> hooks_registered{false};

Tensor apply_hooks(const std::vector<HookEntry>& hooks, Tensor grad) {
  for (const HookEntry& h : hooks) {
    Tensor replaced = h.fn(grad);
    if (replaced.defined()) {
      check(replaced.shape() == grad.shape(), "hook",
            "hook returned a gradient of shape " + shape_str(replaced.shape()) + ", expected " + shape_str(grad.shape()));
      grad = replaced;
    }
  }
  return grad;
}

}  // namespace

bool any_hooks() { return hooks_registered.load(std::memory_order_relaxed); }

int64_t register_hook(const Tensor& t, TensorHook hook) {
  check(t.requires_grad(), "register_hook", "cannot register a hook on a tensor that doesn't require gradient");
  Tables& tb = tables();
  std::lock_guard<std::mutex> lock(tb.mutex);
  const int64_t id = tb.next_id++;
  if (const GradFn* fn = t.impl()->grad_fn.get()) {
    tb.fns[fn].hooks.push_back({id, std::move(hook)});
    tb.handles[id] = {fn, nullptr};
  } else {
    LeafHooks& entry = tb.leaves[t.impl().get()];
    if (entry.owner.lock() != t.impl()) entry = LeafHooks{t.impl(), {}};
    entry.hooks.push_back({id, std::move(hook)});
    tb.handles[id] = {nullptr, t.impl().get()};
  }
  hooks_registered = true;
  return id;
}

void remove_hook(int64_t handle) {
  Tables& tb = tables();
  std::lock_guard<std::mutex> lock(tb.mutex);
  auto it = tb.handles.find(handle);
  if (it == tb.handles.end()) return;
  auto drop = [handle](std::vector<HookEntry>& hooks) {
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [handle](const HookEntry& h) { return h.id == handle; }), hooks.end());
  };
  if (it->second.first) {
    if (auto f = tb.fns.find(it->second.first); f != tb.fns.end()) drop(f->second.hooks);
  } else if (auto l = tb.leaves.find(it->second.second); l != tb.leaves.end()) {
    drop(l->second.hooks);
  }
  tb.handles.erase(it);
}

void retain_grad(const Tensor& t) {
  check(t.requires_grad(), "retain_grad", "can't retain_grad on Tensor that has requires_grad=False");
  const GradFn* fn = t.impl()->grad_fn.get();
  if (fn == nullptr) return;  // a leaf keeps its gradient anyway
  Tables& tb = tables();
  std::lock_guard<std::mutex> lock(tb.mutex);
  auto& retainers = tb.fns[fn].retainers;
  for (const auto& w : retainers) {
    if (w.lock() == t.impl()) return;
  }
  retainers.push_back(t.impl());
  hooks_registered = true;
}

bool retains_grad(const Tensor& t) {
  const GradFn* fn = t.impl()->grad_fn.get();
  if (fn == nullptr || !any_hooks()) return false;
  Tables& tb = tables();
  std::lock_guard<std::mutex> lock(tb.mutex);
  auto it = tb.fns.find(fn);
  if (it == tb.fns.end()) return false;
  for (const auto& w : it->second.retainers) {
    if (w.lock() == t.impl()) return true;
  }
  return false;
}

Tensor run_fn_hooks(const GradFn* fn, Tensor grad) {
  if (!any_hooks() || !grad.defined()) return grad;
  std::vector<HookEntry> hooks;
  std::vector<std::shared_ptr<TensorImpl>> retainers;
  {
    Tables& tb = tables();
    std::lock_guard<std::mutex> lock(tb.mutex);
    auto it = tb.fns.find(fn);
    if (it == tb.fns.end()) return grad;
    hooks = it->second.hooks;  // a copy: a hook may register hooks
    for (const auto& w : it->second.retainers) {
      if (auto t = w.lock()) retainers.push_back(std::move(t));
    }
  }
  grad = apply_hooks(hooks, grad);
  for (const auto& t : retainers) {  // after the hooks, as torch's retains_grad hook
    Tensor g = grad.detach();
    std::lock_guard<std::mutex> lock(grad_mutex(*t));  // other threads accumulate into grads too
    t->grad = (t->grad ? add(Tensor(t->grad), g) : g).impl();
  }
  return grad;
}

Tensor run_leaf_hooks(const TensorImpl* leaf, Tensor grad) {
  if (!any_hooks() || !grad.defined()) return grad;
  std::vector<HookEntry> hooks;
  {
    Tables& tb = tables();
    std::lock_guard<std::mutex> lock(tb.mutex);
    auto it = tb.leaves.find(leaf);
    if (it == tb.leaves.end()) return grad;
    if (it->second.owner.lock().get() != leaf) {  // stale: another tensor now lives at this address
      for (const HookEntry& h : it->second.hooks) tb.handles.erase(h.id);
      tb.leaves.erase(it);
      return grad;
    }
    hooks = it->second.hooks;
  }
  return apply_hooks(hooks, grad);
}

void forget_fn_hooks(const GradFn* fn) {
  if (!any_hooks()) return;
  Tables& tb = tables();
  std::lock_guard<std::mutex> lock(tb.mutex);
  auto it = tb.fns.find(fn);
  if (it == tb.fns.end()) return;
  for (const HookEntry& h : it->second.hooks) tb.handles.erase(h.id);
  tb.fns.erase(it);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs, const std::vector<Tensor>& grad_outputs,
                         bool retain_graph, bool allow_unused) {
  const std::string op = "autograd.grad";
  check(grad_outputs.empty() || grad_outputs.size() == outputs.size(), op,
        "grad requires one grad_output per output: got " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
            std::to_string(outputs.size()) + " outputs");
  std::vector<Tensor> grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    check(out.defined() && out.requires_grad(), op,
          "element " + std::to_string(i) + " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      check(out.numel() == 1, op, "grad can be implicitly created only for scalar outputs");
      runtime::DeviceGuard on_output_device(out.device());
      g = ones(out.shape(), out.dtype());
    }
    check(g.shape() == out.shape(), op,
          "Mismatch in shape: grad_output[" + std::to_string(i) + "] has a shape of " + shape_str(g.shape()) + " and output[" +
              std::to_string(i) + "] has a shape of " + shape_str(out.shape()) + ".");
    grads.push_back(g);
  }
  for (const Tensor& in : inputs) {
    check(in.defined() && in.requires_grad(), op, "One of the differentiated Tensors does not require grad");
  }
  EngineOptions options;
  options.retain_graph = retain_graph;
  options.capture = &inputs;
  std::vector<Tensor> result = run_engine(outputs, grads, options);
  for (const Tensor& r : result) {
    check(r.defined() || allow_unused, op,
          "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired "
          "behavior.");
  }
  return result;
}

}  // namespace lazytrain::autograd
