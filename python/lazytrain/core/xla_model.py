"""torch_xla.core.xla_model (xm) on lazytrain: replicas, their meetings and the
data-parallel step (distributed/xla_model.h). A replica is a device: spawn runs
one thread per local replica with its device current, and mpirun runs processes
of them."""
import os
import sys

from .. import _C
from .._runtime import device as _device, sync as _sync

REDUCE_SUM = _C.ReduceType.SUM
REDUCE_MUL = _C.ReduceType.MUL
REDUCE_MIN = _C.ReduceType.MIN
REDUCE_MAX = _C.ReduceType.MAX


def xla_device(n=None, devkind=None):
    """This thread's device (its replica's), or device n. One device serves both
    tensor kinds: once the lazy device for torch tensors is enabled (importing
    lazytrain.torch_backend.lazy_device), it is handed out as the torch device
    torch.device("lazytrain", n), which torch's `.to()`, `model.to()` and
    factories take and lazytrain's own `.to()` takes too; before that, as
    lazytrain's device 'cpu:<n>'."""
    lazy = sys.modules.get("lazytrain.torch_backend.lazy_device")
    if lazy is not None and lazy.enabled():
        return lazy.device(n)
    return _device(n)


def mark_step(wait=False):
    """Cuts the graph and runs it (asynchronously, the GIL released)."""
    _sync(wait)


def wait_device_ops(devices=None):
    _C.wait_device_ops()


def xrt_world_size():
    """Replicas in the job (processes x replicas per process)."""
    return _C._world_size()


world_size = xrt_world_size


def get_ordinal():
    return _C._ordinal()


def get_local_ordinal():
    return _C._local_ordinal()


def is_master_ordinal(local=True):
    """Local ordinal 0 (one per process) or, local=False, the job's global ordinal 0."""
    return _C._is_master_ordinal(bool(local))


def master_print(*args, sep=" ", end="\n", flush=True):
    """print() on the global master ordinal only."""
    if _C._is_master_ordinal(False):
        print(*args, sep=sep, end=end, flush=flush)


def rendezvous(tag, payload=b"", replicas=()):
    """Waits until every replica reached rendezvous(tag) (the GIL released).
    Payloads are not exchanged here: returns []."""
    if payload or replicas:
        raise NotImplementedError("rendezvous: payloads and replica subsets are not supported")
    _C._rendezvous(str(tag))
    return []


def mesh_reduce(tag, data, reduce_fn):
    """reduce_fn over every replica's `data` (a number) in ordinal order, on the host."""
    values = _C._mesh_gather(str(tag), float(data))
    return reduce_fn(values)


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """inputs (a tensor or a list of them) reduced over the replicas, times scale:
    traced into the graph as HLO all-reduce."""
    if groups:
        raise NotImplementedError("all_reduce: replica groups are not supported from Python yet")
    if isinstance(inputs, _C.Tensor):
        return _C.all_reduce(reduce_type, inputs, float(scale))
    return _C._all_reduce_list(reduce_type, list(inputs), float(scale))


def all_gather(value, dim=0, groups=None, pin_layout=True):
    if groups:
        raise NotImplementedError("all_gather: replica groups are not supported from Python yet")
    return _C.all_gather(value, dim)


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    """Every parameter's gradient becomes its mean over the replicas (one
    bucketed all-reduce); nothing with one replica, nor under SPMD (the
    compiler reduces what the layouts need). A parameter with a gradient on
    some replicas only counts as zeros where it has none, and every replica
    gets the mean (torch DDP's find_unused_parameters); one with a gradient on
    no replica keeps None. The replicas meet on the host to agree on which
    have one, so every replica must call this with the same parameters."""
    from ..runtime import is_spmd
    n = xrt_world_size()
    if n == 1 or is_spmd():
        return
    _C._reduce_gradients([p for g in optimizer.param_groups for p in g["params"]])


def optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None, pin_layout=True):
    """reduce_gradients, then ``optimizer.step(**optimizer_args)``, traced into the step's
    graph; barrier=True also marks the step."""
    reduce_gradients(optimizer)
    loss = optimizer.step(**(optimizer_args or {}))
    if barrier:
        mark_step()
    return loss


def save(data, file_or_path, master_only=True, global_master=False):
    """Saves a state dict (name -> tensor) as safetensors, on the master ordinal
    only (every replica meets first, so the values are final)."""
    from .._serialization import save as _save
    if xrt_world_size() > 1:
        rendezvous("xm.save")
    if not master_only or is_master_ordinal(local=not global_master):
        _save(data, os.fspath(file_or_path))
