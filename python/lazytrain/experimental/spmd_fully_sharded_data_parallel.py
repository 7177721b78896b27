"""PyTorch/XLA's FSDPv2 on lazytrain (issue 34): fully sharded data parallelism
as SPMD annotations::

    import lazytrain.distributed.spmd as xs
    from lazytrain.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

    mesh = xs.Mesh(np.arange(n), (n, 1), ("fsdp", "model"))
    model = FSDPv2(model, mesh)                     # every parameter split over "fsdp"
    loader = pl.MpDeviceLoader(data, lt.device(), input_sharding=xs.ShardingSpec(mesh, ("fsdp", None)))

Each parameter is split along its largest dimension that the "fsdp" axis
divides (a parameter no dimension of which divides stays whole; lazytrain
needs even tiles, where PyTorch/XLA pads). Each parameter belongs to a unit:
one element of a module list (a transformer layer, "bert.encoder.layer.3"),
or the root (embeddings, pooler, heads). The compiler then gathers a unit's
weights in one all-gather before their use in the forward and again in the
backward (the gathered copies live only around their use), and
reduce-scatters the unit's gradients in one; the optimizer updates the local
tiles only.

The same class wraps a torch ``nn.Module`` on the lazy device (issue 56:
``model.to(xm.xla_device())`` first, as torch_xla requires): it then returns a
torch ``nn.Module`` (so torch.optim, ``.train()`` and ``state_dict()`` see
torch's module, keys under ``module.``), whose parameters' lazytrain tensors
get the same layouts and units.
"""
import sys
import warnings

from .. import _C, nn
from ..distributed import spmd as xs

__all__ = ["SpmdFullyShardedDataParallel", "fsdp_partition_spec"]


def fsdp_partition_spec(shape, mesh, axis="fsdp"):
    """The spec FSDPv2 gives a parameter of `shape` (see the module's docstring)."""
    parts = mesh.mesh_shape[mesh._native.axis_index(axis)]
    spec = [None] * len(shape)
    best = None
    for d, size in enumerate(shape):
        if size % parts == 0 and (best is None or size > shape[best]):
            best = d
    if best is not None:
        spec[best] = axis
    return tuple(spec)


def _is_torch_module(module):
    torch = sys.modules.get("torch")  # never imported here: lazytrain works without torch
    return torch is not None and isinstance(module, torch.nn.Module)


def _check(mesh, auto_wrap_policy):
    if auto_wrap_policy is not None:
        raise ValueError("SpmdFullyShardedDataParallel: auto_wrap_policy is not supported (every parameter is sharded)")
    mesh = mesh if mesh is not None else xs.get_global_mesh()
    if mesh is None:
        raise ValueError("SpmdFullyShardedDataParallel: no mesh: pass mesh= or call xs.set_global_mesh(mesh) first")
    if not isinstance(mesh, xs.Mesh):
        raise TypeError(f"SpmdFullyShardedDataParallel: mesh must be a lazytrain.distributed.spmd.Mesh, got {type(mesh).__name__}")
    if "fsdp" not in (mesh.axis_names or ()):
        raise ValueError(f"SpmdFullyShardedDataParallel: the mesh has no 'fsdp' axis (its axes: {mesh.axis_names})")
    return mesh


def _setup(wrapper, module, mesh, shard_output, auto_wrap_policy):
    """Both faces' __init__ after their base class's: checks, keeps, and lays out `module`."""
    mesh = _check(mesh, auto_wrap_policy)
    wrapper.module = module
    wrapper._mesh = mesh
    wrapper._shard_output = shard_output
    _shard_parameters(module, mesh)


def _callers_stacklevel():
    """warnings' stacklevel of the first frame outside this file (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    return level


def _shard_parameters(module, mesh):
    """Lays out every parameter of `module` (lazytrain's or torch's) over the
    "fsdp" axis, naming its unit."""
    parts = mesh.mesh_shape[mesh._native.axis_index("fsdp")]
    for name, p in module.named_parameters():
        try:
            value = xs._native(p, "SpmdFullyShardedDataParallel")
        except TypeError:
            raise TypeError(f"SpmdFullyShardedDataParallel: parameter {name} is on {p.device}: move the model to the "
                            f"lazy device first (model.to(xm.xla_device()))") from None
        spec = fsdp_partition_spec(tuple(p.shape), mesh)
        if p.dim() > 0 and all(entry is None for entry in spec):
            warnings.warn(f"SpmdFullyShardedDataParallel: {name} {list(p.shape)} stays whole: no dimension divides into "
                          f"{parts} tiles of axis 'fsdp'", stacklevel=_callers_stacklevel())
        # The layout names the parameter's unit (one transformer layer, or the root): the
        # compiler gathers a unit's parameters in one all-gather and reduce-scatters its gradients in one.
        _C._mark_sharding(value, mesh._native, mesh._axes(spec), _C._fsdp_unit(name))


class _EitherFace(type):
    """isinstance(w, SpmdFullyShardedDataParallel) holds for the torch face too."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or (_torch_class is not None and isinstance(obj, _torch_class))


class SpmdFullyShardedDataParallel(nn.Module, metaclass=_EitherFace):
    """torch_xla's SpmdFullyShardedDataParallel(module, mesh=None,
    shard_output=None): shards `module`'s parameters over `mesh`'s "fsdp"
    axis (mesh defaults to ``xs.get_global_mesh()``) and calls it;
    ``shard_output(output, mesh)``, when given, lays the output out.

    `module` is a lazytrain nn.Module, or a torch nn.Module whose parameters
    are on the lazy device: then the wrapper is a torch nn.Module (see the
    module's docstring; isinstance(w, SpmdFullyShardedDataParallel) holds). ValueError: no mesh, no "fsdp" axis, an
    auto_wrap_policy; TypeError: a torch parameter elsewhere than the lazy device."""

    def __new__(cls, module=None, *args, **kwargs):
        if cls is SpmdFullyShardedDataParallel and _is_torch_module(module):
            return _torch_wrapper()(module, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, module, mesh=None, shard_output=None, auto_wrap_policy=None):
        super().__init__()
        _setup(self, module, mesh, shard_output, auto_wrap_policy)

    def forward(self, *args, **kwargs):
        output = self.module(*args, **kwargs)
        if self._shard_output is not None:
            self._shard_output(output, self._mesh)
        return output


_torch_class = None


def _torch_wrapper():
    """FSDPv2 as a torch nn.Module (made on first use: torch is optional)."""
    global _torch_class
    if _torch_class is None:
        import torch

        class SpmdFullyShardedDataParallel(torch.nn.Module):  # noqa: F811 (torch's face of the class above)
            __doc__ = globals()["SpmdFullyShardedDataParallel"].__doc__

            def __init__(self, module, mesh=None, shard_output=None, auto_wrap_policy=None):
                super().__init__()
                _setup(self, module, mesh, shard_output, auto_wrap_policy)

            forward = globals()["SpmdFullyShardedDataParallel"].forward

        SpmdFullyShardedDataParallel.__module__ = __name__
        SpmdFullyShardedDataParallel.__qualname__ = "SpmdFullyShardedDataParallel"
        _torch_class = SpmdFullyShardedDataParallel
    return _torch_class
