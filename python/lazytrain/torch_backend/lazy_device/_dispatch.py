"""__torch_dispatch__ of LazyTensor: each ATen op, after torch's autograd,
recorded as lazytrain ops.

An op is resolved once to a handler (cached per OpOverload), in this order:
1. the ops that move data or answer on the host: `_to_copy` (to and from the
   CPU, dtype casts), `copy_` (also from a CPU tensor), `_local_scalar_dense`
   (`.item()`), the random fills (`normal_`, `uniform_`, `bernoulli_`);
2. view ops (_views.py): lazytrain views, torch's strides; any other op whose
   schema says it returns a view raises, naming it;
3. `_foreach_*` ops: the per-tensor op on each element;
4. in-place ops (schema: self is written): the functional op (`add_` ->
   `add`) on a clone of self, written back with lazytrain's
   `_inplace_update` (writes reach views and bases, the version bumps);
   `out=` overloads the same way into `out`;
5. part 1's table, lazytrain.torch_backend.lowering.LOWERINGS (one table for
   torch.compile and the lazy device), on the unwrapped lazytrain tensors;
6. part 1's decomposition table (core ATen), then the op's
   CompositeImplicitAutograd kernel: run on the LazyTensors, so each op they
   call comes back here;
7. anything else raises LoweringError naming the op and the user's line.

A torch tensor of another device among the arguments raises torch's
"Expected all tensors to be on the same device" error; a 0-d CPU tensor is a
scalar, as torch allows.
"""
import os
import sys

import torch

from ... import _C
from ...debug import metrics as _metrics
from .._common import LazytrainError, lt_dtype
from .._decompositions import decomposition_table
from .._lower_graph import LoweringError
from ..lowering import LOWERINGS
from ._fused_optim import FUSED_OPTIMIZERS
from . import _errors
from ._tensor import LazyTensor, _new, wrap, wrap_view
from ._transfer import to_cpu, to_lazytrain
from ._views import STRIDES, VIEWS, meta_of

aten = torch.ops.aten
_LtTensor = _C.Tensor
_handlers = {}
op_counts = {}  # OpOverload -> [calls]: the metrics' xla::<op> counters (_resolve counts, _op_counters names)


def dispatch(func, args, kwargs):
    handler = _handlers.get(func)
    if handler is None:
        handler = _handlers[func] = _resolve(func)
    return handler(func, args, kwargs)


# ---- where the user's code is -------------------------------------------------------------------------------
_SKIP_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, sys.modules["lazytrain"]))
_C._add_internal_dir(_SKIP_DIRS[0])  # the IR's op locations (recompile reasons, step analysis) skip torch too


def user_frame():
    """The innermost Python frame outside torch and lazytrain, or None (torch's
    autograd thread has no Python frames)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_SKIP_DIRS) and not name.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


def user_line():
    """'file:line' of the innermost frame outside torch and lazytrain; inside a
    backward (torch's autograd thread, no Python frames), the line that called
    backward()."""
    frame = user_frame()
    if frame is not None:
        return f"{frame.f_code.co_filename}:{frame.f_lineno}"
    node = torch._C._current_autograd_node()
    if node is not None and _errors.backward_line is not None:
        return f"{_errors.backward_line} (in the backward, {node.name()})"
    return "(no user frame)"


def _device_error(func, arg_name, other):
    from ._device import NAME
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {NAME} and "
        f"{other.device}! (when checking argument for argument {arg_name} in method {func}), at {user_line()}")


# ---- arguments ----------------------------------------------------------------------------------------------
def _unwrap(x, func, name):
    """`name`: the argument's name, or its position (named from the schema only for an error: asking
    the schema costs about 1 us, as much as the rest of an op's unwrapping)."""
    if isinstance(x, torch.Tensor):
        if isinstance(x, LazyTensor):
            return x._lt
        if x.dim() == 0 and x.device.type == "cpu":
            return x.item()
        if isinstance(name, int):
            names = _arg_names(func)
            name = names[name] if name < len(names) else f"#{name}"
        raise _device_error(func, name, x)
    if type(x) in (list, tuple):
        return [v._lt if type(v) is LazyTensor else _unwrap(v, func, name) if isinstance(v, _NESTED) else v
                for v in x]
    return x


_NESTED = (torch.Tensor, list, tuple)


def _arg_names(func):
    return [a.name for a in func._schema.arguments]


def unwrap_args(func, args, kwargs):
    # The hot path of every lowered op: a LazyTensor or a plain Python value per argument (a loop:
    # a comprehension is a call of its own in Python 3.11, dearer for an op's 1-3 arguments).
    out = []
    i = 0
    for a in args:
        if type(a) is LazyTensor:
            out.append(a._lt)
        elif isinstance(a, _NESTED):
            out.append(_unwrap(a, func, i))
        else:
            out.append(a)
        i += 1
    if kwargs:
        kwargs = {k: _unwrap(v, func, k) for k, v in kwargs.items()}
    return out, kwargs


def wrap_out(out):
    if isinstance(out, _LtTensor):
        return wrap(out)
    if isinstance(out, (tuple, list)):
        return type(out)(wrap_out(o) for o in out)
    return out


def _named_error(func, e):
    if isinstance(e, LoweringError):
        return e
    msg = f"lazytrain device: {func} failed at {user_line()}: {e}"
    try:
        return type(e)(msg)
    except Exception:  # noqa: BLE001 - an exception type that takes other arguments
        return LoweringError(msg)


# ---- handlers -----------------------------------------------------------------------------------------------
def _lowered(lowering):
    def run(func, args, kwargs):
        a, k = unwrap_args(func, args, kwargs)
        try:
            out = lowering(*a, **k)
        except (TypeError, ValueError, IndexError, LazytrainError, RuntimeError) as e:
            raise _named_error(func, e) from e
        if type(out) is _LtTensor:  # most ops: one tensor, wrapped without wrap_out's walk
            return _new(LazyTensor, out)
        return wrap_out(out)

    return run


def _lt_function(func):
    """fn(lazytrain args) -> lazytrain result for a functional op, or None
    when the op is only decomposed (then it runs on LazyTensors)."""
    return LOWERINGS.get(func)


def _compute_functional(functional, self_lt, args, kwargs):
    """The functional op's lazytrain result with self replaced by `self_lt`."""
    lowering = _lt_function(functional)
    if lowering is not None:
        a, k = unwrap_args(functional, args, kwargs)  # all of args: an error names the argument by position
        try:
            return lowering(self_lt, *a[1:], **k)
        except (TypeError, ValueError, IndexError, LazytrainError, RuntimeError) as e:
            raise _named_error(functional, e) from e
    out = functional(wrap(self_lt), *args[1:], **kwargs)
    return out._lt


# ---- torch's overlap checks of a write (at::assert_no_partial_overlap) -------------------------------------------
def _storage_key(t):
    return t._root if t._root is not None else t._lt


def _dense(t):
    """Whether t's elements fill a range of its storage, each once (torch's
    is_non_overlapping_and_dense)."""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _partially_overlap(a, b):
    if not a.numel() or not b.numel() or not _dense(a) or not _dense(b):
        return False  # torch's "too hard": not checked
    a0, b0 = a.storage_offset(), b.storage_offset()
    a1, b1 = a0 + a.numel(), b0 + b.numel()
    if (a0, a1) == (b0, b1):
        return a.stride() != b.stride()
    return a0 < b1 and b0 < a1


def _check_overlap(written, args, kwargs):
    """torch's error when an input shares some, not all, of the elements
    written (x.mul_(x.t()), x[1:].add_(x[:-1]), x.copy_(x[1])): the CPU's
    result would depend on the order elements are written in."""
    key = None
    for a in (*args, *kwargs.values()):
        if type(a) is LazyTensor and a is not written:
            if key is None:
                key = _storage_key(written)
            if _storage_key(a) is key and _partially_overlap(written, a):
                raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to "
                                   "tensor refer to a single memory location. Please clone() the tensor before "
                                   f"performing the operation. (lazytrain device, at {user_line()})")


def _inplace(functional, any_cast):
    name = str(functional).split(".")[1] + "_"

    def run(func, args, kwargs):
        self_ = args[0]
        if not isinstance(self_, LazyTensor):
            raise _device_error(func, "self", self_)
        _check_overlap(self_, args[1:], kwargs)
        value = _compute_functional(functional, _C.clone(self_._lt), args, kwargs)
        _C._inplace_update(self_._lt, value, name, any_cast)
        return self_

    return run


def _out(functional):
    def run(func, args, kwargs):
        kwargs = dict(kwargs)
        out = kwargs.pop("out")
        if not isinstance(out, LazyTensor):
            raise _device_error(func, "out", out)
        result = functional(*args, **kwargs)
        if not isinstance(result, LazyTensor):  # every input on another device: torch names the first
            raise _device_error(func, _arg_names(func)[0], next(a for a in args if isinstance(a, torch.Tensor)))
        _check_overlap(out, args, kwargs)
        if tuple(out.shape) != tuple(result.shape):
            raise LoweringError(f"lazytrain device: {func} with out= of shape {list(out.shape)} for a result of "
                                f"{list(result.shape)}: resizing out= is not supported, at {user_line()}")
        _C._inplace_update(out._lt, result._lt, "copy_", True)
        return out

    return run


def _resize_(func, args, kwargs):
    self_, size = args[0], list(args[1])
    if list(self_.shape) != size:
        raise LoweringError(f"lazytrain device: resize_ from {list(self_.shape)} to {size}: a tensor on the device "
                            f"keeps its shape (torch resizes its storage; make a new tensor instead), at {user_line()}")
    return self_


def _view(fn, strides=None):
    def run(func, args, kwargs):
        x = args[0]
        if not isinstance(x, LazyTensor):
            raise _device_error(func, "self", x)
        a, k = unwrap_args(func, args[1:], kwargs)
        try:
            out = fn(x._lt, *a, **k)
        except (TypeError, ValueError, IndexError, LazytrainError, RuntimeError) as e:
            raise _named_error(func, e) from e
        root = x._root if x._root is not None else x._lt  # the storage a view shares (untyped_storage())
        if strides is not None:
            known = strides(x.shape, x.stride(), x.storage_offset(), tuple(out.shape), *a, **k)
            if known is not None:
                return wrap_view(out, known[0], known[1], root)
        meta = func(meta_of(x), *args[1:], **kwargs)
        offset = x.storage_offset()
        if isinstance(out, _LtTensor):
            r = LazyTensor(out, meta.stride(), offset + meta.storage_offset())
            r._root = root
            return r
        views = type(out)(LazyTensor(o, m.stride(), offset + m.storage_offset()) for o, m in zip(out, meta))
        for r in views:
            r._root = root
        return views

    return run


def _decomposed(decomposition):
    def run(func, args, kwargs):
        return decomposition(*args, **kwargs)

    return run


def _unsupported(reason):
    def run(func, args, kwargs):
        raise LoweringError(f"lazytrain device: the ATen op {func} {reason}, at {user_line()}")

    return run


def _foreach(func):
    schema = func._schema
    base = schema.name.split("::")[1][len("_foreach_"):]
    if base.rstrip("_") == "norm":
        per = aten.linalg_vector_norm
    else:
        per = getattr(aten, base)
    lists = [isinstance(a.type, torch.ListType) for a in schema.arguments]
    names = [a.name for a in schema.arguments]
    inplace = base.endswith("_")
    value_kwarg = base.rstrip("_") in ("addcmul", "addcdiv")

    def run(func, args, kwargs):
        args = list(args)
        for i, (is_list, name) in enumerate(zip(lists, names)):
            if i < len(args) and name == "scalars" and isinstance(args[i], torch.Tensor):
                args[i], lists[i] = args[i].tolist(), True
        n = len(next(a for i, a in enumerate(args) if lists[i]))  # pow.ScalarAndTensor: the list is not first
        results = []
        for j in range(n):
            elem = [a[j] if i < len(lists) and lists[i] else a for i, a in enumerate(args)]
            k = kwargs
            if value_kwarg and len(elem) > 3:  # addcmul/addcdiv: value is keyword-only outside foreach
                elem, k = elem[:3], dict(kwargs, value=elem[3])
            results.append(per(*elem, **k))
        return None if inplace else results

    return run


# ---- special ops --------------------------------------------------------------------------------------------
def _to_copy(func, args, kwargs):
    x = args[0]
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    if device is not None and torch.device(device).type == "cpu":
        cpu = to_cpu(x._lt)
        return cpu.to(dtype) if dtype is not None and dtype != cpu.dtype else cpu
    value = x._lt
    if dtype is not None and lt_dtype(dtype) != value.dtype:
        value = _C.to_dtype(value, lt_dtype(dtype))
    else:
        value = _C.clone(value)
    if device is not None:
        index = torch.device(device).index
        if index is not None and index != value.device.index:
            value = value.to(_C.device(f"cpu:{index}"))
    return wrap(value)


def _copy_(func, args, kwargs):
    dst, src = args[0], args[1]
    if not isinstance(dst, LazyTensor):
        dst.copy_(to_cpu(src._lt))  # a CPU tensor written from the device
        return dst
    if isinstance(src, LazyTensor):
        _check_overlap(dst, (src,), {})
        value = src._lt
    elif isinstance(src, torch.Tensor):
        value = to_lazytrain(src, "copy_() source")
    else:
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    value = LOWERINGS[aten.copy.default](_C.clone(dst._lt), value)
    _C._inplace_update(dst._lt, value, "copy_", True)
    return dst


def _item(func, args, kwargs):
    return args[0]._lt.item()


def _random_fill(make):
    def run(func, args, kwargs):
        self_ = args[0]
        a, k = unwrap_args(func, args[1:], kwargs)
        k.pop("generator", None)
        x = self_._lt
        value = make(list(x.shape), x.dtype, *a, **k)
        _C._inplace_update(x, value, str(func).split(".")[1], True)
        return self_

    return run


def _normal(shape, dtype, mean=0.0, std=1.0):
    import lazytrain as lt
    v = lt.randn(*shape)
    return (v * std + mean).to(dtype) if (mean, std) != (0.0, 1.0) else v.to(dtype)


def _uniform(shape, dtype, low=0.0, high=1.0):
    import lazytrain as lt
    return (lt.rand(*shape) * (high - low) + low).to(dtype)


def _bernoulli(shape, dtype, p=0.5):
    import lazytrain as lt
    return (lt.rand(*shape) < p).to(dtype)


def _integers(shape, dtype, low=0, high=None):
    """random_(from, to): integers uniform in [low, high) (drawn in float32 and
    floored: exact while high - low <= 2**24)."""
    import lazytrain as lt
    if high is None:
        raise LoweringError(f"lazytrain device: random_() without an upper bound is not supported, at {user_line()}")
    return lt.div(lt.rand(*shape) * (high - low) + low, 1, rounding_mode="floor").to(dtype)


def _as_strided(func, args, kwargs):
    x, size, stride = args[0], list(args[1]), list(args[2])
    offset = args[3] if len(args) > 3 else kwargs.get("storage_offset")
    if size == list(x.shape) and stride == list(x.stride()) and offset in (None, x.storage_offset()):
        return _view(VIEWS[aten.alias.default])(aten.alias.default, (x,), {})
    return _view(VIEWS[aten.as_strided.default])(func, args, kwargs)


def _clone(func, args, kwargs):
    return wrap(_C.clone(args[0]._lt))


_SPECIAL = {
    aten._to_copy.default: _to_copy,
    aten.copy_.default: _copy_,
    aten._local_scalar_dense.default: _item,
    aten.clone.default: _clone,
    aten.lift_fresh.default: lambda func, args, kwargs: args[0],
    aten.as_strided.default: _as_strided,
    aten.resize_.default: _resize_,
    aten.normal_.default: _random_fill(_normal),
    aten.uniform_.default: _random_fill(_uniform),
    aten.bernoulli_.float: _random_fill(_bernoulli),
    getattr(aten.random_, "from"): _random_fill(_integers),
    aten.random_.to: _random_fill(lambda shape, dtype, high, **k: _integers(shape, dtype, 0, high)),
}
_SPECIAL.update(FUSED_OPTIMIZERS)  # fused=True in torch.optim: the CPU kernel's update in torch ops
_ANY_CAST = {"copy_", "fill_", "zero_"}


def _is_view_op(schema):
    return any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def _signature(schema, drop_out=False):
    """(name, type) of each argument, the out= arguments dropped if asked;
    Tensor(a!) reads as Tensor."""
    return [(a.name, str(a.type)) for a in schema.arguments
            if not (drop_out and a.kwarg_only and a.alias_info is not None and a.alias_info.is_write)]


def _functional_of(func):
    """The functional overload of an in-place or out= overload (the one taking
    the same arguments: add.out -> add.Tensor, floor_divide_.Tensor ->
    floor_divide.default), or None."""
    schema = func._schema
    name = schema.name.split("::")[1]
    overload = func._overloadname
    if name.endswith("_"):
        name = name[:-1]
    packet = getattr(aten, name, None)
    if packet is None:
        return None
    if overload in ("out", "default") or overload.endswith("_out"):
        candidates = [overload[:-4]] if overload.endswith("_out") else []
        candidates += ["default", "Tensor"]
    else:
        candidates = [overload, "default"]
    overloads = packet.overloads()
    want = _signature(schema, drop_out=True)
    for c in candidates + overloads:
        if c in overloads and _signature(getattr(packet, c)._schema) == want:
            return getattr(packet, c)
    for c in candidates:
        if c in overloads:
            return getattr(packet, c)
    return None


def _has_cia(func):
    return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")


_CPU_INDICES_ALLOWED = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default,
                        aten._index_put_impl_.default}


def _cpu_indices_to_device(handler):
    """torch lets a device tensor be indexed by CPU index tensors (x[idx],
    x[idx] = v; its own device check says "indices should be either on cpu or
    on the same device"): they are copied to the device, as torch copies them
    to a CUDA tensor's."""
    def run(func, args, kwargs):
        if type(args[0]) is LazyTensor and len(args) > 1 and any(
                type(i) is torch.Tensor and i.device.type == "cpu" for i in args[1]):
            indices = [wrap(to_lazytrain(i, "an index")) if type(i) is torch.Tensor and i.device.type == "cpu" else i
                       for i in args[1]]
            args = (args[0], indices, *args[2:])
        return handler(func, args, kwargs)

    return run


def _resolve(func):
    """func's handler, counting its calls in op_counts (a cell the closure
    holds: no dict lookup per call, OpOverload's hash is Python code)."""
    handler = _resolve_handler(func)
    if func in _CPU_INDICES_ALLOWED:
        handler = _cpu_indices_to_device(handler)
    calls = op_counts.setdefault(func, [0])

    def counted(func, args, kwargs):
        calls[0] += 1
        return handler(func, args, kwargs)

    return counted


def _resolve_handler(func):
    if func in _SPECIAL:
        return _SPECIAL[func]
    if func in VIEWS:
        return _view(VIEWS[func], STRIDES.get(func))
    schema = func._schema
    if schema.name.startswith("aten::_foreach_"):
        return _foreach(func)
    if _is_view_op(schema):
        if _has_cia(func):  # to.dtype, reshape, ...: torch's own composite of ops handled here
            return _decomposed(func.decompose)
        return _unsupported("returns a view lazytrain has no counterpart for (writes through it would be lost)")
    writes_self = schema.arguments and schema.arguments[0].alias_info is not None and \
        schema.arguments[0].alias_info.is_write and not schema.arguments[0].kwarg_only
    writes_out = any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    if writes_self or writes_out:
        functional = _functional_of(func)
        if functional is None:
            return _unsupported("writes in place and has no functional form lazytrain lowers")
        if writes_out:
            return _out(functional)
        return _inplace(functional, schema.name.split("::")[1] in _ANY_CAST)
    if func in LOWERINGS:
        return _lowered(LOWERINGS[func])
    table = decomposition_table()
    if func in table:
        return _decomposed(table[func])
    if _has_cia(func):
        return _decomposed(func.decompose)
    return _unsupported("has no lowering in lazytrain and no decomposition")


def _torch_dispatch(cls, func, types, args=(), kwargs=None):
    handler = _handlers.get(func)
    if handler is None:
        handler = _handlers[func] = _resolve(func)
    try:
        return handler(func, args, kwargs or {})
    except Exception as e:
        if _errors.in_backward():  # raised on torch's autograd thread: see _errors.py
            raise _errors.raising_in_backward(e)
        raise


LazyTensor.__torch_dispatch__ = classmethod(_torch_dispatch)


def _op_counters():
    """op_counts as PyTorch/XLA's counters: xla::<op name>, overloads summed."""
    out = {}
    for func, calls in list(op_counts.items()):
        name = "xla::" + func._schema.name.split("::")[1]
        out[name] = out.get(name, 0) + calls[0]
    return out


def _clear_op_counters():
    for calls in op_counts.values():
        calls[0] = 0


_metrics.register_counters(_op_counters, _clear_op_counters)
