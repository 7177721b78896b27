"""lazytrain.Tensor: creation, attributes, reads, indexing, operators and methods,
against numpy."""
import numpy as np
import pytest

import lazytrain as lt
from conftest import assert_close


def test_creation_shapes_and_dtypes():
    assert lt.zeros(2, 3).shape == (2, 3)
    assert lt.zeros((2, 3)).shape == (2, 3)
    assert lt.ones([4], dtype=lt.int64).dtype == lt.int64
    assert lt.full((2, 2), 7).dtype == lt.int64
    assert lt.full((2, 2), 0.5).dtype == lt.float32
    assert lt.full((2,), True).dtype == lt.bool
    assert_close(lt.full((2, 2), 0.5), np.full((2, 2), 0.5, np.float32))
    assert lt.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert lt.arange(2, 11, 3).tolist() == [2, 5, 8]
    assert lt.zeros_like(lt.ones(3, dtype=lt.bfloat16)).dtype == lt.bfloat16
    assert lt.ones_like(lt.zeros(2, 2)).tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_tensor_infers_dtypes_as_torch():
    assert lt.tensor([1.5, 2.0]).dtype == lt.float32
    assert lt.tensor([1, 2]).dtype == lt.int64
    assert lt.tensor([True, False]).dtype == lt.bool
    assert lt.tensor(np.arange(3, dtype=np.int32)).dtype == lt.int32
    assert lt.tensor(np.ones(2, np.float64)).dtype == lt.float32
    assert lt.tensor([1, 2], dtype=lt.float32).tolist() == [1.0, 2.0]
    b = lt.tensor([1.0, 2.5], dtype=lt.bfloat16)
    assert b.dtype == lt.bfloat16 and b.float().tolist() == [1.0, 2.5]
    with pytest.raises(TypeError):
        lt.tensor(["a"])


def test_attributes():
    x = lt.randn(3, 4)
    assert x.shape == (3, 4) and x.ndim == 2 and x.dim() == 2 and x.numel() == 12
    assert x.size() == (3, 4) and x.size(1) == 4 and x.size(-1) == 4
    assert str(x.device) == "cpu:0" and x.device == lt.device()
    assert x.is_leaf and not x.requires_grad and x.grad is None
    w = lt.ones(2, requires_grad=True)
    y = (w * 3).sum()
    assert w.is_leaf and not y.is_leaf and y.requires_grad
    y.backward()
    assert w.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError):
        lt.ones(2, dtype=lt.int64).requires_grad_()


def test_reads_item_tolist_numpy():
    x = lt.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum().item() == 10.0
    assert isinstance(lt.tensor([3]).sum().item(), int)
    assert isinstance((lt.tensor([1]) > 0).item(), bool)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    a = x.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 2)
    a[0, 0] = 100.0  # the array owns its copy
    assert x.tolist()[0][0] == 1.0
    assert np.asarray(x).sum() == 10.0
    with pytest.raises(TypeError, match="BFloat16"):
        x.bfloat16().numpy()
    assert float(lt.tensor(2.5)) == 2.5 and int(lt.tensor(3)) == 3
    # A number makes a 0-d tensor, as torch.tensor(2.5) does; a list of one, 1-d.
    assert lt.tensor(2.5).shape == () and lt.tensor(3).dim() == 0 and lt.tensor([2.5]).shape == (1,)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(lt.ones(2))


def test_repr_reads_the_value():
    assert repr(lt.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(lt.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(lt.tensor([1, 2])) == "tensor([1, 2])"
    assert "requires_grad=True" in repr(lt.ones(2, requires_grad=True))
    assert "dtype=lazytrain.bfloat16" in repr(lt.ones(2, dtype=lt.bfloat16))
    assert repr(lt.float32) == "lazytrain.float32"


def test_indexing_matches_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = lt.tensor(a)
    for index in [1, -1, (1, 2), (slice(None), 1), (Ellipsis, 1), (Ellipsis, slice(1, 3)), (slice(0, 3, 2),),
                  (None, 1), (1, None, slice(None, None, 2)), (slice(-2, None),), (Ellipsis,)]:
        np.testing.assert_array_equal(x[index].numpy(), a[index], err_msg=str(index))
    idx = lt.tensor([2, 0, 2])
    np.testing.assert_array_equal(x[idx].numpy(), a[[2, 0, 2]])
    np.testing.assert_array_equal(x[:, idx].numpy(), a[:, [2, 0, 2]])
    np.testing.assert_array_equal(x[lt.tensor([[0, 1], [2, 2]])].numpy(), a[np.array([[0, 1], [2, 2]])])
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]
    x[0] = 1.0  # item assignment writes in place, as torch (tests/python/test_views_inplace_torch.py)
    a[0] = 1.0
    np.testing.assert_array_equal(x.numpy(), a)


def test_indexing_gradient_flows():
    w = lt.ones(4, 2, requires_grad=True)
    w[lt.tensor([1, 1, 3])].sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.array([[0, 0], [2, 2], [0, 0], [1, 1]], np.float32))


def test_operators_match_numpy():
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32) + 3
    x, y = lt.tensor(a), lt.tensor(b)
    assert_close(x + y, a + b)
    assert_close(x - y, a - b)
    assert_close(x * y, a * b)
    assert_close(x / y, a / b)
    assert_close(x + 1, a + 1)
    assert_close(2 * x, 2 * a)
    assert_close(1 - x, 1 - a)
    assert_close(1 / y, 1 / b)
    assert_close(-x, -a)
    assert_close(x ** 2, a ** 2)
    assert_close(x @ y.t(), a @ b.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal((x > y).numpy(), a > b)
    np.testing.assert_array_equal((x <= 0.5).numpy(), a <= 0.5)
    np.testing.assert_array_equal(((x > 0) & (y > 3)).numpy(), (a > 0) & (b > 3))
    np.testing.assert_array_equal((~(x > 0)).numpy(), ~(a > 0))
    i = lt.tensor([1, 2, 3])
    assert (i + 1).dtype == lt.int64 and (i + 0.5).dtype == lt.float32 and (i / 2).dtype == lt.float32


def test_methods_match_numpy():
    a = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    x = lt.tensor(a)
    assert_close(x.sum(), a.sum(), atol=1e-5)
    assert_close(x.sum(dim=-1, keepdim=True), a.sum(-1, keepdims=True), atol=1e-5)
    assert_close(x.sum((0, 2)), a.sum((0, 2)), atol=1e-5)
    assert_close(x.mean(1), a.mean(1))
    assert_close(x.amax(-1), a.max(-1))
    assert_close(x.max(), a.max())
    values, indices = x.max(dim=2)
    assert_close(values, a.max(2))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(2))
    assert_close(x.view(6, 4), a.reshape(6, 4))
    assert_close(x.reshape(-1), a.reshape(-1))
    assert_close(x.transpose(0, 1), a.transpose(1, 0, 2))
    assert_close(x.permute(2, 0, 1), a.transpose(2, 0, 1))
    assert_close(x.unsqueeze(1), a[:, None])
    assert_close(x.flatten(1), a.reshape(2, 12))
    assert_close(x.exp(), np.exp(a), rtol=1e-5)
    assert_close(x.abs().sqrt(), np.sqrt(np.abs(a)), rtol=1e-5)
    assert_close(x.softmax(-1), np.exp(a) / np.exp(a).sum(-1, keepdims=True), rtol=1e-5)
    assert_close(x.to(lt.bfloat16).float(), a, rtol=1e-2, atol=1e-2)
    assert x.to("cpu:0").device == lt.device()
    y = lt.zeros(3)
    y.add_(lt.ones(3))
    y.mul_(4.0)
    assert y.tolist() == [4.0, 4.0, 4.0]


def test_rand_is_seeded():
    lt.manual_seed(7)
    a = lt.randn(5).tolist()
    b = lt.rand(5).tolist()
    lt.manual_seed(7)
    assert lt.randn(5).tolist() == a and lt.rand(5).tolist() == b
    assert all(0.0 <= v < 1.0 for v in b)


def test_no_grad_enable_grad_autocast():
    w = lt.ones(2, requires_grad=True)
    with lt.no_grad():
        assert not lt.is_grad_enabled()
        assert not (w * 2).requires_grad
        with lt.enable_grad():
            assert (w * 2).requires_grad
    assert lt.is_grad_enabled()

    @lt.no_grad()
    def f():
        return (w * 2).requires_grad

    assert f() is False
    with lt.autocast("cpu", dtype=lt.bfloat16):
        assert lt.is_autocast_enabled()
        assert (lt.ones(2, 3) @ lt.ones(3, 2)).dtype == lt.bfloat16
    assert not lt.is_autocast_enabled()
    with pytest.raises(ValueError):
        lt.autocast(dtype=lt.int64)


def test_save_and_load(tmp_path):
    state = {"a": lt.arange(6).reshape(2, 3), "b": lt.ones(2, dtype=lt.bfloat16)}
    lt.save(state, tmp_path / "s.safetensors")
    back = lt.load(tmp_path / "s.safetensors")
    assert back["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["b"].dtype == lt.bfloat16
    with pytest.raises(FileNotFoundError, match="missing.safetensors"):  # torch.load's type
        lt.load(tmp_path / "missing.safetensors")
