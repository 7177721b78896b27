"""The runtime under PyTorch/XLA's names: sync (mark_step), devices, execution
modes, compile(fn), and the grad-mode / autocast / anomaly scopes."""
import atexit
import functools

from . import _C
from ._C import Tensor


def sync(wait=False):
    """torch_xla.sync(): cuts the graph and runs it (every live tensor of the
    current device with a pending value, in one graph, asynchronously; the GIL is
    released meanwhile). With wait=True, also waits for the execution."""
    _C._mark_step(None)
    if wait:
        _C.wait_device_ops()


def mark_step(wait=False):
    """xm.mark_step(): the same as sync()."""
    sync(wait)


def device(index=None):
    """torch_xla.device(): the current device, or 'cpu:<index>'."""
    if index is None:
        return _C.current_device()
    return _C.device(f"cpu:{index}")


def as_device(d):
    """A lazytrain device from what names one: a lazytrain device, 'cpu:<n>', or
    the torch device torch.device("lazytrain", n) that xm.xla_device() hands
    out once the lazy device for torch tensors is enabled (the same device n)."""
    if isinstance(d, _C.device):
        return d
    if isinstance(d, str):
        return _C.device(d)
    if type(d).__name__ == "device" and getattr(d, "type", None) == "lazytrain":  # a torch.device
        return _C.device(f"cpu:{d.index or 0}")
    raise TypeError(f"expected a device, got {d!r}")


def devices():
    """torch_xla.devices(): the devices this thread can use (its own; replicas
    made by spawn each see theirs)."""
    return [_C.current_device()]


class execution_mode:
    """Sets how soon ops run, process-wide: "lazy" (the default: a graph per step),
    "debug_eager" (each op runs and waits: errors at the op), "strict_eager" (each
    op runs, asynchronously) or "fused_eager" (the op stream in fused chunks).

    ``lazytrain.execution_mode("debug_eager")`` sets it at once; ``with
    lazytrain.execution_mode("debug_eager"):`` also restores the previous mode
    on exit. ``lazytrain.execution_mode()`` returns the current mode's name."""

    def __new__(cls, mode=None):
        if mode is None:
            return _C._execution_mode()
        return super().__new__(cls)

    def __init__(self, mode=None):
        self.previous = _C._execution_mode()
        if not isinstance(mode, str):
            raise TypeError(f"execution_mode(): expected a mode name, got {mode!r}")
        _C._set_execution_mode(mode)
        self.mode = mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_execution_mode(self.previous)
        return False

    def __repr__(self):
        return f"execution_mode({self.mode!r})"


class _GuardScope:
    """A `with` scope around a C++ guard, also usable as a decorator."""

    def _guard(self):
        raise NotImplementedError

    def __enter__(self):
        self._active = self._guard()
        self._active.__enter__()
        return self

    def __exit__(self, *exc):
        self._active.__exit__()
        self._active = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapped


class no_grad(_GuardScope):
    """torch.no_grad(): ops inside record no autograd history (thread-local)."""
    _args = ()

    def _guard(self):
        return _C._NoGradGuard()


class enable_grad(_GuardScope):
    """torch.enable_grad(): ops inside record autograd history, also within no_grad."""
    _args = ()

    def _guard(self):
        return _C._EnableGradGuard()


class set_grad_enabled(_GuardScope):
    """torch.set_grad_enabled(mode) as a scope: ``with set_grad_enabled(False):``."""

    def __init__(self, mode):
        self._args = (bool(mode),)

    def _guard(self):
        return _C._EnableGradGuard() if self._args[0] else _C._NoGradGuard()


class autocast(_GuardScope):
    """torch.autocast("cpu", dtype=lazytrain.bfloat16): matrix products run in the
    lower dtype, layer_norm/softmax/cross_entropy in float32 (tensor/autocast.h)."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True):
        if device_type not in ("cpu", "xla", "lazytrain"):
            raise ValueError(f"autocast(): device_type must be 'cpu', got {device_type!r}")
        dtype = _C.dtype.bfloat16 if dtype is None else dtype
        if dtype not in (_C.dtype.bfloat16, _C.dtype.float16):
            raise ValueError(f"autocast(): dtype must be lazytrain.bfloat16 or float16, got {dtype!r}")
        self._args = (device_type, dtype, enabled)

    def _guard(self):
        return _C._AutocastGuard(bool(self._args[2]), self._args[1])


class detect_anomaly:
    """torch.autograd.detect_anomaly(): every floating op result is checked for
    NaN/Inf as it is computed; the first bad one raises LazytrainError naming the
    op and the user's line. Each op then runs alone: a tool, not for speed."""

    def __enter__(self):
        self.previous = _C.is_anomaly_enabled()
        _C.set_detect_anomaly(True)
        return self

    def __exit__(self, *exc):
        _C.set_detect_anomaly(self.previous)
        return False


# ---------------------------------------------------------------------------------------------
# compile(fn)
# ---------------------------------------------------------------------------------------------
def _flatten(obj, tensors):
    """obj with every Tensor replaced by its index in `tensors` (appended)."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return ("T", len(tensors) - 1)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_flatten(o, tensors) for o in obj])
    if isinstance(obj, dict):
        return ("dict", [(k, _flatten(v, tensors)) for k, v in obj.items()])
    return ("C", obj)


def _unflatten(spec, tensors):
    kind, value = spec
    if kind == "T":
        return tensors[value]
    if kind == "list":
        return [_unflatten(s, tensors) for s in value]
    if kind == "tuple":
        return tuple(_unflatten(s, tensors) for s in value)
    if kind == "dict":
        return {k: _unflatten(s, tensors) for k, s in value}
    return value


def _static_key(spec):
    """A hashable form of the non-tensor parts of the arguments (the guard)."""
    kind, value = spec
    if kind == "T":
        return ("T",)
    if kind in ("list", "tuple"):
        return (kind, tuple(_static_key(s) for s in value))
    if kind == "dict":
        return ("dict", tuple((k, _static_key(s)) for k, s in value))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"compile(): argument {value!r} is neither a tensor nor hashable") from None
    return ("C", type(value).__name__, value)


class CompiledFunction:
    """What compile(fn) returns: calls trace `fn` once per input signature (the
    tensors' shapes, dtypes and device, and the values of every other argument)
    and then replay its executable; see lazytrain.compile."""

    def __init__(self, fn, name, max_different_graphs):
        self._fn = fn
        self._name = name
        self._max_graphs = max_different_graphs
        self._by_static = {}  # static key -> (C++ CompiledFunction, output spec holder)
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        tensors = []
        spec = _flatten((list(args), kwargs), tensors)
        key = _static_key(spec)
        entry = self._by_static.get(key)
        if entry is None:
            out_spec = []

            def traced(placeholders, static_args, spec=spec, out_spec=out_spec):
                call_args, call_kwargs = _unflatten(spec, placeholders)
                outputs = []
                out_spec[:] = [_flatten(self._fn(*call_args, **call_kwargs), outputs)]
                return outputs

            entry = (_C._CompiledFunction(traced, self._name, self._max_graphs), out_spec)
            self._by_static[key] = entry
        compiled, out_spec = entry
        outputs = compiled(tensors, [])
        return _unflatten(out_spec[0], outputs)

    @property
    def graph_count(self):
        """Graphs compiled so far, over every signature."""
        return sum(c.graph_count for c, _ in self._by_static.values())

    @property
    def trace_count(self):
        """Times `fn` itself ran (its traces)."""
        return sum(c.trace_count for c, _ in self._by_static.values())


def compile(fn=None, *, name=None, max_different_graphs=0):
    """torch.compile / torch_xla.compile: trace `fn` once per input signature and
    replay the compiled graph (tensor/compile.h). Tensors among the arguments are
    the graph's inputs (in any nesting of lists, tuples and dicts); every other
    argument is part of the signature (a new value traces again), as are the
    tensors' shapes and dtypes. `fn` may read tensors made before the call
    (parameters) and update them in place (an optimizer step); it may not read a
    value or call sync() (LazytrainError). max_different_graphs > 0 raises once
    more graphs than that would be needed, naming the input that changed.
    With grad mode on, outputs of a call whose inputs (or tensors fn reads)
    require grad can be backpropagated, as torch.compile's: backward recomputes
    fn with autograd on the saved inputs (the call's random state restored).

    Usable as ``@lazytrain.compile`` or ``lazytrain.compile(fn, name=...)``."""
    if fn is None:
        return lambda f: compile(f, name=name, max_different_graphs=max_different_graphs)
    return CompiledFunction(fn, name or getattr(fn, "__qualname__", "compiled function"), max_different_graphs)


def _wait_at_exit():
    # A process that ends right after sync() lets its executions finish
    # before the interpreter tears the runtime down.
    try:
        _C.wait_device_ops()
    except Exception:  # noqa: BLE001 - an unreported failure is not the exit's business
        pass


atexit.register(_wait_at_exit)
