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
"""
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


class SpmdFullyShardedDataParallel(nn.Module):
    """torch_xla's SpmdFullyShardedDataParallel(module, mesh=None,
    shard_output=None): shards `module`'s parameters over `mesh`'s "fsdp"
    axis (mesh defaults to ``xs.get_global_mesh()``) and calls it;
    ``shard_output(output, mesh)``, when given, lays the output out."""

    def __init__(self, module, mesh=None, shard_output=None, auto_wrap_policy=None):
        super().__init__()
        if auto_wrap_policy is not None:
            raise ValueError("SpmdFullyShardedDataParallel: auto_wrap_policy is not supported (every parameter is sharded)")
        mesh = mesh if mesh is not None else xs.get_global_mesh()
        if mesh is None:
            raise ValueError("SpmdFullyShardedDataParallel: no mesh: pass mesh= or call xs.set_global_mesh(mesh) first")
        if "fsdp" not in (mesh.axis_names or ()):
            raise ValueError(f"SpmdFullyShardedDataParallel: the mesh has no 'fsdp' axis (its axes: {mesh.axis_names})")
        self.module = module
        self._mesh = mesh
        self._shard_output = shard_output
        for name, p in module.named_parameters():
            spec = fsdp_partition_spec(tuple(p.shape), mesh)
            if p.dim() > 0 and all(entry is None for entry in spec):
                parts = mesh.mesh_shape[mesh._native.axis_index("fsdp")]
                warnings.warn(f"SpmdFullyShardedDataParallel: {name} {list(p.shape)} stays whole: no dimension divides into "
                              f"{parts} tiles of axis 'fsdp'", stacklevel=2)
            # The layout names the parameter's unit (one transformer layer, or the root): the
            # compiler gathers a unit's parameters in one all-gather and reduce-scatters its gradients in one.
            _C._mark_sharding(p, mesh._native, mesh._axes(spec), _C._fsdp_unit(name))

    def forward(self, *args, **kwargs):
        output = self.module(*args, **kwargs)
        if self._shard_output is not None:
            self._shard_output(output, self._mesh)
        return output
