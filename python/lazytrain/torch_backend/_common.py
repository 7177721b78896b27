"""What every part of the torch backend shares: torch <-> lazytrain dtypes, the
error raised for bad input, and the metric counters (lazytrain.debug.metrics)."""
import torch

from .. import _C
from .._C import LazytrainError

# torch dtype -> lazytrain dtype: the dtypes lazytrain computes in.
_DTYPES = {
    torch.float32: _C.dtype.float32,
    torch.bfloat16: _C.dtype.bfloat16,
    torch.float16: _C.dtype.float16,
    torch.int64: _C.dtype.int64,
    torch.int32: _C.dtype.int32,
    torch.bool: _C.dtype.bool,
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}


class UnsupportedInput(LazytrainError):
    """A graph input or constant lazytrain cannot take (device, layout, dtype)."""


def lt_dtype(dtype, what="dtype"):
    """lazytrain's dtype for torch `dtype` (None stays None); UnsupportedInput
    naming `what` for a dtype lazytrain has not (float64, complex, uint8, ...)."""
    if dtype is None:
        return None
    try:
        return _DTYPES[dtype]
    except KeyError:
        names = ", ".join(str(d) for d in _DTYPES)
        raise UnsupportedInput(f"{what}: lazytrain has no {dtype}; it computes in {names}") from None


def torch_dtype(dtype):
    """torch's dtype for a lazytrain dtype."""
    return _TORCH_DTYPES[dtype]


def count(name, value=1):
    """Adds `value` to the counter `name` of lazytrain.debug.metrics."""
    if value:
        _C._counter_add(name, int(value))


def source_line(node):
    """The user's source line an FX node came from: the last frame of its stack
    trace outside torch itself (the model's code), or a note that the graph
    recorded none."""
    trace = node.meta.get("stack_trace") if node is not None else None
    if not trace:
        return "(no source line recorded)"
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
    frames = [(ln, lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else "")
              for i, ln in enumerate(lines) if ln.startswith("File ")]
    if not frames:
        return lines[-1]
    outside_torch = [f for f in frames if _TORCH_DIR not in f[0]]
    frame, code = (outside_torch or frames)[-1]
    return f"{frame}: {code}" if code else frame


_TORCH_DIR = "/" + "/".join(torch.__file__.split("/")[-2:-1]) + "/"
