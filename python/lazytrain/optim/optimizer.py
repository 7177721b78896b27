"""Optimizer: torch.optim.Optimizer's param_groups, state, state_dict,
load_state_dict and add_param_group, with torch's formats and errors."""
import collections.abc
import copy
import math
import warnings

from .. import _C


class _ParamState(collections.abc.MutableMapping):
    """torch's ``optimizer.state``: a defaultdict(dict) keyed by the parameter
    itself (by identity: a Tensor's == is elementwise)."""

    def __init__(self):
        self._entries = {}

    def __getitem__(self, param):
        entry = self._entries.get(id(param))
        if entry is None:
            entry = self._entries[id(param)] = (param, {})
        return entry[1]

    def __setitem__(self, param, value):
        self._entries[id(param)] = (param, value)

    def __delitem__(self, param):
        del self._entries[id(param)]

    def __contains__(self, param):
        return id(param) in self._entries

    def __iter__(self):
        return iter([p for p, _ in self._entries.values()])

    def __len__(self):
        return len(self._entries)

    def __repr__(self):
        return repr({f"<{list(p.shape)} {p.dtype}>": s for p, s in self._entries.values()})


class Optimizer:
    """Parameters in groups (dicts with "params" and the hyper-parameters,
    each group's own, defaulting to the constructor's); a scheduler changes
    group["lr"], which the next step() reads. ``state[p]`` holds each
    parameter's tensors once it was stepped.

    Errors as torch's: TypeError for params that are a Tensor, a set or hold
    something else than Tensors; ValueError for an empty list, a parameter in
    two groups, or a non-leaf Tensor."""

    def __init__(self, params, defaults):
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        self.defaults = dict(defaults)
        self.state = _ParamState()
        self.param_groups = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        """Adds a group (a dict with "params"; missing hyper-parameters take the
        defaults), as torch.optim.Optimizer.add_param_group."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        self._check_group(group)
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def _check_group(self, group):
        """Subclasses check a group's hyper-parameters (ValueError)."""

    # ---- checkpoints ----
    def state_dict(self):
        """torch's format: {"state": {index: {name: value}}, "param_groups":
        [{hyper-parameters..., "params": [index, ...]}]}, parameters numbered
        in group order from 0. Tensors are the optimizer's own (not copies)."""
        index, groups, start = {}, [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = list(range(start, start + len(g["params"])))
            for p, i in zip(g["params"], ids):
                index.setdefault(id(p), i)
            packed["params"] = ids
            start += len(ids)
            groups.append(packed)
        state = {index[id(p)]: self._pack_state(p, s) for p, s in self.state._entries.values() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def _pack_state(self, param, state):
        return dict(state)

    def load_state_dict(self, state_dict):
        """Loads a state_dict() (this optimizer's or torch's: its tensors may be
        lazytrain or torch tensors, numpy arrays or numbers). Floating tensors
        are cast to their parameter's dtype and moved to its device; "step"
        stays as it is. The groups' hyper-parameters become the saved ones.
        ValueError when the number of groups or of parameters in a group
        differs, as torch."""
        from .._tensor import asarray
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        id_map = {}
        for mine, saved in zip(self.param_groups, saved_groups):
            id_map.update(zip(saved["params"], mine["params"]))
        state = _ParamState()
        for k, values in state_dict["state"].items():
            if k not in id_map:
                continue
            p = id_map[k]
            loaded = {}
            for key, v in values.items():
                if v is not None and not isinstance(v, (int, float)):
                    guard = _C._DeviceGuard(p.device)
                    try:
                        v = asarray(v).detach().clone()  # a copy, as torch's deepcopy: the source keeps its own
                        if key == "step":
                            v = v.float()
                        else:
                            if p.dtype.is_floating_point and v.dtype.is_floating_point and v.dtype != p.dtype:
                                v = v.to(p.dtype)
                            if v.device != p.device:
                                v = v.to(p.device)
                            v = _C._laid_out_like(v, p) if tuple(v.shape) == tuple(p.shape) else v
                    finally:
                        del guard
                loaded[key] = v
            state[p] = loaded
        new_groups = []
        for mine, saved in zip(self.param_groups, saved_groups):
            g = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            for name, default in self.defaults.items():
                g.setdefault(name, default)
            if isinstance(g.get("betas"), list):
                g["betas"] = tuple(g["betas"])
            g["params"] = mine["params"]
            self._check_group(g)
            new_groups.append(g)
        self.param_groups = new_groups
        self.state = state
        self._loaded()

    def _loaded(self):
        """Subclasses refresh what they derive from the state."""

    def zero_grad(self, set_to_none=True):
        """Drops every gradient (set_to_none) or sets it to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else _C._zeros(list(p.shape), p.grad.dtype)

    def step(self, closure=None):
        raise NotImplementedError

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in g if k != "params"):
                lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


def _on(p, make, *args):
    """`make(*args)` on `p`'s device."""
    guard = _C._DeviceGuard(p.device)
    try:
        return make(*args)
    finally:
        del guard


def _run_closure(closure):
    """torch runs the closure with grad enabled (step() itself records no autograd history)."""
    if closure is None:
        return None
    from .._runtime import enable_grad
    with enable_grad():
        return closure()


def _zero_state(p):
    """A zero tensor of p's shape and dtype, device data laid out as p (so the
    first step records the graph of the later ones)."""
    return _C._laid_out_like(_on(p, _C._zeros_data, list(p.shape), p.dtype), p)


def _check_number(name, value, low=0.0):
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < low:
        raise ValueError(f"Invalid {name}: {value}")
