"""Per-op tests of the torch.compile backend's lowering table against torch:
every ATen overload in LOWERINGS runs through the real backend path (an FX
graph of call_function nodes, LoweredGraph, the DLPack exchange) on samples
covering broadcasting, non-contiguous inputs, bf16, Python scalars, integer
and bool dtypes, negative dims and empty tensors; results must equal torch's
in dtype and shape exactly and in value within the dtype's tolerance.

All samples run in a few compiled graphs (compiling costs ~0.2 s a graph); a
graph that fails to lower is rerun op by op, then sample by sample, so a
failure names the op and the sample."""
import math
import operator

import pytest

torch = pytest.importorskip("torch")

import lazytrain as lt  # noqa: E402


from lazytrain.torch_backend._exchange import to_lazytrain, to_torch  # noqa: E402
from lazytrain.torch_backend._lower_graph import LoweredGraph, graph_function  # noqa: E402
from lazytrain.torch_backend.lowering import LOWERINGS  # noqa: E402

aten = torch.ops.aten
NAN, INF = float("nan"), float("inf")
F32, BF16, F16, I64, I32, BOOL = torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.bool

_gen = torch.Generator().manual_seed(0)


# ---- inputs -----------------------------------------------------------------------------------------------

def f(*shape, dtype=F32):
    """Random normal floats."""
    return torch.randn(shape, generator=_gen).to(dtype)


def pos(*shape, dtype=F32):
    """Random floats in [0.5, 2.5) (for log, sqrt, divisors)."""
    return (torch.rand(shape, generator=_gen) * 2 + 0.5).to(dtype)


def i(*shape, dtype=I64, low=-6, high=7):
    """Random integers in [low, high)."""
    return torch.randint(low, high, shape, generator=_gen).to(dtype)


def nz(*shape, dtype=I64):
    """Random non-zero integers (integer divisors)."""
    x = i(*shape, dtype=dtype, low=1, high=5)
    return torch.where(i(*shape, low=0, high=2).bool(), x, -x).to(dtype)


def b(*shape):
    """Random bools."""
    return torch.rand(shape, generator=_gen) > 0.5


def nc(t):
    """The same values as `t` in a non-contiguous (transposed) layout."""
    if t.dim() < 2:
        return t.repeat(2)[::2] if t.dim() == 1 else t
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


def special(dtype=F32):
    """NaN, +-inf, +-0 and ordinary values."""
    return torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.5, -2.5, 3.0], dtype=dtype)


class S:
    """One sample: the op's positional and keyword arguments (torch tensors
    and Python values); values=False compares dtype and shape only."""

    def __init__(self, *args, values=True, rtol=None, atol=None, **kwargs):
        self.args, self.kwargs, self.values, self.rtol, self.atol = args, kwargs, values, rtol, atol

    def __repr__(self):
        def show(a):
            if isinstance(a, torch.Tensor):
                return f"T{list(a.shape)}{str(a.dtype)[6:]}{'' if a.is_contiguous() else 'nc'}"
            if isinstance(a, (list, tuple)):
                return "[" + ",".join(show(x) for x in a) + "]"
            return repr(a)
        return "(" + ", ".join([show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]) + ")"


# ---- samples per op ---------------------------------------------------------------------------------------

def binary(op, *, ints=True, bools=False, floats=True, int_rhs=i, float_rhs=f, scalar=True):
    """Samples of a binary Tensor-Tensor overload: broadcasting, mixed dtypes,
    a 0-dim operand, non-contiguous, empty, bf16, a Python scalar operand."""
    out = []
    if floats:
        out += [S(f(3, 4), float_rhs(4)), S(nc(f(4, 3)), float_rhs(4, 3)), S(f(2, 3, dtype=BF16), float_rhs(2, 3, dtype=BF16)),
                S(f(2, 3), float_rhs(2, 3, dtype=BF16)), S(f(2, 3, dtype=BF16), float_rhs(dtype=F32)),
                S(f(0, 4), float_rhs(4)), S(special(), float_rhs(8)), S(f(2, 3, dtype=F16), float_rhs(2, 3))]
        if scalar:
            out += [S(f(3, dtype=BF16), 2.5), S(f(3), 2)]
    if ints:
        out += [S(i(3, 4), int_rhs(1, 4)), S(i(3, dtype=I32), int_rhs(3)), S(i(3, dtype=I32), int_rhs(dtype=I64)),
                S(nc(i(3, 4)), int_rhs(3, 4, dtype=I32))]
        if floats:
            out += [S(i(3), float_rhs(3)), S(i(3), float_rhs(dtype=F32))]
            if scalar:
                out += [S(i(3), 2.5)]
        if scalar:
            out += [S(i(3, dtype=I32), 3)]
    if bools:
        out += [S(b(3, 4), b(4)), S(b(3), i(3))]
        if scalar:
            out += [S(b(3), True)]
    return out


def scalar_rhs(samples):
    """The samples of binary() whose second operand is a Python number (the .Scalar overloads)."""
    return [s for s in samples if not isinstance(s.args[1], torch.Tensor)]


def unary(*, ints=True, floats=True, bools=False, domain=f):
    """Samples of a unary op: f32 (with NaN/inf), bf16, non-contiguous, 0-dim, empty, ints."""
    out = []
    if floats:
        out += [S(domain(3, 4)), S(nc(domain(4, 3))), S(domain(2, 3, dtype=BF16)), S(domain()), S(domain(0, 3)),
                S(domain(5, dtype=F16))]
        if domain is f:
            out.append(S(special()))
    if ints:
        out += [S(i(3, 4)), S(i(5, dtype=I32))]
    if bools:
        out.append(S(b(2, 3)))
    return out


SAMPLES = {}


def samples(*ops):
    """Decorator: the function returns the samples of each overload in `ops`."""

    def add(fn):
        for op in ops:
            SAMPLES[op] = fn
        return fn

    return add


# -- pointwise

for _op in ("add", "sub", "mul", "div", "remainder"):
    _tensor, _scalar = getattr(aten, _op).Tensor, getattr(aten, _op).Scalar
    _rhs_i = nz if _op in ("div", "remainder") else i
    _rhs_f = pos if _op == "remainder" else f
    _bin = (lambda o, ri, rf: lambda: binary(o, int_rhs=ri, float_rhs=rf, bools=o in (aten.add.Tensor, aten.mul.Tensor)))(
        _tensor, _rhs_i, _rhs_f)
    samples(_tensor)(_bin)
    samples(_scalar)((lambda fn: lambda: scalar_rhs(fn()))(_bin))


@samples(aten.add.Tensor)
def _add():
    return binary(aten.add.Tensor, bools=True) + [S(f(3), f(3), alpha=2), S(i(3), i(3), alpha=-3), S(2.0, f(3))]


@samples(aten.sub.Tensor)
def _sub():
    return binary(aten.sub.Tensor) + [S(f(3), f(3), alpha=0.5), S(i(3), i(3), alpha=2), S(1, f(3)), S(1, f(2, dtype=BF16))]


@samples(aten.rsub.Tensor)
def _rsub():
    return [S(f(3, 4), f(4)), S(i(3), i(3), alpha=2), S(f(2, dtype=BF16), f(2)), S(f(3), 1.0)]


@samples(aten.rsub.Scalar)
def _rsub_scalar():
    return [S(f(3), 1.0), S(f(2, dtype=BF16), 1), S(i(3), 2), S(f(3), 2.0, alpha=3), S(i(3), 0.5)]


@samples(aten.div.Tensor_mode)
def _div_mode():
    out = []
    for mode in (None, "floor", "trunc"):
        out += [S(f(3, 4), pos(4) * torch.where(b(4), 1, -1), rounding_mode=mode),
                S(i(3, 4, low=-20, high=20), nz(4), rounding_mode=mode),
                S(i(5, dtype=I32, low=-20, high=20), nz(5, dtype=I32), rounding_mode=mode),
                S(f(3, dtype=BF16) * 10, f(3, dtype=BF16), rounding_mode=mode),
                S(i(4, low=-9, high=9), 2, rounding_mode=mode), S(i(4, low=-9, high=9), -2.5, rounding_mode=mode),
                S(special(), 2.0, rounding_mode=mode), S(torch.tensor([1.0, -1.0, 0.0, 5.0]), 0.0, rounding_mode=mode)]
    return out


@samples(aten.div.Scalar_mode)
def _div_scalar_mode():
    return scalar_rhs(_div_mode())


@samples(aten.pow.Tensor_Scalar)
def _pow_ts():
    return [S(pos(3, 4), 2.5), S(f(3, 4), 2), S(f(3), 0), S(f(2, 3, dtype=BF16), 3), S(i(3, 4), 2), S(i(3), 0),
            S(i(3, low=0, high=5), 2.5), S(nc(pos(4, 3)), -0.5), S(special(), 2), S(special(), 0.5), S(pos(3), -1)]


@samples(aten.pow.Tensor_Tensor)
def _pow_tt():
    return [S(pos(3, 4), f(4)), S(i(3, 4, low=-3, high=4), i(4, low=0, high=4)), S(pos(3), i(3, low=0, high=3)),
            S(pos(2, 3, dtype=BF16), f(2, 3, dtype=BF16)), S(i(3, low=1, high=4), pos(3))]


@samples(aten.pow.Scalar)
def _pow_s():
    return [S(2.0, f(3, 4)), S(2, i(3, low=0, high=6)), S(2, f(3, dtype=BF16)), S(0.5, nc(f(4, 3))), S(3, f(3)),
            S(2.5, i(3, low=0, high=4))]


@samples(aten.maximum.default, aten.minimum.default)
def _maxmin():
    return binary(None, scalar=False, bools=True) + [S(special(), special().flip(0))]


for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    samples(getattr(aten, _op).Tensor)(lambda: binary(None, bools=True) + [S(special(), special().flip(0))])
    samples(getattr(aten, _op).Scalar)(lambda: scalar_rhs(binary(None, bools=True)) + [S(special(), 0.0), S(i(4), 0.5)])


@samples(aten.logical_and.default, aten.logical_or.default)
def _logical():
    return [S(b(3, 4), b(4)), S(f(3) * b(3), i(3, low=0, high=2)), S(nc(b(4, 3)), b(4, 3)), S(special(), f(8, dtype=BF16)),
            S(b(0, 2), b(2))]


@samples(aten.logical_not.default)
def _logical_not():
    return [S(b(3, 4)), S(nc(b(4, 3))), S(i(5, low=-1, high=2)), S(special()), S(f(3, dtype=BF16))]


@samples(aten.bitwise_and.Tensor, aten.bitwise_or.Tensor, aten.bitwise_xor.Tensor)
def _bitwise():
    return [S(i(3, 4, low=-50, high=50), i(4, low=-50, high=50)), S(b(3, 4), b(4)),
            S(i(3, dtype=I32, low=0, high=20), i(3, low=0, high=20)), S(nc(i(4, 3)), i(4, 3)), S(b(3), i(3))]


@samples(aten.bitwise_and.Scalar, aten.bitwise_or.Scalar, aten.bitwise_xor.Scalar)
def _bitwise_scalar():
    return [S(i(3, 4, low=-50, high=50), 6), S(b(4), True), S(i(3, dtype=I32), -3)]


@samples(aten.bitwise_not.default)
def _bitwise_not():
    return [S(i(3, 4, low=-50, high=50)), S(b(4)), S(i(3, dtype=I32)), S(nc(i(4, 3)))]


for _name, _kw in (("neg", {}), ("abs", {"bools": False}), ("exp", {}), ("sin", {}), ("cos", {}), ("tanh", {}),
                   ("sigmoid", {}), ("erf", {}), ("relu", {}), ("log", {"domain": pos}), ("sqrt", {"domain": pos}),
                   ("rsqrt", {"domain": pos})):
    samples(getattr(aten, _name).default)((lambda kw: lambda: unary(**kw))(_kw))


@samples(aten.log.default, aten.sqrt.default, aten.rsqrt.default)
def _log_like():
    return unary(domain=pos) + [S(special()), S(torch.tensor([-1.0, 0.0]))]


@samples(aten.where.self)
def _where():
    return [S(b(3, 4), f(3, 4), f(4)), S(b(4), nc(f(4, 4)), f(4, 4)), S(b(3), f(3, dtype=BF16), f(3, dtype=BF16)),
            S(b(3), i(3), i(3, dtype=I32)), S(b(3), f(3), i(3)), S(b(2, 3), f(2, 3), 0.0), S(b(2, 3), -INF, f(2, 3)),
            S(b(3), f(3, dtype=BF16), 0.0), S(b(3), i(3), 1), S(b(3), i(3), 0.5), S(b(3), f(3, dtype=BF16), f()),
            S(b(3), 1.0, 0.0), S(b(3), b(3), b(3)), S(b(0, 2), f(2), f(0, 2))]


@samples(aten.lerp.Scalar)
def _lerp_scalar():
    return [S(f(3, 4), f(3, 4), 0.1), S(f(3, 4), f(4), 0.9), S(nc(f(4, 3)), f(4, 3), 0.5), S(f(3), f(3), 0.0),
            S(f(3), f(3), 1.0), S(f(3, dtype=BF16), f(3, dtype=BF16), 0.3), S(special(), f(8), 0.25), S(f(0), f(0), 0.5)]


@samples(aten.lerp.Tensor)
def _lerp_tensor():
    return [S(f(3, 4), f(3, 4), torch.rand(3, 4, generator=_gen)), S(f(3, 4), f(4), f(3, 1)),
            S(f(3), f(3), torch.tensor([0.0, 0.5, 1.0])), S(f(2, 3, dtype=BF16), f(2, 3, dtype=BF16), f(dtype=BF16))]


@samples(aten.addcmul.default)
def _addcmul():
    return [S(f(3, 4), f(3, 4), f(3, 4)), S(f(3, 4), f(4), f(3, 1), value=0.5), S(nc(f(4, 3)), f(4, 3), f(4, 3), value=-2),
            S(f(3, dtype=BF16), f(3, dtype=BF16), f(3, dtype=BF16), value=0.1), S(i(3), i(3), i(3), value=2),
            S(f(3), i(3), f(3))]


@samples(aten.addcdiv.default)
def _addcdiv():
    return [S(f(3, 4), f(3, 4), pos(3, 4)), S(f(3, 4), f(4), pos(3, 1), value=-0.01), S(nc(f(4, 3)), f(4, 3), pos(4, 3)),
            S(f(3, dtype=BF16), f(3, dtype=BF16), pos(3, dtype=BF16), value=0.5), S(f(3), f(3), f(3) * 0, value=2.0)]


@samples(aten.fill.Scalar)
def _fill():
    return [S(f(3, 4), 2.5), S(i(3), 7), S(b(2), True), S(f(2, 3, dtype=BF16), -1.0), S(f(), 3.0), S(f(0, 2), 1.0),
            S(i(3), 2)]


@samples(aten.fill.Tensor)
def _fill_t():
    return [S(f(3, 4), f()), S(i(3), f()), S(f(2, dtype=BF16), f()), S(f(), i())]


@samples(aten.clamp.default)
def _clamp():
    return [S(f(3, 4), -0.5, 0.5), S(f(3, 4), None, 0.0), S(f(3), 0.0), S(f(3, dtype=BF16), -0.5, 0.5),
            S(i(3, 4), -2, 2), S(i(4), 0.5, 2.5), S(i(4, dtype=I32), None, 1), S(special(), -1.0, 1.0),
            S(nc(f(4, 3)), -1, 1), S(f(3), 1.0, -1.0)]


@samples(aten.clamp.Tensor)
def _clamp_t():
    return [S(f(3, 4), f(4) - 1, f(4) + 1), S(f(3, 4), None, f(3, 1)), S(i(3), i(3, low=-2, high=0), None),
            S(f(3, dtype=BF16), f(3, dtype=BF16), None), S(i(3), f(3), f(3) + 2)]


@samples(aten.gelu.default)
def _gelu():
    # torch gives NaN for gelu(+-inf) (erf form), lazytrain +-inf: the samples keep to finite values
    finite = [s for s in unary(ints=False) if s.args[0].isfinite().all()]
    return finite + [S(f(3, 4), approximate="tanh"), S(f(3, dtype=BF16), approximate="tanh")]


@samples(aten.silu.default)
def _silu():
    return unary(ints=False)


# -- reductions

def _reduce_samples(with_dtype=True, ints=True, empty=True):
    out = [S(f(3, 4), [1]), S(f(3, 4), [-1], True), S(f(2, 3, 4), [0, 2]), S(nc(f(4, 3)), [0]), S(f(3, 4), None),
           S(f(2, 3, dtype=BF16), [1]), S(f(2, 3, 4), [], True), S(f(), []), S(special().reshape(2, 4), [1])]
    if empty:
        out += [S(f(0, 3), [0])]
    if ints:
        out += [S(i(3, 4), [1]), S(i(3, dtype=I32), [0])]
    if with_dtype:
        out += [S(f(2, 3, dtype=BF16), [1], dtype=F32), S(i(3, 4), [0], dtype=F32)]
    return out


@samples(aten.sum.dim_IntList)
def _sum_dim():
    return _reduce_samples() + [S(b(3, 4), [1]), S(f(3, 4), None), S(i(3, 4), None, True)]


@samples(aten.sum.default)
def _sum():
    return [S(f(3, 4)), S(i(3)), S(b(5)), S(f(2, 3, dtype=BF16)), S(f(0)), S(f(3), dtype=F32), S(i(3), dtype=F32)]


@samples(aten.mean.dim)
def _mean_dim():
    return [s for s in _reduce_samples(ints=False) if s.kwargs.get("dtype") != F32 or s.args[0].is_floating_point()]


@samples(aten.mean.default)
def _mean():
    return [S(f(3, 4)), S(f(2, 3, dtype=BF16)), S(nc(f(4, 3))), S(f(2, dtype=BF16), dtype=F32)]


@samples(aten.amax.default, aten.amin.default)
def _amax():
    return [S(f(3, 4), [1]), S(f(3, 4), [-1], True), S(f(2, 3, 4), [0, 2]), S(nc(f(4, 3)), [0]), S(f(3, 4), None),
            S(f(2, 3, dtype=BF16), [1]), S(i(3, 4), [0]), S(b(3, 4), [1]), S(special().reshape(2, 4), [1]), S(f(), [])]


@samples(aten.linalg_vector_norm.default)
def _vector_norm():
    return [S(f(3, 4)), S(f(3, 4), 2, [1]), S(f(3, 4), 2, [-1], True), S(nc(f(4, 3)), 1, [0]), S(f(2, 3, 4), 3.0, [0, 2]),
            S(f(3, 4), float("inf")), S(f(3, 4), float("-inf"), [1]), S(f(3, 4), 0), S(f(2, 3, dtype=BF16), 2, [1]),
            S(f(2, 3, dtype=BF16), 2, dtype=F32), S(f()), S(f(0))]


@samples(aten.any.dim, aten.all.dim)
def _any_dim():
    return [S(b(3, 4), 1), S(b(3, 4), -1, True), S(f(3, 4) * b(3, 4), 0), S(i(3, 4, low=0, high=2), 1), S(b(0, 3), 0)]


@samples(aten.any.dims, aten.all.dims)
def _any_dims():
    return [S(b(3, 4), [1]), S(b(2, 3, 4), [0, 2], True), S(i(3, 4, low=0, high=2), [0])]


@samples(aten.any.default, aten.all.default)
def _any():
    return [S(b(3, 4)), S(f(3) * b(3)), S(i(3, low=0, high=2)), S(b(0)), S(torch.zeros(3)), S(torch.ones(3, dtype=BOOL))]


@samples(aten.argmax.default, aten.argmin.default)
def _argmax():
    return [S(f(3, 4), 1), S(f(3, 4), -1, True), S(f(3, 4)), S(i(3, 4, low=0, high=3), 0), S(nc(f(4, 3)), 0),
            S(f(2, 3, dtype=BF16), 1), S(torch.tensor([[1.0, NAN, 3.0], [2.0, 2.0, 1.0]]), 1)]


@samples(aten.cumsum.default)
def _cumsum():
    return [S(f(3, 4), 1), S(f(3, 4), -2), S(nc(f(4, 3)), 0), S(i(3, 4), 1), S(i(3, dtype=I32), 0), S(b(5), 0),
            S(f(2, 3, dtype=BF16), 1, atol=0.05), S(f(2, 3, dtype=BF16), 1, dtype=F32), S(i(4), 0, dtype=F32), S(f(0, 3), 0)]


@samples(aten.max.dim, aten.min.dim)
def _max_dim():
    return [S(f(3, 4), 1), S(f(3, 4), -1, True), S(nc(f(4, 3)), 0), S(i(3, 4, low=0, high=3), 1),
            S(f(2, 3, dtype=BF16), 0), S(torch.tensor([[1.0, NAN, 3.0], [2.0, 2.0, 1.0]]), 1)]


@samples(aten.max.default, aten.min.default)
def _max():
    return [S(f(3, 4)), S(i(5)), S(f(3, dtype=BF16)), S(special()), S(b(4))]


# -- shape

@samples(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view():
    return [S(f(3, 4), [4, 3]), S(f(3, 4), [-1]), S(f(2, 3, 4), [6, -1]), S(i(4), [2, 1, 2]), S(f(), [1]),
            S(f(0, 4), [4, 0]), S(b(2, 2), [4]), S(f(2, 3, dtype=BF16), [3, 2])]


@samples(aten.permute.default)
def _permute():
    return [S(f(2, 3, 4), [2, 0, 1]), S(f(2, 3, 4), [-1, 0, -2]), S(nc(i(3, 4)), [1, 0]), S(f(), [])]


@samples(aten.t.default)
def _t():
    return [S(f(3, 4)), S(f(3)), S(i(2, 5)), S(f())]


@samples(aten.transpose.int)
def _transpose():
    return [S(f(2, 3, 4), 0, 2), S(f(2, 3, 4), -1, -2), S(i(3, 4), 1, 1), S(nc(f(4, 3)), 0, 1)]


@samples(aten.expand.default)
def _expand():
    return [S(f(3, 1), [3, 4]), S(f(4), [2, 3, 4]), S(f(3, 1), [-1, 5]), S(i(1), [0]), S(f(), [2, 2]), S(b(1, 2), [3, 2])]


@samples(aten.unsqueeze.default)
def _unsqueeze():
    return [S(f(3, 4), 0), S(f(3, 4), -1), S(f(3, 4), 1), S(f(), 0), S(i(2), -2)]


@samples(aten.squeeze.dim)
def _squeeze_dim():
    return [S(f(3, 1, 4), 1), S(f(3, 1, 4), -2), S(f(3, 4), 0), S(f(1), 0), S(f(), 0)]


@samples(aten.squeeze.dims)
def _squeeze_dims():
    return [S(f(1, 3, 1, 4), [0, 2]), S(f(1, 3, 1), [-1, 1]), S(f(3, 1), [0]), S(f(1, 1), [0, 1]), S(f(), [0])]


@samples(aten.squeeze.default)
def _squeeze():
    return [S(f(1, 3, 1, 4)), S(f(3, 4)), S(f(1, 1)), S(f())]


@samples(aten.slice.Tensor)
def _slice():
    return [S(f(5, 4), 0, 1, 3), S(f(5, 4), 1, 0, 9223372036854775807), S(f(5, 4), -1, -3, None),
            S(f(7, 4), 0, 1, 7, 2), S(f(7, 4), 0, 0, 9223372036854775807, 3), S(f(5), 0, 4, 2), S(f(5), 0, -100, 100),
            S(nc(f(4, 6)), 1, 1, -1), S(i(5), 0, None, None, 2), S(f(5), 0, 5, 9223372036854775807)]


@samples(aten.select.int)
def _select():
    return [S(f(3, 4), 0, 1), S(f(3, 4), 1, -1), S(f(3, 4), -1, 2), S(nc(i(4, 3)), 0, 3), S(f(2, 3, dtype=BF16), 1, 0)]


@samples(aten.alias.default, aten.clone.default, aten.lift_fresh_copy.default, aten.detach.default)
def _alias():
    return [S(f(3, 4)), S(nc(f(4, 3))), S(i(3)), S(b(2)), S(f())]


@samples(aten.cat.default)
def _cat():
    return [S([f(2, 3), f(1, 3)]), S([f(2, 3), f(2, 2)], 1), S([f(2, 3), f(2, 3)], -1), S([f(2, 3), f(0)]),
            S([i(2), i(3, dtype=I32)]), S([f(2), f(2, dtype=BF16)]), S([nc(f(3, 2)), f(2, 2)], 0), S([f(2, 0), f(2, 3)], 1),
            S([i(2), f(2)]), S([b(2), b(1)])]


@samples(aten.stack.default)
def _stack():
    return [S([f(2, 3), f(2, 3)]), S([f(2, 3), f(2, 3)], -1), S([f(2), f(2)], 1), S([i(2), i(2)]), S([nc(f(2, 3)), f(2, 3)], 0)]


@samples(aten.split.Tensor)
def _split():
    return [S(f(5, 4), 2), S(f(5, 4), 3, -1), S(f(4, 2), 4), S(i(6), 2)]


@samples(aten.split_with_sizes.default)
def _split_ws():
    return [S(f(5, 4), [2, 3]), S(f(5, 4), [1, 0, 3], 1), S(f(5, 4), [1, 3], -1)]


@samples(aten.slice_scatter.default)
def _slice_scatter():
    return [S(f(5, 4), f(2, 4), 0, 1, 3), S(f(5, 4), f(5, 2), 1, 0, 4, 2), S(f(5, 4), f(5, 1), -1, -1),
            S(i(5), i(5)), S(f(5, 4), f(5, 4), 0, 0, 9223372036854775807)]


@samples(aten.repeat.default)
def _repeat():
    return [S(f(2, 3), [2, 1]), S(f(3), [2, 2]), S(i(2, 2), [1, 3]), S(f(2), [0])]


@samples(aten.constant_pad_nd.default)
def _pad():
    return [S(f(2, 3), [1, 2]), S(f(2, 3), [1, 1, 2, 0], 1.5), S(f(2, 5), [-1, -2]), S(f(3, 4), [2, -1, -1, 1]),
            S(i(2, 3), [1, 1], 7), S(f(2, 3, dtype=BF16), [0, 2], -INF), S(b(2, 2), [1, 0], True), S(f(2, 3), [0, 0])]


# -- creation (torch returns values we compare where they are defined)

@samples(aten.full.default)
def _full():
    return [S([2, 3], 1.5), S([2, 3], 2), S([2], True), S([2, 2], 0.5, dtype=BF16), S([3], 1, dtype=F32),
            S([0, 2], 1.0), S([], 3.0), S([2], -INF), S([2], 2, dtype=I32)]


@samples(aten.full_like.default)
def _full_like():
    return [S(f(2, 3), 1.5), S(i(3), 2), S(f(2, dtype=BF16), -INF), S(f(2), 1, dtype=I64), S(b(2), True), S(nc(f(3, 2)), 0.0)]


@samples(aten.zeros.default, aten.ones.default)
def _zeros():
    return [S([2, 3]), S([2], dtype=I64), S([2], dtype=BF16), S([0]), S([], dtype=BOOL)]


@samples(aten.empty.memory_format)
def _empty():
    return [S([2, 3], values=False), S([2], dtype=I64, values=False)]


@samples(aten.zeros_like.default, aten.ones_like.default)
def _zeros_like():
    return [S(f(2, 3)), S(i(3)), S(f(2, dtype=BF16)), S(f(2), dtype=I32), S(b(2))]


@samples(aten.empty_like.default)
def _empty_like():
    return [S(f(2, 3), values=False), S(i(3), dtype=F32, values=False)]


@samples(aten.new_zeros.default, aten.new_ones.default)
def _new_zeros():
    return [S(f(2, 3), [4]), S(i(3), [2, 2]), S(f(2, dtype=BF16), [3]), S(f(2), [2], dtype=I64)]


@samples(aten.new_empty.default)
def _new_empty():
    return [S(f(2, 3), [4], values=False), S(i(3), [2], dtype=F32, values=False)]


@samples(aten.new_full.default)
def _new_full():
    return [S(f(2, 3), [4], 1.5), S(i(3), [2], 3), S(f(2, dtype=BF16), [3], -INF), S(f(2), [2], 5, dtype=I64)]


@samples(aten.scalar_tensor.default)
def _scalar_tensor():
    return [S(1.5), S(2, dtype=I64), S(0.25, dtype=BF16), S(True, dtype=BOOL), S(-INF)]


@samples(aten.arange.start_step)
def _arange_ss():
    return [S(0, 10, 3), S(1, 2, 0.25), S(-1.0, 1.0, 0.3), S(10, 0, -2), S(0, 5, 1, dtype=F32), S(0.5, 4),
            S(0, 4, 1, dtype=BF16), S(0, 6, 2, dtype=I32), S(0, 1, 0.1)]


@samples(aten.arange.start)
def _arange_s():
    return [S(2, 7), S(0.5, 3), S(-3, 3, dtype=F32)]


@samples(aten.arange.default)
def _arange():
    return [S(5), S(2.5), S(4, dtype=F32), S(0), S(6, dtype=I32)]


# -- indexing

@samples(aten.index.Tensor)
def _index():
    return [S(f(5, 4), [i(3, low=-5, high=5)]), S(f(5, 4), [None, i(2, low=0, high=4)]), S(f(5, 4), [b(5)]),
            S(f(4, 5, 3), [i(2, low=0, high=4), i(2, low=0, high=5)]), S(f(4, 5, 3), [i(2, 1, low=0, high=4), i(3, low=0, high=5)]),
            S(nc(f(4, 6)), [i(2, 2, low=0, high=4)]), S(i(5), [i(3, low=0, high=5, dtype=I32)]),
            S(f(4, 5, 3), [None, i(2, low=0, high=5), i(2, low=0, high=3)]),
            S(f(4, 5, 3), [i(2, low=0, high=4), None, i(2, low=0, high=3)])]


@samples(aten.index_put.default)
def _index_put():
    idx = torch.tensor([0, 2, 2, -1])
    return [S(f(5, 4), [torch.tensor([1, 3])], f(2, 4)), S(f(5, 4), [torch.tensor([1, -1])], f(4)),
            S(f(5, 4), [b(5)], torch.tensor(2.0)), S(f(5, 4), [idx], f(4, 4), True), S(f(5), [idx], f(4), True),
            S(f(4, 5), [idx, torch.tensor([1, 1, 1, -2])], f(4), True), S(f(4, 5), [torch.tensor([0, 0]), torch.tensor([1, 1])], f(2), True),
            S(i(5, 3), [idx], i(4, 3), True), S(f(5, 4, 3), [torch.tensor([1, 1]), torch.tensor([2, 2])], f(3), True),
            S(f(5, 4), [None, torch.tensor([0, 3, 0])], f(3), True), S(f(4, 5), [torch.tensor([[0], [2]]), torch.tensor([1, 1, 4])], f(2, 3), True),
            S(f(5, 4, dtype=BF16), [idx], f(4, 4, dtype=BF16), True)]


@samples(aten.gather.default)
def _gather():
    return [S(f(3, 4), 1, i(3, 2, low=0, high=4)), S(f(3, 4), 0, i(2, 4, low=0, high=3)), S(f(3, 4), -1, i(3, 1, low=0, high=4)),
            S(nc(f(4, 3)), 1, i(4, 2, low=0, high=3)), S(i(3, 4), 1, i(3, 4, low=0, high=4))]


@samples(aten.scatter.value)
def _scatter_value():
    return [S(f(3, 4), 1, i(3, 1, low=0, high=4), 0.0), S(i(3, 4), 0, i(1, 4, low=0, high=3), 7), S(f(3, 4), -1, i(3, 2, low=0, high=4), -INF)]


@samples(aten.scatter.src)
def _scatter_src():
    return [S(f(3, 4), 1, torch.tensor([[0], [3], [1]]), f(3, 1)), S(f(3, 4), 0, torch.tensor([[2, 0, 1, 0]]), f(2, 4))]


@samples(aten.scatter_add.default)
def _scatter_add():
    return [S(f(3, 4), 1, i(3, 5, low=0, high=4), f(3, 5)), S(f(3, 4), 0, i(2, 4, low=0, high=3), f(2, 4)),
            S(i(3, 4), 1, i(3, 3, low=0, high=4), i(3, 3))]


@samples(aten.index_select.default)
def _index_select():
    return [S(f(5, 4), 0, i(3, low=0, high=5)), S(f(5, 4), -1, i(2, low=0, high=4)), S(nc(f(4, 5)), 1, i(6, low=0, high=5)),
            S(i(5), 0, i(0, low=0, high=5))]


# -- nn

@samples(aten.mm.default)
def _mm():
    return [S(f(3, 4), f(4, 5)), S(nc(f(3, 4)), nc(f(4, 5))), S(f(3, 4, dtype=BF16), f(4, 2, dtype=BF16)), S(f(0, 4), f(4, 2)),
            S(f(2, 0), f(0, 3))]


@samples(aten.bmm.default)
def _bmm():
    return [S(f(2, 3, 4), f(2, 4, 5)), S(nc(f(2, 3, 4)), f(2, 4, 2)), S(f(2, 3, 4, dtype=BF16), f(2, 4, 2, dtype=BF16))]


@samples(aten.matmul.default)
def _matmul():
    return [S(f(3, 4), f(4, 5)), S(f(2, 3, 4), f(4, 5)), S(f(4), f(4, 2)), S(f(2, 1, 3, 4), f(3, 4, 2)), S(f(4), f(4))]


@samples(aten.addmm.default)
def _addmm():
    return [S(f(5), f(3, 4), f(4, 5)), S(f(3, 5), f(3, 4), f(4, 5), beta=0.5, alpha=2), S(f(2, dtype=BF16), f(3, 4, dtype=BF16),
            f(4, 2, dtype=BF16)), S(f(1, 5), nc(f(3, 4)), f(4, 5))]


@samples(aten.baddbmm.default)
def _baddbmm():
    return [S(f(2, 3, 5), f(2, 3, 4), f(2, 4, 5)), S(f(5), f(2, 3, 4), f(2, 4, 5), beta=0.5, alpha=2)]


@samples(aten.embedding.default)
def _embedding():
    return [S(f(10, 4), i(2, 3, low=0, high=10)), S(f(10, 4), i(5, low=0, high=10), 0), S(f(10, 4, dtype=BF16), i(3, low=0, high=10)),
            S(nc(f(10, 4)), i(3, low=0, high=10, dtype=I32))]


@samples(aten.native_layer_norm.default)
def _layer_norm():
    return [S(f(2, 3, 8), [8], f(8), f(8), 1e-5), S(f(4, 6), [6], None, None, 1e-6), S(f(2, 3, 4), [3, 4], f(3, 4), f(3, 4), 1e-5),
            S(f(2, 8, dtype=BF16), [8], f(8, dtype=BF16), f(8, dtype=BF16), 1e-5), S(nc(f(3, 8)), [8], f(8), None, 1e-5),
            S(f(2, 8, dtype=BF16), [8], None, None, 1e-5)]


@samples(aten._softmax.default, aten._log_softmax.default)
def _softmax():
    return [S(f(3, 4), 1, False), S(f(3, 4), 0, False), S(nc(f(4, 3)), -1, False), S(f(2, 5, dtype=BF16), -1, False),
            S(torch.tensor([[0.0, -INF, 1.0], [2.0, 3.0, -INF]]), 1, False), S(f(0, 3), 1, False)]


@samples(aten._to_copy.default)
def _to_copy():
    return [S(f(3), dtype=BF16), S(f(3, dtype=BF16), dtype=F32), S(f(3) * 5, dtype=I64), S(special(), dtype=BOOL),
            S(i(3), dtype=F32), S(b(4), dtype=F32), S(b(4), dtype=I64), S(i(4, low=-1, high=2), dtype=BOOL),
            S(i(3), dtype=I32), S(nc(f(4, 3))), S(f(3)), S(f(3, dtype=F16), dtype=F32), S(i(3, low=-100, high=100), dtype=BF16)]


@samples(aten.native_dropout.default)
def _native_dropout():
    # train=False or p=0 is the identity with an all-true mask; the random case is test_native_dropout_train.
    return [S(f(3, 4), 0.5, False), S(f(3, 4), 0.0, True), S(f(2, 3, dtype=BF16), 0.1, False), S(nc(f(4, 3)), 0.0, True)]


@samples(aten.multinomial.default)
def _multinomial():
    # One category with weight per row: the draw is certain; the random case is
    # test_torch_lazy_device_generate.py's frequency test.
    one_hot = torch.tensor([[0.0, 0.0, 2.0, 0.0], [0.5, 0.0, 0.0, 0.0]])
    return [S(one_hot, 1), S(one_hot, 3, True), S(one_hot[0], 1), S(one_hot.to(BF16), 1),
            S(f(3, 5).abs() + 0.1, 2, values=False)]


def _sdpa_inputs(b_, h, hk, l_, s, e, dtype=F32):
    return f(b_, h, l_, e, dtype=dtype), f(b_, hk, s, e, dtype=dtype), f(b_, hk, s, e, dtype=dtype)


def _additive(keep):
    """The float mask (0 kept, -inf masked) torch's SDPA hands the CPU flash op for a bool mask."""
    return torch.zeros(keep.shape).masked_fill(~keep, -INF)


def _sdpa_cases():
    """(q, k, v, kwargs) cases: masks (bool, float, broadcast, fully-masked rows), causal, scale, bf16."""
    q, k, v = _sdpa_inputs(2, 2, 2, 5, 5, 8)
    q2, k2, v2 = _sdpa_inputs(1, 2, 2, 3, 6, 4)
    bool_mask = _additive(b(2, 1, 5, 5) | torch.eye(5, dtype=BOOL))
    masked_row = torch.ones(1, 1, 3, 6, dtype=BOOL)
    masked_row[..., 1, :] = False
    masked_row = _additive(masked_row)
    float_mask = torch.where(b(2, 1, 5, 5) | torch.eye(5, dtype=BOOL), 0.0, -INF) + f(2, 1, 5, 5) * 0.1
    return [(q, k, v, {}), (q, k, v, {"is_causal": True}), (q, k, v, {"attn_mask": bool_mask}),
            (q, k, v, {"attn_mask": float_mask}), (q, k, v, {"scale": 0.3}), (q2, k2, v2, {"attn_mask": masked_row}),
            (q2, k2, v2, {"is_causal": True}), (q2, k2, v2, {"attn_mask": f(3, 6)}),
            (*_sdpa_inputs(1, 2, 2, 4, 4, 8, BF16), {"is_causal": True})]


@samples(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _sdpa():
    return [S(q, k, v, rtol=2e-2 if q.dtype == BF16 else 1e-4, atol=2e-2 if q.dtype == BF16 else 1e-5, **kw)
            for q, k, v, kw in _sdpa_cases()]


@samples(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
def _sdpa_backward():
    out = []
    for q, k, v, kw in _sdpa_cases():
        o, lse = aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, **kw)
        grad = f(*o.shape, dtype=o.dtype)
        tol = 3e-2 if q.dtype == BF16 else 1e-4
        out.append(S(grad, q, k, v, o, lse, 0.0, kw.get("is_causal", False), attn_mask=kw.get("attn_mask"),
                     scale=kw.get("scale"), rtol=tol, atol=tol))
    return out


# ---- running the samples through the backend ----------------------------------------------------------------

def _torch_result(op, s):
    """torch's result for the sample: the overload itself, or, where a Python
    number stands for a Tensor argument (as decompositions trace them), the
    public torch function with torch's wrapped-number promotion."""
    try:
        return op(*s.args, **s.kwargs)
    except RuntimeError:
        if all(isinstance(a, torch.Tensor) for a in s.args if not isinstance(a, (list, tuple))):
            raise
        return getattr(torch, op.__name__.split(".")[0])(*s.args, **s.kwargs)


def _build(items):
    """An FX graph with one call_function node per (op, sample), its torch
    inputs and torch's results (node.meta["val"] is the real result)."""
    graph, inputs, expected = torch.fx.Graph(), [], []

    def placeholder(a):
        if isinstance(a, torch.Tensor):
            node = graph.placeholder(f"t{len(inputs)}")
            node.meta["val"] = a
            inputs.append(a)
            return node
        if isinstance(a, (list, tuple)):
            return type(a)(placeholder(x) for x in a)
        return a

    nodes = []
    for op, s in items:
        args, kwargs = placeholder(s.args), {k: placeholder(v) for k, v in s.kwargs.items()}
        result = _torch_result(op, s)
        node = graph.call_function(op, args, kwargs)
        node.meta["val"] = result
        expected.append(result)
        if isinstance(result, (list, tuple)):
            nodes += [graph.call_function(operator.getitem, (node, j)) for j in range(len(result))]
        else:
            nodes.append(node)
    graph.output(tuple(nodes))  # flat, as AOTAutograd's graphs
    return graph, inputs, expected


def _outputs(expected, outputs):
    """The graph's flat outputs as torch tensors, grouped like torch's results: [(got, expected)]."""
    out, flat = [], iter(outputs)
    for e in expected:
        if isinstance(e, (list, tuple)):
            out.append((tuple(None if x is None else to_torch(x) for x in (next(flat) for _ in e)), e))
        else:
            out.append((to_torch(next(flat)), e))
    return out


def _run_lowered(items):
    """Lowers each item in its own graph in lazytrain's lazy mode (what
    LoweredGraph traces), then runs them all in one lazytrain graph (one
    sync: compiling costs more than running): [(got, expected) or exception]."""
    pending = []
    for item in items:
        try:
            graph, inputs, expected = _build([item])
            pending.append((expected, graph_function(graph)([to_lazytrain(t) for t in inputs])))
        except Exception as e:  # noqa: BLE001 - reported per sample
            pending.append(e)
    lt.sync(wait=True)
    out = []
    for p in pending:
        out += [p] if isinstance(p, Exception) else _outputs(*p)
    return out


@pytest.fixture(scope="module")
def results():
    """{op: [(sample, result or exception)]} for every sample of every op."""
    items = [(op, s) for op, make in SAMPLES.items() for s in make()]
    by_op = {}
    for (op, s), r in zip(items, _run_lowered(items)):
        by_op.setdefault(op, []).append((s, r))
    return by_op


def _compare(s, got, expected):
    if expected is None:
        assert got is None
        return
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _compare(s, g, e)
        return
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if s.values:
        tol = {} if s.rtol is None else {"rtol": s.rtol, "atol": s.atol}
        torch.testing.assert_close(got, expected, equal_nan=True, **tol)


@pytest.mark.parametrize("op", sorted(SAMPLES, key=str), ids=str)
def test_lowering_matches_torch(op, results):
    failures = []
    for s, r in results[op]:
        try:
            if isinstance(r, Exception):
                raise r
            _compare(s, *r)
        except Exception as e:  # noqa: BLE001 - every failing sample of the op is reported
            failures.append(f"{op}{s!r}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                            + "".join("\n    " + ln for ln in str(e).splitlines()[1:6]))
    assert not failures, "\n".join(failures)


def test_every_lowering_has_samples():
    """A new lowering without samples here fails."""
    missing = sorted(str(op) for op in LOWERINGS if op not in SAMPLES)
    assert not missing, f"lowerings without samples in test_torch_lowerings.py: {missing}"
    assert all(op in LOWERINGS for op in SAMPLES), sorted(str(op) for op in SAMPLES if op not in LOWERINGS)


def _dropout_graph(x, p):
    graph = torch.fx.Graph()
    node_x = graph.placeholder("x")
    node_x.meta["val"] = x
    node = graph.call_function(aten.native_dropout.default, (node_x, p, True))
    node.meta["val"] = aten.native_dropout.default(x, p, True)
    graph.output((graph.call_function(operator.getitem, (node, 0)), graph.call_function(operator.getitem, (node, 1))))
    return LoweredGraph(graph, "dropout")


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_native_dropout_train(dtype):
    """train=True, p>0: a bool keep mask kept with probability 1-p, output x*mask/(1-p)."""
    x, p = f(64, 64, dtype=dtype), 0.25
    out, mask = (to_torch(t) for t in _dropout_graph(x, p)([to_lazytrain(x)]))
    assert mask.dtype == BOOL and out.dtype == dtype
    kept = mask.float().mean().item()
    assert abs(kept - (1 - p)) < 4 * math.sqrt(p * (1 - p) / x.numel())
    torch.testing.assert_close(out, (x * mask / (1 - p)).to(dtype))


# ---- samples of the lowerings composed from lazytrain ops ---------------------------------------------------

for _name in ("reciprocal", "isnan", "isinf", "sign", "floor", "ceil", "trunc", "round", "log1p", "expm1"):
    samples(getattr(aten, _name).default)(lambda: unary(bools=False) + [S(torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 1e-8, -1e-9, 3e7]))])


@samples(aten.reciprocal.default)
def _reciprocal():
    return unary(ints=False) + [S(i(3, low=1, high=5))]


@samples(aten.log1p.default)
def _log1p():
    return [S(pos(3, 4) - 0.4), S(torch.tensor([1e-8, -1e-7, 0.0, -1.0, -2.0, INF, NAN, 5.0])),
            S(pos(2, 3, dtype=BF16)), S(nc(pos(4, 3))), S(i(3, low=0, high=5))]


@samples(aten.expm1.default)
def _expm1():
    return unary(ints=False) + [S(torch.tensor([1e-8, -1e-7, 0.0, 20.0, -20.0, 88.0, -INF])), S(i(3))]


@samples(aten.sign.default)
def _sign():
    return unary(bools=True)


@samples(aten.logical_xor.default)
def _logical_xor():
    return [S(b(3, 4), b(4)), S(f(3) * b(3), i(3, low=0, high=2)), S(nc(b(4, 3)), b(4, 3)), S(special(), f(8, dtype=BF16))]


@samples(aten.fmod.Tensor)
def _fmod():
    return [S(f(3, 4) * 5, pos(4)), S(f(3, 4) * 5, -pos(4)), S(i(3, 4, low=-20, high=20), nz(4)),
            S(f(2, 3, dtype=BF16) * 5, pos(2, 3, dtype=BF16)), S(i(3, low=-9, high=9, dtype=I32), nz(3, dtype=I32))]


@samples(aten.fmod.Scalar)
def _fmod_scalar():
    return [S(f(3, 4) * 5, 1.5), S(f(3) * 5, -2), S(i(4, low=-20, high=20), 3), S(i(4, low=-20, high=20), -3),
            S(f(3, dtype=BF16) * 4, 1.5)]


@samples(aten.hardtanh.default)
def _hardtanh():
    return unary(bools=False) + [S(f(3, 4), -0.5, 0.5), S(f(3, dtype=BF16), 0.0, 6.0)]


@samples(aten.leaky_relu.default)
def _leaky_relu():
    return unary(ints=False) + [S(f(3, 4), 0.2), S(f(3, dtype=BF16), 0.1)]


@samples(aten.elu.default)
def _elu():
    return unary(ints=False) + [S(f(3, 4), 0.5), S(f(3, 4), 1.0, 1.0507, 1.0), S(f(3, dtype=BF16), 1.0)]


@samples(aten.sort.default)
def _sort():
    return [S(f(3, 5)), S(f(3, 5), 0), S(f(3, 5), -1, True), S(i(4, 5, low=0, high=3), 1), S(nc(f(4, 3)), 0, True),
            S(f(6, dtype=BF16)), S(torch.tensor([1.0, NAN, -1.0, 1.0, INF]), 0), S(torch.tensor([1.0, NAN, -1.0, 1.0]), 0, True),
            S(b(6))]


@samples(aten.sort.stable)
def _sort_stable():
    return [S(i(8, low=0, high=3), stable=True), S(f(3, 5), stable=True, dim=0, descending=True)]


@samples(aten.topk.default)
def _topk():
    return [S(f(3, 5), 2), S(f(3, 5), 1, 0), S(f(3, 5), 3, -1, False), S(i(4, 6, low=-50, high=50), 2), S(nc(f(4, 3)), 2, 0),
            S(f(6, dtype=BF16), 3), S(torch.tensor([1.0, NAN, -1.0, 2.0]), 2), S(f(3, 5), 5)]


@samples(aten.var.correction)
def _var():
    return [S(f(3, 4), [1]), S(f(3, 4), [1], correction=0), S(f(3, 4), None, keepdim=True), S(f(2, 3, 4), [0, -1], correction=2),
            S(nc(f(4, 3)), [0]), S(f(2, 8, dtype=BF16), [1]), S(f(1, 3), [0]), S(f(3, 4), [-1], correction=0, keepdim=True)]


@samples(aten.var_mean.correction)
def _var_mean():
    return [S(f(3, 4), [1]), S(f(3, 4), [1], correction=0, keepdim=True), S(f(2, 8, dtype=BF16), [-1], correction=0),
            S(f(3, 4), None)]


@samples(aten.prod.default)
def _prod():
    return [S(f(3, 4) * 0.5 + 1), S(i(5, low=-3, high=4)), S(b(4)), S(f(3, dtype=BF16)), S(f(0)), S(f(3), dtype=F32),
            S(i(3, dtype=I32))]


@samples(aten.prod.dim_int)
def _prod_dim():
    return [S(f(3, 4), 1), S(f(3, 4), -1, True), S(i(3, 4, low=-3, high=4), 0), S(nc(f(4, 3)), 0), S(b(3, 4), 1),
            S(f(2, 3, dtype=BF16), 1), S(i(3, 4, dtype=I32), 1, dtype=I64), S(f(0, 3), 0)]


def _patch_conv(x, w, bias, stride):
    """convolution.default's arguments for a patch convolution (stride == kernel, no padding)."""
    spatial = x.dim() - 2
    return S(x, w, bias, stride, [0] * spatial, [1] * spatial, False, [0] * spatial, 1, rtol=1e-4, atol=1e-5)


@samples(aten.convolution.default)
def _convolution():
    return [_patch_conv(f(2, 3, 8, 8), f(4, 3, 4, 4), f(4), [4, 4]), _patch_conv(f(1, 3, 9, 10), f(2, 3, 3, 5), None, [3, 5]),
            _patch_conv(f(2, 3, 10, 10), f(4, 3, 4, 4), f(4), [4, 4]), _patch_conv(f(2, 2, 12), f(3, 2, 4), f(3), [4]),
            _patch_conv(nc(f(2, 3, 8, 8)), f(4, 3, 2, 2), f(4), [2, 2])]


@samples(aten.convolution_backward.default)
def _convolution_backward():
    out = []
    for x, w, stride, mask in ((f(2, 3, 8, 8), f(4, 3, 4, 4), [4, 4], [True, True, True]),
                               (f(2, 3, 10, 9), f(4, 3, 4, 4), [4, 4], [True, True, False]),
                               (f(2, 2, 12), f(3, 2, 4), [4], [False, True, True])):
        spatial = x.dim() - 2
        y = aten.convolution.default(x, w, None, stride, [0] * spatial, [1] * spatial, False, [0] * spatial, 1)
        out.append(S(f(*y.shape), x, w, [w.shape[0]], stride, [0] * spatial, [1] * spatial, False, [0] * spatial, 1, mask,
                     rtol=1e-4, atol=1e-4))
    return out


@pytest.mark.parametrize("op", [aten.add.Tensor, aten.native_layer_norm.default, aten.index_put.default,
                                aten._scaled_dot_product_flash_attention_for_cpu.default, aten.sort.default], ids=str)
def test_compiled_graph_matches_torch(op):
    """The same samples through LoweredGraph (lazytrain.compile's trace, cache and replay) in one graph."""
    items = [(op, s) for s in SAMPLES[op]()]
    graph, inputs, expected = _build(items)
    outputs = LoweredGraph(graph, "test_torch_lowerings")([to_lazytrain(t) for t in inputs])
    for (_, s), (got, e) in zip(items, _outputs(expected, outputs)):
        _compare(s, got, e)


@samples(aten.copy.default)
def _copy():
    return [S(f(3, 4), f(3, 4)), S(f(3, 4), f(4)), S(f(2, 3, dtype=BF16), f(2, 3)), S(i(3), f(3) * 3), S(f(3), b(3)),
            S(nc(f(4, 3)), f(4, 3))]


@samples(aten.new_empty_strided.default)
def _new_empty_strided():
    return [S(f(2, 3), [4, 2], [2, 1], values=False), S(i(3), [3], [1], dtype=F32, values=False)]
