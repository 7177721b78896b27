"""Views and in-place ops against torch: every in-place op through every view
kind reaches the base and the other views, autograd sees in-place writes, and
torch's errors (leaf in place, dtype that cannot be cast back, shapes that do not
broadcast, a saved tensor modified before backward) come out the same.

The same program runs on torch and on lazytrain (`run(lib)` takes the module);
values and gradients are compared exactly (these ops move or combine values
without rounding differences)."""
import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

BASE = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.0


def values(t):
    return np.asarray(t.detach().float().numpy() if hasattr(t, "detach") else t)


def same(a, b):
    np.testing.assert_array_equal(values(a), values(b))
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    assert tuple(a.shape) == tuple(b.shape)


# Each view takes the base and returns a view of it, spelled the same in both libraries.
VIEWS = {
    "int": lambda x: x[1],
    "slice": lambda x: x[:, 1:3],
    "step": lambda x: x[..., ::2],
    "step_offset": lambda x: x[:, :, 1::2],
    "negative": lambda x: x[-1, -2:],
    "none": lambda x: x[None, 0],
    "transpose": lambda x: x.transpose(0, 2),
    "t_of_slice": lambda x: x[0].t(),
    "permute": lambda x: x.permute(2, 0, 1),
    "view": lambda x: x.view(6, 4),
    "reshape": lambda x: x.reshape(-1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x[:1].squeeze(0),
    "flatten": lambda x: x.flatten(1),
    "select": lambda x: x.select(2, 3),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "split": lambda x: x.split(2, dim=2)[1],
    "chunk": lambda x: x.chunk(3, dim=1)[2],
    "unbind": lambda x: x.unbind(0)[1],
    "detach": lambda x: x.detach(),
    "data": lambda x: x.data,
    "chain": lambda x: x[1].t()[1:3].reshape(-1)[::2],
}

# In-place ops applied to the view: (name, fn(lib, view)).
INPLACE = {
    "add_": lambda lib, v: v.add_(10),
    "add_alpha": lambda lib, v: v.add_(lib.ones(v.shape), alpha=3),
    "sub_": lambda lib, v: v.sub_(2.5),
    "mul_": lambda lib, v: v.mul_(-2),
    "div_": lambda lib, v: v.div_(4),
    "iadd": lambda lib, v: v.__iadd__(1),
    "imul_tensor": lambda lib, v: v.__imul__(lib.full(v.shape[-1:], 3.0)),
    "fill_": lambda lib, v: v.fill_(5),
    "zero_": lambda lib, v: v.zero_(),
    "copy_broadcast": lambda lib, v: v.copy_(lib.ones(v.shape[-1:]) * 9),
    "clamp_": lambda lib, v: v.clamp_(-3, 4),
    "neg_": lambda lib, v: v.neg_(),
    "abs_": lambda lib, v: v.abs_(),
    "masked_fill_": lambda lib, v: v.masked_fill_(v > 0, -1.0),
    "pow_": lambda lib, v: v.pow_(2),
}


CASES = sorted({(v, o) for v in ("int", "step_offset", "transpose", "chain", "detach") for o in INPLACE} |
               {(v, o) for v in VIEWS for o in ("add_", "copy_broadcast", "masked_fill_", "imul_tensor")})


@pytest.mark.parametrize("view,op", CASES)
def test_inplace_on_a_view_reaches_the_base_and_the_other_views(view, op):
    def run(lib):
        base = lib.tensor(BASE.copy())
        other = base.transpose(0, 1)[1]  # an earlier view sees the write too
        v = VIEWS[view](base)
        out = INPLACE[op](lib, v)
        assert out is v
        return base, v, other

    for a, b in zip(run(lt), run(torch)):
        same(a, b)


@pytest.mark.parametrize("view", ["int", "slice", "step", "transpose", "chain", "detach"])
def test_write_to_the_base_is_seen_through_views_taken_before(view):
    def run(lib):
        base = lib.tensor(BASE.copy())
        v = VIEWS[view](base)
        base.mul_(3).add_(1)
        first = v * 1
        base[0] = 100.0
        return v, first

    for a, b in zip(run(lt), run(torch)):
        same(a, b)


@pytest.mark.parametrize("index,value", [
    (1, 7.0), ((0, 2), -1.0), ((slice(None), 1), 3.0), ((Ellipsis, 0), 4.0), ((1, slice(0, 3, 2)), 8.0),
    ((None, 0, 1), 2.0), (0, "row"), ("mask", 0.0), ("mask_rows", 5.0), ("list", 1.5), ("tensor_dim1", -2.0),
    ("negative_list", 6.0), ("tensor_values", "rows"),
])
def test_item_assignment(index, value):
    def run(lib):
        x = lib.tensor(BASE.copy())
        idx = index
        if index == "mask":
            idx = x > 3
        elif index == "mask_rows":
            idx = lib.tensor([True, False])
        elif index == "list":
            idx = [1, 0]
        elif index == "tensor_dim1":
            idx = (slice(None), lib.tensor([2, 0]))
        elif index == "negative_list":
            idx = (slice(None), slice(None), [-1, 0])
        elif index == "tensor_values":
            idx = lib.tensor([1])
        v = value
        if value == "row":
            v = lib.tensor([1.0, 2.0, 3.0, 4.0])
        elif value == "rows":
            v = lib.ones(1, 3, 4) * 2
        x[idx] = v
        return x

    same(run(lt), run(torch))


def test_item_assignment_casts_to_the_tensors_dtype():
    def run(lib):
        x = lib.tensor([1, 2, 3])
        x[0] = 7.9  # truncated, as torch
        m = lib.tensor([True, False, True])
        m[1] = 1
        return x, m

    for a, b in zip(run(lt), run(torch)):
        same(a, b)


@pytest.mark.parametrize("name", ["index_fill_", "index_add_", "index_copy_", "scatter_", "scatter_value_",
                                  "scatter_add_", "masked_fill_"])
def test_inplace_index_ops(name):
    def run(lib):
        x = lib.tensor(BASE[0].copy())
        idx = lib.tensor([2, 0])
        src = lib.tensor(np.full((3, 2), 10.0, np.float32) + np.arange(6, dtype=np.float32).reshape(3, 2))
        if name == "index_fill_":
            x.index_fill_(1, idx, -5.0)
        elif name == "index_add_":
            x.index_add_(1, idx, src, alpha=2)
        elif name == "index_copy_":
            x.index_copy_(1, idx, src)
        elif name == "scatter_":
            x.scatter_(1, lib.tensor([[3, 1], [0, 2], [1, 3]]), src)
        elif name == "scatter_value_":
            x.scatter_(0, lib.tensor([[2, 0, 1, 2]]), 9.0)
        elif name == "scatter_add_":
            x.scatter_add_(1, lib.tensor([[3, 1], [0, 2], [1, 3]]), src)
        else:
            x.masked_fill_(lib.tensor([True, False, True]).unsqueeze(1), 0.5)
        return x

    same(run(lt), run(torch))


def grads_of(program):
    out = []
    for lib in (lt, torch):
        x = lib.tensor(BASE[0].copy(), requires_grad=True)
        w = lib.tensor(np.linspace(-1, 1, 4, dtype=np.float32), requires_grad=True)
        loss = program(lib, x, w)
        loss.backward()
        out.append((loss, x.grad, w.grad))
    return out


@pytest.mark.parametrize("name,program", [
    ("mul_ of a result", lambda lib, x, w: (lambda y: (y.mul_(3), y.sum())[1])(x * 2)),
    ("in-place on a view of a result", lambda lib, x, w: (lambda y: (y[1].mul_(w), (y * y).sum())[1])(x * 1)),
    ("base write seen by a view", lambda lib, x, w: (lambda y: (lambda v: (y.add_(w), (v * w[1:]).sum())[1])(y[:, 1:]))(x + 0)),
    ("copy_ from a tensor with grad", lambda lib, x, w: (lambda y: (y[0].copy_(w), (y ** 2).sum())[1])(lib.zeros(3, 4))),
    ("setitem with a tensor value", lambda lib, x, w: (lambda y: (y.__setitem__((slice(None), 2), w[:3]), y.sum() * 2)[1])(x.clone())),
    ("iadd in a residual", lambda lib, x, w: (lambda h: (h.__iadd__(x), h.relu_(), h.sum())[2])(x * w)),
    ("masked_fill_ of a result", lambda lib, x, w: (lambda y: (y.masked_fill_(x > 0, 0.0), (y * w).sum())[1])(x * w)),
    ("clamp_ through a transpose", lambda lib, x, w: (lambda y: (y.t().clamp_(-2, 2), (y * w).sum())[1])(x * 1)),
])
def test_autograd_records_inplace_ops(name, program):
    (l_loss, l_gx, l_gw), (t_loss, t_gx, t_gw) = grads_of(program)
    np.testing.assert_allclose(values(l_loss), values(t_loss), rtol=1e-6)
    for a, b in ((l_gx, t_gx), (l_gw, t_gw)):
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_allclose(values(a), values(b), rtol=1e-6, atol=1e-6)


def error_of(program):
    found = {}
    for lib in (lt, torch):
        try:
            program(lib)
            found[lib] = None
        except Exception as e:  # noqa: BLE001 (compared below)
            found[lib] = e
    return found[lt], found[torch]


@pytest.mark.parametrize("name,program,words", [
    ("leaf", lambda lib: lib.ones(2, requires_grad=True).add_(1), "leaf Variable that requires grad"),
    ("view of a leaf", lambda lib: lib.ones(2, 2, requires_grad=True)[0].mul_(2), "view of a leaf Variable"),
    ("int add float", lambda lib: lib.tensor([1, 2]).add_(0.5), "can't be cast to the desired output type Long"),
    ("int div", lambda lib: lib.tensor([3, 4]).div_(2), "can't be cast to the desired output type Long"),
    ("bool add", lambda lib: lib.tensor([True]).add_(lib.tensor([2])), "can't be cast to the desired output type Bool"),
    ("broadcast grows", lambda lib: lib.ones(3).add_(lib.ones(2, 3)), "doesn't match the broadcast shape"),
    ("expanded write", lambda lib: lib.ones(1, 3).expand(2, 3).add_(1), "more than one element"),
    ("saved tensor changed", lambda lib: (lambda x: (lambda y: (lambda z: (y.add_(1), z.sum().backward()))(y * x))(x * 1))(
        lib.ones(2, requires_grad=True)), "modified by an inplace operation"),
])
def test_inplace_errors_match_torch(name, program, words):
    mine, theirs = error_of(program)
    assert theirs is not None and isinstance(theirs, RuntimeError), name
    assert isinstance(mine, RuntimeError), f"{name}: lazytrain gave {mine!r}"
    assert words in str(mine) and words in str(theirs), (str(mine), str(theirs))
    assert "test_views_inplace_torch.py" in str(mine), f"{name}: the error does not name the user's line: {mine}"


def test_inplace_under_no_grad_keeps_leaves_and_parameters():
    def run(lib):
        lin = (lt.nn if lib is lt else torch.nn).Linear(3, 2)
        with lib.no_grad():
            lin.weight.copy_(lib.ones(2, 3))
            lin.bias += 1
            lin.weight[0, 1] = 5.0
            lin.weight.data.mul_(2)
        assert lin.weight.is_leaf and lin.weight.requires_grad
        return lin.weight, lin.bias.detach() - lin.bias.detach() + 1

    for a, b in zip(run(lt), run(torch)):
        same(a, b)


def test_shape_changing_inplace_ops():
    def run(lib):
        x = lib.tensor(BASE[0].copy())
        y = lib.tensor([1.0, 2.0])
        x.t_()
        y.unsqueeze_(0)
        z = lib.ones(1, 3, 1)
        z.squeeze_()
        return x, y, z

    for a, b in zip(run(lt), run(torch)):
        same(a, b)


def test_versions_count_writes_to_a_family():
    x = lt.zeros(3)
    v = x[1:]
    assert lt._C._version(x) == 0
    v.add_(1)
    x.mul_(2)
    assert lt._C._version(x) == 2 and lt._C._version(v) == 2
    assert x.tolist() == [0.0, 2.0, 2.0] and v.tolist() == [2.0, 2.0]


def test_a_loop_of_inplace_updates_compiles_once():
    import lazytrain.debug.metrics as met
    w = lt.zeros(4, 3)
    lt.sync()
    before = met.counter_value("UncachedCompile") or 0
    for step in range(4):
        w[:, 1] += 1.0
        w.mul_(0.5)
        lt.sync()
    assert (met.counter_value("UncachedCompile") or 0) - before == 1
    expected = torch.zeros(4, 3)
    for _ in range(4):
        expected[:, 1] += 1.0
        expected.mul_(0.5)
    same(w, expected)
