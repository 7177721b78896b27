"""torch.nn.utils: gradient clipping."""
from .. import _C


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Scales the gradients of `parameters` in place so their global L2 norm is at
    most max_norm; returns that norm as a 0-d tensor (lazy: no sync). Parameters
    without a gradient are skipped (optim/clip_grad.h)."""
    if norm_type != 2.0:
        raise ValueError(f"clip_grad_norm_: only norm_type 2.0 is supported, got {norm_type}")
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return _C._zeros([], _C.dtype.float32)
    return _C.clip_grad_norm_(params, float(max_norm))
