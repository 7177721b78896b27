"""SGD with momentum and weight decay, torch.optim.SGD's semantics, per parameter:
    g <- g + wd * p;  buf <- momentum * buf + (1 - dampening) * g  (buf <- g at the
    parameter's first update);  g <- g + momentum * buf if nesterov else buf;  p <- p - lr * g
The learning rate (and the first update's dampening) are device data, so a
schedule never recompiles; the buffers start at zero on the parameter's device."""
from .. import _C
from .optimizer import Optimizer, _check_number, _on, _run_closure, _zero_state


class SGD(Optimizer):
    """torch.optim.SGD, with its arguments and defaults:
    ``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False)``.
    state[p]: "momentum_buffer" (p's shape and dtype) once p was updated with a
    momentum. ValueError as torch's for a negative lr, momentum or weight_decay,
    and for nesterov without momentum or with dampening."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if differentiable or fused:
            raise NotImplementedError("SGD: differentiable and fused are torch-only options")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=False,
                                      fused=None))

    def _check_group(self, g):
        _check_number("learning rate", g["lr"])
        _check_number("momentum value", g["momentum"])
        _check_number("weight_decay value", g["weight_decay"])
        if g["nesterov"] and (g["momentum"] <= 0 or g["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def step(self, closure=None):
        loss = _run_closure(closure)
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
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    first = buf is None
                    if first:
                        # Device data: the first update records the graph of the later ones.
                        buf = state["momentum_buffer"] = _zero_state(p)
                    # buf <- g at the parameter's own first update: dampening applies from its second one on.
                    keep = _on(p, _C.scalar_tensor, 1.0 if first else 1.0 - dampening)
                    # In place, as torch's buf.mul_().add_(): a step that fails keeps it.
                    new = buf.detach() * momentum + g * keep
                    buf.data = new if new.dtype == buf.dtype else new.to(buf.dtype)
                    g = g + buf * momentum if group["nesterov"] else buf.detach()
                new = p.detach() - g * lr
                p.data = new if new.dtype == p.dtype else new.to(p.dtype)
        return loss
