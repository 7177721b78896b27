"""Values crossing between torch's CPU and the lazytrain device.

Both directions copy exactly once, through DLPack: torch's `.to(device)` and
`.cpu()` are copies by contract, and an alias (what torch.compile's exchange
uses for parameters it only reads) would let a later write on one side show
on the other (the CPU tensor written after `.to()`, or a CPU result written
into the device's buffer). A 0-d CPU tensor mixed into a device op is read as
a Python number (torch lets CPU scalars meet any device), which lazytrain
takes as 0-d device data cached by value: a new value does not recompile.
"""
import torch

from ... import _C
from .._common import lt_dtype, count


def to_lazytrain(cpu, what="tensor"):
    """A lazytrain tensor holding a copy of torch CPU tensor `cpu`."""
    if cpu.device.type != "cpu":
        raise RuntimeError(f"lazytrain device: cannot copy a {cpu.device} tensor onto the lazytrain device "
                           "(move it to the CPU first)")
    lt_dtype(cpu.dtype, what)
    src = cpu.detach()
    if src.is_conj() or src.is_neg():
        src = src.resolve_conj().resolve_neg()
    count("LazyDeviceInputBytes", src.numel() * src.element_size())
    return _C.from_dlpack(src.contiguous(), copy=True)


def to_device(cpu, index=None):
    """torch CPU tensor -> a LazyTensor (copy)."""
    from ._tensor import wrap
    value = to_lazytrain(cpu)
    if index is not None and index != value.device.index:
        value = value.to(_C.device(f"cpu:{index}"))
    return wrap(value)


def to_cpu(value):
    """lazytrain tensor -> a torch CPU tensor of its own (synchronises)."""
    count("LazyDeviceOutputBytes", value.numel() * value.element_size())
    return torch.from_dlpack(value).clone()
