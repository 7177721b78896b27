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

# torch_xla names its reduce types by strings ('sum', ...): both are taken.
_REDUCE_NAMES = {"sum": REDUCE_SUM, "mul": REDUCE_MUL, "min": REDUCE_MIN, "max": REDUCE_MAX}


def _reduce_type(reduce_type):
    if isinstance(reduce_type, str):
        try:
            return _REDUCE_NAMES[reduce_type]
        except KeyError:
            raise ValueError(f"all_reduce: reduce type {reduce_type!r}: expected one of "
                             f"{sorted(_REDUCE_NAMES)}") from None
    return reduce_type


def _lazy_tensor_type():
    """LazyTensor (torch tensors on the lazy device) when that device is loaded, else None:
    lazytrain never imports torch itself."""
    lazy = sys.modules.get("lazytrain.torch_backend.lazy_device")
    return lazy.LazyTensor if lazy is not None else None


def _has_torch_tensor(data):
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if isinstance(data, torch.Tensor):
        return True
    if isinstance(data, dict):
        return any(_has_torch_tensor(v) for v in data.values())
    if isinstance(data, (list, tuple)):
        return any(_has_torch_tensor(v) for v in data)
    return False


def _to_cpu(data):
    """torch_xla's _maybe_convert_to_cpu: every torch tensor of `data` (nested in
    dicts, lists, tuples) on the CPU (a device tensor read: synchronises)."""
    import torch
    if isinstance(data, torch.Tensor):
        if data.device.type == "cpu":
            return data
        cpu = data.detach().cpu()
        return torch.nn.Parameter(cpu, data.requires_grad) if isinstance(data, torch.nn.Parameter) else cpu
    if isinstance(data, dict):
        items = [(k, _to_cpu(v)) for k, v in data.items()]
        try:
            out = type(data)(items)
        except TypeError:
            return dict(items)
        if hasattr(data, "_metadata"):  # a state_dict's OrderedDict carries its modules' versions
            out._metadata = data._metadata
        return out
    if isinstance(data, list):
        return [_to_cpu(v) for v in data]
    if isinstance(data, tuple):
        values = [_to_cpu(v) for v in data]
        return type(data)(*values) if hasattr(data, "_fields") else type(data)(values)
    return data


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
    Payloads are not exchanged here: returns [] (with one replica and a payload,
    [payload], as torch_xla)."""
    if payload and not replicas and xrt_world_size() == 1:
        _C._rendezvous(str(tag))
        return [payload]
    if payload or replicas:
        raise NotImplementedError("rendezvous: payloads and replica subsets are not supported")
    _C._rendezvous(str(tag))
    return []


def mesh_reduce(tag, data, reduce_fn):
    """reduce_fn over every replica's `data` in ordinal order, on the host. A
    number is gathered from every replica; torch tensors (nested in dicts,
    lists, tuples) are read to the CPU first, as torch_xla does: with one
    replica, reduce_fn([data on the CPU]); across replicas only numbers."""
    if _has_torch_tensor(data):
        if xrt_world_size() > 1:
            raise NotImplementedError("mesh_reduce: torch tensors across replicas are not supported yet "
                                      "(pass a number, e.g. loss.item())")
        _C._rendezvous(str(tag))
        return reduce_fn([_to_cpu(data)])
    values = _C._mesh_gather(str(tag), float(data))
    return reduce_fn(values)


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """inputs (a tensor or a list of them) reduced over the replicas, times scale:
    traced into the graph as HLO all-reduce. reduce_type is REDUCE_SUM etc. or
    torch_xla's string ('sum', 'mul', 'min', 'max'). Torch tensors on the lazy
    device are taken too: one gives a new tensor, a list is reduced in place
    and returned, as torch_xla does."""
    if groups:
        raise NotImplementedError("all_reduce: replica groups are not supported from Python yet")
    reduce_type = _reduce_type(reduce_type)
    lazy_tensor = _lazy_tensor_type()
    if lazy_tensor is not None:
        if isinstance(inputs, lazy_tensor):
            return lazy_tensor(_C.all_reduce(reduce_type, inputs._lt, float(scale)))
        if not isinstance(inputs, _C.Tensor) and any(isinstance(t, lazy_tensor) for t in inputs):
            return _all_reduce_torch_list(lazy_tensor, reduce_type, inputs, float(scale))
    if isinstance(inputs, _C.Tensor):
        return _C.all_reduce(reduce_type, inputs, float(scale))
    return _C._all_reduce_list(reduce_type, list(inputs), float(scale))


def _all_reduce_torch_list(lazy_tensor, reduce_type, inputs, scale):
    import torch
    for t in inputs:
        if not isinstance(t, lazy_tensor):
            raise TypeError(f"all_reduce: a list of tensors on the lazytrain device, got one on {t.device}")
    with torch.no_grad():
        for t in inputs:
            t.copy_(lazy_tensor(_C.all_reduce(reduce_type, t._lt, scale)))
    return inputs


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
    have one, so every replica must call this with the same parameters.
    Parameters are lazytrain Tensors or torch tensors on the lazy device (a
    torch optimizer's); a torch parameter's reduced gradient is written into
    its .grad in place (torch_xla's all-reduce of the gradients is in place)."""
    from ..runtime import is_spmd
    n = xrt_world_size()
    if n == 1 or is_spmd():
        return
    params = [p for g in optimizer.param_groups for p in g["params"]]
    lazy_tensor = _lazy_tensor_type()
    if lazy_tensor is not None and any(isinstance(p, lazy_tensor) for p in params):
        _reduce_torch_gradients(lazy_tensor, params)
        return
    _C._reduce_gradients(params)


def _reduce_torch_gradients(lazy_tensor, params):
    """reduce_gradients for torch parameters on the lazy device: lazytrain's
    reduction runs on stand-ins (detached aliases of the parameters holding
    their gradients' values), whose results go back into the torch grads."""
    import torch
    holders = []
    for p in params:
        if not isinstance(p, lazy_tensor):
            raise TypeError(f"reduce_gradients: a parameter on {p.device} among parameters on the lazytrain device; "
                            "move the model with model.to(xm.xla_device()) before making its optimizer")
        holder = _C._detach_alias(p._lt)
        if p.grad is not None:
            holder.grad = p.grad._lt
        holders.append(holder)
    _C._reduce_gradients(holders)
    with torch.no_grad():
        for p, holder in zip(params, holders):
            reduced = holder.grad
            if reduced is None:
                continue  # a gradient on no replica stays None
            if p.grad is None:
                p.grad = lazy_tensor(reduced)  # unused here, used elsewhere: the mean counts zeros here
            else:
                p.grad.copy_(lazy_tensor(reduced))


def optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None, pin_layout=True):
    """reduce_gradients, then ``optimizer.step(**optimizer_args)``, traced into the step's
    graph; barrier=True also marks the step."""
    reduce_gradients(optimizer)
    loss = optimizer.step(**(optimizer_args or {}))
    if barrier:
        mark_step()
    return loss


def save(data, file_or_path, master_only=True, global_master=False):
    """Saves `data` on the master ordinal only (every replica meets first, so
    the values are final). A state dict of lazytrain Tensors (name -> tensor)
    is written as safetensors; data holding torch tensors (a state_dict of a
    model on the lazy device, nested dicts, lists) as torch_xla does: every
    tensor moved to the CPU, then torch.save, so plain torch.load reads it."""
    if xrt_world_size() > 1:
        rendezvous("xm.save")
    if master_only and not is_master_ordinal(local=not global_master):
        return
    if _has_torch_tensor(data):
        import torch
        torch.save(_to_cpu(data), file_or_path)
        return
    from .._serialization import save as _save
    _save(data, os.fspath(file_or_path))
