"""Factory functions on the lazytrain device: kernels for torch's PrivateUse1
dispatch key, so `torch.zeros(..., device=dev)` needs no mode or patch.

torch's own factories (zeros, ones, full, randn, rand, tensor(data, device=),
empty_like, ...) are composites that call `empty` (or `empty_strided`) on
the device and then fill it in place (zero_, fill_, normal_, uniform_,
copy_ from the CPU): `empty` here makes the lazytrain tensor, the fills come
back through __torch_dispatch__. `arange` is registered whole (torch's
composite writes into an out= tensor it resizes).
"""
import torch

from ... import _C
from ..lowering import LOWERINGS
from ._tensor import wrap

aten = torch.ops.aten
_lib = None


def _on(value, device):
    index = torch.device(device).index if device is not None else None
    if index is not None and index != value.device.index:
        value = value.to(_C.device(f"cpu:{index}"))
    return wrap(value)


def _empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _on(LOWERINGS[aten.zeros.default](size, dtype=dtype), device)


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _on(LOWERINGS[aten.zeros.default](size, dtype=dtype), device)


def _arange(*args, dtype=None, layout=None, device=None, pin_memory=None):
    return _on(LOWERINGS[aten.arange.start_step](*args, dtype=dtype), device)


def _copy_from(src, dst, non_blocking=False):
    """A CPU tensor copied onto the device (torch's copy_ of a CPU tensor into
    a device tensor outside __torch_dispatch__, as torch.tensor(data, device=) does)."""
    from ._dispatch import dispatch
    return dispatch(aten.copy_.default, (dst, src), {})


def register():
    global _lib
    if _lib is not None:
        return
    _lib = torch.library.Library("aten", "IMPL")
    _lib.impl("empty.memory_format", _empty, "PrivateUse1")
    _lib.impl("empty_strided", _empty_strided, "PrivateUse1")
    _lib.impl("_copy_from", _copy_from, "PrivateUse1")
    for overload in ("arange", "arange.start", "arange.start_step"):
        _lib.impl(overload, _arange, "PrivateUse1")
