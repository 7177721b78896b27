"""Tensor.register_hook, retain_grad, grad_fn, lazytrain.autograd.grad /
backward(retain_graph) and the gradients of lt.compile'd functions, against
torch in the test itself."""
import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

X = np.array([1.0, -2.0, 3.0], dtype=np.float32)
W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], dtype=np.float32)


def hooked_chain(m):
    x = m.tensor(X, requires_grad=True)
    y = x * 2
    y.retain_grad()
    seen = []
    h1 = y.register_hook(lambda g: seen.append(("y1", g.tolist())))
    y.register_hook(lambda g: (seen.append(("y2", g.tolist())), g * 10)[1])
    x.register_hook(lambda g: seen.append(("x", g.tolist())))
    z = (y * y).sum() + (x * 3).sum()
    h1.remove()
    h1.remove()  # twice: a no-op, as torch
    z.backward()
    return seen, x.grad.tolist(), y.grad.tolist(), y.retains_grad, x.retains_grad


def test_tensor_hooks_order_values_and_retain_grad_match_torch():
    assert hooked_chain(lt) == hooked_chain(torch)


def test_register_hook_on_a_tensor_without_grad_raises_as_torch():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        lt.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(2).register_hook(lambda g: g)


def test_grad_fn_names_and_edges_match_torch():
    def graph(m):
        a = m.tensor(X, requires_grad=True)
        b = m.tensor(X)
        y = a * b + a
        fn = y.grad_fn
        nexts = fn.next_functions
        return (a.grad_fn, b.grad_fn, fn.name(), [n.name() if n is not None else None for n, _ in nexts],
                [[n.name() if n is not None else None for n, _ in node.next_functions] for node, _ in nexts if node is not None])
    got, want = graph(lt), graph(torch)
    assert got == want


def test_accumulate_grad_variable_is_the_leaf():
    a = lt.tensor(X, requires_grad=True)
    (node, _), = (a * 2).grad_fn.next_functions[:1]
    assert node.name() == "torch::autograd::AccumulateGrad"
    assert node.variable._is_same(a)


def grads(m, **kw):
    x = m.tensor(X, requires_grad=True)
    w = m.tensor(W, requires_grad=True)
    unused = m.tensor(X, requires_grad=True)
    h = m.matmul(x, w)
    out = (h * h).sum()
    g1 = m.autograd.grad(out, [x, h], retain_graph=True)
    g2 = m.autograd.grad([h], [w, unused], grad_outputs=[m.ones(2)], allow_unused=True, **kw)
    return [g.tolist() for g in g1], [None if g is None else g.tolist() for g in g2], x.grad, w.grad


def test_autograd_grad_values_match_torch_and_leave_leaves_alone():
    got, want = grads(lt), grads(torch)
    np.testing.assert_allclose(np.array(got[0][0]), np.array(want[0][0]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[0][1]), np.array(want[0][1]), rtol=1e-6)
    np.testing.assert_allclose(np.array(got[1][0]), np.array(want[1][0]), rtol=1e-6)
    assert got[1][1] is None and want[1][1] is None
    assert got[2] is None and got[3] is None and want[2] is None and want[3] is None


def test_autograd_grad_errors_are_torchs():
    for m in (lt, torch):
        x = m.tensor(X, requires_grad=True)
        y = (x * 2).sum()
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            m.autograd.grad(y, [x, m.tensor(X, requires_grad=True)], retain_graph=True)
        with pytest.raises(RuntimeError, match="does not require grad"):
            m.autograd.grad(y, [m.tensor(X)], retain_graph=True)
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            m.autograd.grad(x * 2, [x])
        m.autograd.grad(y, [x])
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            m.autograd.grad(y, [x])


def test_backward_retain_graph_runs_twice_as_torch():
    def twice(m):
        x = m.tensor(X, requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad.tolist()
    assert twice(lt) == twice(torch)


def test_compiled_function_output_backpropagates_to_inputs_and_parameters():
    rng = np.random.default_rng(0)
    a, b, p = rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    a, b, p = a.astype(np.float32), b.astype(np.float32), p.astype(np.float32)

    def run(m, compile_fn):
        w, x, scale = m.tensor(a, requires_grad=True), m.tensor(b), m.tensor(p, requires_grad=True)

        def f(u, v):
            return (m.matmul(u, v).relu() * scale).sum()
        cf = compile_fn(f)
        for _ in range(2):  # the second call replays the compiled graph
            w.grad, scale.grad = None, None
            out = cf(w, x)
            out.backward()
        return out.item(), w.grad.numpy(), scale.grad.numpy()

    got, want = run(lt, lt.compile), run(torch, lambda f: f)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_compiled_function_without_grad_has_no_grad_fn():
    cf = lt.compile(lambda u: (u * 2).sum())
    out = cf(lt.ones(3))
    assert out.grad_fn is None and not out.requires_grad
    with lt.no_grad():
        assert cf(lt.ones(3, requires_grad=True)).grad_fn is None
