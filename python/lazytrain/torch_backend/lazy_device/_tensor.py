"""LazyTensor: a torch.Tensor on the device "lazytrain" that holds a
lazytrain.Tensor (`_lt`). torch sees a tensor with sizes, strides, dtype and
device but no storage (torch.Tensor._make_wrapper_subclass); every ATen op on
it reaches __torch_dispatch__ (_dispatch.py) below torch's autograd, which
records the backward as it does for any device.

Strides are torch's: a view reports the strides torch would give it (so
`is_contiguous()`, `reshape` and `.view` decide as torch does; lazytrain's own
view model follows the same rules), any other result is contiguous.
"""
import torch

from ... import _C
from .._common import _TORCH_DTYPES, torch_dtype
from ._device import _devices, torch_device

_make_wrapper = torch.Tensor._make_wrapper_subclass


_strides = {}


def contiguous_strides(shape):
    """torch's strides of a contiguous tensor of `shape` (a tuple), cached."""
    out = _strides.get(shape)
    if out is None:
        strides, step = [], 1
        for s in reversed(shape):
            strides.append(step)
            step *= max(s, 1)
        out = tuple(reversed(strides))
        if len(_strides) < 4096:
            _strides[shape] = out
    return out


class LazyTensor(torch.Tensor):
    """A torch tensor on the lazytrain device; `._lt` is its lazytrain.Tensor."""

    _lt: _C.Tensor
    # A view's base's lazytrain tensor (views of views: the first base), set by
    # the view ops: views and their base answer one untyped_storage().data_ptr().
    _root = None

    @staticmethod
    def __new__(cls, value, strides=None, storage_offset=0):
        if strides is None and not storage_offset:
            return _new(cls, value)
        shape = tuple(value.shape)
        r = torch.Tensor._make_wrapper_subclass(
            cls, shape, strides=strides if strides is not None else contiguous_strides(shape),
            storage_offset=storage_offset, dtype=torch_dtype(value.dtype),
            device=torch_device(value.device.index), requires_grad=False)
        r._lt = value
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Replaced by _dispatch.py's on import (no import per op).
        from ._dispatch import dispatch
        return dispatch(func, args, kwargs or {})

    def __repr__(self, *, tensor_contents=None):
        from torch._tensor_str import _str, _tensor_str

        cpu = self.detach().cpu()
        contents = _tensor_str(cpu, len("tensor(")) if cpu.numel() else "[]"
        text = _str(self, tensor_contents=contents)
        prefix = type(self).__name__ + "("
        return "tensor(" + text[len(prefix):] if text.startswith(prefix) else text

    # A "traceable wrapper subclass" to torch: nn.Module._apply (model.to(device))
    # then swaps each Parameter's contents in place (torch.utils.swap_tensors)
    # instead of making new Parameters, so the module's Parameter objects, and
    # the weights tied between modules, stay one object each, as a move to
    # CUDA keeps them. The holder has no inner torch tensors.
    def __tensor_flatten__(self):
        return [], self._lt

    @staticmethod
    def __tensor_unflatten__(inner_tensors, value, outer_size, outer_stride):
        return LazyTensor(value, outer_stride)

    @property
    def data(self):
        """torch's .data: the same values without autograd history (an alias)."""
        return torch._C.TensorBase.data.__get__(self)

    @data.setter
    def data(self, new):
        # torch's set_data copies the tensor's metadata, not this holder's
        # lazytrain tensor: without taking it too, `p.data = x` would keep p's
        # old values silently. Afterwards p and x share their values, as in torch.
        if not isinstance(new, LazyTensor):
            raise RuntimeError(f"lazytrain device: .data of a tensor on {self.device} assigned a tensor on "
                               f"{new.device}; move it with .to({str(self.device)!r}) first")
        torch._C.TensorBase.data.__set__(self, new)
        self._lt = _C._detach_alias(new._lt)
        self._root = new._root if new._root is not None else new._lt

    def untyped_storage(self):
        """A stand-in for torch's storage: the tensor's values live on the
        lazytrain device, not in host memory, so there is no torch storage.
        It answers what safetensors and transformers' save_pretrained ask to
        tell tensors apart and find tied weights (data_ptr(), a key of the
        lazytrain tensor the view shares, the same for a tensor and its views
        such as a state_dict's detach(); never an address; nbytes()); they
        then read the values with .to("cpu"). Anything else raises, naming
        the way: .cpu()."""
        return _NoHostStorage(self)

    def tolist(self):
        """The values as (nested) Python numbers (synchronises)."""
        return self.detach().cpu().tolist()

    def __reduce_ex__(self, protocol):
        # pickle / copy.deepcopy: through the CPU, back onto this device.
        return (_from_cpu, (self.detach().cpu(), self.requires_grad))

    def __deepcopy__(self, memo):
        out = _from_cpu(self.detach().cpu().clone(), self.requires_grad)
        memo[id(self)] = out
        return out


class _NoHostStorage:
    """LazyTensor.untyped_storage(): a key and a size, no bytes (see there)."""

    __slots__ = ("_key", "_nbytes", "device")

    def __init__(self, tensor):
        # The lazytrain tensor is kept alive with the key, so the key stays unique.
        self._key = tensor._root if tensor._root is not None else tensor._lt
        self._nbytes = self._key.numel() * self._key.element_size()
        self.device = tensor.device

    def data_ptr(self):
        return id(self._key)

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    def __len__(self):
        return self._nbytes

    def __getattr__(self, name):
        raise RuntimeError(f"lazytrain device: a tensor on {self.device} has no storage in host memory "
                           f"(untyped_storage().{name}); read its values with .cpu()")


def _from_cpu(cpu, requires_grad):
    from ._transfer import to_device
    out = to_device(cpu)
    return out.requires_grad_(requires_grad) if requires_grad else out


def _new(cls, value):
    """A contiguous LazyTensor holding `value`: the hot path of every op's result (about half the
    cost of LazyTensor(value): no strides computed in Python, no type call)."""
    index = value.device.index
    r = _make_wrapper(cls, value.shape, dtype=_TORCH_DTYPES[value.dtype],
                      device=_devices.get(index) or torch_device(index))
    r._lt = value
    return r


def wrap_view(value, strides, storage_offset, root):
    """A LazyTensor view of `root` (the base's lazytrain tensor) with torch's strides and offset."""
    index = value.device.index
    r = _make_wrapper(LazyTensor, value.shape, strides=strides, storage_offset=storage_offset,
                      dtype=_TORCH_DTYPES[value.dtype], device=_devices.get(index) or torch_device(index))
    r._lt = value
    r._root = root
    return r


def wrap(value, strides=None, storage_offset=0):
    if strides is None and not storage_offset:
        return _new(LazyTensor, value)
    return LazyTensor(value, strides, storage_offset)
