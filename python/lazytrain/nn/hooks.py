"""Module hooks with torch.nn.Module's semantics: forward pre-hooks, forward
hooks and full backward hooks (and backward pre-hooks), run by Module.__call__.

Order, as torch's _call_impl: pre-hooks (may replace the positional args),
forward, forward hooks (may replace the output), then the backward hooks are
attached: the tensors that require grad among the positional args and in the
output pass through an identity op whose gradient hooks collect grad_output
(every output tensor's gradient) and grad_input (one entry per positional
arg, None where it is not a tensor requiring grad)."""
import collections

from .. import _C
from ..autograd import RemovableHandle


def _hooks(module, name):
    table = module.__dict__.get(name)
    if table is None:
        table = collections.OrderedDict()
        object.__setattr__(module, name, table)
    return table


def add_hook(module, table_name, hook, prepend=False, **flags):
    table = _hooks(module, table_name)
    handle = RemovableHandle(None)
    key = handle.id
    handle._remove = lambda: table.pop(key, None)
    table[key] = (hook, flags)
    if prepend:
        table.move_to_end(key, last=False)
    return handle


def _identity(t):
    """A new non-leaf with t's value, whose gradient hooks see t's gradient."""
    return t * 1


def _is_grad_tensor(x):
    return isinstance(x, _C.Tensor) and x.requires_grad


def _flatten_output(result):
    """The tensors of an output (a tensor, or a tuple/list of values) and a rebuild function."""
    if isinstance(result, _C.Tensor):
        return [result], lambda ts: ts[0]
    if isinstance(result, (tuple, list)):
        return list(result), lambda ts: type(result)(ts) if isinstance(result, list) else tuple(ts)
    return [], lambda ts: result


class _BackwardHookState:
    """One call's grad_input / grad_output, filled by tensor hooks."""

    def __init__(self, module, n_args):
        self.module = module
        self.n_args = n_args
        self.input_slots = {}  # arg index -> grad, for the args that require grad
        self.waiting_inputs = 0
        self.grad_outputs = None
        self.n_outputs = 0
        self.outputs_seen = 0

    def setup_inputs(self, args):
        args = list(args)
        for i, a in enumerate(args):
            if _is_grad_tensor(a):
                args[i] = _identity(a)
                self.waiting_inputs += 1
                args[i].register_hook(self._input_hook(i))
        return tuple(args)

    def setup_outputs(self, result):
        tensors, rebuild = _flatten_output(result)
        self.grad_outputs = [None] * len(tensors)
        for i, t in enumerate(tensors):
            if _is_grad_tensor(t):
                tensors[i] = _identity(t)
                self.n_outputs += 1
                tensors[i].register_hook(self._output_hook(i))
        return rebuild(tensors) if self.n_outputs else result

    def _output_hook(self, i):
        def hook(grad):
            self.grad_outputs[i] = grad
            self.outputs_seen += 1
            if self.outputs_seen == self.n_outputs:
                for fn, _ in list(_hooks(self.module, "_backward_pre_hooks").values()):
                    res = fn(self.module, tuple(self.grad_outputs))
                    if res is not None:
                        self.grad_outputs = list(res if isinstance(res, (tuple, list)) else (res,))
                if self.waiting_inputs == 0:
                    self._call_hooks(None)
                return self.grad_outputs[i]
            return None
        return hook

    def _input_hook(self, i):
        def hook(grad):
            self.input_slots[i] = grad
            if len(self.input_slots) < self.waiting_inputs:
                return None
            return self._call_hooks(i)
        return hook

    def _call_hooks(self, last):
        grad_input = tuple(self.input_slots.get(i) for i in range(self.n_args))
        for fn, _ in list(_hooks(self.module, "_backward_hooks").values()):
            res = fn(self.module, grad_input, tuple(self.grad_outputs or ()))
            if res is None:
                continue
            res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            if last is None:
                if any(r is not None for r in res):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always return "
                                       "None or None for all gradients.")
                continue
            if len(res) != self.n_args:
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(res)}, but "
                                   f"expected {self.n_args}")
            changed = [i for i in self.input_slots if res[i] is not grad_input[i]]
            if any(i != last for i in changed):
                raise NotImplementedError("a full backward hook that replaces grad_input of a module called with several "
                                          "tensors requiring grad is not supported; return None and change the "
                                          "gradients in a tensor hook instead")
            grad_input = res
        return grad_input[last] if last is not None else None


def call_with_hooks(module, args, kwargs):
    """Module.__call__ when the module has hooks (torch's _call_impl)."""
    for fn, flags in list(_hooks(module, "_forward_pre_hooks").values()):
        if flags.get("with_kwargs"):
            res = fn(module, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{res}.")
                args, kwargs = res
        else:
            res = fn(module, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
    backward = None
    if (_hooks(module, "_backward_hooks") or _hooks(module, "_backward_pre_hooks")) and _C.is_grad_enabled():
        backward = _BackwardHookState(module, len(args))
        args = backward.setup_inputs(args)
    result = module.forward(*args, **kwargs)
    for fn, flags in list(_hooks(module, "_forward_hooks").values()):
        res = fn(module, args, kwargs, result) if flags.get("with_kwargs") else fn(module, args, result)
        if res is not None:
            result = res
    if backward is not None:
        result = backward.setup_outputs(result)
    return result
