"""AdamW: the C++ optimizer (optim/adamw.h, PyTorch's single-tensor semantics):
    p <- p * (1 - lr * wd);  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
    p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
(Loshchilov & Hutter, "Decoupled Weight Decay Regularization")."""
import math

from .. import _C
from .optimizer import Optimizer


class AdamW(Optimizer):
    """torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2).

    Groups may differ in weight_decay; lr, betas and eps are one for all groups
    (ValueError otherwise). Raises ValueError for an invalid lr, eps or beta,
    as torch does."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        for name, v in (("learning rate", lr), ("epsilon value", eps)):
            if not math.isfinite(v) or v < 0.0:
                raise ValueError(f"Invalid {name}: {v}")
        for i, b in enumerate(betas):
            if not math.isfinite(b) or not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        if amsgrad:
            raise NotImplementedError("AdamW(amsgrad=True) is not supported")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))
        first = self.param_groups[0]
        for g in self.param_groups[1:]:
            for key in ("lr", "betas", "eps"):
                if g[key] != first[key]:
                    raise ValueError(f"AdamW: every parameter group must share {key} here "
                                     f"(group 0 has {first[key]}, another {g[key]})")
        self._impl = _C._AdamW([(g["params"], float(g["weight_decay"])) for g in self.param_groups],
                               float(lr), float(betas[0]), float(betas[1]), float(eps))

    def _sync_lr(self):
        lr = self.param_groups[0]["lr"]
        if any(g["lr"] != lr for g in self.param_groups):
            raise ValueError("AdamW: every parameter group must share lr here")
        self._impl.set_lr(float(lr))

    def step(self, closure=None):
        """One update of every parameter that has a gradient (recorded lazily)."""
        loss = closure() if closure is not None else None
        self._sync_lr()
        self._impl.step()
        return loss

    def zero_grad(self, set_to_none=True):
        if set_to_none:
            self._impl.zero_grad()
        else:
            super().zero_grad(False)

    @property
    def step_count(self):
        return self._impl.step_count
