"""torch.optim.lr_scheduler.LambdaLR and Hugging Face transformers' schedules
(optimization.py: get_linear/cosine/constant_schedule_with_warmup,
get_scheduler), whose multipliers are the C++ ones (optim/schedules.h)."""
from .. import _C


class LambdaLR:
    """group["lr"] = base_lr * lr_lambda(last_epoch) for each group; lambda(0) is
    applied at construction, and step() advances one optimizer step."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        groups = optimizer.param_groups
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * len(groups)
        if len(self.lr_lambdas) != len(groups):
            raise ValueError(f"Expected {len(groups)} lr_lambdas, but got {len(self.lr_lambdas)}")
        for g in groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self):
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]

    def step(self):
        self.last_epoch += 1
        self._last_lr = self.get_lr()
        for g, lr in zip(self.optimizer.param_groups, self._last_lr):
            g["lr"] = lr

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {"base_lrs": list(self.base_lrs), "last_epoch": self.last_epoch,
                "_step_count": self.last_epoch + 1, "_last_lr": list(self._last_lr)}

    def load_state_dict(self, state):
        self.base_lrs = list(state["base_lrs"])
        self.last_epoch = int(state["last_epoch"])
        self._last_lr = list(state["_last_lr"])
        for g, lr in zip(self.optimizer.param_groups, self._last_lr):
            g["lr"] = lr


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    """Linear warm-up from 0, then linear decay to 0 at num_training_steps."""
    return LambdaLR(optimizer, lambda step: _C._linear_schedule_with_warmup(step, num_warmup_steps, num_training_steps),
                    last_epoch)


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5, last_epoch=-1):
    """Linear warm-up, then a cosine from 1 down to 0 (num_cycles = 0.5: one half cosine)."""
    return LambdaLR(optimizer, lambda step: _C._cosine_schedule_with_warmup(step, num_warmup_steps, num_training_steps,
                                                                            num_cycles), last_epoch)


def get_constant_schedule(optimizer, last_epoch=-1):
    return LambdaLR(optimizer, lambda _: 1.0, last_epoch)


def get_constant_schedule_with_warmup(optimizer, num_warmup_steps, last_epoch=-1):
    return LambdaLR(optimizer, lambda step: _C._constant_schedule_with_warmup(step, num_warmup_steps), last_epoch)


_SCHEDULES = {
    "linear": lambda o, w, t: get_linear_schedule_with_warmup(o, w, t),
    "cosine": lambda o, w, t: get_cosine_schedule_with_warmup(o, w, t),
    "constant": lambda o, w, t: get_constant_schedule(o),
    "constant_with_warmup": lambda o, w, t: get_constant_schedule_with_warmup(o, w),
}


def get_scheduler(name, optimizer, num_warmup_steps=0, num_training_steps=None):
    """transformers.get_scheduler for linear, cosine, constant, constant_with_warmup."""
    if name not in _SCHEDULES:
        raise ValueError(f"unknown scheduler type {name!r}; expected one of: {', '.join(_SCHEDULES)}")
    if name in ("linear", "cosine") and num_training_steps is None:
        raise ValueError(f"{name} requires `num_training_steps`, please provide that argument.")
    return _SCHEDULES[name](optimizer, num_warmup_steps, num_training_steps)
