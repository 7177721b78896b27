"""The backend torch.compile calls: AOTAutograd (forward and backward ATen
graphs, the decomposition table of _decompositions.py) with lazytrain's
boxed compiler for each graph.

Options (torch.compile(model, backend="lazytrain", options={...})):
- fallback: "partition" (the default for users; LAZYTRAIN_DYNAMO_FALLBACK
  sets it) runs the ops lazytrain cannot lower in torch eager between
  lazytrain partitions, warning once per op; "error" raises LoweringError
  naming the op and the user's source line.
- max_different_graphs: signatures per graph before a warning (an int >= 1,
  default 4); the warning names the inputs that changed.

Errors the user is to act on (LoweringError, UnsupportedInput naming the
input by its Dynamo source, a bad option's ValueError) are raised when the
compiled function is called, as themselves: raised while Dynamo compiles, they
would reach the user wrapped in Dynamo's BackendCompilerFailed.
"""
import os
import re
import warnings

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from .. import _C
from ._common import count, source_line
from ._decompositions import decomposition_table
from ._exchange import to_lazytrain, to_torch
from ._lower_graph import LoweredGraph, is_supported, prepare_graph, unsupported_error

_FALLBACKS = ("partition", "error")
_warned_ops = set()


def _options(options):
    options = dict(options or {})
    fallback = options.pop("fallback", os.environ.get("LAZYTRAIN_DYNAMO_FALLBACK", "partition"))
    if fallback not in _FALLBACKS:
        raise ValueError(f"torch.compile(backend='lazytrain'): options['fallback'] must be one of {_FALLBACKS}, "
                         f"got {fallback!r}")
    max_graphs = options.pop("max_different_graphs", 4)
    if isinstance(max_graphs, bool) or not isinstance(max_graphs, int) or max_graphs < 1:
        raise ValueError("torch.compile(backend='lazytrain'): options['max_different_graphs'] must be an int >= 1, "
                         f"got {max_graphs!r}")
    if options:
        raise ValueError(f"torch.compile(backend='lazytrain'): unknown options {sorted(options)}; "
                         "known: fallback, max_different_graphs")
    return fallback, max_graphs


class _GraphCall:
    """Runs one lowered ATen graph on torch tensors: inputs in through DLPack,
    the lazytrain graph, outputs back as torch tensors. Inputs that come out
    unchanged are handed back as the same torch tensors.

    `names`, when given, names the graph's inputs as the user knows them (the
    Dynamo sources of the forward and inference graphs' inputs, e.g.
    "self.bert.embeddings.word_embeddings.weight" or "input_ids"); otherwise
    the ATen graph's placeholder names are used in errors and warnings."""

    def __init__(self, gm, name, max_graphs, names=None, float32_inputs=()):
        self._float32 = frozenset(float32_inputs)  # 0-d float64 inputs (Python floats), taken in float32
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if names is None or len(names) != len(placeholders):
            names = [n.name for n in placeholders]
        self._names = list(names)
        self._lowered = LoweredGraph(gm.graph, name, max_graphs, input_names=self._names)

    def __call__(self, *args):
        if self._float32:
            args = [a.float() if i in self._float32 and isinstance(a, torch.Tensor) else a
                    for i, a in enumerate(args)]
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


def _compile_graph(gm, example_inputs, fallback, max_graphs, kind, names=None):
    float32_inputs = prepare_graph(gm.graph)
    gm.recompile()
    unsupported = [n for n in gm.graph.nodes if n.op == "call_function" and not is_supported(n)]
    if not unsupported:
        call = _GraphCall(gm, f"dynamo:{kind}", max_graphs, names, float32_inputs)
        return make_boxed_func(call)
    if fallback == "error":
        # Raised when the graph is first called, not here: Dynamo would wrap an
        # error of the backend's compile step in its BackendCompilerFailed, and
        # the user is to get the LoweringError itself (as from a backward graph,
        # which AOTAutograd compiles at the first backward call).
        return make_boxed_func(_raising(unsupported_error(unsupported[0])))
    from ._fallback import partitioned

    for node in unsupported:
        if node.target not in _warned_ops:
            _warned_ops.add(node.target)
            warnings.warn(f"torch.compile(backend='lazytrain'): {node.target} (from {source_line(node)}) has no "
                          "lowering; it runs in torch eager between lazytrain graphs "
                          "(options={'fallback': 'error'} raises instead)", stacklevel=2)
    count("DynamoFallbackNodes", len(unsupported))
    run = partitioned(gm, lambda sub, i: _GraphCall(sub, f"dynamo:{kind}:part{i}", max_graphs))
    if float32_inputs:
        inner = run

        def run(*args):
            # As _GraphCall does for an unpartitioned graph: Python floats that
            # Dynamo passes as 0-d float64 tensors are taken in float32.
            return inner(*[a.float() if i in float32_inputs and isinstance(a, torch.Tensor) else a
                           for i, a in enumerate(args)])

    return make_boxed_func(run)


def _raising(error):
    """A compiled function that raises `error` when called: errors the user is
    to see as themselves (LoweringError, a bad option's ValueError), which
    Dynamo would wrap in BackendCompilerFailed if raised while it compiles."""

    def raise_error(*args):
        raise error

    return raise_error


def _input_names(gm):
    """The user's names of the Dynamo graph's inputs, from their Dynamo sources
    (L['x'] -> x, L['self']._modules['bert']._parameters['w'] -> self.bert.w),
    or None where a placeholder has no source."""
    names = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        source = getattr(node.meta.get("grapharg"), "source", None)
        if source is None:
            return None
        name = source.name() if callable(source.name) else source.name
        name = re.sub(r"^[LG]\['([^']+)'\]", r"\1", name)
        names.append(re.sub(r"\._(?:modules|parameters|buffers)\['([^']+)'\]", r".\1", name))
    return names


# Dynamo input names -> the input shapes of each graph Dynamo compiled with
# them: with dynamic=False every new shape is a new Dynamo graph of the same code.
_signatures_by_inputs = {}


def _count_recompiles(names, example_inputs, max_graphs):
    """Warns once when the same code (the same Dynamo inputs) has been
    compiled for more than max_graphs input signatures, with the count and
    the inputs whose shape or dtype changed since the previous one. (Dynamo
    itself gives up after torch._dynamo.config.recompile_limit graphs, 8, and
    runs the code in eager torch from then on.)"""
    if not names:
        return
    signature = tuple((tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else x for x in example_inputs)
    seen = _signatures_by_inputs.setdefault(tuple(names), [])
    if signature in seen:
        return
    seen.append(signature)
    if len(seen) == max_graphs + 1:
        previous = seen[-2]
        changed = [f"{name}: {_describe(a)} -> {_describe(b)}"
                   for name, a, b in zip(names, previous, signature) if a != b]
        warnings.warn(
            f"torch.compile(backend='lazytrain'): the same code was compiled for {len(seen)} input signatures "
            f"(more than max_different_graphs={max_graphs}); changed: {'; '.join(changed)}. Pad inputs to a few "
            "fixed shapes: past torch._dynamo.config.recompile_limit graphs Dynamo runs the code in eager torch.",
            stacklevel=3)


def _describe(value):
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], torch.dtype):
        return f"{list(value[0])} {str(value[1]).replace('torch.', '')}"
    return repr(value)


def lazytrain_backend(gm, example_inputs, mode=None, options=None):
    """torch.compile's backend "lazytrain": see the module docstring."""
    try:
        fallback, max_graphs = _options(options)
    except ValueError as e:
        return _raising(e)
    # The forward and inference graphs take the Dynamo graph's inputs in order
    # (where AOTAutograd neither dedups nor merges them: _GraphCall checks the
    # count); the backward graph takes saved values and tangents.
    names = _input_names(gm)
    _count_recompiles(names, example_inputs, max_graphs)

    def compiler(kind):
        def compile_graph(graph_module, inputs):
            return _compile_graph(graph_module, inputs, fallback, max_graphs, kind,
                                  names if kind != "backward" else None)

        return compile_graph

    return aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        decompositions=decomposition_table(),
    )(gm, example_inputs)
