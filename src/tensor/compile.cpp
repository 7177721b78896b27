#include "tensor/compile.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/op_location.h"
#include "lazy/graph_lowering.h"
#include "lazy/lazy_api.h"
#include "lazy/step_analysis.h"
#include "tensor/autocast.h"
#include "tensor/autograd.h"
#include "tensor/ops.h"

namespace lazytrain {

namespace {

// Where each parameter of a traced graph comes from on a replay.
struct ArgumentSource {
  enum class Kind { kInput, kCaptured, kFixed } kind = Kind::kFixed;
  size_t input = 0;                           // kInput
  std::weak_ptr<lazy::LazyTensor> captured;   // kCaptured: the tensor's value at the call
  lazy::NodePtr fixed;                        // kFixed: device data no tensor holds (a cached scalar)
};

struct Plan {
  std::shared_ptr<backend::Executable> executable;
  std::vector<ArgumentSource> arguments;
  size_t outputs = 0;
  std::vector<std::weak_ptr<lazy::LazyTensor>> updated;  // tensors fn updated in place, in result order
};

struct Signature {
  std::vector<std::pair<DType, Shape>> inputs;
  std::vector<int64_t> static_args;
  std::string key;
};

Signature signature_of(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args) {
  Signature s;
  s.static_args = static_args;
  for (const Tensor& t : inputs) {
    check(t.defined(), "compile", "an input is an undefined tensor");
    s.inputs.emplace_back(t.dtype(), t.shape());
    s.key += xla_name(t.dtype()) + shape_str(t.shape()) + "@" + t.device().to_string() + ";";
  }
  s.key += "|";
  for (int64_t v : static_args) s.key += std::to_string(v) + ",";
  return s;
}

// How `now` differs from `then`: "input 0 changed from f32[3] to f32[4] (dimension 0: 3 → 4)".
std::string signature_change(const Signature& now, const Signature& then) {
  if (now.inputs.size() != then.inputs.size()) {
    return std::to_string(now.inputs.size()) + " inputs where the previous call had " + std::to_string(then.inputs.size());
  }
  for (size_t i = 0; i < now.inputs.size(); ++i) {
    const auto& [dtype, shape] = now.inputs[i];
    const auto& [old_dtype, old_shape] = then.inputs[i];
    if (dtype == old_dtype && shape == old_shape) continue;
    std::string text = "input " + std::to_string(i) + " changed from " + xla_name(old_dtype) + shape_str(old_shape) + " to " +
                       xla_name(dtype) + shape_str(shape);
    if (dtype == old_dtype && shape.size() == old_shape.size()) {
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] != old_shape[d]) {
          text += " (dimension " + std::to_string(d) + ": " + std::to_string(old_shape[d]) + " -> " + std::to_string(shape[d]) + ")";
          break;
        }
      }
    }
    return text;
  }
  for (size_t i = 0; i < now.static_args.size() && i < then.static_args.size(); ++i) {
    if (now.static_args[i] != then.static_args[i]) {
      return "static argument " + std::to_string(i) + " changed from " + std::to_string(then.static_args[i]) + " to " +
             std::to_string(now.static_args[i]);
    }
  }
  return "the number of static arguments changed";
}

std::string describe_node(const lazy::Node& node) {
  const std::string where = location_text(node.location());
  return xla_name(node.dtype()) + shape_str(node.shape()) + " from " + node.op() + (where.empty() ? "" : " at " + where);
}

}  // namespace

struct CompiledState {
  TracedFunction fn;
  CompileOptions options;
  std::mutex mutex;
  std::unordered_map<std::string, Plan> plans;
  Signature last;
  int64_t traces = 0;

  Plan trace(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args, const runtime::Device& device);
  std::vector<Tensor> replay(const Plan& plan, const std::vector<Tensor>& inputs, const runtime::Device& device) const;
};

// Tiles on several devices are no single argument of a compiled function.
const std::string sharded_input_text =
    " reads a tensor laid out over a mesh (mark_sharding): a compiled function runs on one device; call its ops directly (the step then "
    "compiles as one SPMD program)";

Plan CompiledState::trace(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args, const runtime::Device& device) {
  const std::string& name = options.name;
  // What existed before the call, and its value then.
  std::unordered_map<const lazy::LazyTensor*, lazy::NodePtr> before;
  std::unordered_map<const lazy::Node*, std::weak_ptr<lazy::LazyTensor>> holder;
  for (const auto& t : lazy::live_tensors(device)) {
    before.emplace(t.get(), t->ir_value());
    holder.emplace(t->ir_value().get(), t);
  }
  std::vector<Tensor> placeholders;
  std::unordered_map<const lazy::Node*, size_t> placeholder_input;
  for (size_t i = 0; i < inputs.size(); ++i) {
    placeholders.emplace_back(lazy::make_device_data(inputs[i].ir_value()->async_data()));
    placeholder_input.emplace(placeholders.back().ir_value().get(), i);
  }
  const int64_t executions_before = lazy::current_step(device).executions;
  std::vector<Tensor> outs = fn(placeholders, static_args);
  ++traces;
  check(lazy::current_step(device).executions == executions_before,
        "compile", name + " ran a graph while being traced (a value read or mark_step inside it): a compiled function may only record ops");
  std::vector<lazy::NodePtr> roots;
  for (const Tensor& o : outs) {
    check(o.defined(), "compile", name + " returned an undefined tensor");
    check(o.device() == device, "compile", name + " returned a tensor on " + o.device().to_string() + ", its inputs are on " + device.to_string());
    roots.push_back(o.ir_value());
  }
  outs.clear();
  Plan plan;
  plan.outputs = roots.size();
  // In-place updates of tensors that existed before the call become outputs too.
  std::unordered_set<const lazy::LazyTensor*> updated;
  for (const auto& t : lazy::live_tensors(device)) {
    auto it = before.find(t.get());
    if (it == before.end() || it->second == t->ir_value()) continue;
    roots.push_back(t->ir_value());
    plan.updated.push_back(t);
    updated.insert(t.get());
  }
  for (const auto& t : lazy::live_tensors_with_pending_ir(device)) {
    if (updated.count(t.get()) || before.count(t.get())) continue;
    throw Error("[compile] " + name + " leaves a tensor it computed alive that it neither returns nor writes into a tensor made before the call (" +
                describe_node(*t->ir_value()) + "), e.g. a gradient: drop it inside the function (zero_grad) or return it");
  }
  std::vector<const lazy::Node*> raw;
  for (const auto& r : roots) raw.push_back(r.get());
  lazy::GraphSignature sig = lazy::graph_signature(raw);
  for (const lazy::Node* p : sig.parameters) {
    ArgumentSource source;
    if (auto in = placeholder_input.find(p); in != placeholder_input.end()) {
      source.kind = ArgumentSource::Kind::kInput;
      source.input = in->second;
    } else if (auto h = holder.find(p); h != holder.end() && !h->second.expired()) {
      source.kind = ArgumentSource::Kind::kCaptured;
      source.captured = h->second;
    } else {
      source.kind = ArgumentSource::Kind::kFixed;  // its owning pointer is found below
    }
    plan.arguments.push_back(std::move(source));
  }
  // Keep the fixed leaves alive: their NodePtrs are operands of graph nodes.
  {
    std::unordered_map<const lazy::Node*, lazy::NodePtr> owners;
    for (const lazy::Node* n : sig.post_order) {
      for (const lazy::NodePtr& o : n->operands()) owners.emplace(o.get(), o);
    }
    for (const auto& r : roots) owners.emplace(r.get(), r);
    for (size_t i = 0; i < plan.arguments.size(); ++i) {
      if (plan.arguments[i].kind == ArgumentSource::Kind::kFixed) plan.arguments[i].fixed = owners.at(sig.parameters[i]);
    }
  }
  plan.executable = lazy::compile_or_lookup(sig, lazy::SyncCause{lazy::SyncCause::Kind::kCompiledFunction, {}});
  check(plan.executable->module().num_partitions == 1, "compile", name + " lays a value out over a mesh (mark_sharding inside it): " + sharded_input_text.substr(sharded_input_text.find(':') + 2));
  // The trace changed nothing yet: updated tensors get their values back, and the replay computes the new ones.
  for (const auto& w : plan.updated) {
    auto t = w.lock();
    t->set_ir_value(before.at(t.get()));
  }
  return plan;
}

std::vector<Tensor> CompiledState::replay(const Plan& plan, const std::vector<Tensor>& inputs, const runtime::Device& device) const {
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> arguments;
  arguments.reserve(plan.arguments.size());
  for (const ArgumentSource& a : plan.arguments) {
    switch (a.kind) {
      case ArgumentSource::Kind::kInput: arguments.push_back(inputs[a.input].ir_value()->async_data()); break;
      case ArgumentSource::Kind::kCaptured: {
        auto t = a.captured.lock();
        check(t != nullptr, "compile", options.name + " reads a tensor that no longer exists (it was alive when the function was traced)");
        arguments.push_back(t->ir_value()->async_data());
        break;
      }
      case ArgumentSource::Kind::kFixed: arguments.push_back(a.fixed->async_data()); break;
    }
    check(arguments.back() != nullptr, "compile", options.name + sharded_input_text);
  }
  std::vector<std::shared_ptr<runtime::AsyncBuffer>> results =
      lazy::execute(plan.executable, std::move(arguments), device, options.name);
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < plan.outputs; ++i) outputs.emplace_back(lazy::make_device_data(results[i]));
  for (size_t j = 0; j < plan.updated.size(); ++j) {
    if (auto t = plan.updated[j].lock()) t->set_ir_value(lazy::make_device_data(results[plan.outputs + j]));
  }
  return outputs;
}

// torch.compile keeps autograd: each output gets a GradFn over the inputs and
// the tensors fn reads that require grad. Its backward recomputes fn on the
// inputs with autograd (as activation checkpointing does: the forward ran
// compiled, without saved activations) and back-propagates the output's
// gradient through the recomputation: into the inputs' gradients, which it
// returns, and into the leaves fn reads (parameters), which it accumulates.
static void attach_backward(const std::shared_ptr<CompiledState>& state_, std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                     const std::vector<int64_t>& static_args, const Plan& plan) {
  std::vector<Tensor> through = inputs;
  for (const ArgumentSource& a : plan.arguments) {
    if (a.kind != ArgumentSource::Kind::kCaptured) continue;
    auto t = std::dynamic_pointer_cast<TensorImpl>(a.captured.lock());
    if (t && t->requires_grad) through.push_back(Tensor(t));
  }
  bool any = false;
  for (const Tensor& t : through) any = any || t.requires_grad();
  if (!any) return;
  std::vector<Tensor> saved;
  std::vector<bool> wants;
  for (const Tensor& t : inputs) {
    saved.push_back(t.detach());
    wants.push_back(t.requires_grad());
  }
  const RngState rng = get_rng_state();
  const bool autocast = is_autocast_enabled();
  const DType autocast_type = autocast_dtype();
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!is_floating_point(outputs[k].dtype())) continue;
    auto recompute = [state = state_, saved, wants, static_args, k, n = through.size(), rng, autocast, autocast_type](const Tensor& grad_output) {
      std::vector<Tensor> xs;
      for (size_t i = 0; i < saved.size(); ++i) {
        Tensor x = optimization_barrier(saved[i], grad_output).detach();  // recomputed late, never merged with the forward
        if (wants[i]) x.requires_grad_(true);
        xs.push_back(x);
      }
      const RngState now = get_rng_state();
      set_rng_state(rng);
      std::vector<Tensor> ys;
      {
        EnableGradGuard grad;
        AutocastGuard cast(autocast, autocast_type);
        ys = state->fn(xs, static_args);
      }
      set_rng_state(now);
      check(k < ys.size(), "compile", state->options.name + " returned fewer outputs when recomputed for backward");
      if (ys[k].requires_grad()) autograd::run_backward(ys[k], grad_output);
      std::vector<Tensor> grads(n);
      for (size_t i = 0; i < xs.size(); ++i) {
        if (wants[i]) grads[i] = xs[i].grad();
      }
      return grads;  // the captured tensors' gradients were accumulated by the recomputation's backward
    };
    outputs[k] = autograd::record(outputs[k], "CompiledFunctionBackward", through, recompute);
  }
}

CompiledFunction::CompiledFunction(TracedFunction fn, CompileOptions options) : state_(std::make_shared<CompiledState>()) {
  state_->fn = std::move(fn);
  state_->options = std::move(options);
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args) {
  CompiledState& s = *state_;
  const runtime::Device device = inputs.empty() ? runtime::current_device() : inputs[0].device();
  for (const Tensor& t : inputs) {
    check(t.defined() && t.device() == device, "compile", s.options.name + " takes inputs on one device; got " + device.to_string() +
                                                              " and " + (t.defined() ? t.device().to_string() : std::string("an undefined tensor")));
  }
  Signature signature = signature_of(inputs, static_args);
  std::lock_guard<std::mutex> lock(s.mutex);
  // Pending work runs first (torch_xla.compile's mark_step on entry): inputs and captured tensors are device data.
  lazy::sync_live(device, lazy::SyncCause{lazy::SyncCause::Kind::kCompiledFunction, {}});
  for (const Tensor& t : inputs) check(!t.ir_value()->sharded_data(), "compile", s.options.name + sharded_input_text);
  auto it = s.plans.find(signature.key);
  if (it == s.plans.end()) {
    if (s.options.max_different_graphs > 0 && s.plans.size() >= s.options.max_different_graphs) {
      throw Error("[compile] " + s.options.name + " would compile graph " + std::to_string(s.plans.size() + 1) + ", more than max_different_graphs=" +
                  std::to_string(s.options.max_different_graphs) + ": " + signature_change(signature, s.last));
    }
    it = s.plans.emplace(signature.key, s.trace(inputs, static_args, device)).first;
  }
  s.last = std::move(signature);
  std::vector<Tensor> outputs = s.replay(it->second, inputs, device);
  if (is_grad_enabled()) attach_backward(state_, outputs, inputs, static_args, it->second);
  return outputs;
}

size_t CompiledFunction::graph_count() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->plans.size();
}

int64_t CompiledFunction::trace_count() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->traces;
}

CompiledFunction compile(TracedFunction fn, CompileOptions options) { return CompiledFunction(std::move(fn), std::move(options)); }

CompiledFunction compile(std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn, CompileOptions options) {
  return CompiledFunction([fn = std::move(fn)](const std::vector<Tensor>& inputs, const std::vector<int64_t>&) { return fn(inputs); },
                          std::move(options));
}

}  // namespace lazytrain
