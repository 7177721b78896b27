"""The torch device "lazytrain": PyTorch's PrivateUse1 backend renamed, set up
from Python (torch.utils.backend_registration), with factory kernels
registered for its dispatch key.

Why not the device type "xla": torch has a DispatchKey and a device type XLA,
but no device guard for it unless torch_xla's C++ registers one, and torch's
autograd engine asks the device guard of every tensor it sees (a wrapper
tensor on xla:0 aborts the process at its first backward: "PyTorch is not
linked with support for xla devices"). PrivateUse1 is the one device type
torch lets Python give a guard, hooks and a device module, so a tensor on it
goes through torch's autograd like a CUDA tensor does.

Renaming PrivateUse1 is once per process: this fails clearly when another
backend (torch_npu, ...) has taken it.

Replicas: torch 2.13 asks a Python device guard only its type_()
(getDevice, setDevice, exchangeDevice and deviceCount are fixed in C++:
device 0, one device), so no guard of ours can make a thread's lazytrain
device follow torch's. torch's autograd engine therefore has one device thread
(index 0), and a backward on lazytrain:1 there would fail; xmp.spawn runs
each replica's backward on the replica's own thread instead, where its
lazytrain device is current (distributed/xla_multiprocessing.py).
"""
import atexit
import time

import torch

NAME = "lazytrain"

_devices = {}


def torch_device(index=0):
    """torch.device("lazytrain", index), cached."""
    d = _devices.get(index)
    if d is None:
        d = _devices[index] = torch.device(NAME, index)
    return d


class _DeviceModule:
    """torch.lazytrain: what torch asks a backend's device module."""

    @staticmethod
    def is_available():
        # Not an accelerator to torch.accelerator, which is_available() this
        # answers for: accelerate (transformers' Trainer) would then ask it for
        # a caching allocator it does not have, and torch asserts. Tensors on the
        # device do not depend on this answer.
        return False

    @staticmethod
    def is_initialized():
        return True

    @staticmethod
    def _is_in_bad_fork():
        return False

    @staticmethod
    def get_amp_supported_dtype():
        # torch.autocast("lazytrain") asks this; the kernels are _autocast.py's.
        return [torch.bfloat16, torch.float16]

    @staticmethod
    def device_count():
        from ... import _C
        return max(1, len(_C._local_devices()))

    @staticmethod
    def current_device():
        from ... import _C
        return _C.current_device().index

    @staticmethod
    def manual_seed_all(seed):
        import lazytrain
        lazytrain.manual_seed(seed)

    @staticmethod
    def manual_seed(seed):
        import lazytrain
        lazytrain.manual_seed(seed)

    @staticmethod
    def synchronize(device=None):
        from ... import _C
        _C.wait_device_ops()


def register():
    """Renames PrivateUse1 to "lazytrain" with a device guard, hooks and the
    device module torch.lazytrain (idempotent)."""
    current = torch._C._get_privateuse1_backend_name()
    if current == NAME:
        return
    if current != "privateuseone":
        raise RuntimeError(f"lazytrain's torch device needs PyTorch's PrivateUse1 backend, which {current!r} already "
                           "uses in this process")
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    from . import _errors
    # A guard that lets an error raised inside a backward reach the caller
    # instead of aborting the process (_errors.py).
    _setup_privateuseone_for_python_backend(NAME, backend_module=_DeviceModule(), device_guard=_errors.DeviceGuard())
    _errors.install()
    atexit.register(_let_autograd_threads_settle)


def _let_autograd_threads_settle():
    """At exit, before Python finalizes: give torch's autograd thread of this
    device the GIL for a moment. That thread calls the device guard, which is
    Python here, after a backward returns; one that wakes while the
    interpreter finalizes aborts the process ("terminate called without an
    active exception", about 1 exit in 10 after a backward without this).
    Sleeping releases the GIL, so the thread finishes its call first."""
    time.sleep(0.1)
