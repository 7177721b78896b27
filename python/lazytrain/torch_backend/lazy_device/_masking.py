"""transformers' attention masks on the lazy device without a host read per
step.

transformers skips building an SDPA mask when the 2-D padding mask is all
ones, and finds out with `padding_mask.all()`: a host read that waits for the
step in flight, so tracing step n+1 could no longer overlap executing step n.
transformers asks `is_tracing(padding_mask)` first and skips that shortcut
for a traced tensor (torch.compile, torch.jit, torchax under jax.jit); a
tensor on the lazy device is traced too, so `is_tracing` says so for it. The
mask is then always built: the same values, no read."""
from ._on_import import patch_on_import

_MODULE = "transformers.masking_utils"


def _patch(module):
    original = module.is_tracing
    if getattr(original, "_lazytrain_device", False):
        return

    def is_tracing(tensor=None):
        device = getattr(tensor, "device", None)
        return (device is not None and device.type == "lazytrain") or original(tensor)

    is_tracing._lazytrain_device = True
    module.is_tracing = is_tracing


def install():
    """transformers.masking_utils.is_tracing answers True for lazy tensors
    (now, or when transformers loads the module). Idempotent."""
    patch_on_import(_MODULE, _patch)
