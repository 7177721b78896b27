"""Tensors crossing between torch and lazytrain through DLPack.

In: a contiguous, 64-byte-aligned torch CPU tensor becomes lazytrain device
data that aliases its memory (lazytrain._C.from_dlpack; no copy); any other is
made contiguous first (a copy, counted as DynamoInputCopies / DynamoInputCopyBytes).
A torch tensor that came out of lazytrain (an activation saved for backward)
goes back as the lazytrain tensor it came from. Aliasing imports are cached
per torch tensor and keyed by its version counter and data pointer (torch
bumps `_version` on every in-place op, e.g. an optimizer's param.add_), so an
unchanged parameter is not wrapped again; copies are never cached (a write
through `.data` bumps no version), nor are inference-mode tensors (no version).

Out: lazytrain's output buffers become torch tensors sharing their memory
(torch.from_dlpack of lazytrain.Tensor.__dlpack__, which syncs first).
"""
import torch
from torch.utils.weak import WeakIdKeyDictionary

from .. import _C
from ._common import UnsupportedInput, count, lt_dtype

_ALIGNMENT = 64  # bytes: the runtime's buffer alignment (runtime/buffer.h)

# torch tensor -> (version, data_ptr, lazytrain tensor): imports and exports.
_known = WeakIdKeyDictionary()


def _check_input(t, what):
    if t.device.type != "cpu":
        raise UnsupportedInput(f"{what} is on {t.device}; torch.compile(backend='lazytrain') takes CPU tensors "
                               "(move the model and inputs with .to('cpu'))")
    if t.layout != torch.strided:
        raise UnsupportedInput(f"{what} has layout {t.layout}; lazytrain takes dense (strided) tensors")
    if t.is_complex():
        raise UnsupportedInput(f"{what} is complex ({t.dtype}); lazytrain has no complex dtypes")
    lt_dtype(t.dtype, what)


def to_lazytrain(t, what="input"):
    """The lazytrain tensor for torch CPU tensor `t` (aliasing its memory when
    the layout allows). UnsupportedInput naming `what` for another device, a
    sparse or complex tensor, or a dtype lazytrain has not."""
    cacheable = not t.is_inference()  # inference tensors have no version counter
    entry = _known.get(t) if cacheable else None
    if entry is not None and entry[0] == t._version and entry[1] == t.data_ptr():
        count("DynamoInputCacheHits")
        return entry[2]
    _check_input(t, what)
    src = t.detach()
    aliased = src.is_contiguous() and src.data_ptr() % _ALIGNMENT == 0
    if not aliased:
        if src.numel() > 1 or not src.is_contiguous():
            count("DynamoInputCopies")
            count("DynamoInputCopyBytes", src.numel() * src.element_size())
        src = src.clone(memory_format=torch.contiguous_format)
    value = _C.from_dlpack(src)
    # Only an alias is kept: a copy would go stale when torch writes the
    # tensor without bumping its version (through .data).
    if aliased and cacheable:
        _known[t] = (t._version, t.data_ptr(), value)
    return value


def to_torch(value):
    """A torch tensor sharing `value`'s buffer (syncs `value`; a copy where
    another lazytrain value shares the buffer, counted DlpackOutputCopies)."""
    out = torch.from_dlpack(value)
    if not out.is_inference() and out.data_ptr() == _C._data_ptr(value):
        _known[out] = (out._version, out.data_ptr(), value)
    return out
