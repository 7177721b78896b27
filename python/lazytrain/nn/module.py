"""nn.Module: a tree of named parameters, buffers and submodules, as torch.nn.Module.

Attribute assignment registers: a Parameter becomes a parameter, a Module a
submodule; ``register_buffer`` adds a tensor that is state but not trained.
Names join the path with dots ("encoder.layers.0.attn.q_proj.weight"), so
state dicts match PyTorch's and Hugging Face's. A parameter registered under two
names (tied weights) is listed once by parameters(), under the first name, and
under both by state_dict(), as PyTorch does."""
import collections
import itertools

from .. import _C
from . import hooks as _hooks
from .parameter import Parameter

_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Subclass it, assign layers and Parameters in __init__, write forward()."""

    training: bool

    def __init__(self):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- registration ----
    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call "
                                 f"(call super().__init__() first in {type(self).__name__}.__init__)")

    def __setattr__(self, name, value):
        # Re-assigning keeps the entry's place in its table (torch's state_dict order).
        if isinstance(value, Parameter):
            self._check_init("parameters")
            self._remove(name, keep=self._parameters)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._check_init("submodules")
            self._remove(name, keep=self._modules)
            self._modules[name] = value
        elif "_parameters" in self.__dict__ and name in self._parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(lazytrain.nn.Parameter or None expected)")
            self._parameters[name] = None
        elif "_buffers" in self.__dict__ and name in self._buffers:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            self._buffers[name] = value
        elif "_modules" in self.__dict__ and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(lazytrain.nn.Module or None expected)")
            self._modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def _remove(self, name, keep=None):
        for d in (self.__dict__, self._parameters, self._buffers, self._modules):
            if d is not keep:
                d.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Adds `param` (a Parameter, or None) under `name`."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(lazytrain.nn.Parameter or None required)")
        self._check_init("parameters")
        self._remove(name, keep=self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Adds state that is not trained (it moves with to() and, when
        persistent, is in the state_dict)."""
        self._check_init("buffers")
        self._remove(name, keep=self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_init("submodules")
        self._remove(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    # ---- traversal ----
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, table, prefix, recurse, remove_duplicate):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(name, Parameter) for every distinct parameter, in registration order."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state ----
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """Every parameter and persistent buffer by its full name (tied ones under
        each name), detached unless keep_vars."""
        out = collections.OrderedDict() if destination is None else destination
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            skip = module.__dict__.get("_non_persistent", set())
            for table in ("_parameters", "_buffers"):
                for name, value in getattr(module, table).items():
                    if value is None or (table == "_buffers" and name in skip):
                        continue
                    key = module_prefix + ("." if module_prefix else "") + name
                    out[key] = value if keep_vars else value.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values into the parameters and buffers (cast to their dtypes).
        Raises RuntimeError listing missing/unexpected keys (strict) and every
        size mismatch, before anything is assigned."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
        for key, target in own.items():
            if key in state_dict:
                value = state_dict[key]
                if not isinstance(value, _C.Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected a Tensor, got {type(value).__name__}.')
                elif tuple(value.shape) != tuple(target.shape):
                    errors.append(f"size mismatch for {key}: copying a param with shape {list(value.shape)} from "
                                  f"checkpoint, the shape in current model is {list(target.shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        for key, target in own.items():
            if key in state_dict:
                value = state_dict[key].detach()
                target.data = value if value.dtype == target.dtype else value.to(target.dtype)
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and moves ----
    def train(self, mode=True):
        """Training mode on this module and every submodule (dropout on)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else _C._zeros(list(p.shape), p.dtype)

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Moves parameters and buffers to a device and/or casts floating ones to a
        dtype. A move keeps each Parameter object; a cast replaces it with a new
        one (make optimizers after casting), one per Parameter, so tied weights
        stay tied."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            else:
                device = a
        if device is not None:
            from .._runtime import as_device
            device = as_device(device)
        if dtype is not None:
            for m in self.modules():
                if getattr(m, "_native_parameters", False):
                    raise TypeError(f"{type(self).__name__}.to({dtype}): it holds a C++ model, whose forward runs f32 "
                                    "parameters; train it in bfloat16 under lazytrain.autocast(dtype=lazytrain.bfloat16)")
        # One cast per tensor object, whatever the number of names it has, so tied
        # weights stay one Parameter (torch keeps the object; a cast here makes a new one).
        casts = {}
        for module in self.modules():
            for table in ("_parameters", "_buffers"):
                entries = getattr(module, table)
                for name, value in list(entries.items()):
                    if value is None:
                        continue
                    if device is not None and value.device != device:
                        value.data = value.detach().to(device)
                    if dtype is not None and value.dtype.is_floating_point and value.dtype != dtype:
                        if id(value) not in casts:
                            cast = value.detach().to(dtype)
                            casts[id(value)] = (value, Parameter(cast, value.requires_grad) if table == "_parameters" else cast)
                        entries[name] = casts[id(value)][1]
        return self

    def float(self):
        return self.to(_C.dtype.float32)

    def bfloat16(self):
        return self.to(_C.dtype.bfloat16)

    def half(self):
        return self.to(_C.dtype.float16)

    # ---- calling ----
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            return _hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- hooks (nn/hooks.py; torch's semantics, each returns a handle with remove()) ----
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (a tuple, or one value), before
        forward; with_kwargs: hook(module, args, kwargs) -> None or (args, kwargs)."""
        return _hooks.add_hook(self, "_forward_pre_hooks", hook, prepend, with_kwargs=with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or a new output, after forward;
        with_kwargs: hook(module, args, kwargs, output)."""
        return _hooks.add_hook(self, "_forward_hooks", hook, prepend, with_kwargs=with_kwargs)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, once
        the gradients of the module's positional inputs are computed (grad_input:
        one entry per positional arg, None where it is not a tensor requiring
        grad; grad_output: one per output tensor)."""
        return _hooks.add_hook(self, "_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, before the
        module's input gradients are computed."""
        return _hooks.add_hook(self, "_backward_pre_hooks", hook, prepend)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        main = type(self).__name__ + "("
        if extra and not lines:
            return main + extra + ")"
        body = ([extra] if extra else []) + lines
        if not body:
            return main + ")"
        return main + "\n  " + "\n  ".join(body) + "\n)"

    def __dir__(self):
        return sorted(set(itertools.chain(super().__dir__(), self._parameters, self._buffers, self._modules)))
