"""x[index] with torch's rules: basic and advanced indexing.

Basic parts: ints (negative count from the end), slices (positive steps), None,
Ellipsis. Advanced parts: int lists, numpy arrays and int32/int64 tensors (any
shape, negative entries count from the end), bool lists/arrays/tensors (a mask
over as many dims as it has, as its nonzero() indices) and Python True/False
(a new dim of size 1 / 0). Several advanced parts broadcast together; their
result dims go where the first one was when they are adjacent, else first
(torch's and numpy's rule; ints are basic here, as in torch).

Host indices (lists, numpy) are checked at once: IndexError for an entry out of
range. A device index tensor is checked when the graph runs (gather's error). A
bool tensor mask needs its count: it is read on the host (in lazy mode the
pending graph runs, counted in counter "aten::nonzero", as PyTorch/XLA does).
The result is one index_select over the advanced dims merged into one, so the
gradient flows back to x.
"""
import builtins

import numpy as np

from . import _C
from ._C import Tensor, dtype as _dtype
from ._reductions import _called_from

_INT64_MAX = 2**63 - 1
_INT_TYPES = (builtins.int, np.integer)


def _is_int(part):
    return isinstance(part, _INT_TYPES) and not isinstance(part, (builtins.bool, np.bool_))


def _sequence_as_tuple(index):
    """torch's treatSequenceAsTuple: a short list holding a slice, None, ..., a tensor or a
    sequence is a tuple of indices (x[[[0, 1], [1, 2]]] is x[[0, 1], [1, 2]])."""
    if isinstance(index, tuple):
        return True
    if not isinstance(index, list) or len(index) >= 32:
        return False
    return builtins.any(i is None or i is Ellipsis or isinstance(i, (slice, Tensor, np.ndarray, list, tuple)) for i in index)


def _parts(index, ndim):
    """The index as a list of parts, Ellipsis expanded into full slices."""
    parts = list(index) if _sequence_as_tuple(index) else [index]
    if builtins.sum(1 for p in parts if p is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = 0
    for p in parts:
        if p is None or p is Ellipsis or isinstance(p, (builtins.bool, np.bool_)):
            continue
        used += _consumed(p)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    for p in parts:
        out.extend([slice(None)] * (ndim - used) if p is Ellipsis else [p])
    return out


def _consumed(part):
    """How many of x's dims a part indexes: a bool mask its rank, everything else 1."""
    if isinstance(part, Tensor):
        return part.ndim if part.dtype == _dtype.bool else 1
    if isinstance(part, (list, np.ndarray)):
        array = np.asarray(part)
        return array.ndim if array.dtype == np.bool_ else 1
    return 1


def _host_array(part):
    """A list or numpy index as an int64 or bool numpy array ([] is an empty int64 index)."""
    array = np.asarray(part)
    if array.size == 0 and array.dtype.kind == "f":
        array = array.astype(np.int64)
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors" + _called_from())
    return array.astype(np.int64)


def _check_mask_shape(mask_shape, shape, dim):
    for k, size in enumerate(mask_shape):
        if dim + k >= len(shape) or shape[dim + k] != size:
            raise IndexError(f"The shape of the mask {list(mask_shape)} at index {k} does not match the shape of the "
                             f"indexed tensor {list(shape)} at index {dim + k}" + _called_from())


def _advanced(part, shape, dim):
    """[(dim, index)] for one advanced part at x's dim `dim`: index a numpy int64 array or an int
    tensor, already normalised into [0, size)."""
    if isinstance(part, Tensor):
        if part.dtype == _dtype.bool:
            _check_mask_shape(part.shape, shape, dim)
            if part.ndim == 0:
                raise IndexError("a 0-d bool tensor index is not supported; use True/False")
            found = _C.nonzero(part)  # reads the mask (counted: aten::nonzero)
            return [(dim + k, found[:, k]) for k in range(part.ndim)]
        if part.dtype not in (_dtype.int32, _dtype.int64):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors" + _called_from())
        size = shape[dim]
        index = part.long() if part.dtype == _dtype.int32 else part
        return [(dim, _C.where(index < 0, index + size, index))]
    array = _host_array(part)
    if array.dtype == np.bool_:
        _check_mask_shape(array.shape, shape, dim)
        return [(dim + k, column.astype(np.int64)) for k, column in enumerate(np.nonzero(array))]
    size = shape[dim]
    bad = (array < -size) | (array >= size)
    if bad.any():
        raise IndexError(f"index {array[bad].flat[0]} is out of bounds for dimension {dim} with size {size}"
                         + _called_from())
    return [(dim, np.where(array < 0, array + size, array))]


def _gather(x, advanced):
    """x indexed by [(dim, index)] (torch's advanced indexing), as one index_select."""
    dims = [d for d, _ in advanced]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if not adjacent:  # the advanced dims go first, in order
        rest = [d for d in range(x.ndim) if d not in dims]
        x = x.permute(*(dims + rest))
        dims = list(range(len(dims)))
    first, shape = dims[0], list(x.shape)
    sizes = [shape[d] for d in dims]
    strides = [int(np.prod(sizes[k + 1:], dtype=np.int64)) for k in range(len(sizes))]
    indices = [i for _, i in advanced]
    if builtins.all(isinstance(i, np.ndarray) for i in indices):
        try:
            arrays = np.broadcast_arrays(*indices)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + " ".join(str(list(i.shape)) for i in indices) + _called_from()) from None
        result_shape = list(arrays[0].shape)
        flat = _C.from_numpy(np.ascontiguousarray(builtins.sum(a * s for a, s in zip(arrays, strides)).reshape(-1)))
    else:
        tensors = [i if isinstance(i, Tensor) else _C.from_numpy(np.ascontiguousarray(i)) for i in indices]
        flat = None
        for t, s in zip(tensors, strides):
            term = t * s if s != 1 else t
            flat = term if flat is None else flat + term
        result_shape = list(flat.shape)
        flat = flat.reshape([-1])
    merged = x.reshape(shape[:first] + [int(np.prod(sizes, dtype=np.int64))] + shape[first + len(dims):])
    out = merged.index_select(first, flat)
    return out.reshape(shape[:first] + result_shape + shape[first + len(dims):])


def getitem(self, index):
    """x[index] (see the module docstring): ints, slices, None, ..., True/False, int and bool
    lists/arrays/tensors; IndexError for an index out of range or too many indices."""
    parts = _parts(index, self.ndim)
    x, dim, advanced = self, 0, []
    for part in parts:
        if part is None:
            x = x.unsqueeze(dim)
            dim += 1
        elif isinstance(part, (builtins.bool, np.bool_)):
            x = x.unsqueeze(dim)
            advanced.append((dim, np.zeros(1 if part else 0, np.int64)))
            dim += 1
        elif isinstance(part, slice):
            start, stop, step = part.start, part.stop, 1 if part.step is None else part.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if start is not None or stop is not None or step != 1:
                x = x._slice(dim, 0 if start is None else int(start), _INT64_MAX if stop is None else int(stop), int(step))
            dim += 1
        elif _is_int(part):
            size, i = x.shape[dim], int(part)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}" + _called_from())
            i += size if i < 0 else 0
            x = x._slice(dim, i, i + 1, 1).squeeze(dim)
        elif isinstance(part, (Tensor, list, tuple, np.ndarray)):
            found = _advanced(part, x.shape, dim)
            advanced.extend(found)
            dim += _consumed(part)
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(part).__name__})" + _called_from())
    return _gather(x, advanced) if advanced else x


def _install():
    Tensor.__getitem__ = getitem


_install()
