"""torch.compile(model, backend="lazytrain"): PyTorch models trained and run
through lazytrain's compiler (issue 54; docs/torch_compile.md).

Dynamo captures the model's graph, AOTAutograd makes its forward and backward
ATen graphs, and each is lowered op by op (lowering/) to lazytrain's ops and
compiled by lazytrain (traced once per signature, cached by the graph's hash).
Tensors cross through DLPack without copies where the layout allows.

The backend is registered with Dynamo on import and through the
`torch_dynamo_backends` entry point, so backend="lazytrain" works without
importing lazytrain first. torch is needed here only (an optional dependency).
Importing it also adds "lazytrain" to accelerate's DynamoBackend enum
(_accelerate.py), so transformers.Trainer takes
TrainingArguments(torch_compile=True, torch_compile_backend="lazytrain").
"""
from ._backend import lazytrain_backend
from ._common import UnsupportedInput
from ._lower_graph import LoweringError


def compile(model, **kwargs):
    """``torch.compile(model, backend="lazytrain", dynamic=False, **kwargs)``:
    static shapes, lazytrain's documented default."""
    import torch

    kwargs.setdefault("dynamic", False)
    return torch.compile(model, backend="lazytrain", **kwargs)


def device(index=None):
    """The lazy device for torch tensors, torch.device("lazytrain", index)
    (lazy_device/; the current replica's device by default). Calling it turns
    the lazy device on: lazytrain.core.xla_model.xla_device() hands out this
    torch device from then on."""
    from . import lazy_device

    return lazy_device.device(index)


def _register():
    from torch._dynamo import list_backends, register_backend

    if "lazytrain" not in list_backends(exclude_tags=()):
        register_backend(lazytrain_backend, name="lazytrain")
    from . import _accelerate

    _accelerate.register()


_register()

__all__ = ["LoweringError", "UnsupportedInput", "compile", "device", "lazytrain_backend"]
