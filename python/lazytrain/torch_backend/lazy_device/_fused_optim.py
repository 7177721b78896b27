"""torch.optim's fused kernels on the lazy device: `fused=True` in AdamW,
Adam and SGD calls `aten::_fused_adamw_`, `_fused_adam_` and `_fused_sgd_`
(torch allows fused on a PrivateUse1 device). Each is recorded here as the
per-parameter update its CPU kernel computes, in torch ops on the
LazyTensors, so the whole update joins the step's graph. The step counts
stay on the device (torch keeps a fused optimizer's state["step"] there) and
the bias corrections are computed from them in the graph: no host read.

GradScaler's `grad_scale` / `found_inf` (mixed precision on CUDA) are refused
by name rather than half-implemented."""
import torch

from .._lower_graph import LoweringError

aten = torch.ops.aten


def _no_scaler(func, kwargs):
    if kwargs.get("grad_scale") is not None or kwargs.get("found_inf") is not None:
        from ._dispatch import user_line
        raise LoweringError(f"lazytrain device: {func} with grad_scale/found_inf (torch.amp.GradScaler) is not "
                            f"supported; train without the scaler (float32 or bfloat16 need none), at {user_line()}")


def _adam(decoupled):
    """torch's fused Adam (decoupled=False) or AdamW, per parameter:
    g' = g (-g with maximize) (+ wd p for Adam); p' = p (1 - lr wd) for AdamW;
    m = lerp(m, g', 1 - b1); v = b2 v + (1 - b2) g'^2; v_max = max(v_max, v);
    p = p' - lr / (1 - b1^t) * m / (sqrt(v or v_max) / sqrt(1 - b2^t) + eps)."""

    def run(func, args, kwargs):
        _no_scaler(func, kwargs)
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = args[:6]
        lr, beta1, beta2 = kwargs["lr"], kwargs["beta1"], kwargs["beta2"]
        wd, eps, amsgrad, maximize = kwargs["weight_decay"], kwargs["eps"], kwargs["amsgrad"], kwargs["maximize"]
        with torch.no_grad():
            for i, p in enumerate(params):
                g = -grads[i] if maximize else grads[i]
                value = p
                if wd != 0:
                    if decoupled:
                        value = p * (1 - lr * wd)
                    else:
                        g = g + p * wd
                exp_avgs[i].lerp_(g, 1 - beta1)
                exp_avg_sqs[i].mul_(beta2).addcmul_(g, g, value=1 - beta2)
                second = exp_avg_sqs[i]
                if amsgrad:
                    torch.maximum(max_exp_avg_sqs[i], second, out=max_exp_avg_sqs[i])
                    second = max_exp_avg_sqs[i]
                step = steps[i]  # on the device: the bias corrections are graph values, not host numbers
                step_size = lr / (1 - torch.pow(beta1, step))
                denom = second.sqrt() / (1 - torch.pow(beta2, step)).sqrt() + eps
                p.copy_(value - step_size * exp_avgs[i] / denom)

    return run


def _sgd(func, args, kwargs):
    """torch's fused SGD, per parameter: g' = g (-g with maximize) + wd p;
    buf = g' at the first step, else momentum buf + (1 - dampening) g';
    d = g' + momentum buf (nesterov) or buf (momentum) or g'; p = p - lr d."""
    _no_scaler(func, kwargs)
    params, grads, buffers = args[:3]
    lr, wd, momentum = kwargs["lr"], kwargs["weight_decay"], kwargs["momentum"]
    dampening, nesterov, maximize, first = (kwargs["dampening"], kwargs["nesterov"], kwargs["maximize"],
                                            kwargs["is_first_step"])
    with torch.no_grad():
        for i, p in enumerate(params):
            g = -grads[i] if maximize else grads[i]
            if wd != 0:
                g = g + p * wd
            if momentum != 0:
                buf = buffers[i]
                if first:
                    buf.copy_(g)
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g + buf * momentum if nesterov else buf
            p.sub_(g * lr)


FUSED_OPTIMIZERS = {
    aten._fused_adam_.default: _adam(False),
    aten._fused_adam_.tensor_lr: _adam(False),
    aten._fused_adamw_.default: _adam(True),
    aten._fused_adamw_.tensor_lr: _adam(True),
    aten._fused_sgd_.default: _sgd,
    aten._fused_sgd_.tensor_lr: _sgd,
}
