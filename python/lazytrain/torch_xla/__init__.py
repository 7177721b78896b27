"""PyTorch/XLA's package name for torch tensors on lazytrain (issue 56): a
PyTorch/XLA script runs on lazytrain with the package `torch_xla` in its
imports replaced by `lazytrain.torch_xla`, and nothing else changed:

    import lazytrain.torch_xla as torch_xla
    import lazytrain.torch_xla.core.xla_model as xm
    import lazytrain.torch_xla.distributed.parallel_loader as pl
    import lazytrain.torch_xla.debug.metrics as met
    import lazytrain.torch_xla.runtime as xr

Importing this package (which any of those imports does first) enables the
lazy device for torch tensors (lazytrain.torch_backend.lazy_device), so
`torch_xla.device()` and `xm.xla_device()` hand out torch.device("lazytrain",
n): a PyTorch/XLA script works with torch tensors, and nothing in it would
otherwise say so. `lazytrain.torch_xla.<name>` is `lazytrain.<name>` itself,
the same module object (`lazytrain.torch_xla.core.xla_model is
lazytrain.core.xla_model`), not a copy: one module serves both tensor kinds.
Native lazytrain scripts import `lazytrain` and its modules directly, and
their devices stay lazytrain's own unless they import this package.

Needs torch (as PyTorch/XLA does).
"""
import importlib
import importlib.abc
import importlib.util
import sys

from .. import _runtime, core, debug, distributed, runtime  # noqa: F401 (torch_xla.runtime etc. as attributes)
from ..torch_backend import lazy_device as _lazy_device

_PREFIX = __name__ + "."
_REAL = __name__.rsplit(".", 1)[0] + "."  # "lazytrain."


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self._module = module

    def create_module(self, spec):
        return self._module  # the real module: importlib keeps its own name and spec

    def exec_module(self, module):
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """`lazytrain.torch_xla.<a.b>` imports as `lazytrain.<a.b>` (the same module
    object). Ahead of Python's path finder, which would otherwise load a second
    copy of lazytrain/<a>/<b>.py through the alias's __path__."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        real = _REAL + fullname[len(_PREFIX):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(importlib.import_module(real)))


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

_lazy_device.enable(True)


def device(index=None):
    """torch_xla.device(): the lazytrain device as a torch device,
    torch.device("lazytrain", n) (this replica's by default)."""
    return _lazy_device.device(index)


def devices():
    """torch_xla.devices(): the devices this replica can use, as torch devices."""
    return [device(d.index) for d in _runtime.devices()]


def device_count():
    """torch_xla.device_count(): this process's devices."""
    return runtime.addressable_runtime_device_count()


def sync(wait=False):
    """torch_xla.sync(): cuts the graph and runs it (xm.mark_step())."""
    _runtime.sync(wait)


class step:
    """torch_xla.step(): a context whose exit cuts the step (sync())."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        sync()
        return False


def compile(fn=None, *, full_graph=False, name=None, num_different_graphs_allowed=None):  # noqa: A001 (torch_xla's name)
    """torch_xla.compile(fn): each call of fn is one step: the graph is cut
    before and after it (sync()), so fn's ops record as one graph, compiled
    once per signature and replayed. full_graph and
    num_different_graphs_allowed are not checked here."""
    if fn is None:
        return lambda f: compile(f, full_graph=full_graph, name=name,
                                 num_different_graphs_allowed=num_different_graphs_allowed)

    def compiled(*args, **kwargs):
        sync()
        out = fn(*args, **kwargs)
        sync()
        return out

    compiled.__name__ = getattr(fn, "__name__", "compiled")
    compiled.__qualname__ = getattr(fn, "__qualname__", compiled.__name__)
    compiled.__doc__ = fn.__doc__
    return compiled


def manual_seed(seed, device=None):
    """torch_xla.manual_seed(seed): seeds the device's generator (as
    torch.manual_seed does on the lazytrain device)."""
    import torch
    torch.manual_seed(seed)


__all__ = ["device", "devices", "device_count", "sync", "step", "compile", "manual_seed",
           "core", "debug", "distributed", "runtime"]
