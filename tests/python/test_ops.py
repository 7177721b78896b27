"""Every op of lazytrain's Python API against numpy: values, and gradients
against central differences of the numpy reference (float64), one table of
cases as ggml's test-backend-ops runs them."""
import math

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.nn.functional as F

_erf = np.vectorize(math.erf)


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _np_log_softmax(x, axis):
    return np.log(_np_softmax(x, axis))


def _np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _np_cross_entropy(logits, target):
    lp = _np_log_softmax(logits, -1)
    return -lp[np.arange(len(target)), target].mean()


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_rms_norm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


MASK = np.array([[True, False, True, True, False], [True, True, False, True, True], [False, True, True, True, True]])


def _np_scatter_add(a, dim, i, b):
    out = a.copy()
    for r in range(i.shape[0]):
        for c in range(i.shape[1]):
            out[r, i[r, c]] += b[r, c]
    return out


def _np_sdpa(q, k, v, causal, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.arange(S)[None, :] > np.arange(L)[:, None], -np.inf, s)
    return _np_softmax(s, -1) @ v


def randn(*shape, scale=1.0, shift=0.0):
    return ("randn", shape, scale, shift)


def ints(high, *shape):
    return ("ints", shape, high)


# name, lazytrain function, numpy function (float64), inputs (differentiable: randn), tolerances
CASES = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, [randn(3, 4), randn(4)]),
    ("add_alpha", lambda a, b: lt.add(a, b, alpha=2.0), lambda a, b: a + 2 * b, [randn(3, 4), randn(3, 4)]),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, [randn(3, 4), randn(3, 1)]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [randn(2, 3), randn(2, 3)]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [randn(2, 3), randn(2, 3, scale=0.5, shift=3.0)]),
    ("pow", lambda a: a ** 3, lambda a: a ** 3, [randn(5)]),
    ("neg", lambda a: -a, lambda a: -a, [randn(5)]),
    ("exp", lt.exp, np.exp, [randn(5)]),
    ("log", lt.log, np.log, [randn(5, scale=0.3, shift=2.0)]),
    ("sqrt", lt.sqrt, np.sqrt, [randn(5, scale=0.3, shift=2.0)]),
    ("rsqrt", lt.rsqrt, lambda a: 1 / np.sqrt(a), [randn(5, scale=0.3, shift=2.0)]),
    ("tanh", lt.tanh, np.tanh, [randn(5)]),
    ("erf", lt.erf, _erf, [randn(5)]),
    ("abs", lt.abs, np.abs, [randn(5, shift=0.05)]),
    ("relu", lt.relu, lambda a: np.maximum(a, 0), [randn(6, shift=0.05)]),
    ("gelu", lt.gelu, lambda a: a * 0.5 * (1 + _erf(a / math.sqrt(2))), [randn(6)]),
    ("gelu_tanh", lambda a: lt.gelu(a, "tanh"),
     lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))), [randn(6)]),
    ("maximum", lt.maximum, np.maximum, [randn(6), randn(6)]),
    ("minimum", lt.minimum, np.minimum, [randn(6), randn(6)]),
    ("where", lambda a, b: lt.where(a > b, a, b), lambda a, b: np.where(a > b, a, b), [randn(6), randn(6)]),
    ("masked_fill", lambda a: a.masked_fill(a > 0.5, 2.0), lambda a: np.where(a > 0.5, 2.0, a), [randn(3, 3)]),
    ("matmul", lt.matmul, np.matmul, [randn(3, 4), randn(4, 5)]),
    ("matmul_batched", lt.matmul, np.matmul, [randn(2, 3, 4), randn(4, 2)]),
    ("sum", lambda a: a.sum(-1), lambda a: a.sum(-1), [randn(3, 4)]),
    ("mean", lambda a: lt.mean(a, (0, 1)), lambda a: a.mean((0, 1)), [randn(3, 4, 2)]),
    ("amax", lambda a: a.amax(1), lambda a: a.max(1), [randn(3, 4)]),
    ("logsumexp", lambda a: lt.logsumexp(a, 1), lambda a: np.log(np.exp(a).sum(1)), [randn(3, 4)]),
    ("softmax", lambda a: lt.softmax(a, -1), lambda a: _np_softmax(a, -1), [randn(3, 5)]),
    ("log_softmax", lambda a: lt.log_softmax(a, 0), lambda a: _np_log_softmax(a, 0), [randn(3, 5)]),
    ("reshape", lambda a: a.reshape(4, 3), lambda a: a.reshape(4, 3), [randn(3, 4)]),
    ("transpose", lambda a: a.transpose(0, 2), lambda a: a.transpose(2, 1, 0), [randn(2, 3, 4)]),
    ("permute", lambda a: a.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0), [randn(2, 3, 4)]),
    ("expand", lambda a: a.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4)), [randn(1, 4)]),
    ("slice", lambda a: a[:, 1:4:2], lambda a: a[:, 1:4:2], [randn(3, 5)]),
    ("cat", lambda a, b: lt.cat([a, b], 1), lambda a, b: np.concatenate([a, b], 1), [randn(2, 3), randn(2, 2)]),
    ("index_select", lambda a, i: lt.index_select(a, 0, i), lambda a, i: a[i], [randn(4, 3), ints(4, 5)]),
    ("embedding", lambda w, i: F.embedding(i, w), lambda w, i: w[i], [randn(6, 3), ints(6, 2, 3)]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, 4, w, b), _np_layer_norm, [randn(3, 4), randn(4), randn(4)]),
    ("linear", F.linear, lambda x, w, b: x @ w.T + b, [randn(3, 4), randn(5, 4), randn(5)]),
    ("cross_entropy", F.cross_entropy, _np_cross_entropy, [randn(4, 6), ints(6, 4)]),
    ("sigmoid", F.sigmoid, _np_sigmoid, [randn(6)]),
    ("silu", F.silu, lambda a: a * _np_sigmoid(a), [randn(6)]),
    ("rms_norm", lambda x, w: F.rms_norm(x, 4, w, 1e-6), _np_rms_norm, [randn(3, 4), randn(4)]),
    ("sin", lt.sin, np.sin, [randn(6)]),
    ("cos", lt.cos, np.cos, [randn(6)]),
    ("clamp", lambda a: lt.clamp(a, -0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), [randn(3, 4)]),
    ("clamp_min", lambda a: a.clamp(min=0.1), lambda a: np.maximum(a, 0.1), [randn(3, 4)]),
    ("cumsum", lambda a: a.cumsum(1), lambda a: np.cumsum(a, 1), [randn(3, 5)]),
    ("tril", lambda a: a.tril(), np.tril, [randn(4, 4)]),
    ("triu", lambda a: lt.triu(a, 1), lambda a: np.triu(a, 1), [randn(3, 4)]),
    ("stack", lambda a, b: lt.stack([a, b], 1), lambda a, b: np.stack([a, b], 1), [randn(2, 3), randn(2, 3)]),
    ("split", lambda a: lt.split(a, 2, 1)[1], lambda a: a[:, 2:4], [randn(3, 5)]),
    ("split_sections", lambda a: a.split([1, 4], 1)[1], lambda a: a[:, 1:], [randn(3, 5)]),
    ("chunk", lambda a: lt.chunk(a, 3, 0)[2], lambda a: a[4:], [randn(6, 2)]),
    ("gather", lambda a, i: lt.gather(a, 1, i), lambda a, i: np.take_along_axis(a, i, 1), [randn(3, 4), ints(4, 3, 2)]),
    ("scatter_add", lambda a, i, b: lt.scatter_add(a, 1, i, b), lambda a, i, b: _np_scatter_add(a, 1, i, b),
     [randn(3, 4), ints(4, 3, 2), randn(3, 2)]),
    ("repeat_interleave", lambda a: a.repeat_interleave(2, 0), lambda a: np.repeat(a, 2, 0), [randn(3, 2)]),
    ("topk_values", lambda a: lt.topk(a, 2, -1)[0], lambda a: -np.sort(-a, -1)[..., :2], [randn(3, 5)]),
    ("sdpa_bool_mask", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=lt.tensor(MASK)),
     lambda q, k, v: _np_sdpa(q, k, v, False, MASK), [randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)]),
    ("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
     lambda q, k, v: _np_sdpa(q, k, v, False), [randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)]),
    ("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: _np_sdpa(q, k, v, True), [randn(2, 4, 4), randn(2, 4, 4), randn(2, 4, 3)]),
]


def _make(spec, rng):
    if spec[0] == "randn":
        _, shape, scale, shift = spec
        return (rng.standard_normal(shape) * scale + shift).astype(np.float32)
    _, shape, high = spec
    return rng.integers(0, high, shape).astype(np.int64)


def _numeric_grad(fn, arrays, i, r, eps=1e-6):
    """d sum(fn(arrays) * r) / d arrays[i], central differences in float64."""
    x = arrays[i].astype(np.float64)
    g = np.zeros_like(x)
    args = [a.astype(np.float64) if a.dtype == np.float32 else a for a in arrays]
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        args[i] = x
        up = (fn(*args) * r).sum()
        x[idx] = old - eps
        args[i] = x
        down = (fn(*args) * r).sum()
        x[idx] = old
        g[idx] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_value_and_gradient(case):
    name, lt_fn, np_fn, specs = case
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrays = [_make(s, rng) for s in specs]
    inputs = [lt.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
    out = lt_fn(*inputs)
    expected = np_fn(*[a.astype(np.float64) if a.dtype == np.float32 else a for a in arrays])
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-5, atol=2e-5, err_msg=name)
    r = rng.standard_normal(out.shape).astype(np.float32)
    (out * lt.tensor(r)).sum().backward()
    lt.sync()
    for i, (a, t) in enumerate(zip(arrays, inputs)):
        if a.dtype != np.float32:
            continue
        numeric = _numeric_grad(np_fn, arrays, i, r.astype(np.float64))
        assert t.grad is not None, f"{name}: input {i} got no gradient"
        np.testing.assert_allclose(t.grad.numpy(), numeric, rtol=1e-3, atol=1e-4, err_msg=f"{name} grad {i}")


def test_comparisons_and_logic():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    x = lt.tensor(a)
    np.testing.assert_array_equal(lt.eq(x, 2.0).numpy(), a == 2)
    np.testing.assert_array_equal(lt.ne(x, x).numpy(), a != a)
    np.testing.assert_array_equal(lt.ge(x, 2.0).numpy(), a >= 2)
    np.testing.assert_array_equal(lt.logical_or(x < 2, x > 2).numpy(), (a < 2) | (a > 2))
    np.testing.assert_array_equal(lt.argmax(lt.tensor([[1.0, 5.0, 2.0]]), 1).numpy(), [1])


def test_topk_indices_and_sdpa_is_one_op():
    x = lt.tensor([[1.0, 5.0, 3.0, 4.0]])
    values, indices = x.topk(2)
    assert values.tolist() == [[5.0, 4.0]] and indices.tolist() == [[1, 3]] and indices.dtype == lt.int64
    q = lt.randn(1, 2, 4, 8)
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    ir = lt.debug.ir_text(out)
    assert ir.count("aten::_scaled_dot_product_flash_attention") == 1 and "softmax" not in ir and "matmul" not in ir, ir


def test_data_dependent_ops_sync_in_lazy_mode_and_count_it():
    x = lt.tensor([0.0, 2.0, 0.0, 3.0])
    before = lt.debug.metrics.counter_value("aten::nonzero") or 0
    assert lt.nonzero(x * 1).tolist() == [[1], [3]]  # runs the pending graph, as PyTorch/XLA
    assert x[x > 1].tolist() == [2.0, 3.0]
    assert (lt.debug.metrics.counter_value("aten::nonzero") or 0) == before + 2
    with lt.execution_mode("debug_eager"):
        assert lt.nonzero(x).tolist() == [[1], [3]]
        assert x[x > 1].tolist() == [2.0, 3.0]
