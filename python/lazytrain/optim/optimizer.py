"""Optimizer: param_groups as torch.optim.Optimizer holds them."""
from .. import _C


class Optimizer:
    """Parameters in groups (dicts with "params" and the hyper-parameters);
    a scheduler changes group["lr"], which the next step() reads."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = []
        seen = set()
        for g in groups:
            group = dict(self.defaults)
            group.update(g)
            group["params"] = list(group["params"])
            for p in group["params"]:
                if not isinstance(p, _C.Tensor):
                    raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
                if id(p) in seen:
                    raise ValueError("some parameters appear in more than one parameter group")
                seen.add(id(p))
            self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Drops every gradient (set_to_none) or sets it to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else _C._zeros(list(p.shape), p.grad.dtype)

    def step(self):
        raise NotImplementedError

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in g if k != "params"):
                lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"
