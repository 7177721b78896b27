"""x[index] against torch on the same inputs: basic and advanced forms, bool masks
(lazy mode synchronises and counts aten::nonzero), errors and gradients."""
import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

A = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def pair(a=A):
    return lt.tensor(a), torch.tensor(a)


def convert(index, to_lt):
    """The same index for lazytrain (to_lt) or torch: tensors rebuilt from numpy."""
    if isinstance(index, tuple):
        return tuple(convert(i, to_lt) for i in index)
    if isinstance(index, np.ndarray) and index.dtype != object:
        return lt.tensor(index) if to_lt else torch.tensor(index)
    return index


FORMS = {
    "int": 1, "negative int": -1, "slice": slice(1, None), "step": (slice(None), slice(None, None, 2)),
    "none": (None, 0), "ellipsis": (..., 1), "list": [1, 0], "negative list": (slice(None), [-1, 0, -3]),
    "nested list": [[0, 1], [1, 0]], "two lists": ([0, 1], [1, 2]), "two lists broadcast": ([[0], [1]], [0, 2, 1]),
    "lists apart": ([0, 1], slice(None), [3, -1]), "list then int": ([1, 0], 2), "int then list": (0, slice(None), [1, 3]),
    "int between": ([0, 1], 0, [1, 2]), "three lists": ([1], [2], [3]), "bool list": [True, False],
    "bool list dim 1": (slice(None), [True, False, True]), "True": True, "False": False, "True with int": (True, 1),
    "empty list": [], "empty list dim 2": (..., []), "tensor": np.array([1, -2]), "2-d tensor": np.array([[0, 1], [1, 1]]),
    "int32 tensor": np.array([1, 0], dtype=np.int32), "bool tensor": np.array([False, True]),
    "bool 2-d tensor": np.array([[True, False, True], [False, False, True]]),
    "bool tensor and list": (np.array([True, False]), [2]), "tensor and ellipsis": (np.array([1, 0]), ..., np.array([3, 0])),
    "numpy list": (slice(None), np.array([2, 0])), "None and list": (None, [1, 0], None),
}


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("name", list(FORMS))
def test_getitem_matches_torch(name):
    x, t = pair()
    index = FORMS[name]
    # numpy arrays stay numpy (host) for one run and become tensors for the other.
    for as_tensor in (False, True):
        lt_index = convert(index, True) if as_tensor else index
        t_index = convert(index, False)
        got, want = x[lt_index], t[t_index]
        assert list(got.shape) == list(want.shape), (name, got.shape, want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("index", [3, -4, [0, 3], (slice(None), [-5]), (0, 0, 4), [[0], [5]]])
def test_out_of_range_host_index_raises_index_error_at_once(index):
    x, t = pair()
    with pytest.raises(IndexError):
        t[index]
    with pytest.raises(IndexError, match="out of bounds"):
        x[index]


@pytest.mark.parametrize("index", [(0, 0, 0, 0), np.array([True]), ([0, 1], [0, 1, 2])])
def test_bad_indices_raise_index_error(index):
    x, t = pair()
    with pytest.raises(IndexError):
        t[convert(index, False)]
    with pytest.raises(IndexError):
        x[convert(index, True)]


def test_float_index_tensor_raises():
    x, t = pair()
    with pytest.raises(IndexError):
        t[torch.tensor([0.0])]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[lt.tensor([0.0])]


def test_mask_in_lazy_mode_syncs_and_counts():
    data = np.array([1., -2., 3., -4.], np.float32)
    x, t = lt.tensor(data), torch.tensor(data)
    before = lt.debug.metrics.counter_value("aten::nonzero") or 0
    y = x * 2  # pending: the mask's read runs it
    np.testing.assert_array_equal(y[y > 0].numpy(), (t * 2)[t * 2 > 0].numpy())
    assert (lt.debug.metrics.counter_value("aten::nonzero") or 0) == before + 1
    m = lt.tensor(A) > 10
    np.testing.assert_array_equal(lt.tensor(A)[m].numpy(), torch.tensor(A)[torch.tensor(A) > 10].numpy())
    empty = lt.tensor(A)[lt.tensor(A) > 100]
    assert list(empty.shape) == [0]


def test_advanced_index_gradient():
    for index in (([0, 1], [1, 2]), (slice(None), [2, 0, 2]), [True, False], (np.array([[True, False, True], [False, True, True]]),)):
        x, t = lt.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
        w = np.arange(1, 1 + t[convert(index, False)].numel(), dtype=np.float32).reshape(t[convert(index, False)].shape)
        (x[convert(index, True)] * lt.tensor(w)).sum().backward()
        (t[convert(index, False)] * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_device_index_with_negative_entries():
    x, t = pair()
    idx = lt.tensor([-1, 0]) * 1  # a pending device tensor: normalised on the device
    np.testing.assert_array_equal(x[:, idx].numpy(), t[:, torch.tensor([-1, 0])].numpy())


def test_zero_dim_tensor():
    x, t = pair(np.float32(5.0))
    for index in (None, True, False, ..., (None, None)):
        got, want = x[index], t[index]
        assert list(got.shape) == list(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
