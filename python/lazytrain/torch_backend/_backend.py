"""The backend torch.compile calls: AOTAutograd (forward and backward ATen
graphs, the decomposition table of _decompositions.py) with lazytrain's
boxed compiler for each graph.

Options (torch.compile(model, backend="lazytrain", options={...})):
- fallback: "partition" (the default for users; LAZYTRAIN_DYNAMO_FALLBACK
  sets it) runs the ops lazytrain cannot lower in torch eager between
  lazytrain partitions, warning once per op; "error" raises LoweringError
  naming the op and the user's source line.
- max_different_graphs: signatures per graph before a warning (default 4).
"""
import os
import warnings

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from .. import _C
from ._common import count
from ._decompositions import decomposition_table
from ._exchange import to_lazytrain, to_torch
from ._lower_graph import LoweredGraph, is_supported, unsupported_error

_FALLBACKS = ("partition", "error")
_warned_ops = set()


def _options(options):
    options = dict(options or {})
    fallback = options.pop("fallback", os.environ.get("LAZYTRAIN_DYNAMO_FALLBACK", "partition"))
    if fallback not in _FALLBACKS:
        raise ValueError(f"torch.compile(backend='lazytrain'): options['fallback'] must be one of {_FALLBACKS}, "
                         f"got {fallback!r}")
    max_graphs = int(options.pop("max_different_graphs", 4))
    if options:
        raise ValueError(f"torch.compile(backend='lazytrain'): unknown options {sorted(options)}; "
                         "known: fallback, max_different_graphs")
    return fallback, max_graphs


class _GraphCall:
    """Runs one lowered ATen graph on torch tensors: inputs in through DLPack,
    the lazytrain graph, outputs back as torch tensors. Inputs that come out
    unchanged are handed back as the same torch tensors."""

    def __init__(self, gm, name, max_graphs):
        self._lowered = LoweredGraph(gm.graph, name, max_graphs)
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self._names = [n.name for n in placeholders]

    def __call__(self, *args):
        inputs = [to_lazytrain(a, f"input {self._names[i]}") if isinstance(a, torch.Tensor) else _static(a)
                  for i, a in enumerate(args)]
        with _C._NoGradGuard():
            outputs = self._lowered(inputs)
        by_input = {id(x): a for x, a in zip(inputs, args) if isinstance(a, torch.Tensor)}
        return [_output(o, by_input) for o in outputs]


def _static(value):
    """A non-tensor graph input as a signature value (SymInts arrive as ints
    with dynamic=False; one that still arrives is specialised to its value)."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.hint if hasattr(value.node, "hint") else int(value)
    return value


def _output(value, by_input):
    if isinstance(value, _C.Tensor):
        same = by_input.get(id(value))
        return same if same is not None else to_torch(value)
    return value


def _compile_graph(gm, example_inputs, fallback, max_graphs, kind):
    unsupported = [n for n in gm.graph.nodes if n.op == "call_function" and not is_supported(n)]
    if not unsupported:
        call = _GraphCall(gm, f"dynamo:{kind}", max_graphs)
        return make_boxed_func(call)
    if fallback == "error":
        raise unsupported_error(unsupported[0])
    from ._fallback import partitioned

    for node in unsupported:
        if node.target not in _warned_ops:
            _warned_ops.add(node.target)
            warnings.warn(f"torch.compile(backend='lazytrain'): {node.target} has no lowering; it runs in torch "
                          "eager between lazytrain graphs (options={'fallback': 'error'} raises instead)",
                          stacklevel=2)
    count("DynamoFallbackNodes", len(unsupported))
    return make_boxed_func(partitioned(gm, lambda sub, i: _GraphCall(sub, f"dynamo:{kind}:part{i}", max_graphs)))


def lazytrain_backend(gm, example_inputs, mode=None, options=None):
    """torch.compile's backend "lazytrain": see the module docstring."""
    fallback, max_graphs = _options(options)

    def compiler(kind):
        def compile_graph(graph_module, inputs):
            return _compile_graph(graph_module, inputs, fallback, max_graphs, kind)

        return compile_graph

    return aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        decompositions=decomposition_table(),
    )(gm, example_inputs)
