"""torch_xla.runtime (``xr``) on lazytrain: the devices SPMD programs run on.

``use_spmd(n)`` gives this process n devices (cpu:0 .. cpu:n-1; default: the
CPU_NUM_DEVICES environment variable, as PyTorch/XLA's CPU client reads it,
else 1); a mesh (``lazytrain.distributed.spmd.Mesh``) spans the devices of
every process of the job (mpirun's processes times n; across processes, one
device a process for now). The program is traced once, on the current
device; ``xm.xrt_world_size()`` then counts processes, as PyTorch/XLA's does.
"""
import numbers
import os

from . import _C

__all__ = ["use_spmd", "is_spmd", "global_runtime_device_count", "addressable_runtime_device_count", "global_ordinal", "world_size"]

_spmd = False


def use_spmd(num_devices=None):
    """Makes this process run `num_devices` devices for SPMD programs."""
    global _spmd
    source = "num_devices"
    if num_devices is None:
        source = "CPU_NUM_DEVICES"
        text = os.environ.get("CPU_NUM_DEVICES", "1")
        try:
            num_devices = int(text)
        except ValueError:
            raise ValueError(f"use_spmd: CPU_NUM_DEVICES is {text!r}: expected a count of devices, e.g. 4") from None
    if isinstance(num_devices, numbers.Integral) and not isinstance(num_devices, bool):
        num_devices = int(num_devices)  # numpy's integers too
    if not isinstance(num_devices, int) or isinstance(num_devices, bool) or num_devices < 1:
        raise ValueError(f"use_spmd: {source} is {num_devices!r}: expected an int >= 1")
    _C._use_spmd(num_devices)
    _spmd = True


def is_spmd():
    return _spmd


def _reset_spmd():
    """One device, SPMD mode off (for tests)."""
    global _spmd
    _C._reset_spmd()
    _spmd = False


def global_runtime_device_count():
    """Devices in the job: every process's."""
    return _C._global_devices()


def addressable_runtime_device_count():
    """This process's devices."""
    return _C._local_devices()


def world_size():
    """Processes in the job (in SPMD mode a process is one participant)."""
    return _C._world_size()


def global_ordinal():
    return _C._ordinal()
