"""Tensor creation (torch's signatures) and the Tensor methods written in Python:
indexing, ``repr``, numpy interop and the less frequent spellings of ops.

The hot methods and operators (``x @ w``, ``x + 1``, ``x.sum()``) are bound in
C++ (python/src/ops.cpp); what is here forwards to them.
"""
import builtins
import collections
import contextlib

import numpy as np

from . import _C
from ._C import Tensor, dtype as _dtype

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
        if s < 0:
            raise ValueError(f"{what}(): negative dimension {s}")
    return [builtins.int(s) for s in size]


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _make(maker, size, dtype, device, requires_grad, what, default=_dtype.float32):
    shape = _sizes(size, what)
    with _device_scope(device):
        return _finish(maker(shape, default if dtype is None else dtype), requires_grad)


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
    """torch.arange over integers: [start, end) by step; int64 unless `dtype`."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, builtins.int):
            raise TypeError(f"arange(): {name} must be an int here (float ranges are not supported), got {v!r}")
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    with _device_scope(device):
        return _finish(_C._arange(start, end, step, _dtype.int64 if dtype is None else dtype), requires_grad)


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
    Python ints int64, bools bool."""
    array = np.asarray(data)
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
        t = data.detach()
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
    DLPack producers (torch tensors) are read through from_dlpack (one copy onto the device)."""
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


def _normalize_index(index, ndim):
    """The index as a tuple with Ellipsis expanded into full slices."""
    if not isinstance(index, tuple):
        index = (index,)
    used = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(i)
    return out


def _getitem(self, index):
    """x[...]: ints, slices (positive steps), None, Ellipsis, and one index
    tensor (or list of ints) along a dim (index_select, any index shape);
    a bool mask selects as masked_select (eager modes only)."""
    if isinstance(index, Tensor) and index.dtype == _dtype.bool:
        return _C.masked_select(self, index)
    parts = _normalize_index(index, self.ndim)
    x = self
    dim = 0
    tensor_index = None
    for part in parts:
        if part is None:
            x = x.unsqueeze(dim)
            dim += 1
        elif isinstance(part, slice):
            start, stop, step = part.start, part.stop, part.step
            step = 1 if step is None else step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if start is not None or stop is not None or step != 1:
                x = x._slice(dim, 0 if start is None else start, _INT64_MAX if stop is None else stop, step)
            dim += 1
        elif isinstance(part, (builtins.int, np.integer)) and not isinstance(part, builtins.bool):
            size = x.shape[dim]
            i = builtins.int(part)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            i = i + size if i < 0 else i
            x = x._slice(dim, i, i + 1, 1).squeeze(dim)
        elif isinstance(part, (Tensor, list, np.ndarray)):
            if tensor_index is not None:
                raise IndexError("lazytrain indexing takes one index tensor; use index_select or gather for more")
            idx = part if isinstance(part, Tensor) else tensor(part)
            if idx.dtype == _dtype.bool:
                raise IndexError("a bool mask index must be the whole index: x[mask]")
            if idx.dtype not in (_dtype.int32, _dtype.int64):
                raise IndexError(f"tensors used as indices must be int64 or int32, got {idx.dtype!r}")
            shape = list(x.shape)
            flat = idx.reshape([-1]) if idx.ndim != 1 else idx
            x = x.index_select(dim, flat)
            if idx.ndim != 1:
                x = x.reshape(shape[:dim] + list(idx.shape) + shape[dim + 1:])
            tensor_index = idx
            dim += idx.ndim
        else:
            raise IndexError(f"unsupported index {part!r}: use ints, slices, None, ..., or an int tensor")
    return x


def _setitem(self, index, value):
    raise TypeError("lazytrain tensors do not support item assignment (x[...] = v); "
                    "build the value with where/masked_fill/cat, or assign t.data = new_value")


def _to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
    """Tensor.to(dtype), .to(device), .to('cpu:1'), .to(other), .to(device, dtype)."""
    for a in args:
        if isinstance(a, _dtype):
            dtype = a
        elif isinstance(a, (str, _C.device)):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        else:
            raise TypeError(f"Tensor.to(): expected a dtype, a device or a tensor, got {a!r}")
    x = self
    if device is not None:
        device = _C.device(device) if isinstance(device, str) else device
        if device != x.device:
            x = _C.Tensor._to_device(x, device)
    if dtype is not None and dtype != x.dtype:
        x = _C.Tensor._to_dtype(x, dtype)
    return x


def _flatten(self, start_dim=0, end_dim=-1):
    if self.ndim == 0:
        return self.reshape(1)
    start = start_dim % self.ndim
    end = end_dim % self.ndim
    shape = list(self.shape)
    flat = 1
    for s in shape[start:end + 1]:
        flat *= s
    return self.reshape(shape[:start] + [flat] + shape[end + 1:])


_MaxResult = collections.namedtuple("max", ["values", "indices"])


def _max(self, dim=None, keepdim=False):
    """max() over everything, or (values, indices) along dim (torch.max)."""
    if dim is None:
        return self.amax()
    return _MaxResult(self.amax(dim, keepdim), self.argmax(dim, keepdim))


def _min(self, dim=None, keepdim=False):
    if dim is None:
        return -((-self).amax())
    return _MaxResult(-((-self).amax(dim, keepdim)), (-self).argmax(dim, keepdim))


def _inplace(op):
    """An in-place spelling (add_, mul_, ...): the new value replaces this tensor's
    (as `t.data = ...`), with no autograd history: use it on parameters and
    buffers, inside no_grad, as optimizers do."""
    def method(self, *args, **kwargs):
        self.data = op(self.detach(), *args, **kwargs).to(self.dtype)
        return self

    return method


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
    T.__getitem__ = _getitem
    T.__setitem__ = _setitem
    T.tolist = _tolist
    T.size = _size
    T.flatten = _flatten
    T.max = _max
    T.min = _min
    T.cpu = lambda self: self
    T.contiguous = lambda self: self
    T.clone = lambda self: self.reshape(list(self.shape))
    T.type_as = lambda self, other: self.to(other.dtype)
    T.element_size = lambda self: self.dtype.itemsize
    T.is_floating_point = lambda self: self.dtype.is_floating_point
    T.new_zeros = lambda self, *size, dtype=None: zeros(*size, dtype=dtype or self.dtype, device=self.device)
    T.new_ones = lambda self, *size, dtype=None: ones(*size, dtype=dtype or self.dtype, device=self.device)
    T.new_full = lambda self, size, v, dtype=None: full(size, v, dtype=dtype or self.dtype, device=self.device)
    T.new_tensor = lambda self, data, dtype=None: tensor(data, dtype=dtype or self.dtype, device=self.device)
    T.add_ = _inplace(lambda x, other, alpha=1: x + other * alpha if alpha != 1 else x + other)
    T.sub_ = _inplace(lambda x, other, alpha=1: x - other * alpha if alpha != 1 else x - other)
    T.mul_ = _inplace(lambda x, other: x * other)
    T.div_ = _inplace(lambda x, other: x / other)
    T.zero_ = _inplace(lambda x: zeros_like(x))
    T.fill_ = _inplace(lambda x, v: full_like(x, v))
    T.copy_ = _inplace(lambda x, src: src.detach().to(x.dtype))
    T.__iadd__ = lambda self, other: self + other
    T.__isub__ = lambda self, other: self - other
    T.__imul__ = lambda self, other: self * other
    T.__itruediv__ = lambda self, other: self / other


_install()
