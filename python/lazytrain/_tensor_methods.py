"""Tensor methods with torch's semantics written over the C++ ops: format specs,
``repeat``, ``repeat_interleave`` with a tensor of repeats, and numpy's deference
to tensor operators (``ndarray + tensor`` is a tensor, as ``tensor + ndarray``).
"""
import builtins

import numpy as np

from . import _C
from ._C import Tensor

_int_repeat_interleave = _C.repeat_interleave


def _format(self, format_spec):
    """f"{t:.4f}": a 0-d tensor formats as its value (torch.Tensor.__format__);
    any other tensor takes no format spec (TypeError), as torch."""
    if self.ndim == 0:
        return self.tolist().__format__(format_spec)
    return object.__format__(self, format_spec)


def _repeat(self, *sizes):
    """``torch.Tensor.repeat(*sizes)``: the tensor tiled sizes[i] times along dim i
    (leading new dims when len(sizes) > ndim). RuntimeError for fewer sizes than
    dims or a negative size. Built of reshape and expand, so gradients flow."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = [builtins.int(s) for s in sizes]
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    shape = [1] * (len(sizes) - self.ndim) + list(self.shape)
    out = [r * s for r, s in zip(sizes, shape)]
    for r, s in zip(sizes, shape):
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {r * s}: {out}")
    if 0 in out:
        from ._tensor import zeros
        return zeros(out, dtype=self.dtype, device=self.device)
    interleaved = [d for s in shape for d in (1, s)]
    expanded = [d for r, s in zip(sizes, shape) for d in (r, s)]
    return self.reshape(interleaved).expand(expanded).reshape(out)


def _repeat_indices(repeats, size):
    """Host indices [0]*r0 + [1]*r1 + ... for a tensor (or list) of repeats."""
    counts = np.asarray(repeats.tolist() if isinstance(repeats, Tensor) else repeats, dtype=np.int64).reshape(-1)
    if isinstance(repeats, Tensor) and repeats.ndim > 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if counts.size == 1 and size != 1:
        counts = np.full(size, counts[0], dtype=np.int64)
    if counts.size != size:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = {counts.size} "
                           f"and input.size(0) = {size}")
    return np.repeat(np.arange(size, dtype=np.int64), counts)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave: each element repeated along dim (none: over the
    flattened input). `repeats` an int, or a tensor (or list) of one count per
    element, which is read on the host (a sync, as torch's own on an accelerator).
    repeat_interleave(repeats) alone gives the repeated indices 0, 1, ...
    RuntimeError for negative counts or a count list of the wrong length."""
    if repeats is None:
        counts = input
        idx = _repeat_indices(counts, counts.numel())
        from ._tensor import tensor
        return tensor(idx, device=counts.device)
    if isinstance(repeats, (builtins.int, np.integer)) and not isinstance(repeats, builtins.bool):
        return _int_repeat_interleave(input, builtins.int(repeats), dim)
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim == 0:
        return _int_repeat_interleave(input, builtins.int(repeats.item()), dim)
    from ._tensor import tensor
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim % builtins.max(x.ndim, 1)
    idx = _repeat_indices(repeats, x.shape[d])
    if output_size is not None and output_size != idx.size:
        raise RuntimeError(f"allocated size does not match required size: {output_size} vs {idx.size}")
    return x.index_select(d, tensor(idx, device=x.device))


def _install():
    T = Tensor
    T.__format__ = _format
    # numpy defers `ndarray op tensor` to the tensor's reflected operator (torch's value).
    T.__array_priority__ = 1000
    T.repeat = _repeat
    T.repeat_interleave = lambda self, repeats, dim=None, *, output_size=None: repeat_interleave(
        self, repeats, dim, output_size=output_size)


_install()
