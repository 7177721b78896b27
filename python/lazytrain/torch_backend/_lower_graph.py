"""An ATen FX graph (what AOTAutograd hands the backend) as a function over
lazytrain tensors, compiled by lazytrain's own compile(fn) path: traced once
per input signature, hashed and cached by the compile cache, then replayed
without running Python per op.

Each node is lowered by LOWERINGS[node.target] (lowering/). While tracing, the
result of every node is checked against the FakeTensor torch recorded for it
(node.meta["val"]): a lowering that gives another shape or dtype raises at
once, naming the op and the user's source line, instead of computing a wrong
value later.
"""
import operator

import torch
import torch.fx

from .. import _C
from ._common import LazytrainError, count, lt_dtype, source_line
from .lowering import LOWERINGS

aten = torch.ops.aten

# Nodes that only assert in torch (shape or value checks already done by Dynamo).
_NO_OPS = {
    aten._assert_async.msg,
    aten._assert_scalar.default,
    aten.sym_constrain_range_for_size.default,
}


class LoweringError(LazytrainError):
    """An ATen op without a lowering (fallback="error"), or a lowering whose
    result differs in shape or dtype from torch's."""


def is_supported(node):
    """Whether lazytrain lowers this call_function node."""
    return node.target is operator.getitem or node.target in LOWERINGS or node.target in _NO_OPS


def unsupported_error(node):
    return LoweringError(
        f"torch.compile(backend='lazytrain'): the ATen op {node.target} (node {node.name}) has no lowering in "
        f"lazytrain, from {source_line(node)}. Use options={{'fallback': 'partition'}} to run it in torch eager "
        "between lazytrain graphs.")


def _check_result(node, value):
    """Raises LoweringError when `value` differs in shape or dtype from torch's
    FakeTensor for the node."""
    expected = node.meta.get("val")
    if isinstance(expected, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(expected):
            raise LoweringError(f"lowering of {node.target} returned {type(value).__name__}, torch returns "
                                f"{len(expected)} values, at {source_line(node)}")
        for e, v in zip(expected, value):
            _check_one(node, e, v)
    else:
        _check_one(node, expected, value)


def _check_one(node, expected, value):
    if not isinstance(expected, torch.Tensor):
        return
    if not isinstance(value, _C.Tensor):
        raise LoweringError(f"lowering of {node.target} returned {type(value).__name__} where torch returns a tensor, "
                            f"at {source_line(node)}")
    shape = tuple(int(s) for s in expected.shape)
    if tuple(value.shape) != shape or value.dtype != lt_dtype(expected.dtype, str(node.target)):
        raise LoweringError(
            f"lowering of {node.target} gave {value.dtype} {list(value.shape)} where torch gives "
            f"{expected.dtype} {list(shape)}, at {source_line(node)}")


def _lower_node(node, env):
    args = torch.fx.node.map_arg(node.args, lambda n: env[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
    if node.target is operator.getitem:
        return args[0][args[1]]
    if node.target in _NO_OPS:
        return None
    lowering = LOWERINGS.get(node.target)
    if lowering is None:
        raise unsupported_error(node)
    try:
        value = lowering(*args, **kwargs)
    except LoweringError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure names the op and the user's line
        raise LoweringError(f"lowering of {node.target} (node {node.name}) failed at {source_line(node)}: "
                            f"{type(e).__name__}: {e}") from e
    _check_result(node, value)
    return value


def graph_function(graph):
    """fn(inputs: list[lazytrain.Tensor | number]) -> list: the graph's outputs,
    lowered node by node (for tracing by lazytrain's compile)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]

    def run(inputs):
        env = dict(zip(placeholders, inputs))
        for node in graph.nodes:
            if node.op == "call_function":
                env[node] = _lower_node(node, env)
            elif node.op == "output":
                return torch.fx.node.map_arg(node.args[0], lambda n: env[n])
            elif node.op != "placeholder":
                raise LoweringError(f"unexpected FX node kind {node.op} ({node.name}) in an ATen graph")
        raise LoweringError("the graph has no output node")

    return run


class LoweredGraph:
    """One ATen graph compiled by lazytrain: call(inputs) with the graph's
    tensor inputs already lazytrain tensors and every other input a Python
    value (a SymInt's int, a number), which is part of the signature: a new
    value compiles another graph (torch_xla's sym-constant cache). Returns the
    flat list of outputs: lazytrain tensors, None, or values.

    More than `max_different_graphs` signatures warns once, naming the input
    that changed: a static-shape loop should compile once."""

    def __init__(self, graph, name, max_different_graphs=4):
        self._run = graph_function(graph)
        self._name = name
        self._max_graphs = max_different_graphs
        self._by_key = {}  # (tensor slots, statics) -> (C++ CompiledFunction, output spec)
        self._warned = False
        count("DynamoGraphs")

    def _entry(self, key):
        slots, statics = key
        spec = []

        def trace(tensors, _static_args):
            inputs, t, s = [], iter(tensors), iter(statics)
            for is_tensor in slots:
                inputs.append(next(t) if is_tensor else next(s))
            flat = []
            spec.clear()
            for o in self._run(inputs):
                if isinstance(o, _C.Tensor):
                    spec.append(("T", len(flat)))
                    flat.append(o)
                else:
                    spec.append(("C", o))
            return flat

        return _C._CompiledFunction(trace, self._name, 0), spec

    def __call__(self, inputs):
        tensors, statics, slots = [], [], []
        for x in inputs:
            is_tensor = isinstance(x, _C.Tensor)
            slots.append(is_tensor)
            (tensors if is_tensor else statics).append(x)
        key = (tuple(slots), tuple(statics))
        entry = self._by_key.get(key)
        if entry is None:
            entry = self._by_key[key] = self._entry(key)
        compiled, spec = entry
        flat = compiled(tensors, [])
        if not self._warned and self.graph_count > self._max_graphs:
            self._warn_signatures(inputs)
        return [flat[v] if kind == "T" else v for kind, v in spec]

    def _warn_signatures(self, inputs):
        import warnings

        self._warned = True
        warnings.warn(
            f"torch.compile(backend='lazytrain'): {self._name} compiled {self.graph_count} graphs (more than "
            f"{self._max_graphs}); its input signatures differ in shapes or values. Pad to a few fixed shapes "
            "(dynamic=False is the documented default), or the loop recompiles each step.",
            stacklevel=3)

    @property
    def graph_count(self):
        """Graphs compiled so far, over every signature."""
        return sum(c.graph_count for c, _ in self._by_key.values())
