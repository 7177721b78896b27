"""torch_xla.distributed.spmd (``xs``) on lazytrain (issue 34): lay tensors out
over a mesh of the job's devices and let the compiler do the rest::

    import numpy as np
    import lazytrain as lt
    import lazytrain.runtime as xr
    import lazytrain.distributed.spmd as xs

    xr.use_spmd(4)                                  # cpu:0 .. cpu:3
    n = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(n), (n // 2, 2), ("data", "model"))
    xs.mark_sharding(batch, mesh, ("data", None))   # the batch split by rows
    xs.mark_sharding(w, mesh, (None, "model"))      # w's columns over "model"

The same functions take torch tensors on the lazy device (issue 56: a
parameter or activation of a torch model moved to ``xm.xla_device()``); they
lay out the lazytrain tensor the torch tensor holds, so a torch model's step
is partitioned by the same compiler.

Every other value of the step gets its layout from sharding propagation; the
SPMD partitioner compiles one program that every device runs on its tiles,
with the collectives the layouts need (``lt._C._last_compiled_hlo()`` shows
it). A partition spec has one entry per tensor dimension: ``None`` (whole), a
mesh axis by name or index, or a tuple of them (split over their product,
major first). Tiles must be even (PyTorch/XLA pads uneven ones; lazytrain
raises, naming the dimension).
"""
import collections
import warnings

import numpy as np

from .. import _C

__all__ = ["Mesh", "ShardingSpec", "mark_sharding", "clear_sharding", "get_sharding_spec", "set_global_mesh", "get_global_mesh",
           "ColwiseParallel", "RowwiseParallel", "parallelize_module", "megatron_plan"]

_global_mesh = None


def set_global_mesh(mesh):
    """xs.set_global_mesh: the mesh FSDPv2 and others use when given none."""
    global _global_mesh
    _global_mesh = mesh


def get_global_mesh():
    return _global_mesh


class Mesh:
    """xs.Mesh(device_ids, mesh_shape, axis_names=None): `device_ids` (the
    job's global ordinals, each once) read row-major into `mesh_shape`;
    `axis_names` name its dimensions (default: their indices)."""

    def __init__(self, device_ids, mesh_shape, axis_names=None):
        ids_array = np.asarray(device_ids)
        if ids_array.size and ids_array.dtype.kind not in "iu":
            raise TypeError(f"Mesh: device_ids must be integer device ordinals, got {ids_array.reshape(-1).tolist()}")
        if not isinstance(mesh_shape, (tuple, list)) or not all(isinstance(s, (int, np.integer)) for s in mesh_shape):
            raise TypeError(f"Mesh: mesh_shape must be a tuple of ints, one per mesh axis, got {mesh_shape!r}")
        ids = [int(i) for i in ids_array.reshape(-1)]
        self.device_ids = np.asarray(ids)
        self.mesh_shape = tuple(int(s) for s in mesh_shape)
        self.axis_names = tuple(axis_names) if axis_names is not None else None
        names = [str(a) for a in axis_names] if axis_names is not None else []
        self._native = _C._Mesh(ids, list(self.mesh_shape), names)

    def size(self):
        return len(self.device_ids)

    def shape(self):
        """The axes and their sizes, in order."""
        names = self.axis_names if self.axis_names is not None else range(len(self.mesh_shape))
        return collections.OrderedDict(zip(names, self.mesh_shape))

    def get_logical_mesh(self):
        return self.device_ids.reshape(self.mesh_shape)

    def get_axis_name_idx(self, name):
        if self.axis_names is None or name not in self.axis_names:
            return None
        return self.axis_names.index(name)

    def get_op_sharding(self, partition_spec):
        """The layout `partition_spec` gives, as XLA's HLO text (``{devices=[2,1]0,1}``)."""
        return self._native.op_sharding(self._axes(partition_spec))

    def _axis(self, axis, entry):
        names = self._native.axis_names
        if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            if not 0 <= int(axis) < len(names):
                raise ValueError(f"partition_spec entry {entry!r}: mesh axis {axis} out of range for a mesh of {len(names)} axes")
            return names[int(axis)]
        if isinstance(axis, str):
            return axis
        raise ValueError(f"partition_spec entry {entry!r}: expected None, a mesh axis (name or index) or a tuple of them")

    def _axes(self, partition_spec):
        axes = []
        for entry in partition_spec:
            if entry is None:
                axes.append([])
            elif isinstance(entry, tuple):
                axes.append([self._axis(a, entry) for a in entry])
            else:
                axes.append([self._axis(entry, entry)])
        return axes


def _native(t, caller):
    """The lazytrain tensor `t` is or holds: itself, or a torch tensor's on
    the lazy device (its ``._lt``). torch is not imported here (lazytrain
    works without it)."""
    if isinstance(t, _C.Tensor):
        return t
    value = getattr(t, "_lt", None)
    if isinstance(value, _C.Tensor):
        return value
    device = getattr(t, "device", None)
    if device is not None and type(t).__module__.startswith("torch"):
        raise TypeError(f"{caller}: t is a torch tensor on {device}: lay out a tensor on the lazy device "
                        f"(move it there first: t.to(xm.xla_device())); lazytrain does not lay out {device} tensors")
    raise TypeError(f"{caller}: t must be a lazytrain tensor or a torch tensor on the lazy device, got {type(t).__name__}")


def mark_sharding(t, mesh, partition_spec):
    """xs.mark_sharding: lays `t` out over `mesh` as `partition_spec` says and
    returns it (the same tensor). `t` is a lazytrain tensor or a torch tensor
    on the lazy device (a parameter, an input, an activation: its lazytrain
    tensor is laid out; torch's autograd sees an identity). Data is cut into
    the tiles of this process's devices now; a pending value is annotated in
    the graph. TypeError for a tensor elsewhere (a CPU torch tensor)."""
    value = _native(t, "mark_sharding")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mark_sharding: mesh must be a lazytrain.distributed.spmd.Mesh, got {type(mesh).__name__}")
    if not isinstance(partition_spec, (tuple, list)):
        raise TypeError(f"mark_sharding: partition_spec must be a tuple of one entry per dimension (None, a mesh axis "
                        f"or a tuple of axes), got {partition_spec!r}")
    _C._mark_sharding(value, mesh._native, mesh._axes(partition_spec))
    return t


def clear_sharding(t):
    """xs.clear_sharding: `t` (lazytrain's or a torch tensor on the lazy
    device) whole again (its tiles assembled, or its annotation removed)."""
    _C._clear_sharding(_native(t, "clear_sharding"))
    return t


def get_sharding_spec(t):
    """The HLO text of `t`'s layout; '' when it is whole on every device
    (torch_xla's ``torch_xla._XLAC._get_xla_sharding_spec``). `t`: a
    lazytrain tensor or a torch tensor on the lazy device."""
    return _C._get_xla_sharding_spec(_native(t, "get_sharding_spec"))


class ShardingSpec:
    """xs.ShardingSpec(mesh, partition_spec): a layout to apply to tensors, as
    ``MpDeviceLoader(..., input_sharding=ShardingSpec(mesh, ("data", None)))``
    does to every tensor of each batch. A tensor of lower rank than the spec
    takes its first entries."""

    def __init__(self, mesh, partition_spec, minibatch=False):
        if minibatch:
            raise ValueError("ShardingSpec: minibatch=True (each host loading its own rows) is not supported")
        if not isinstance(mesh, Mesh):
            raise TypeError(f"ShardingSpec: mesh must be a lazytrain.distributed.spmd.Mesh, got {type(mesh).__name__}")
        if not isinstance(partition_spec, (tuple, list)):
            raise TypeError(f"ShardingSpec: partition_spec must be a tuple of one entry per dimension (None, a mesh axis "
                            f"or a tuple of axes), got {partition_spec!r}")
        self.mesh = mesh
        self.partition_spec = tuple(partition_spec)

    def apply(self, t):
        return mark_sharding(t, self.mesh, self.partition_spec[:t.dim()] + (None,) * max(0, t.dim() - len(self.partition_spec)))


# ---- tensor parallelism by annotation (torch.distributed.tensor.parallel's names) ----
class ColwiseParallel:
    """A linear layer's output features split over the axis (weight rows of
    nn.Linear's [out, in], bias too). ``weight_in_out=True`` for a [in, out]
    weight (GPT-2's Conv1D)."""

    def __init__(self, weight_in_out=False):
        self.weight_in_out = weight_in_out


class RowwiseParallel:
    """A linear layer's input features split over the axis (the bias stays whole)."""

    def __init__(self, weight_in_out=False):
        self.weight_in_out = weight_in_out


def megatron_plan(vocab_parallel=False):
    """Megatron's layout for the built-in BERT/RoBERTa, Llama and GPT-2 (its MLP):
    attention's query, key and value column-parallel, its output row-parallel;
    the MLP's up (and gate) column-, its down row-parallel (distributed/spmd.h).
    `vocab_parallel=True` also splits the [vocab, hidden] word embeddings and LM
    head (and BERT's decoder bias) by vocabulary: the logits stay split through
    the cross-entropy, combined by all-reduces of one value a token."""
    col, row = ColwiseParallel(), RowwiseParallel()
    plan = {
        "attention.self.query": col, "attention.self.key": col, "attention.self.value": col,
        "attention.output.dense": row, "intermediate.dense": col, "output.dense": row,
        "self_attn.q_proj": col, "self_attn.k_proj": col, "self_attn.v_proj": col, "self_attn.o_proj": row,
        "mlp.gate_proj": col, "mlp.up_proj": col, "mlp.down_proj": row,
        "mlp.c_fc": ColwiseParallel(weight_in_out=True), "mlp.c_proj": RowwiseParallel(weight_in_out=True),
    }
    if vocab_parallel:
        for module in ("embeddings.word_embeddings", "cls.predictions", "wte", "embed_tokens", "lm_head"):
            plan[module] = col
    return plan


def parallelize_module(module, mesh, parallelize_plan, axis="model"):
    """torch.distributed.tensor.parallel.parallelize_module over `mesh`'s
    `axis`: `module` is a lazytrain or a torch nn.Module (a torch one on the
    lazy device: ``model.to(xm.xla_device())`` first); `parallelize_plan`
    maps a module path suffix ("attention.self.query") to ColwiseParallel()
    or RowwiseParallel(); every matching module's weight and bias are laid out so (a dimension the axis size does not divide stays
    whole). Returns `module`. ValueError when no module matches any entry."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"parallelize_module: mesh must be a lazytrain.distributed.spmd.Mesh, got {type(mesh).__name__}")
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"parallelize_module: parallelize_plan must be a dict of module path -> ColwiseParallel() or "
                        f"RowwiseParallel(), got {type(parallelize_plan).__name__}")
    for suffix, style in parallelize_plan.items():
        if not isinstance(style, (ColwiseParallel, RowwiseParallel)):
            hint = " (an instance: add the parentheses)" if style in (ColwiseParallel, RowwiseParallel) else ""
            raise TypeError(f"parallelize_module: plan entry {suffix!r} is {style!r}: expected ColwiseParallel() or RowwiseParallel(){hint}")
    parts = mesh.mesh_shape[mesh._native.axis_index(axis)]
    matched = False
    for name, p in module.named_parameters():
        path, _, leaf = name.rpartition(".")
        for suffix, style in parallelize_plan.items():
            if path != suffix and not path.endswith("." + suffix):
                continue
            matched = True
            colwise = isinstance(style, ColwiseParallel)
            if leaf == "weight" and p.dim() == 2:
                d = 0 if colwise != style.weight_in_out else 1
            elif leaf == "bias" and colwise:
                d = 0
            else:
                break
            if p.shape[d] % parts == 0:
                spec = [None] * p.dim()
                spec[d] = axis
                mark_sharding(p, mesh, tuple(spec))
            else:
                warnings.warn(f"parallelize_module: {name} {list(p.shape)} stays whole: dimension {d} ({p.shape[d]}) "
                              f"does not divide into {parts} tiles of axis '{axis}'", stacklevel=2)
            break
    if not matched:
        raise ValueError(f"parallelize_module: no module of the model matches the plan ({sorted(parallelize_plan)}): check its module paths")
    return module
