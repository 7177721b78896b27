"""Reductions and sorting against torch, on the same inputs: values, dtypes, result types,
errors (type and message) and gradients. NaN, empty, extreme (int64 limits, bool),
keepdim, negative and tuple dims."""
import math

import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
I64_MIN, I64_MAX = -2**63, 2**63 - 1

_LT_DTYPES = {torch.float32: lt.float32, torch.int64: lt.int64, torch.int32: lt.int32, torch.bool: lt.bool,
              torch.bfloat16: lt.bfloat16}


def both(data, dtype=torch.float32):
    t = torch.tensor(data, dtype=dtype)
    return lt.tensor(t.float().numpy() if dtype == torch.bfloat16 else t.numpy(), dtype=_LT_DTYPES[dtype]), t


def same(a, b, exact=True):
    """a lazytrain tensor equals a torch tensor: shape, dtype name, values (NaN == NaN)."""
    assert list(a.shape) == list(b.shape), (a.shape, b.shape)
    assert repr(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], (a.dtype, b.dtype)
    av = a.float().numpy() if a.dtype == lt.bfloat16 else a.numpy()
    bv = b.float().numpy() if b.dtype == torch.bfloat16 else b.numpy()
    if exact:
        np.testing.assert_array_equal(av, bv)
    else:
        np.testing.assert_allclose(av, bv, rtol=1e-5, atol=1e-6)


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)


def same_error(fl, ft):
    """Both raise the same exception type, and lazytrain's message starts like torch's."""
    (lt_kind, lt_msg), (t_kind, t_msg) = outcome(fl), outcome(ft)
    assert t_kind != "ok" and lt_kind != "ok", (lt_kind, lt_msg, t_kind, t_msg)
    assert issubclass(lt_kind, t_kind) or t_kind.__name__ == lt_kind.__name__, (lt_kind, lt_msg, t_kind, t_msg)
    core = t_msg.split("\n")[0].split(" (")[0]
    assert core.split(": ")[-1][:40] in lt_msg, (lt_msg, t_msg)


MATRIX = [[1., 5., NAN, 2.], [3., 2., 7., -1.], [NAN, NAN, 0., 4.]]
PLAIN = [[1., 5., 3., 2.], [3., 2., 7., -1.], [0., 6., 0., 4.]]


# ---- max / min / amax / amin / argmax / argmin ---------------------------------------------


@pytest.mark.parametrize("data", [MATRIX, PLAIN, [[INF, NAN], [-INF, INF]], [[-INF, -INF]]])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_nan(op, data):
    x, t = both(data)
    same(getattr(x, op)(), getattr(t, op)())
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            lv, li = getattr(x, op)(dim, keepdim)
            tv, ti = getattr(t, op)(dim, keepdim)
            same(lv, tv)
            same(li, ti)
            r = getattr(x, op)(dim=dim, keepdim=keepdim)
            assert type(r).__name__ == op and r.values is r[0] and r.indices is r[1]
    for arg in ("argmax", "argmin"):
        same(getattr(x, arg)(), getattr(t, arg)())
        same(getattr(x, arg)(keepdim=True), getattr(t, arg)(keepdim=True))
        for dim in (0, 1, -2):
            same(getattr(lt, arg)(x, dim), getattr(torch, arg)(t, dim))
            same(getattr(x, arg)(dim, keepdim=True), getattr(t, arg)(dim, keepdim=True))


def test_argmax_nan_is_never_out_of_range():
    x, t = both([1., NAN, 3.])
    assert x.argmax(0).item() == t.argmax(0).item() == 1
    assert x.argmin(0).item() == t.argmin(0).item() == 1
    x, t = both([[NAN, 1.], [2., 3.]])
    assert x.argmax(1).tolist() == t.argmax(1).tolist() == [0, 1]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_integer_limits(dtype):
    lo, hi = (I64_MIN, I64_MAX) if dtype == torch.int64 else (-2**31, 2**31 - 1)
    for data in ([3, lo], [hi, 3], [lo, hi], [[lo, 0], [hi, lo]], [hi, hi]):
        x, t = both(data, dtype)
        for op in ("max", "min", "amax", "amin", "argmax", "argmin"):
            same(getattr(x, op)(), getattr(t, op)())
        same(x.min(0).values, t.min(0).values)
        same(x.max(-1).indices, t.max(-1).indices)


def test_bool_reductions():
    for data in ([True, False], [False, False], [True, True], [[True, False], [True, True]]):
        x, t = both(data, torch.bool)
        for op in ("max", "min", "amax", "amin", "any", "all"):
            same(getattr(x, op)(), getattr(t, op)())
        same(x.min(0).values, t.min(0).values)
        same(x.max(0).indices, t.max(0).indices)
        same(x.sum(), t.sum())
        same(x.prod(), t.prod())
    x, t = both([[True, False], [True, True]], torch.bool)
    same(x.min(1)[0], t.min(1)[0])
    same_error(lambda: x.argmax(), lambda: t.argmax())


@pytest.mark.parametrize("op", ["amax", "amin", "sum", "mean", "any", "all", "logsumexp"])
def test_tuple_negative_keepdim_dims(op):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7 - 3
    x, t = lt.tensor(data), torch.tensor(data)
    for dim in ((0, 2), (-1, 0), (1,), -2, (0, 1, 2)):
        for keepdim in (False, True):
            same(getattr(x, op)(dim, keepdim=keepdim), getattr(t, op)(dim, keepdim=keepdim), exact=False)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "any", "all", "logsumexp", "std", "var"])
def test_duplicate_dims_raise(op):
    x, t = lt.ones(2, 3), torch.ones(2, 3)
    same_error(lambda: getattr(x, op)((0, 0)), lambda: getattr(t, op)((0, 0)))
    same_error(lambda: getattr(x, op)((1, -1)), lambda: getattr(t, op)((1, -1)))


# ---- empty inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda m, x: x.argmax(0), lambda m, x: x.argmin(0), lambda m, x: x.argmax(), lambda m, x: x.argmin(),
    lambda m, x: x.amax(), lambda m, x: x.amin(), lambda m, x: x.amax(0), lambda m, x: x.amin((0, 1)),
    lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: x.max(0), lambda m, x: x.min(0),
    lambda m, x: x.median(0), lambda m, x: m.max(x, 0),
])
def test_empty_reductions_raise_as_torch(call):
    same_error(lambda: call(lt, lt.zeros(0, 3)), lambda: call(torch, torch.zeros(0, 3)))


@pytest.mark.parametrize("call", [
    lambda x: x.amax(1), lambda x: x.amin(1), lambda x: x.argmax(1), lambda x: x.max(1).values,
    lambda x: x.max(1).indices, lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.prod(), lambda x: x.prod(0),
    lambda x: x.any(), lambda x: x.all(), lambda x: x.any(0), lambda x: x.all(0), lambda x: x.norm(),
    lambda x: x.median(), lambda x: x.median(1).values, lambda x: x.mean(), lambda x: x.var(0),
    lambda x: x.sort(0).values, lambda x: x.argsort(1),
])
def test_empty_reductions_with_a_value(call):
    same(call(lt.zeros(0, 3)), call(torch.zeros(0, 3)))


# ---- prod / any / all ----------------------------------------------------------------------


def test_prod_values_and_dtypes():
    for data, dtype in (([[1., 2., 3.], [0., 4., NAN]], torch.float32), ([[2, 3], [-4, 5]], torch.int64),
                        ([[2, 3], [-4, 5]], torch.int32), ([[True, False]], torch.bool)):
        x, t = both(data, dtype)
        same(x.prod(), t.prod())
        same(lt.prod(x, 1), torch.prod(t, 1))
        same(x.prod(-1, keepdim=True), t.prod(-1, keepdim=True))
    x, t = both([[1, 2]], torch.int64)
    same(x.prod(dtype=lt.float32), t.prod(dtype=torch.float32))


@pytest.mark.parametrize("data", [[2., 3., 4.], [2., 0., 4.], [0., 3., 0.], [[1., 0.], [2., 3.]]])
def test_prod_gradient(data):
    x, t = both(data)
    x.requires_grad_(True)
    t.requires_grad_(True)
    x.prod().backward()
    t.prod().backward()
    same(x.grad, t.grad, exact=False)
    if len(np.shape(data)) == 2:
        x.grad = None
        t.grad = None
        (x.prod(0) * lt.tensor([1., 2.])).sum().backward()
        (t.prod(0) * torch.tensor([1., 2.])).sum().backward()
        same(x.grad, t.grad, exact=False)


def test_any_all():
    for data, dtype in (([[0., NAN], [0., 0.]], torch.float32), ([[0, 2], [0, 0]], torch.int64)):
        x, t = both(data, dtype)
        for op in ("any", "all"):
            same(getattr(x, op)(), getattr(t, op)())
            for dim in (0, 1, -1, (0, 1)):
                same(getattr(lt, op)(x, dim), getattr(torch, op)(t, dim))
                same(getattr(x, op)(dim, keepdim=True), getattr(t, op)(dim, keepdim=True))


# ---- var / std / norm ----------------------------------------------------------------------


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std(op):
    data = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    x, t = lt.tensor(data), torch.tensor(data)
    same(getattr(x, op)(), getattr(t, op)(), exact=False)
    same(getattr(x, op)(False), getattr(t, op)(False), exact=False)
    for dim in (0, -1, (0, 2)):
        for kwargs in ({}, {"unbiased": False}, {"correction": 0}, {"correction": 2}, {"keepdim": True}):
            same(getattr(x, op)(dim, **kwargs), getattr(t, op)(dim, **kwargs), exact=False)
    same(getattr(lt, op)(x, dim=1, correction=0), getattr(torch, op)(t, dim=1, correction=0), exact=False)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_edge_cases(op):
    with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        for data, kwargs in (([1.], {}), ([1., 2.], {"correction": 3}), ([1., NAN], {}), ([[1., 2.], [INF, 1.]], {"dim": 1})):
            x, t = both(data)
            same(getattr(x, op)(**kwargs), getattr(t, op)(**kwargs), exact=False)
    x, t = both([1, 2], torch.int64)
    same_error(lambda: getattr(x, op)(), lambda: getattr(t, op)())
    x, t = both([1., 2., 4.], torch.bfloat16)
    same(getattr(x, op)(), getattr(t, op)(), exact=False)


def test_var_std_gradient():
    data = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    for op, kwargs in (("var", {"dim": 1}), ("std", {}), ("std", {"dim": 0, "correction": 0})):
        x, t = lt.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        getattr(x, op)(**kwargs).sum().backward()
        getattr(t, op)(**kwargs).sum().backward()
        same(x.grad, t.grad, exact=False)


@pytest.mark.parametrize("p", ["fro", 2, 1, INF, -INF, 0, 3, 0.5])
def test_norm(p):
    data = [[3., -4., 0.], [1., 2., -2.]]
    x, t = both(data)
    same(x.norm(p), t.norm(p), exact=False)
    same(lt.norm(x, p, dim=1), torch.norm(t, p, dim=1), exact=False)
    same(x.norm(p, dim=(0, 1), keepdim=True), t.norm(p, dim=(0, 1), keepdim=True), exact=False)
    same(x.norm(p, 0, True), t.norm(p, 0, True), exact=False)


def test_norm_gradient_and_errors():
    for p in (2, 1, INF):
        for data in ([[3., -4.], [0., 0.]], [[0., 0.], [0., 0.]]):
            x, t = both(data)
            x.requires_grad_(True)
            t.requires_grad_(True)
            x.norm(p, dim=1).sum().backward()
            t.norm(p, dim=1).sum().backward()
            same(x.grad, t.grad, exact=False)
    x, t = both([1, 2], torch.int64)
    same_error(lambda: x.norm(), lambda: t.norm())


# ---- median / sort / argsort / topk --------------------------------------------------------


@pytest.mark.parametrize("data", [[3., 1., 2., 5.], [1., NAN, 3., 0.], [1., NAN, 3., NAN], [[4., 1., 2.], [NAN, 0., 7.]],
                                  [[2., 8.], [6., 4.], [5., 5.]], [7.]])
def test_median(data):
    x, t = both(data)
    same(x.median(), t.median())
    for dim in range(-x.ndim, x.ndim):
        for keepdim in (False, True):
            lv, li = x.median(dim, keepdim)
            r = torch.median(t, dim, keepdim)
            same(lv, r.values)
            same(li, r.indices)  # no ties among these rows: the index is defined
    assert type(lt.median(x, 0)).__name__ == "median"


def test_median_integers_and_gradient():
    x, t = both([[5, 1, 3], [2, 9, 4]], torch.int64)
    same(x.median(), t.median())
    same(x.median(1).values, t.median(1).values)
    x, t = both([[5., 1., 3., 0.], [2., 9., 4., 8.]])
    x.requires_grad_(True)
    t.requires_grad_(True)
    (x.median(1).values * lt.tensor([1., 2.])).sum().backward()
    (t.median(1).values * torch.tensor([1., 2.])).sum().backward()
    same(x.grad, t.grad)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(descending):
    data = [[3., 1., NAN, 3., 2., -INF], [0., 0., 1., NAN, NAN, INF]]
    x, t = both(data)
    for dim in (-1, 0, 1):
        lv, li = x.sort(dim, descending)
        tv, ti = torch.sort(t, dim=dim, descending=descending, stable=True)
        same(lv, tv)
        same(li, ti)
        same(x.argsort(dim, descending), torch.argsort(t, dim=dim, descending=descending, stable=True))
        r = lt.sort(x, stable=True, dim=dim, descending=descending)
        assert type(r).__name__ == "sort" and r.values is r[0]
    xi, ti = both([[3, I64_MIN, I64_MAX, 3], [1, 1, 0, -1]], torch.int64)
    same(xi.sort(descending=descending).values, ti.sort(descending=descending).values)
    same(xi.sort(descending=descending, stable=True).indices, ti.sort(descending=descending, stable=True).indices)
    xb, tb = both([True, False, True, False], torch.bool)
    same(xb.sort(stable=True).indices, tb.sort(stable=True).indices)


def test_sort_gradient_and_0d():
    x, t = both([3., 1., 2.])
    x.requires_grad_(True)
    t.requires_grad_(True)
    (x.sort().values * lt.tensor([1., 10., 100.])).sum().backward()
    (t.sort().values * torch.tensor([1., 10., 100.])).sum().backward()
    same(x.grad, t.grad)
    x, t = both(5.)
    same(x.sort().values, t.sort().values)
    same(x.sort().indices, t.sort().indices)


def test_topk_result_type():
    v = [3., 1., 3., 2., 3., 1.]
    x, t = both(v)
    r = x.topk(2)
    assert type(r).__name__ == "topk"
    assert r.values.tolist() == t.topk(2).values.tolist()
    assert all(v[i] == 3. for i in r.indices.tolist())
    values, indices = lt.topk(x, 3, largest=False)
    same(values, torch.topk(t, 3, largest=False).values)
    same(indices, torch.topk(t, 3, largest=False).indices)


def test_max_dim_gradient_and_elementwise_form():
    data = [[1., 5., 5.], [3., 2., 0.]]
    x, t = both(data)
    x.requires_grad_(True)
    t.requires_grad_(True)
    (x.max(1).values * lt.tensor([1., 2.])).sum().backward()
    (t.max(1).values * torch.tensor([1., 2.])).sum().backward()
    same(x.grad, t.grad)
    x.grad = None
    t.grad = None
    x.amin(1).sum().backward()
    t.amin(1).sum().backward()
    same(x.grad, t.grad)
    a, b = both([1., 5.]), both([3., 2.])
    same(lt.max(a[0], b[0]), torch.max(a[1], b[1]))
    same(a[0].min(b[0]), a[1].min(b[1]))


def test_dim_out_of_range_is_index_error():
    x, t = lt.ones(2, 3), torch.ones(2, 3)
    for call in (lambda m: m.argmax(2), lambda m: m.max(-3), lambda m: m.median(5), lambda m: m.sort(2)):
        same_error(lambda: call(x), lambda: call(t))


def test_zero_dim_inputs():
    x, t = both(5.)
    for call in (lambda m: m.argmax(), lambda m: m.argmax(0), lambda m: m.max(), lambda m: m.amin(), lambda m: m.prod(),
                 lambda m: m.any(), lambda m: m.median(), lambda m: m.norm(), lambda m: m.max(0).indices,
                 lambda m: m.median(0).values):
        same(call(x), call(t))
