"""torch.autocast on the lazy device: `torch.autocast("lazytrain", dtype=torch.bfloat16)`
casts as CPU autocast does (torch's lists for the CPU, autocast_mode.cpp): matmuls,
linear, convolutions and sdpa in the autocast dtype; losses in float32; cat/stack
to the widest input dtype; every other op untouched (a fallthrough).

torch registers autocast kernels in C++ for CPU, CUDA, XLA and a few more, not
for PrivateUse1, so this module registers them from Python for the
AutocastPrivateUse1 key: each casts its floating-point tensor arguments (a cast
torch's autograd records, below this key) and calls the op again with the
autocast key excluded.
"""
import torch

_LOWER = ("conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear",
          "matmul", "conv_tbc", "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "prelu",
          "scaled_dot_product_attention", "_convolution")
_FP32 = ("binary_cross_entropy", "binary_cross_entropy_with_logits", "nll_loss", "nll_loss2d", "cross_entropy_loss",
         "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "soft_margin_loss", "margin_ranking_loss",
         "hinge_embedding_loss", "poisson_nll_loss", "cosine_embedding_loss", "triplet_margin_loss",
         "multi_margin_loss", "multilabel_margin_loss", "ctc_loss", "cdist", "prod", "trace")
_PROMOTE = ("cat", "stack", "index_copy")
_KEY = "AutocastPrivateUse1"
_libs = []


def _cast(x, dtype):
    if isinstance(x, torch.Tensor):
        return x.to(dtype) if x.is_floating_point() and x.dtype != dtype and x.device.type != "cpu" else x
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(v, dtype) for v in x)
    return x


def _excluded():
    return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1))


def _kernel(op, target):
    def run(*args, **kwargs):
        dtype = target() if callable(target) else target
        with _excluded():
            if dtype is not None:
                args, kwargs = _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return run


def _widest(*args, **kwargs):
    """cat/stack: the widest floating dtype among the tensors (None: leave them)."""
    tensors = [t for t in (args[0] if args else kwargs.get("tensors", ())) if isinstance(t, torch.Tensor)]
    dtypes = {t.dtype for t in tensors if t.is_floating_point()}
    return None if len(dtypes) < 2 else max(dtypes, key=lambda d: torch.finfo(d).bits)


def _promote(op):
    def run(*args, **kwargs):
        dtype = _widest(*args, **kwargs)
        with _excluded():
            if dtype is not None:
                args = (_cast(args[0], dtype), *args[1:])
            return op(*args, **kwargs)

    return run


def register(device_type):
    """Registers the kernels (once) for the renamed PrivateUse1 `device_type`."""
    if _libs:
        return
    everything = torch.library.Library("_", "IMPL")
    everything.fallback(torch.library.fallthrough_kernel, _KEY)
    aten = torch.library.Library("aten", "IMPL")
    ops = torch.ops.aten
    for names, make in ((_LOWER, lambda op: _kernel(op, lambda: torch.get_autocast_dtype(device_type))),
                        (_FP32, lambda op: _kernel(op, torch.float32)), (_PROMOTE, _promote)):
        for name in names:
            packet_name, _, overload = name.partition(".")
            packet = getattr(ops, packet_name, None)
            if packet is None:
                continue
            for o in ([overload] if overload else packet.overloads()):
                op = getattr(packet, o)
                if "out" in o:  # out= overloads keep the out tensor's dtype: not autocast by torch either
                    continue
                aten.impl(op, make(op), _KEY)
    _libs.extend([everything, aten])
