"""nn.Parameter: a Tensor that a Module registers as a parameter."""
from .. import _C


class Parameter(_C.Tensor):
    """torch.nn.Parameter: `data` (no copy) as a leaf that requires grad.

    Optimizers replace its value in place (``p.data = ...``), so the Parameter
    object a module holds always has the current value."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C._zeros([0], _C.dtype.float32)
        super().__init__(data.detach())
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _alias(cls, tensor):
        """A Parameter that is `tensor` itself (the same value, gradient and
        updates; no detach): how a C++ model's parameters become a Python
        module's (lazytrain.models)."""
        p = cls.__new__(cls)
        _C.Tensor.__init__(p, tensor)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        raise TypeError("lazytrain Parameters are not picklable; save a state_dict with lazytrain.save")
