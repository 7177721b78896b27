"""torch.nn.init's functions, drawing from lazytrain's host generator (the one
manual_seed resets): initialisation is host data, so nothing compiles, and a
seeded model draws the same values as one built through the C++ API
(nn::normal_init draws the same stream)."""
import math

import numpy as np

from .. import _C


def _assign(tensor, values):
    with_dtype = _C.from_numpy(np.ascontiguousarray(values.reshape(tensor.shape), dtype=np.float32))
    tensor.data = with_dtype if tensor.dtype == _C.dtype.float32 else with_dtype.to(tensor.dtype)
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    """Fills `tensor` with N(mean, std) draws (in place, no autograd)."""
    drawn = _C._normal_init(list(tensor.shape), float(std))
    if mean != 0.0:
        drawn = _C.from_numpy((drawn.numpy() + np.float32(mean)).astype(np.float32))
    tensor.data = drawn if tensor.dtype == _C.dtype.float32 else drawn.to(tensor.dtype)
    return tensor


def uniform_(tensor, a=0.0, b=1.0):
    """Fills `tensor` with U(a, b) draws."""
    u = _C._host_rand(tensor.numel()).astype(np.float64)
    return _assign(tensor, (a + (b - a) * u).astype(np.float32))


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def constant_(tensor, val):
    tensor.data = _C._full(list(tensor.shape), float(val), tensor.dtype)
    return tensor


def _fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He et al. 2015, as ``torch.nn.init.kaiming_uniform_`` (leaky_relu gain sqrt(2 / (1 + a^2)))."""
    fan_in, fan_out = _fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    gain = math.sqrt(2.0 / (1 + a * a)) if nonlinearity == "leaky_relu" else math.sqrt(2.0)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound)


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))
