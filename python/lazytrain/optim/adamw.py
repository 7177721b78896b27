"""AdamW with torch.optim.AdamW's semantics (single-tensor path), per parameter:
    t <- t + 1  (the parameter's own step count, torch's state["step"])
    p <- p * (1 - lr * wd);  m <- m + (1 - b1) (g - m);  v <- b2 v + (1 - b2) g^2
    v_max <- max(v_max, v) (amsgrad; then v_max replaces v below)
    p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
(Loshchilov & Hutter, "Decoupled Weight Decay Regularization"). Numbers that
change between steps (lr, the bias corrections) enter the graph as device data,
so a training loop compiles once whatever the schedule does."""
from .. import _C
from .optimizer import Optimizer, _check_number, _on, _run_closure, _zero_state


class AdamW(Optimizer):
    """torch.optim.AdamW, with its arguments and defaults:
    ``AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *, maximize=False)``.

    Each group has its own lr, betas, eps, weight_decay, amsgrad and maximize.
    state[p] (made at p's first update, as torch): "step" (float32 0-d),
    "exp_avg", "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq" (p's shape and
    dtype). A parameter without a gradient is skipped and its step count
    stays. ValueError for an invalid lr, eps, beta or weight_decay, as torch;
    NotImplementedError for capturable, differentiable and fused (foreach is
    accepted: the update is one lazy graph either way)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        if capturable or differentiable or fused:
            raise NotImplementedError("AdamW: capturable, differentiable and fused are CUDA/torch.compile options; "
                                      "lazytrain's update is always one lazy graph")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=False, differentiable=False,
                                      fused=None, decoupled_weight_decay=True))
        self._host_steps = {}  # id(p) -> (the state's "step" tensor, its value): no device read per step
        self._step_calls = 0

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        # The moments are made now, not at the first step (state[p] still fills
        # then, as torch's): made during step 1, they would be newer than that
        # step's other tensors, the step graph's outputs would come in another
        # order than in step 2, and the loop would compile twice.
        ready = self.__dict__.setdefault("_ready", {})
        for p in self.param_groups[-1]["params"]:
            if p not in self.state:
                ready.setdefault(id(p), (_zero_state(p), _zero_state(p)))

    def _check_group(self, g):
        _check_number("learning rate", g["lr"])
        _check_number("epsilon value", g["eps"])
        betas = tuple(g["betas"])
        for i, b in enumerate(betas):
            if not isinstance(b, (int, float)) or not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        _check_number("weight_decay value", g["weight_decay"])

    def _step_of(self, p, state):
        mirror = self._host_steps.get(id(p))
        if mirror is not None and mirror[0] is state["step"]:
            return mirror[1]
        return int(float(state["step"]))  # set from outside (load_state_dict, by hand): read once

    def _loaded(self):
        self._host_steps = {}
        self._ready = {k: v for k, v in self._ready.items() if not any(
            id(p) == k and p in self.state for g in self.param_groups for p in g["params"])}

    def step(self, closure=None):
        """One update of every parameter that has a gradient (recorded lazily)."""
        loss = _run_closure(closure)
        self._step_call()
        scalars = {}

        def scalar(p, value):
            key = (str(p.device), value)
            if key not in scalars:
                scalars[key] = _on(p, _C.scalar_tensor, value)
            return scalars[key]

        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = float(group["lr"]), group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.detach()
                if group["maximize"]:
                    g = -g
                state = self.state[p]
                if not state:
                    state["step"] = scalar(p, 0.0)
                    self._host_steps[id(p)] = (state["step"], 0)
                    state["exp_avg"], state["exp_avg_sq"] = self._ready.pop(id(p), None) or (
                        _zero_state(p), _zero_state(p))
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _zero_state(p)
                elif group["amsgrad"] and "max_exp_avg_sq" not in state:
                    state["max_exp_avg_sq"] = _zero_state(p)
                t = self._step_of(p, state) + 1
                state["step"] = scalar(p, float(t))
                self._host_steps[id(p)] = (state["step"], t)
                param = p.detach()
                if wd != 0:
                    param = param * scalar(p, 1.0 - lr * wd)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                m = exp_avg.detach() + (g - exp_avg.detach()) * (1.0 - beta1)
                v = exp_avg_sq.detach() * beta2 + (g * g) * (1.0 - beta2)
                exp_avg.data = _as(m, exp_avg)
                exp_avg_sq.data = _as(v, exp_avg_sq)
                if group["amsgrad"]:
                    vmax = state["max_exp_avg_sq"]
                    vmax.data = _as(_C.maximum(vmax.detach(), exp_avg_sq.detach()), vmax)
                    v = vmax.detach()
                bias_correction2_sqrt = scalar(p, (1.0 - beta2 ** t) ** 0.5)
                step_size = scalar(p, lr / (1.0 - beta1 ** t))
                denom = v.sqrt() / bias_correction2_sqrt + eps
                p.data = _as(param - (exp_avg.detach() / denom) * step_size, p)
        return loss

    def _step_call(self):
        self._step_calls += 1

    def _pack_state(self, param, state):
        packed = dict(state)
        if "step" in packed and not isinstance(packed["step"], _C.Tensor):
            packed["step"] = _on(param, _C.scalar_tensor, float(packed["step"]))
        return packed

    @property
    def step_count(self):
        """The number of step() calls."""
        return self._step_calls


def _as(value, like):
    """`value` in `like`'s dtype (a float32 scalar may promote a bf16 value)."""
    return value if value.dtype == like.dtype else value.to(like.dtype)

