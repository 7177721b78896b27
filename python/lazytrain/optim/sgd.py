"""SGD with momentum and weight decay, torch.optim.SGD's semantics:
    g <- g + wd * p;  buf <- momentum * buf + (1 - dampening) * g  (buf <- g at the first step)
    g <- g + momentum * buf if nesterov else buf;  p <- p - lr * g
The learning rate (and the first step's dampening) are device data, so a
schedule never recompiles; the moments start at zero on the parameter's device."""
from .. import _C
from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))
        self.state = {}
        self._steps = 0

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        self._steps += 1
        for group in self.param_groups:
            momentum, dampening, wd = group["momentum"], group["dampening"], group["weight_decay"]
            lr = None
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                g = g.detach()
                if lr is None:
                    lr = _on(p, _C.scalar_tensor, float(group["lr"]))
                if group["maximize"]:
                    g = -g
                if wd != 0:
                    g = g + p.detach() * wd
                if momentum != 0:
                    state = self.state.setdefault(id(p), {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        # Device data, as AdamW's moments: a failed first step gives it back.
                        buf = state["momentum_buffer"] = _on(p, _C._zeros_data, list(p.shape), p.dtype)
                    # buf <- g at the first step: dampening applies from the second one on.
                    keep = _on(p, _C.scalar_tensor, 1.0 if self._steps == 1 else 1.0 - dampening)
                    # In place, as torch's buf.mul_().add_(): a step that fails keeps it.
                    buf.data = buf.detach() * momentum + g * keep
                    g = g + buf * momentum if group["nesterov"] else buf
                p.data = p.detach() - g * lr
        return loss


def _on(p, make, *args):
    guard = _C._DeviceGuard(p.device)
    try:
        return make(*args)
    finally:
        del guard
