// compile(fn): trace a function once per input signature and replay its
// executable (torch.compile / torch_xla.compile's fastest path).
//
// The first call with a given signature (each input's dtype, shape and device,
// plus the values of `static_args`) runs `fn` on placeholders of the inputs,
// recording its ops; the graph from the inputs (and the tensors it reads that
// existed before the call: parameters, optimizer state) to its outputs and to
// the new values of tensors it updated in place is compiled once (the shared
// compile cache). Every later call with that signature only checks the guards
// and runs the executable: `fn` is not called again. Before each call, pending
// ops of the device run (as torch_xla.compile's mark_step on entry).
//
// What `fn` may do: record ops, read tensors made before the call, update them
// in place (set_data, an optimizer step). What it may not: read a value or call
// mark_step (Error: a compiled function records, it does not run), or leave
// tensors it computed alive other than its outputs and in-place updates (Error
// naming the first; for a train step, drop the gradients inside, zero_grad).
// Numbers `fn` bakes into its ops are those of the trace: pass a number that
// changes as a tensor (scalar_tensor) or among `static_args` (a new graph per value).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace lazytrain {

struct CompileOptions {
  // Names the function in errors and in the executions' descriptions.
  std::string name = "compiled function";
  // Raise when the function would need more graphs than this (0: no bound),
  // naming the input whose shape or dtype changed (PyTorch/XLA issue #7622).
  size_t max_different_graphs = 0;
};

// fn(inputs, static_args) → outputs.
using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args)>;

class CompiledFunction {
 public:
  CompiledFunction(TracedFunction fn, CompileOptions options);
  // Runs the function on `inputs` (all on one device); returns its outputs as
  // new tensors. With grad mode on, when an input or a tensor fn reads
  // (a parameter) requires grad, each floating output has a GradFn
  // ("CompiledFunctionBackward"), as torch.compile's outputs do: its backward
  // recomputes fn on the inputs with autograd (the random generator and the
  // autocast state of the call restored) and back-propagates through that, so
  // the inputs get their gradients and the leaves fn reads accumulate theirs.
  // Throws lazytrain::Error for a signature past max_different_graphs, or for
  // a function that breaks the rules above (at its trace).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const std::vector<int64_t>& static_args = {});
  // Signatures traced so far (one graph each).
  size_t graph_count() const;
  // Times `fn` itself ran (its traces).
  int64_t trace_count() const;

 private:
  std::shared_ptr<struct CompiledState> state_;
};

// Wraps `fn` (torch.compile(fn)); see CompiledFunction.
CompiledFunction compile(TracedFunction fn, CompileOptions options = {});
CompiledFunction compile(std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn, CompileOptions options = {});

}  // namespace lazytrain
