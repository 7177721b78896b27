"""PyTorch/XLA's lazy device for real torch tensors (issue 56): torch code runs
on lazytrain with its tensors moved to `device()`; every ATen op of forward,
backward and the torch optimizer records into lazytrain's lazy graph, and
`xm.mark_step()` compiles the whole step once and replays it.

Mechanism, and why:
- **A wrapper tensor subclass** (`LazyTensor`, _tensor.py), as torchax does:
  a torch.Tensor without storage that holds a lazytrain.Tensor. Its
  `__torch_dispatch__` (_dispatch.py) runs below torch's autograd, so torch
  records the backward as for any device and `loss.backward()`'s ops arrive
  here too; each op is lowered through part 1's table
  (lazytrain.torch_backend.lowering.LOWERINGS, one table for torch.compile
  and this device), else decomposed (core ATen), else refused by name.
  Nothing is compiled against torch.
- **The device is torch's PrivateUse1, renamed "lazytrain"** (_device.py),
  set up from Python with a device guard: a tensor reporting device `xla:0`
  would have PyTorch/XLA's string, but torch's autograd engine needs a device
  guard for every device it meets and only torch_xla's C++ registers one for
  XLA (a backward aborts the process without it).
- **Factory functions are dispatch kernels, not a mode** (_factories.py):
  `torch.zeros(..., device=dev)` dispatches on the device's key, so kernels
  registered for PrivateUse1 (`empty`, `empty_strided`, `arange`) serve every
  factory torch composes from them. torchax instead keeps a TorchFunctionMode
  active to catch `device=`; a mode costs every torch call in the process, the
  kernels cost nothing outside this device.
- **Views and in-place writes are lazytrain's** (_views.py): a torch view op
  makes a lazytrain view, an in-place op writes with lazytrain's
  `_inplace_update`, which implements torch's aliasing over the functional IR
  (docs/design/views.md).
- **`model.to(device)`** goes through nn.Module._apply's plain path: a new
  Parameter per tensor (LazyTensor is not a "traceable" wrapper subclass,
  so torch does not swap tensors), as torch_xla's move does.

Importing this module registers the device (once per process) and makes
`lazytrain.core.xla_model.xla_device()` return the torch device (see
`enable`).
"""
from . import _autocast, _device, _dispatch, _factories, _generation, _masking  # noqa: F401 (_dispatch installs LazyTensor.__torch_dispatch__)
from ._device import torch_device
from ._tensor import LazyTensor

_device.register()
_factories.register()
_autocast.register(_device.NAME)  # torch.autocast("lazytrain", dtype=torch.bfloat16): CPU autocast's casts
_generation.install()  # transformers' generate(): static shapes on this device (_generation.py)
_masking.install()  # transformers' masks: no padding_mask.all() read per step (_masking.py)

_enabled = False


def enable(on=True):
    """Whether xm.xla_device() (and lazytrain.torch_backend.device()) hand
    out the torch device (on: torch tensors are meant) or lazytrain's native
    device; returns the previous setting. Importing this module turns it on."""
    global _enabled
    previous, _enabled = _enabled, bool(on)
    return previous


def enabled():
    """Whether xm.xla_device() hands out the torch device (see enable)."""
    return _enabled


def device(index=None):
    """The lazytrain device as a torch.device: torch.device("lazytrain", n),
    n the current replica's device by default."""
    from ... import _C
    return torch_device(_C.current_device().index if index is None else int(index))


enable(True)

__all__ = ["LazyTensor", "device", "enable", "enabled"]
