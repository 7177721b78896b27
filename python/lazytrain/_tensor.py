"""Tensor creation (torch's signatures) and the Tensor methods written in Python:
indexing, ``repr``, numpy interop and the less frequent spellings of ops.

The hot methods and operators (``x @ w``, ``x + 1``, ``x.sum()``) are bound in
C++ (python/src/ops.cpp); what is here forwards to them.
"""
import builtins
import contextlib
import math

import numpy as np

from . import _C
from ._C import Tensor, dtype as _dtype
from ._runtime import as_device

_INT64_MAX = 2**63 - 1

_NUMPY_DTYPES = {
    _dtype.float32: np.float32,
    _dtype.float16: np.float16,
    _dtype.int32: np.int32,
    _dtype.int64: np.int64,
    _dtype.bool: np.bool_,
}


def _device_scope(device):
    """A scope that makes `device` current (None: the current one stays)."""
    if device is None:
        return contextlib.nullcontext()
    if isinstance(device, str):
        device = _C.device(device)

    @contextlib.contextmanager
    def scope():
        guard = _C._DeviceGuard(device)
        try:
            yield
        finally:
            del guard

    return scope()


def _sizes(size, what):
    """torch's *size: zeros(2, 3), zeros((2, 3)) and zeros([2, 3]) alike."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, builtins.int) or isinstance(s, builtins.bool):
            raise TypeError(f"{what}(): sizes must be ints, got {type(s).__name__} ({s!r})")
    return _checked_shape([builtins.int(s) for s in size], what, 1)


def _checked_shape(shape, what, itemsize):
    """torch's RuntimeErrors for a negative size, and for a shape whose bytes
    (at `itemsize` bytes an element) overflow int64."""
    for s in shape:
        if s < 0:
            if what == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {shape}")
    nbytes = itemsize
    for s in shape:
        nbytes *= s
    if nbytes > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={shape}")
    return shape


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _make(maker, size, dtype, device, requires_grad, what, default=_dtype.float32):
    dtype = default if dtype is None else dtype
    shape = _checked_shape(_sizes(size, what), what, dtype.itemsize)
    with _device_scope(device):
        return _finish(maker(shape, dtype), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """torch.zeros: a tensor of zeros (float32 unless `dtype`)."""
    return _make(_C._zeros, size, dtype, device, requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False):
    """torch.ones: a tensor of ones (float32 unless `dtype`)."""
    return _make(_C._ones, size, dtype, device, requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False):
    """torch.empty: here zero-filled (lazytrain never hands out uninitialised memory)."""
    return _make(_C._zeros, size, dtype, device, requires_grad, "empty")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """torch.full: `fill_value` everywhere; the dtype is inferred from it as torch does."""
    if dtype is None:
        dtype = (_dtype.bool if isinstance(fill_value, builtins.bool)
                 else _dtype.int64 if isinstance(fill_value, builtins.int) else _dtype.float32)
    shape = _sizes((size,) if isinstance(size, builtins.int) else tuple(size), "full")
    with _device_scope(device):
        return _finish(_C._full(shape, builtins.float(fill_value), dtype), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """torch.arange: [start, end) by step, ceil((end - start) / step) values
    (computed in double, as torch). int64 when start, end and step are ints,
    float32 when any is a float, unless `dtype`. Float values are start + i * step
    computed in double and rounded once; an integer dtype with float arguments
    truncates start and step first (torch's). RuntimeError for step 0 or a
    step whose sign does not lead from start to end."""
    if end is None:
        start, end = 0, start
    args = []
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor):
            v = v.item() if v.dtype.is_floating_point else builtins.int(v.item())
        if not isinstance(v, (builtins.int, builtins.float, np.integer, np.floating)):
            raise TypeError(f"arange(): argument '{name}' must be a Number, not {type(v).__name__}")
        args.append(builtins.float(v) if isinstance(v, (builtins.float, np.floating)) else builtins.int(v))
    start, end, step = args
    floating = builtins.any(isinstance(v, builtins.float) for v in args)
    if dtype is None:
        dtype = _dtype.float32 if floating else _dtype.int64
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (step > 0 and end >= start or step < 0 and end <= start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = math.ceil((builtins.float(end) - builtins.float(start)) / builtins.float(step)) if floating else -((start - end) // step)
    if count > _INT64_MAX or not math.isfinite(count):
        raise RuntimeError("invalid size, possible overflow?")
    with _device_scope(device):
        if not floating:
            return _finish(_C._arange(start, end, step, dtype), requires_grad)
        if not dtype.is_floating_point:
            values = builtins.int(start) + builtins.int(step) * np.arange(count, dtype=np.int64)
        else:
            values = start + step * np.arange(count, dtype=np.float64)
        return _finish(tensor(values, dtype=dtype), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    """torch.rand: uniform [0, 1) from the device generator (manual_seed)."""
    return _make(_C._rand, size, dtype, device, requires_grad, "rand")


def randn(*size, dtype=None, device=None, requires_grad=False):
    """torch.randn: standard normal from the device generator (manual_seed)."""
    return _make(_C._randn, size, dtype, device, requires_grad, "randn")


def _like(maker):
    def like(input, *, dtype=None, device=None, requires_grad=False):
        return maker(*input.shape, dtype=input.dtype if dtype is None else dtype,
                     device=input.device if device is None else device, requires_grad=requires_grad)

    like.__name__ = maker.__name__ + "_like"
    like.__doc__ = f"torch.{like.__name__}: {maker.__name__} of input's shape, dtype and device."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    """torch.full_like."""
    return full(input.shape, fill_value, dtype=input.dtype if dtype is None else dtype,
                device=input.device if device is None else device, requires_grad=requires_grad)


def _numpy_for(data, dtype):
    """`data` as a numpy array lazytrain can take, with torch's dtype inference:
    Python floats (and float64 arrays, which lazytrain lacks) become float32,
    Python ints int64, bools bool. A Python int outside int64 is a ValueError
    ("Overflow when unpacking long long"), as torch, never a wrapped value."""
    if dtype is not None and dtype.is_floating_point and not isinstance(data, np.ndarray):
        # Large Python ints are fine as floats (torch.tensor(2**64, dtype=torch.float32)).
        return _numpy_for(np.asarray(data, dtype=np.float64), dtype)
    array = np.asarray(data)
    if not isinstance(data, np.ndarray) and (array.dtype == np.uint64 or array.dtype.kind == "O"):
        flat = array.reshape(-1) if array.dtype.kind == "O" else array.astype(object).reshape(-1)
        if builtins.any(isinstance(v, builtins.int) and not -_INT64_MAX - 1 <= v <= _INT64_MAX for v in flat):
            raise ValueError("Overflow when unpacking long long")
    elif array.dtype == np.uint64 and array.size and array.max() > _INT64_MAX:
        raise TypeError("tensor(): uint64 values above 2**63 - 1 do not fit int64, the widest integer lazytrain has")
    if array.dtype == np.float64 or array.dtype == np.float16 and dtype not in (None, _dtype.float16):
        array = array.astype(np.float32)
    elif array.dtype.kind in "iu" and array.dtype not in (np.int32, np.int64):
        array = array.astype(np.int64)
    elif array.dtype.kind == "O" or array.dtype.kind not in "biuf":
        raise TypeError(f"tensor(): cannot make a tensor from {type(data).__name__} of numpy dtype {array.dtype}")
    if dtype is not None and dtype != _dtype.bfloat16:
        array = array.astype(_NUMPY_DTYPES[dtype])
    elif dtype == _dtype.bfloat16:
        array = array.astype(np.float32)
    # Not np.ascontiguousarray: it makes a 0-d array 1-d (torch.tensor(3.0) is 0-d).
    return array if array.flags.c_contiguous else array.copy(order="C")


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """torch.tensor: a new tensor with `data`'s values (a list, a number, a numpy
    array or a tensor), copied onto the device once. float64 data becomes float32."""
    if isinstance(data, Tensor):
        t = _C.clone(data.detach())  # a copy, as torch.tensor(t) makes
        if dtype is not None and t.dtype != dtype:
            t = t.to(dtype)
        return _finish(t, requires_grad)
    with _device_scope(device):
        t = _C.from_numpy(_numpy_for(data, dtype))
        if dtype == _dtype.bfloat16:
            t = t.to(_dtype.bfloat16)
        return _finish(t, requires_grad)


def asarray(obj, *, dtype=None, device=None, requires_grad=False):
    """torch.asarray: a tensor itself when it already is one of that dtype, else tensor(obj).
    DLPack producers (torch tensors) are read through from_dlpack (aliased without a copy when
    C-contiguous and 64-byte aligned, else copied onto the device once)."""
    if isinstance(obj, Tensor) and (dtype is None or obj.dtype == dtype):
        return _finish(obj, requires_grad) if requires_grad else obj
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        t = _C.from_dlpack(obj)
        return _finish(t if dtype is None or t.dtype == dtype else t.to(dtype), requires_grad)
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def is_tensor(obj):
    """torch.is_tensor."""
    return isinstance(obj, Tensor)


def numel(input):
    """torch.numel."""
    return input.numel()


# ---------------------------------------------------------------------------------------------
# Tensor methods written in Python
# ---------------------------------------------------------------------------------------------
def _host_array(t):
    """The value as numpy (bfloat16 read as float32): synchronises."""
    return (t.float() if t.dtype == _dtype.bfloat16 else t).numpy()


def _repr(self):
    if not self._defined:
        return "tensor(<undefined>)"
    values = _host_array(self)
    # torch's style: integral floats as "1.", others with 4 fixed decimals.
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    integral = values.dtype.kind != "f" or bool(np.all(finite == np.round(finite)))
    body = np.array2string(values, separator=", ", prefix="tensor(", threshold=1000, precision=4,
                           floatmode="maxprec" if integral else "fixed")
    extras = []
    if self.device != _C.device("cpu:0"):
        extras.append(f"device='{self.device}'")
    if self.dtype not in (_dtype.float32, _dtype.int64, _dtype.bool) or self.numel() == 0:
        extras.append(f"dtype={self.dtype!r}")
    if self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


def _array(self, dtype=None, copy=None):
    values = _host_array(self)
    return values if dtype is None else values.astype(dtype)


def _tolist(self):
    """The values as (nested) Python lists of numbers (synchronises)."""
    return _host_array(self).tolist()


def _size(self, dim=None):
    """torch.Tensor.size: the shape (a tuple), or the size along dim."""
    return self.shape if dim is None else self.shape[dim]


def _len(self):
    if self.ndim == 0:
        raise TypeError("len() of a 0-d tensor")
    return self.shape[0]


def _bool(self):
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous")
    return builtins.bool(self.item())


def _index(self):
    if self.dtype not in (_dtype.int32, _dtype.int64) or self.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return self.item()


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


# x[index] is python/lazytrain/_indexing.py (installed from __init__).


def _to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
    """Tensor.to(dtype), .to(device), .to('cpu:1'), .to(other), .to(device, dtype)."""
    for a in args:
        if isinstance(a, _dtype):
            dtype = a
        elif isinstance(a, (str, _C.device)) or type(a).__name__ == "device":
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        else:
            raise TypeError(f"Tensor.to(): expected a dtype, a device or a tensor, got {a!r}")
    x = self
    if device is not None:
        device = as_device(device)
        if device != x.device:
            x = _C.Tensor._to_device(x, device)
    if dtype is not None and dtype != x.dtype:
        x = _C.Tensor._to_dtype(x, dtype)
    return x


def _flatten(self, start_dim=0, end_dim=-1):
    """torch.Tensor.flatten: dims start_dim to end_dim (inclusive) merged into one;
    a 0-d tensor becomes 1-d. A view of this tensor where its layout allows, as reshape."""
    if self.ndim == 0:
        return self.reshape(1)
    start = start_dim % self.ndim
    end = end_dim % self.ndim
    shape = list(self.shape)
    flat = 1
    for s in shape[start:end + 1]:
        flat *= s
    return self.reshape(shape[:start] + [flat] + shape[end + 1:])


# max/min/argmax/... are python/lazytrain/_reductions.py (installed from __init__).


def _install():
    T = Tensor
    T._to_device = T.to
    T._to_dtype = lambda self, d: _C.to_dtype(self, d)
    T.to = _to
    T.__repr__ = _repr
    T.__str__ = _repr
    T.__array__ = _array
    T.__len__ = _len
    T.__bool__ = _bool
    T.__float__ = lambda self: builtins.float(self.item())
    T.__int__ = lambda self: builtins.int(self.item())
    T.__index__ = _index
    T.__iter__ = _iter
    T.tolist = _tolist
    T.size = _size
    T.flatten = _flatten
    T.cpu = lambda self: self
    """torch.Tensor.cpu: this tensor itself (lazytrain's devices are the host's CPU, so nothing is copied)."""
    T.type_as = lambda self, other: self.to(other.dtype)
    """torch.Tensor.type_as: this tensor cast to other's dtype."""
    T.element_size = lambda self: self.dtype.itemsize
    """torch.Tensor.element_size: the bytes of one element (``dtype.itemsize``)."""
    T.is_floating_point = lambda self: self.dtype.is_floating_point
    """torch.Tensor.is_floating_point: whether the dtype is a floating-point one."""
    # torch's new_*: self's dtype and device unless given.
    T.new_zeros = lambda self, *size, dtype=None, device=None, requires_grad=False: zeros(
        *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    """torch.Tensor.new_zeros: ``zeros(*size)`` with this tensor's dtype and device unless given."""
    T.new_ones = lambda self, *size, dtype=None, device=None, requires_grad=False: ones(
        *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    """torch.Tensor.new_ones: ``ones(*size)`` with this tensor's dtype and device unless given."""
    T.new_full = lambda self, size, v, dtype=None, device=None, requires_grad=False: full(
        size, v, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    """torch.Tensor.new_full: ``full(size, v)`` with this tensor's dtype and device unless given."""
    T.new_tensor = lambda self, data, dtype=None: tensor(data, dtype=dtype or self.dtype, device=self.device)
    """torch.Tensor.new_tensor: ``tensor(data)`` on this tensor's device, with its dtype unless given."""


_install()
