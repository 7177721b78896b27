"""Errors raised inside torch's backward on the lazy device, and the line
they name.

torch's autograd engine runs a backward on this device on its own thread,
which has no Python frames: the backward's ops are recorded at the line that
called `backward()` (or `torch.autograd.grad`), as lazytrain's own backward
records them; the wrapper below notes that line (for the IR's op locations:
recompile reasons, step analysis, execution errors; and for this package's
errors).

An exception raised there would abort the process: after the failing node,
torch's engine restores the device's stream through the device guard, a Python
object for a device set up from Python (torch.acc.PythonDeviceGuard), while
the Python error is still set; that call fails in a noexcept destructor and
std::terminate ends the process ("terminate called without an active
exception"). So the dispatch notes the error here before raising it
(`raising_in_backward`), the guard clears the Python error indicator at its
next call, and the wrapper around torch's backward raises the noted error on
the thread that called backward() (torch itself would raise a SystemError
"returned NULL without setting an exception" there). Tensor hooks of device
tensors are wrapped to do the same; an exception from another Python callback
inside a backward (a hook on a grad_fn node) still meets torch's abort.
"""
import ctypes
import functools

import torch
import torch.autograd
from torch.utils.backend_registration import _DummyDeviceGuard

from ... import _C

_PyErr_Clear = ctypes.pythonapi.PyErr_Clear
_PyErr_Clear.restype = None
_PRIVATE_USE1 = torch._C._autograd.DeviceType.PrivateUse1

_clear_pending = False  # the dispatch raised on the autograd thread: the guard clears the indicator
_raised = None          # that exception, raised again by backward() on its caller's thread
backward_line = None    # "file:line" of the last backward() / autograd.grad() call


class DeviceGuard(_DummyDeviceGuard):
    """The device guard given to torch (_device.register): torch calls its
    type_() for every guard operation of the device, stream exchanges
    included."""

    def type_(self):
        global _clear_pending
        if _clear_pending:  # no C call before the clear: a pending error would turn it into a SystemError
            _PyErr_Clear()
            _clear_pending = False
        return _PRIVATE_USE1


def in_backward():
    """Whether torch's autograd engine is running a backward node on this thread."""
    return torch._C._current_autograd_node() is not None


def raising_in_backward(error):
    """Notes `error`, about to be raised by the dispatch inside a backward
    node (see the module's docstring); returns it."""
    global _clear_pending, _raised
    _raised = error
    _clear_pending = True
    return error


def _wrap_engine(run_backward):
    def _engine_run_backward(*args, **kwargs):
        global backward_line, _raised
        from ._dispatch import user_frame  # _dispatch imports this module
        frame = user_frame()
        if frame is not None:
            # The backward's ops run where no Python frame is the user's: they
            # are recorded at this line (recompile reasons, step analysis, errors).
            backward_line = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            _C._set_fallback_location(frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno)
        try:
            return run_backward(*args, **kwargs)
        except BaseException:
            error, _raised = _raised, None
            if error is None:
                raise
            raise error from None
        finally:
            if frame is not None:
                _C._set_fallback_location("", "", 0)

    _engine_run_backward.__wrapped__ = run_backward
    return _engine_run_backward


def _register_hook(self, hook):
    """Tensor.register_hook for tensors on the device: a hook that raises
    inside the backward is noted as the dispatch's errors are (torch leaves
    its error set too)."""
    @functools.wraps(hook)
    def checked(grad):
        try:
            return hook(grad)
        except Exception as e:
            if in_backward():
                raise raising_in_backward(e)
            raise

    return torch.Tensor.register_hook(self, checked)


def install():
    """Wraps torch.autograd's entry into the engine, which Tensor.backward(),
    torch.autograd.backward() and torch.autograd.grad() call, and the device's
    tensor hooks (idempotent)."""
    from ._tensor import LazyTensor
    current = torch.autograd._engine_run_backward
    if getattr(current, "__wrapped__", None) is None:
        torch.autograd._engine_run_backward = _wrap_engine(current)
    LazyTensor.register_hook = _register_hook
