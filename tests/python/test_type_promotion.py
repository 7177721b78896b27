"""torch's type promotion and arithmetic semantics, checked against torch itself:
every binary op's result dtype and values over lazytrain's dtypes x (tensor,
0-d tensor, Python bool/int/float) on both sides; integer pow, floor division
and remainder with negative operands, bitwise ops, bool-arithmetic errors, bf16
mean, creation errors, float arange, where variants and format specs."""
import math
import operator

import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

DTYPES = ["float32", "bfloat16", "float16", "int32", "int64", "bool"]
LEFT, RIGHT = [3, -2, 5], [2, 3, 1]
LEFT0, RIGHT0 = 4, 2
LEFT_NUMBERS, RIGHT_NUMBERS = [True, 3, 1.5], [True, 2, 2.5]


def _make(m, values, dtype):
    d = getattr(m, dtype)
    if dtype == "bool":
        values = [v != 0 for v in values] if isinstance(values, list) else True
    return m.tensor(values, dtype=d)


def _tensor_operands(values, value0):
    """(name, maker(module)) for a dimensioned and a 0-d tensor of every dtype."""
    out = []
    for d in DTYPES:
        out.append((f"{d}[3]", lambda m, d=d: _make(m, values, d)))
        out.append((f"{d}[]", lambda m, d=d: _make(m, value0, d)))
    return out


def _numbers(values):
    return [(f"{type(v).__name__}({v})", lambda m, v=v: v) for v in values]


def _outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 (the error is the result compared)
        return "exc", f"{type(e).__name__}: {e}"


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def _values(t):
    return np.asarray(t.float().tolist() if t.dtype in (lt.bfloat16, torch.bfloat16) else t.tolist(), dtype=np.float64)


def _compare_grid(op, pairs, name):
    """Runs op(module, left, right) over every pair in lazytrain and torch: the
    same outcome (both raise, or the same dtype and values)."""
    results = []
    for (ln, lmake), (rn, rmake) in pairs:
        lt_out = _outcome(lambda: op(lt, lmake(lt), rmake(lt)))
        torch_out = _outcome(lambda: op(torch, lmake(torch), rmake(torch)))
        results.append((f"{name}({ln}, {rn})", lt_out, torch_out))
    lt.sync()
    bad = []
    for case, (lk, lv), (tk, tv) in results:
        if lk != tk:
            bad.append(f"{case}: lazytrain {lk} {lv if lk == 'exc' else _dtype_name(lv)} | torch {tk} "
                       f"{tv if tk == 'exc' else _dtype_name(tv)}")
            continue
        if lk == "exc":
            continue
        if _dtype_name(lv) != _dtype_name(tv):
            bad.append(f"{case}: dtype lazytrain {_dtype_name(lv)} torch {_dtype_name(tv)}")
            continue
        half = _dtype_name(tv) in ("bfloat16", "float16")
        a, b = _values(lv), _values(tv)
        if not np.allclose(a, b, rtol=1e-2 if half else 1e-6, atol=1e-6, equal_nan=True):
            bad.append(f"{case}: values lazytrain {a.tolist()} torch {b.tolist()}")
    assert not bad, f"{len(bad)} of {len(results)} differ:\n" + "\n".join(bad[:40])


# One of each lowering (ne/le/gt share eq/lt/ge's, or shares and's).
BINARY_OPERATORS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "pow": operator.pow, "floordiv": operator.floordiv, "mod": operator.mod, "and": operator.and_,
    "xor": operator.xor, "eq": operator.eq, "lt": operator.lt, "ge": operator.ge,
}


@pytest.mark.parametrize("name", sorted(BINARY_OPERATORS))
def test_operator_grid_matches_torch(name):
    op = BINARY_OPERATORS[name]
    left = _tensor_operands(LEFT, LEFT0)
    right = _tensor_operands(RIGHT, RIGHT0)
    pairs = [(l, r) for l in left for r in right + _numbers(RIGHT_NUMBERS)]
    pairs += [(l, r) for l in _numbers(LEFT_NUMBERS) for r in right]
    _compare_grid(lambda m, a, b: op(a, b), pairs, name)


FUNCTIONS = ["add", "sub", "mul", "div", "pow", "floor_divide", "remainder", "maximum", "minimum",
             "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "lt", "ge"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_grid_matches_torch(name):
    """lt.mul(t, 2.0) promotes as t * 2.0 does (and torch.mul does): every
    dtype's dimensioned tensor with 0-d tensors and numbers (the operator grid
    covers the rest of the shared code)."""
    left = _tensor_operands(LEFT, LEFT0)[::2]
    right = _tensor_operands(RIGHT, RIGHT0)[1::2]
    numbers = [] if name in ("maximum", "minimum") else _numbers(RIGHT_NUMBERS)  # torch takes tensors only there
    pairs = [(l, r) for l in left for r in right + numbers]

    _compare_grid(lambda m, a, b: getattr(m, name)(a, b), pairs, name)


def test_where_grid_matches_torch():
    operands = _tensor_operands(LEFT, LEFT0) + _numbers(LEFT_NUMBERS)
    others = _tensor_operands(RIGHT, RIGHT0) + _numbers(RIGHT_NUMBERS)
    pairs = [(a, b) for a in operands for b in others]
    _compare_grid(lambda m, a, b: m.where(m.tensor([True, False, True]), a, b), pairs, "where")


def test_zero_dim_tensors_do_not_promote_within_a_category():
    assert (lt.ones(2, dtype=lt.bfloat16) * lt.tensor(3.0)).dtype == lt.bfloat16
    assert (lt.ones(2, dtype=lt.int32) + lt.tensor(3)).dtype == lt.int32
    assert (lt.ones(2, dtype=lt.int32) + lt.tensor(3.0)).dtype == lt.float32
    assert (lt.tensor(2, dtype=lt.int32) + lt.tensor(3)).dtype == lt.int64  # two 0-d tensors promote


def test_python_float_gives_float32_whatever_its_value():
    for expr in ["m.tensor([3, 4]) * 1.0", "m.tensor([3, 4]) + 2.0", "m.tensor([True, False]) * 1.0",
                 "2.0 * m.tensor([3])", "m.mul(m.tensor([3]), 2.0)", "m.tensor([3]) / 1"]:
        got, want = eval(expr, {"m": lt}), eval(expr, {"m": torch})
        assert _dtype_name(got) == _dtype_name(want), expr
        assert got.tolist() == want.tolist(), expr


def test_integer_pow():
    assert (lt.tensor([2, 3]) ** 2).dtype == lt.int64
    assert (lt.tensor([2, 3]) ** 2).tolist() == [4, 9]
    assert (lt.tensor([-3, 5], dtype=lt.int32) ** 3).tolist() == (torch.tensor([-3, 5], dtype=torch.int32) ** 3).tolist()
    assert (lt.tensor([7]) ** 0).tolist() == [1]
    for fn in (lambda m: m.tensor([2]).pow(-1), lambda m: m.tensor([2]) ** -2, lambda m: m.pow(m.tensor([2]), -1)):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
            fn(lt)
    assert lt.tensor([2]).pow(-1.0).tolist() == [0.5]
    assert (2 ** lt.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert (2 ** lt.tensor([1, 3])).tolist() == [2, 8] and (2 ** lt.tensor([1, 3])).dtype == lt.int64
    assert (2.5 ** lt.tensor([2])).dtype == lt.float32
    assert lt.pow(2, lt.tensor([3])).tolist() == [8]


def test_pow_gradients():
    x = lt.tensor([1.5, 2.0], requires_grad=True)
    e = lt.tensor([2.0, 3.0], requires_grad=True)
    (x ** e).sum().backward()
    tx = torch.tensor([1.5, 2.0], requires_grad=True)
    te = torch.tensor([2.0, 3.0], requires_grad=True)
    (tx ** te).sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), tx.grad.tolist(), rtol=1e-5)
    np.testing.assert_allclose(e.grad.tolist(), te.grad.tolist(), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "bfloat16"])
def test_floor_divide_and_remainder_with_negatives(dtype):
    a = [-7, -6, -1, 0, 1, 5, 7]
    b = [[2], [-2], [3], [-3]]
    la, lb = lt.tensor(a, dtype=getattr(lt, dtype)), lt.tensor(b, dtype=getattr(lt, dtype))
    ta, tb = torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype))
    for op in (operator.floordiv, operator.mod):
        got, want = op(la, lb), op(ta, tb)
        assert _dtype_name(got) == _dtype_name(want)
        np.testing.assert_array_equal(_values(got), _values(want))
    for s in (2, -2, 2.5, -2.5):
        for op in (operator.floordiv, operator.mod):
            got, want = op(la, s), op(ta, s)
            assert _dtype_name(got) == _dtype_name(want), (op, s)
            np.testing.assert_allclose(_values(got), _values(want), rtol=1e-2 if dtype == "bfloat16" else 1e-6)
            got, want = op(s, lb), op(s, tb)
            np.testing.assert_allclose(_values(got), _values(want), rtol=1e-2 if dtype == "bfloat16" else 1e-6)
    assert lt.floor_divide(la, 2).tolist() == torch.floor_divide(ta, 2).tolist()
    assert lt.remainder(la, 3).tolist() == torch.remainder(ta, 3).tolist()


def test_float_floor_divide_by_zero_is_inf_or_nan():
    got = (lt.tensor([-7.0, 7.0]) // 0).tolist()
    assert got == [-math.inf, math.inf]
    assert all(math.isnan(v) for v in (lt.tensor([-7.0, 7.0]) % 0).tolist())


def test_remainder_gradient():
    x = lt.tensor([5.5, -5.5], requires_grad=True)
    (x % 2).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_bitwise_ops():
    a, b = [1, -2, 6, 0], [3, 3, -5, 7]
    for dtype in ("int32", "int64"):
        la, lb = lt.tensor(a, dtype=getattr(lt, dtype)), lt.tensor(b, dtype=getattr(lt, dtype))
        ta, tb = torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype))
        for op in (operator.and_, operator.or_, operator.xor):
            assert op(la, lb).tolist() == op(ta, tb).tolist()
            assert op(la, 6).tolist() == op(ta, 6).tolist()
            assert op(6, lb).tolist() == op(6, tb).tolist()
        assert (~la).tolist() == (~ta).tolist()
        assert lt.bitwise_not(la).tolist() == torch.bitwise_not(ta).tolist()
    m, n = lt.tensor([True, False, True, False]), lt.tensor([True, True, False, False])
    assert (m & n).tolist() == [True, False, False, False]
    assert (m | n).tolist() == [True, True, True, False]
    assert (m ^ n).tolist() == [False, True, True, False]
    assert (~m).tolist() == [False, True, False, True]
    assert (m & n).dtype == lt.bool
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~lt.tensor([1.0])
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        lt.tensor([1.0]) & lt.tensor([1.0])


def test_bool_arithmetic():
    m = lt.tensor([True, False])
    assert (m + m).tolist() == [True, False] and (m + m).dtype == lt.bool
    assert (m * lt.tensor([True, True])).tolist() == [True, False]
    assert (m + 1).tolist() == [2, 1] and (m + 1).dtype == lt.int64
    assert (m * 1.0).dtype == lt.float32
    assert (~m).tolist() == [False, True]
    for fn, msg in ((lambda: 1 - m, "with a bool tensor is not supported"), (lambda: m - 1, "with a bool tensor"),
                    (lambda: -m, "Negation, the `-` operator, on a bool tensor is not supported"),
                    (lambda: m - m, "with two bool tensors is not supported"),
                    (lambda: lt.tensor([1]) - True, "with a bool tensor"), (lambda: True - lt.tensor([1]), "with a bool tensor")):
        with pytest.raises(RuntimeError, match=msg):
            fn()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_mean_accumulates_in_float32(dtype):
    got = (lt.ones(1000, dtype=getattr(lt, dtype)) * 3).mean()
    want = (torch.ones(1000, dtype=getattr(torch, dtype)) * 3).mean()
    assert got.dtype == getattr(lt, dtype)
    assert got.float().item() == want.float().item() == 3.0
    x = np.random.default_rng(0).normal(size=(4, 300)).astype(np.float32)
    got = lt.tensor(x).to(getattr(lt, dtype)).mean(-1).float().tolist()
    want = torch.tensor(x).to(getattr(torch, dtype)).mean(-1).float().tolist()
    assert got == want


def test_creation_errors():
    for make in (lambda m: m.tensor([2**63]), lambda m: m.tensor(-2**63 - 1), lambda m: m.tensor([[2**64]])):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            make(lt)
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            make(torch)
    assert lt.tensor([2**63 - 1, -2**63]).tolist() == [2**63 - 1, -2**63]
    assert lt.tensor(2**64, dtype=lt.float32).item() == torch.tensor(2**64, dtype=torch.float32).item()
    for make in (lambda m: m.zeros(2**62, 4), lambda m: m.ones(2**61, 4), lambda m: m.full((2**62, 4), 1.0)):
        with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
            make(lt)
    for make in (lambda m: m.zeros(-1), lambda m: m.randn(2, -3), lambda m: m.full((-2,), 1.0),
                 lambda m: m.ones(-1), lambda m: m.empty(3, -1)):
        with pytest.raises(RuntimeError) as got:
            make(lt)
        with pytest.raises(RuntimeError) as want:
            make(torch)
        assert str(got.value) == str(want.value)


ARANGES = [(0, 1, 0.25), (2.5,), (0.5, 3), (1, -1, -0.5), (0, 1, 0.1), (0, 10, 3.0), (0, 5, 2), (5,), (-3, 4, 2),
           (10**7, 10**7 + 3, 0.5)]


@pytest.mark.parametrize("args", ARANGES, ids=str)
def test_arange_matches_torch(args):
    got, want = lt.arange(*args), torch.arange(*args)
    assert _dtype_name(got) == _dtype_name(want)
    assert got.tolist() == want.tolist()


def test_arange_dtypes_and_errors():
    for kw in ({"dtype": "float32"}, {"dtype": "bfloat16"}, {"dtype": "int32"}):
        d = kw["dtype"]
        got, want = lt.arange(0, 3, dtype=getattr(lt, d)), torch.arange(0, 3, dtype=getattr(torch, d))
        assert got.tolist() == want.tolist() and _dtype_name(got) == d
    assert lt.arange(0.0, 2.0, 0.3, dtype=lt.int32).tolist() == torch.arange(0.0, 2.0, 0.3, dtype=torch.int32).tolist()
    for args in ((0, 1, 0), (5, 1), (1, 0, 0.5)):
        with pytest.raises(RuntimeError) as got:
            lt.arange(*args)
        assert "step" in str(got.value)


def test_where_variants():
    c = [True, False, True]
    for a, b in ((lt.tensor([1.0, 2, 3]), 0.0), (1.0, 0.0), (1, 0), (1, 0.5), (0.5, lt.tensor([1, 2, 3]))):
        ta = torch.tensor(a.tolist()) if isinstance(a, lt.Tensor) else a
        tb = torch.tensor(b.tolist()) if isinstance(b, lt.Tensor) else b
        got, want = lt.where(lt.tensor(c), a, b), torch.where(torch.tensor(c), ta, tb)
        assert _dtype_name(got) == _dtype_name(want) and got.tolist() == want.tolist()
    x = [[True, False], [False, True]]
    got = lt.where(lt.tensor(x))
    want = torch.where(torch.tensor(x))
    assert isinstance(got, tuple) and [t.tolist() for t in got] == [t.tolist() for t in want]
    got = lt.ones(2).where(lt.tensor([True, False]), lt.zeros(2))
    assert got.tolist() == torch.ones(2).where(torch.tensor([True, False]), torch.zeros(2)).tolist()
    assert lt.tensor([1, 2]).where(lt.tensor([True, False]), 0.5).tolist() == [1.0, 0.5]
    with pytest.raises(RuntimeError):
        lt.where(lt.tensor([1, 0]), 1.0, 0.0)


def test_format_spec():
    assert f"{lt.tensor(2.5):.2f}" == f"{torch.tensor(2.5):.2f}"
    assert f"{lt.tensor(3):d}" == f"{torch.tensor(3):d}"
    assert f"{lt.tensor(2.5)}" == f"{torch.tensor(2.5)}"
    assert f"{lt.tensor(True)}" == f"{torch.tensor(True)}"
    assert f"{lt.tensor([1.0])}" == str(lt.tensor([1.0]))
    with pytest.raises(TypeError):
        f"{lt.tensor([2.5]):.2f}"


def test_numpy_array_operands():
    a = np.ones(3, np.float32)
    got = lt.ones(3) + a
    assert isinstance(got, lt.Tensor) and got.tolist() == [2.0, 2.0, 2.0]
    got = a * lt.full((3,), 2.0)
    assert isinstance(got, lt.Tensor) and got.tolist() == [2.0, 2.0, 2.0]
    assert (lt.tensor([1, 2]) * np.float32(2.0)).dtype == lt.float32
    assert (lt.tensor([1, 2]) * np.int64(2)).dtype == lt.int64


def test_method_gaps():
    x = lt.ones(1, 3, 1)
    assert x.squeeze().shape == torch.ones(1, 3, 1).squeeze().shape
    assert lt.squeeze(x).shape == (3,)
    assert x.squeeze((0, 1)).shape == torch.ones(1, 3, 1).squeeze((0, 1)).shape
    assert x.squeeze(1).shape == (1, 3, 1)
    for sizes in ((2, 2), (3, 1, 2), (1, 1)):
        assert lt.tensor([[1, 2]]).repeat(*sizes).tolist() == torch.tensor([[1, 2]]).repeat(*sizes).tolist()
    with pytest.raises(RuntimeError, match="can not be smaller"):
        lt.tensor([[1]]).repeat(2)
    w = lt.tensor([1.0, 2.0], requires_grad=True)
    w.repeat(3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    got = lt.nn.functional.softmax(lt.ones(2, 3, dtype=lt.bfloat16), dim=-1, dtype=lt.float32)
    assert got.dtype == lt.float32
    got = lt.tensor([True, True]).cumsum(0, dtype=lt.int32)
    assert got.dtype == lt.int32 and got.tolist() == [1, 2]
    t = lt.tensor([[1, 2], [3, 4]])
    tt = torch.tensor([[1, 2], [3, 4]])
    assert t.repeat_interleave(lt.tensor([1, 2]), dim=0).tolist() == tt.repeat_interleave(torch.tensor([1, 2]), dim=0).tolist()
    assert t.repeat_interleave(2).tolist() == tt.repeat_interleave(2).tolist()
    assert lt.repeat_interleave(lt.tensor([1, 2])).tolist() == torch.repeat_interleave(torch.tensor([1, 2])).tolist()
    with pytest.raises(RuntimeError, match="repeats must have the same size"):
        lt.tensor([1, 2]).repeat_interleave(lt.tensor([1, 2, 3]))


def test_result_type_promote_types_can_cast_match_torch():
    operands = _tensor_operands(LEFT, LEFT0) + _numbers(LEFT_NUMBERS)
    for an, a in operands:
        for bn, b in operands:
            if not (isinstance(a(lt), lt.Tensor) or isinstance(b(lt), lt.Tensor)):
                continue
            got = lt.result_type(a(lt), b(lt))
            want = torch.result_type(a(torch), b(torch))
            assert str(got).split(".")[-1] == str(want).split(".")[-1], (an, bn)
    for x in DTYPES:
        for y in DTYPES:
            got = lt.promote_types(getattr(lt, x), getattr(lt, y))
            assert str(got).split(".")[-1] == str(torch.promote_types(getattr(torch, x), getattr(torch, y))).split(".")[-1]
            assert lt.can_cast(getattr(lt, x), getattr(lt, y)) == torch.can_cast(getattr(torch, x), getattr(torch, y)), (x, y)


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("int32", "int64"), ("float32", "int64"), ("int64", "bfloat16")])
def test_alpha_keeps_torchs_result_dtype(op, dtypes):
    """add/sub(a, b, alpha=k): b * k in the result's kind (integers stay integers)."""
    a_np, b_np = np.array([1, -2, 3]), np.array([4, 5, -6])
    ta, tb = (torch.tensor(v, dtype=getattr(torch, d)) for v, d in zip((a_np, b_np), dtypes))
    la, lb = (lt.tensor(v.tolist(), dtype=getattr(lt, d)) for v, d in zip((a_np, b_np), dtypes))
    want = getattr(torch, op)(ta, tb, alpha=3)
    got = getattr(lt, op)(la, lb, alpha=3)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_fractional_alpha_with_integers_is_torchs_error():
    a = lt.tensor([1, 2])
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point number"):
        lt.add(a, a, alpha=0.5)
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point number"):
        torch.add(torch.tensor([1, 2]), torch.tensor([1, 2]), alpha=0.5)
