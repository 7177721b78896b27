// Activation checkpointing (torch.utils.checkpoint.checkpoint, the reentrant
// variant Hugging Face's gradient_checkpointing used): the forward of `fn` runs
// without autograd, keeping only its input; backward recomputes it from that
// input and back-propagates through the recomputation. A transformer layer's
// activations (attention scores, the FFN's intermediate) then live during one
// layer's backward instead of from the forward to the end of backward, at the
// cost of one more forward per checkpointed call.
//
// In a lazy graph the recomputation is traced into the same step graph, so one
// compiled step still runs it. Two things make it a real recomputation there:
// its input passes through optimization_barrier(input, grad_output), so the
// compiler neither merges it with the forward (CSE) nor computes it before the
// gradient reaching it exists (the instruction order follows data
// dependencies); and the random generator is replayed (get_rng_state /
// set_rng_state), so dropout draws the forward's masks again. The autocast
// state of the forward is restored for the recomputation, as PyTorch does.
#pragma once

#include <functional>

#include "tensor/tensor.h"

namespace lazytrain::nn {

// fn(input), with fn's activations recomputed during backward. `fn` must be
// deterministic given the random generator's state, and must stay callable
// until backward has run (it is called again there). Gradients reach `input`
// and every tensor requiring grad that fn reads (parameters). When grad mode is
// off, or `input` does not require grad, it is plain fn(input) (PyTorch's
// reentrant checkpoint also needs an input that requires grad).
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input);

}  // namespace lazytrain::nn
