"""Tensors cross DLPack without copies where the layout allows (python/src/dlpack.h).

In: a C-contiguous, 64-byte-aligned CPU array becomes device data over the
producer's memory (the producer kept alive); every execution reads its current
bytes, and lazytrain never writes into it. Anything else is copied and counted.
Out: Tensor.__dlpack__ shares the tensor's device buffer, which lazytrain then
never overwrites in place."""
import gc
import time
import weakref

import numpy as np
import pytest

import lazytrain as lt
from lazytrain import _C
from lazytrain.debug import metrics

try:
    import torch
except ImportError:  # torch is an optional dependency
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (pip install torch==2.13.0)")


def host_array(shape, dtype=np.float32, misalign=0):
    """A C-contiguous array whose data lies `misalign` bytes past a 64-byte
    boundary (numpy's own allocations are only 16-byte aligned)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + misalign
    a = raw[start:start + nbytes].view(dtype).reshape(shape)
    assert a.ctypes.data % 64 == misalign
    return a


def counters():
    names = ("DlpackInputAliases", "DlpackInputCopies", "DlpackInputCopyBytes", "DlpackOutputAliases", "DlpackOutputCopies",
             "DlpackOutputCopyBytes")
    return {n: metrics.counter_value(n) for n in names}


def test_an_aligned_contiguous_array_is_aliased():
    a = host_array((3, 4))
    a[...] = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = lt.from_dlpack(a)
    assert _C._data_ptr(x) == a.ctypes.data
    np.testing.assert_array_equal(x.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    c = counters()
    assert (c["DlpackInputAliases"], c["DlpackInputCopies"], c["DlpackInputCopyBytes"]) == (1, 0, 0)


def test_the_producers_writes_between_executions_are_seen():
    a = host_array((4,))
    a[...] = [1, 2, 3, 4]
    x = lt.from_dlpack(a)
    f = lt.compile(lambda t: t * 2 + 1)
    np.testing.assert_array_equal(f(x).numpy(), [3, 5, 7, 9])
    a[...] = [10, 20, 30, 40]  # as an optimizer's param.add_ between two steps
    np.testing.assert_array_equal(f(x).numpy(), [21, 41, 61, 81])
    np.testing.assert_array_equal((x - 10).numpy(), [0, 10, 20, 30])  # an uncompiled graph too
    assert _C._data_ptr(x) == a.ctypes.data  # nothing replaced the alias


def test_lazytrain_never_writes_into_the_producers_memory():
    a = host_array((8,))
    a[...] = np.arange(8)
    x = lt.from_dlpack(a)
    x.mul_(3)  # an in-place update: the step would donate x's old buffer to write over it
    lt.sync(wait=True)
    np.testing.assert_array_equal(x.numpy(), np.arange(8) * 3)
    np.testing.assert_array_equal(a, np.arange(8))  # untouched
    assert _C._data_ptr(x) != a.ctypes.data
    # A graph that passes the alias through gives a tensor of its own.
    b = host_array((2, 3))
    b[...] = 1
    y = lt.from_dlpack(b).reshape(6)
    lt.sync(wait=True)
    b[...] = 5
    np.testing.assert_array_equal(y.numpy(), np.ones(6))


def test_misaligned_and_strided_arrays_are_copied_and_counted():
    a = host_array((5,), misalign=4)
    a[...] = [1, 2, 3, 4, 5]
    x = lt.from_dlpack(a)
    assert _C._data_ptr(x) != a.ctypes.data
    a[0] = 100  # a copy does not see it
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3, 4, 5])
    c = counters()
    assert (c["DlpackInputAliases"], c["DlpackInputCopies"], c["DlpackInputCopyBytes"]) == (0, 1, 20)

    m = np.arange(24, dtype=np.int64).reshape(4, 6)
    for view in (m[:, ::2], m.T, m[::-1], m[1:3, 1:4]):
        np.testing.assert_array_equal(lt.from_dlpack(view).numpy(), view)
    c = counters()
    assert c["DlpackInputCopies"] == 5 and c["DlpackInputCopyBytes"] == 20 + 8 * (12 + 24 + 24 + 6)
    assert c["DlpackInputAliases"] == 0


def test_copy_argument():
    a = host_array((4,))
    a[...] = 2
    forced = lt.from_dlpack(a, copy=True)
    assert _C._data_ptr(forced) != a.ctypes.data
    assert counters()["DlpackInputCopies"] == 1
    assert _C._data_ptr(lt.from_dlpack(a, copy=False)) == a.ctypes.data
    with pytest.raises(BufferError, match="not 64-byte aligned"):
        lt.from_dlpack(host_array((4,), misalign=8), copy=False)
    with pytest.raises(BufferError, match="not C-contiguous"):
        lt.from_dlpack(np.arange(8, dtype=np.float32)[::2], copy=False)
    with pytest.raises(TypeError, match="float64"):
        lt.from_dlpack(np.zeros(4))


def test_the_producer_lives_while_lazytrain_reads_it():
    a = host_array((16,))
    a[...] = np.arange(16)
    base = weakref.ref(a.base.base if a.base.base is not None else a.base)
    x = lt.from_dlpack(a)
    del a
    gc.collect()
    assert base() is not None
    np.testing.assert_array_equal((x + 1).numpy(), np.arange(16) + 1)
    # The last reference may go on the execution thread (an argument of a
    # finished execution): the producer is released all the same, without a deadlock.
    y = x * 2
    del x
    lt.sync()
    np.testing.assert_array_equal(y.numpy(), np.arange(16) * 2)
    for _ in range(200):
        gc.collect()
        if base() is None:
            break
        time.sleep(0.005)
    assert base() is None


def test_export_shares_the_buffer_with_numpy():
    t = lt.arange(6).to(lt.float32) * 2
    e = np.from_dlpack(t)
    assert e.ctypes.data == _C._data_ptr(t)
    np.testing.assert_array_equal(e, [0, 2, 4, 6, 8, 10])
    assert counters()["DlpackOutputAliases"] == 1
    # numpy() keeps copying: the array owns its values.
    n = t.numpy()
    assert n.ctypes.data != _C._data_ptr(t)


@needs_torch
def test_export_aliases_and_lazytrain_keeps_its_hands_off():
    t = lt.arange(6).to(lt.float32).reshape(2, 3) * 2
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == _C._data_ptr(t)
    assert tt.tolist() == [[0, 2, 4], [6, 8, 10]]
    assert counters()["DlpackOutputAliases"] == 1 and counters()["DlpackOutputCopies"] == 0
    # Used again in lazytrain: still correct.
    np.testing.assert_array_equal((t + 1).numpy(), [[1, 3, 5], [7, 9, 11]])
    # An in-place update would donate t's buffer; torch shares it, so it goes to new storage.
    t.add_(100)
    lt.sync(wait=True)
    assert tt.tolist() == [[0, 2, 4], [6, 8, 10]]
    np.testing.assert_array_equal(t.numpy(), [[100, 102, 104], [106, 108, 110]])
    # The torch tensor outlives the lazytrain one.
    del t
    gc.collect()
    assert tt.sum().item() == 30
    # Exporting twice shares both times.
    u = lt.ones(4) * 3
    first, second = torch.from_dlpack(u), torch.from_dlpack(u)
    assert first.data_ptr() == second.data_ptr() == _C._data_ptr(u)


@needs_torch
def test_a_buffer_another_value_shares_is_exported_as_a_copy():
    t = lt.ones(4) * 5
    d = t.detach()  # the same value (and buffer) as t
    e = torch.from_dlpack(d)
    assert e.data_ptr() != _C._data_ptr(d)
    e.add_(1)  # torch writing its copy changes neither
    np.testing.assert_array_equal(t.numpy(), [5, 5, 5, 5])
    np.testing.assert_array_equal(d.numpy(), [5, 5, 5, 5])
    c = counters()
    assert c["DlpackOutputCopies"] == 1 and c["DlpackOutputCopyBytes"] == 16
    forced = torch.from_dlpack(t.__dlpack__(copy=True))
    assert forced.data_ptr() != _C._data_ptr(t) and forced.tolist() == [5.0] * 4
    with pytest.raises(BufferError):
        d.__dlpack__(copy=False)


@needs_torch
def test_a_view_exports_its_own_value():
    base = lt.arange(12).to(lt.float32).reshape(3, 4)
    row = base[1]
    assert torch.from_dlpack(row).tolist() == [4, 5, 6, 7]
    base.add_(1)  # the view sees its base's write
    assert torch.from_dlpack(row).tolist() == [5, 6, 7, 8]
    assert torch.from_dlpack(base.t()).tolist() == [[1, 5, 9], [2, 6, 10], [3, 7, 11], [4, 8, 12]]


@needs_torch
def test_a_torch_parameter_is_seen_at_its_new_value_after_an_optimizer_step():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(8, 4))
    assert w.data_ptr() % 64 == 0  # torch's CPU allocator aligns to 64 bytes
    lw = lt.from_dlpack(w.detach())
    assert _C._data_ptr(lw) == w.data_ptr()  # the parameter's storage, seen inside lazytrain
    x = torch.randn(3, 8)
    lx = lt.from_dlpack(x)
    f = lt.compile(lambda a, b: a @ b)
    np.testing.assert_allclose(f(lx, lw).numpy(), (x @ w).detach().numpy(), rtol=1e-5, atol=1e-5)
    opt = torch.optim.SGD([w], lr=0.5)
    w.grad = torch.ones_like(w)
    opt.step()  # param.add_ in place
    got = torch.from_dlpack(f(lx, lw))
    torch.testing.assert_close(got, (x @ w).detach(), rtol=1e-5, atol=1e-5)
    assert _C._data_ptr(lw) == w.data_ptr()
    assert counters()["DlpackInputAliases"] == 2 and counters()["DlpackInputCopies"] == 0


@needs_torch
def test_a_non_contiguous_torch_tensor_is_copied():
    m = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    x = lt.from_dlpack(m.t())
    np.testing.assert_array_equal(x.numpy(), m.t().numpy())
    assert counters()["DlpackInputCopies"] == 1 and counters()["DlpackInputCopyBytes"] == 48
    e = lt.from_dlpack(m.expand(2, 3, 4))  # zero strides
    np.testing.assert_array_equal(e.numpy(), m.expand(2, 3, 4).numpy())


@needs_torch
def test_bfloat16_and_bool_round_trip_with_torch():
    torch.manual_seed(1)
    b = torch.randn(4, 16).to(torch.bfloat16)
    x = lt.from_dlpack(b)
    assert x.dtype == lt.bfloat16 and _C._data_ptr(x) == b.data_ptr()
    back = torch.from_dlpack(x * 2)
    assert back.dtype == torch.bfloat16
    assert torch.equal(back, b * 2)
    assert torch.equal(torch.from_dlpack(x), b)

    m = torch.tensor([True, False, True, True, False, False, True, False] * 8)
    y = lt.from_dlpack(m)
    assert y.dtype == lt.bool and _C._data_ptr(y) == m.data_ptr()
    assert y.numpy().tolist() == m.tolist()
    z = torch.from_dlpack(y.to(lt.int64) * 3 > 1)
    assert z.dtype == torch.bool and z.tolist() == m.tolist()
    assert torch.equal(torch.from_dlpack(y), m)


def test_counters_and_metrics_from_python():
    _C._counter_add("DynamoGraphs", 2)
    _C._counter_add("DynamoGraphs")
    assert metrics.counter_value("DynamoGraphs") == 3
    _C._metric_add("DynamoCopyBytes", 1024, "bytes")
    _C._metric_add("DynamoCopyBytes", 2048, "bytes")
    total, accumulator, _ = metrics.metric_data("DynamoCopyBytes")
    assert (total, accumulator) == (2, 3072.0)
    with pytest.raises(ValueError, match="metric kind"):
        _C._metric_add("DynamoCopyBytes", 1, "seconds")
    with pytest.raises(lt.LazytrainError):
        _C._metric_add("DynamoCopyBytes", 1, "time")
