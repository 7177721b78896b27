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
from ._exchange import to_lazytrain
from .lowering import LOWERINGS, unsupported_reason

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


# Python functions on sizes in graphs with symbolic shapes (dynamic=None after
# a shape changed, dynamic=True): computed on the ints the sizes have in the
# signature being traced.
_SIZE_FUNCTIONS = {
    operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv, operator.mod, operator.neg,
    operator.pow, operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
    torch.sym_float, torch.sym_int, torch.sym_max, torch.sym_min, torch.sym_not,
    aten.sym_size.int, aten.sym_numel.default,
}


def is_supported(node):
    """Whether lazytrain lowers this call_function node."""
    return (node.target is operator.getitem or node.target in _NO_OPS or node.target in _SIZE_FUNCTIONS
            or unsupported_reason(node) is None)


def unsupported_error(node):
    return LoweringError(
        f"torch.compile(backend='lazytrain'): the ATen op {node.target} (node {node.name}) "
        f"{unsupported_reason(node)}, from {source_line(node)}. Use options={{'fallback': 'partition'}} to run it in torch eager "
        "between lazytrain graphs.")


def prepare_graph(graph):
    """Rewrites what Dynamo adds to a graph for Python floats that vary
    (torch.compile's default dynamic=None turns them into 0-d float64 tensor
    inputs, converted to float64 and then to the dtype they meet): such an
    input is taken in float32 (lazytrain has no float64), its conversions to
    float64 drop out, and prims.convert_element_type becomes aten._to_copy.
    Returns the indices of the placeholders to pass in float32."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    scalars = set()
    for i, p in enumerate(placeholders):
        val = p.meta.get("val")
        if isinstance(val, torch.Tensor) and val.dtype == torch.float64 and val.dim() == 0:
            scalars.add(i)
            for user in list(p.users):
                if user.target is _CONVERT and user.args[1] == torch.float64:
                    user.replace_all_uses_with(p)
                    graph.erase_node(user)
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _CONVERT:
            with graph.inserting_before(node):
                to = graph.call_function(aten._to_copy.default, (node.args[0],), {"dtype": node.args[1]})
            to.meta = dict(node.meta)
            node.replace_all_uses_with(to)
            graph.erase_node(node)
    return scalars


_CONVERT = torch.ops.prims.convert_element_type.default


def _check_result(node, value, bindings):
    """Raises LoweringError when `value` differs in shape or dtype from torch's
    FakeTensor for the node (a symbolic size is checked through `bindings`,
    the values its symbols have in this signature)."""
    expected = node.meta.get("val")
    if isinstance(expected, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(expected):
            raise LoweringError(f"lowering of {node.target} returned {type(value).__name__}, torch returns "
                                f"{len(expected)} values, at {source_line(node)}")
        for e, v in zip(expected, value):
            _check_one(node, e, v, bindings)
    else:
        _check_one(node, expected, value, bindings)


def _check_one(node, expected, value, bindings):
    if not isinstance(expected, torch.Tensor):
        return
    if not isinstance(value, _C.Tensor):
        raise LoweringError(f"lowering of {node.target} returned {type(value).__name__} where torch returns a tensor, "
                            f"at {source_line(node)}")
    shape = tuple(_size(s, bindings) for s in expected.shape)
    got = tuple(value.shape)
    same_shape = len(got) == len(shape) and all(e is None or e == g for e, g in zip(shape, got))
    if not same_shape or value.dtype != lt_dtype(expected.dtype, str(node.target)):
        raise LoweringError(
            f"lowering of {node.target} gave {value.dtype} {list(got)} where torch gives "
            f"{expected.dtype} {['?' if e is None else e for e in shape]}, at {source_line(node)}")


def _size(size, bindings):
    """A FakeTensor's size as an int: a SymInt (dynamic=True, or a size Dynamo
    made dynamic) through the values of its symbols in this signature; None
    where they are not known (not checked)."""
    if not isinstance(size, torch.SymInt):
        return int(size)
    expr = size.node.expr.xreplace(bindings) if bindings else size.node.expr
    if isinstance(expr, int):  # a symbol replaced by its value
        return expr
    return int(expr) if expr.is_number else None


def _bind(expected, value, bindings):
    """Records the values of the symbols in a placeholder's FakeTensor (or
    SymInt) given its actual input `value`."""
    if isinstance(expected, torch.SymInt):
        if expected.node.expr.is_Symbol and isinstance(value, int):
            bindings[expected.node.expr] = value
    elif isinstance(expected, torch.Tensor) and isinstance(value, _C.Tensor):
        for e, v in zip(expected.shape, value.shape):
            if isinstance(e, torch.SymInt) and e.node.expr.is_Symbol:
                bindings[e.node.expr] = int(v)


def _lower_node(node, env, bindings):
    args = torch.fx.node.map_arg(node.args, lambda n: env[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
    if node.target is operator.getitem:
        return args[0][args[1]]
    if node.target in _NO_OPS:
        return None
    if node.target is aten.sym_size.int:
        return int(args[0].shape[args[1]])
    if node.target is aten.sym_numel.default:
        return int(args[0].numel())
    if node.target in _SIZE_FUNCTIONS:
        return node.target(*args, **kwargs)
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
    _check_result(node, value, bindings)
    return value


def graph_function(graph):
    """fn(inputs: list[lazytrain.Tensor | number]) -> list: the graph's outputs
    (a graph with one output value gives a list of one), lowered node by node
    (for tracing by lazytrain's compile)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    constants = _tensor_constants(graph)

    def run(inputs):
        env = dict(zip(placeholders, inputs))
        bindings = {}
        for node, value in env.items():
            _bind(node.meta.get("val"), value, bindings)
        for node in graph.nodes:
            if node.op == "call_function":
                env[node] = _lower_node(node, env, bindings)
            elif node.op == "get_attr":
                env[node] = to_lazytrain(constants[node], f"constant {node.target} of the graph")
            elif node.op == "output":
                # A graph returns a tuple (AOTAutograd's) or one value (a
                # partition of _fallback's with a single output): always a list here.
                out = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
                return list(out) if isinstance(out, (tuple, list)) else [out]
            elif node.op != "placeholder":
                raise LoweringError(f"unexpected FX node kind {node.op} ({node.name}) in an ATen graph")
        raise LoweringError("the graph has no output node")

    return run


def _tensor_constants(graph):
    """{get_attr node: torch tensor}: the tensor literals of the model's code
    (torch.tensor(...), x[..., [-1], :]'s index list), which AOTAutograd keeps
    on the graph module. Read as real tensors: the backend is called while
    torch's FakeTensorMode is active."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    nodes = [n for n in graph.nodes if n.op == "get_attr"]
    if not nodes:
        return {}
    with unset_fake_temporarily():
        return {n: _attribute(graph.owning_module, n.target).detach().clone() for n in nodes}


def _attribute(module, target):
    for name in target.split("."):
        module = getattr(module, name)
    return module


class LoweredGraph:
    """One ATen graph compiled by lazytrain: call(inputs) with the graph's
    tensor inputs already lazytrain tensors and every other input a Python
    value (a SymInt's int, a number), which is part of the signature: a new
    value compiles another graph (torch_xla's sym-constant cache). Returns the
    flat list of outputs: lazytrain tensors, None, or values.

    More than `max_different_graphs` signatures warns once, with the count and
    the inputs that changed between the last two signatures compiled (named by
    `input_names`, index and shape or value): a static-shape loop should
    compile once."""

    def __init__(self, graph, name, max_different_graphs=4, input_names=None):
        self._run = graph_function(graph)
        self._name = name
        self._max_graphs = max_different_graphs
        self._input_names = input_names
        self._by_key = {}  # (tensor slots, statics) -> (C++ CompiledFunction, output spec)
        self._graphs = 0  # graphs compiled, over every signature
        self._signature = None  # the signature of the last call that compiled a graph
        self._changed = None  # what differed from the signature compiled before it
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
        graphs = self.graph_count
        if graphs != self._graphs:  # this call compiled a graph: a new signature
            self._graphs = graphs
            self._new_signature(inputs)
            if not self._warned and graphs > self._max_graphs:
                self._warn_signatures()
        return [flat[v] if kind == "T" else v for kind, v in spec]

    def _new_signature(self, inputs):
        signature = [(tuple(x.shape), x.dtype) if isinstance(x, _C.Tensor) else ("value", x) for x in inputs]
        previous, self._signature = self._signature, signature
        if previous is None:
            return
        changed = []
        for i, (old, new) in enumerate(zip(previous, signature)):
            if old != new:
                changed.append(f"input {i} ({self._input_name(i)}): {_describe(old)} -> {_describe(new)}")
        self._changed = changed

    def _input_name(self, i):
        names = self._input_names
        return names[i] if names is not None and i < len(names) else f"#{i}"

    def _warn_signatures(self):
        import warnings

        self._warned = True
        changed = "; ".join(self._changed or []) or "no input's shape, dtype or value (another signature)"
        warnings.warn(
            f"torch.compile(backend='lazytrain'): {self._name} compiled {self.graph_count} graphs (more than "
            f"max_different_graphs={self._max_graphs}); the last one because {changed}. Pad to a few fixed shapes "
            "(dynamic=False is the documented default), or the loop recompiles each step.",
            stacklevel=4)

    @property
    def graph_count(self):
        """Graphs compiled so far, over every signature."""
        return sum(c.graph_count for c, _ in self._by_key.values())


def _describe(sig):
    if sig[0] == "value":
        return repr(sig[1])
    shape, dtype = sig
    return f"{list(shape)} {str(dtype).replace('lazytrain.', '')}"
