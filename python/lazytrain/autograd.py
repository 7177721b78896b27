"""lazytrain.autograd: torch.autograd's grad and backward, and the Tensor
methods around them (installed by ``_install``): ``register_hook``,
``retain_grad``, ``retains_grad``, ``grad_fn`` and ``backward(gradient,
retain_graph, create_graph)``. The engine is C++ (tensor/autograd_hooks.h);
gradients are lazy values like every other op's."""
from . import _C

__all__ = ["grad", "backward"]

# torch.autograd.graph.Node: what Tensor.grad_fn returns (``name()``, ``next_functions``).
Node = _C._GradFn


class RemovableHandle:
    """torch.utils.hooks.RemovableHandle: ``remove()`` unregisters the hook
    (again is a no-op); usable as a context manager."""

    _next_id = 0

    def __init__(self, remove):
        self._remove = remove
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        if self._remove is not None:
            self._remove()
            self._remove = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _next_functions(node):
    """A grad_fn's inputs, torch's ``next_functions``: (node, 0) per input of the
    op, the node being another grad_fn, an AccumulateGrad for a leaf that
    requires grad, or None."""
    out = []
    for kind, obj in node._next:
        out.append((obj if kind == "fn" else AccumulateGrad(obj) if kind == "leaf" else None, 0))
    return tuple(out)


class AccumulateGrad:
    """The node that accumulates a leaf's gradient: ``variable`` is the leaf."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"


def _as_list(tensors, what):
    if isinstance(tensors, _C.Tensor):
        return [tensors]
    if tensors is None:
        return []
    items = list(tensors)
    for t in items:
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"{what} must be Tensors, got {type(t).__name__}")
    return items


def _grads_list(grads, n, what):
    if grads is None:
        return [None] * n
    items = [grads] if isinstance(grads, _C.Tensor) else list(grads)
    if len(items) != n:
        raise RuntimeError(f"{what}: got {len(items)} gradients for {n} tensors")
    for g in items:
        if g is not None and not isinstance(g, _C.Tensor):
            raise TypeError(f"{what}: gradients must be Tensors or None, got {type(g).__name__}")
    return items


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True, allow_unused=None,
         is_grads_batched=False, materialize_grads=False):
    """torch.autograd.grad: the gradients of ``sum(output * grad_output)`` with
    respect to each input, as a tuple (same shapes and dtypes as the inputs);
    leaves' ``.grad`` are left alone. ``grad_outputs`` None (or a None entry)
    means ones for a one-element output. ``retain_graph`` (default
    create_graph) keeps the graph for another backward; ``allow_unused`` gives
    None (zeros with ``materialize_grads``) for an input the outputs do not
    depend on. RuntimeError (torch's messages) for an output or input that
    does not require grad, a non-scalar output without grad_output, an unused
    input without allow_unused, or a second backward through a freed graph.
    NotImplementedError for create_graph=True and is_grads_batched (no
    higher-order gradients)."""
    if create_graph:
        raise NotImplementedError("autograd.grad(create_graph=True): lazytrain records no higher-order gradients")
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported")
    outs = _as_list(outputs, "outputs")
    ins = _as_list(inputs, "inputs")
    if not ins:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _grads_list(grad_outputs, len(outs), "autograd.grad")
    if allow_unused is None:
        allow_unused = materialize_grads
    result = _C._autograd_grad(outs, ins, grads, bool(create_graph if retain_graph is None else retain_graph),
                               bool(allow_unused))
    if materialize_grads:
        from ._tensor import zeros_like
        result = [zeros_like(x) if g is None else g for g, x in zip(result, ins)]
    return tuple(result)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.autograd.backward: accumulates into the leaves' ``.grad`` the
    gradients of ``sum(tensor * grad_tensor)``; ``retain_graph`` keeps the graph.
    NotImplementedError for create_graph=True and inputs=."""
    if create_graph:
        raise NotImplementedError("backward(create_graph=True): lazytrain records no higher-order gradients")
    if inputs is not None:
        raise NotImplementedError("backward(inputs=...): use lazytrain.autograd.grad")
    ts = _as_list(tensors, "tensors")
    gs = _grads_list(grad_tensors, len(ts), "backward")
    filled = []
    for t, g in zip(ts, gs):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs, got {list(t.shape)}")
            g = _ones_like(t)
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output has a shape of {list(g.shape)} and output has a shape "
                               f"of {list(t.shape)}.")
        filled.append(g)
    _C._backward(ts, filled, bool(create_graph if retain_graph is None else retain_graph))


def _ones_like(t):
    from ._tensor import ones_like
    return ones_like(t)


# ---- Tensor methods ----
def _register_hook(self, hook):
    """torch.Tensor.register_hook: ``hook(grad)`` runs when this tensor's gradient
    is computed (summed over its uses) and may return a Tensor to use instead.
    Returns a handle whose ``remove()`` unregisters it. RuntimeError for a
    tensor that does not require grad."""
    handle_id = _C._register_hook(self, hook)
    return RemovableHandle(lambda: _C._remove_hook(handle_id))


def _retain_grad(self):
    """torch.Tensor.retain_grad: a non-leaf keeps its gradient in ``.grad``."""
    _C._retain_grad(self)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.Tensor.backward: accumulates gradients into the leaves; see
    lazytrain.autograd.backward."""
    if retain_graph is None and not create_graph and inputs is None:
        return _native_backward(self, gradient)  # the usual case: the engine's own checks and messages
    backward(self, gradient, retain_graph, create_graph, inputs)


_native_backward = None


def _install():
    global _native_backward
    T = _C.Tensor
    if _native_backward is None:
        _native_backward = T.backward
    T.register_hook = _register_hook
    T.retain_grad = _retain_grad
    T.retains_grad = property(lambda self: _C._retains_grad(self))
    """torch.Tensor.retains_grad: whether retain_grad() made this non-leaf keep its gradient."""
    T.grad_fn = property(lambda self: _C._grad_fn(self))
    """torch.Tensor.grad_fn: the autograd node of the op that made this tensor (``name()``,
    ``next_functions``); None for a leaf and for a tensor made without gradient."""
    _C._GradFn.next_functions = property(_next_functions)
    _C._GradFn.__repr__ = lambda self: f"<{self.name()} object at {id(self):#x}>"
    T.backward = _tensor_backward
