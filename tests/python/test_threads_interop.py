"""The GIL is released while lazytrain waits, so other Python threads run;
values cross to numpy and torch through the buffer protocol and DLPack."""
import threading
import time

import numpy as np
import pytest

import lazytrain as lt


def test_another_thread_runs_while_sync_waits():
    x = lt.randn(256, 256)
    for _ in range(60):
        x = (x @ x).tanh()
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.02)
    begin = time.perf_counter()
    lt.sync(wait=True)  # compiles and runs the chain
    x.sum().item()
    end = time.perf_counter()
    stop.set()
    t.join()
    during = [s for s in ticks if begin <= s <= end]
    assert end - begin > 0.05, "the graph ran too fast to tell"
    # With the GIL held for the whole wait, the thread could not tick at all.
    assert len(during) >= 5, (len(during), end - begin)


def test_replica_threads_trace_their_own_devices():
    # One device per tracing thread (as spawn's replicas): a device's graph
    # belongs to the thread that records it.
    results = {}

    def work(index):
        x = lt.full((3,), float(index), device=f"cpu:{index}")
        for _ in range(20):
            x = x * 1.0 + 1.0
        results[index] = (str(x.device), x.sum().item())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: ("cpu:0", 60.0), 1: ("cpu:1", 63.0)}


def test_a_loader_thread_overlaps_the_training_step():
    # Batches made in a Python thread (host work and the copy onto the device)
    # while the main thread traces and waits for each step.
    import queue

    batches = queue.Queue(maxsize=2)

    def loader():
        rng = np.random.default_rng(0)
        for _ in range(6):
            batches.put(lt.from_numpy(rng.standard_normal((64, 64)).astype(np.float32)))
        batches.put(None)

    w = lt.nn.Parameter(lt.randn(64, 64) * 0.01)
    opt = lt.optim.SGD([w], lr=0.1)
    t = threading.Thread(target=loader)
    t.start()
    steps = 0
    while (x := batches.get()) is not None:
        opt.zero_grad()
        ((x @ w).tanh() ** 2).mean().backward()
        opt.step()
        lt.sync(wait=True)
        steps += 1
    t.join()
    assert steps == 6 and np.isfinite(w.numpy()).all()


def test_numpy_buffer_and_dlpack_round_trips():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = lt.from_numpy(a)
    np.testing.assert_array_equal(np.asarray(memoryview(x)), a)
    np.testing.assert_array_equal(np.from_dlpack(x), a)
    assert x.__dlpack_device__() == (1, 0)
    y = lt.from_dlpack(a[1:])
    np.testing.assert_array_equal(y.numpy(), a[1:])
    np.testing.assert_array_equal(lt.asarray(np.int32([1, 2])).numpy(), [1, 2])
    for dtype in (np.float16, np.int32, np.int64, np.bool_):
        b = np.ones((2, 2), dtype)
        np.testing.assert_array_equal(lt.from_numpy(b).numpy(), b)
    with pytest.raises(BufferError):
        memoryview(lt.ones(2, dtype=lt.bfloat16))


def test_torch_dlpack_round_trip():
    torch = pytest.importorskip("torch")
    x = lt.arange(6).reshape(2, 3)
    t = torch.from_dlpack(x)
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]] and t.dtype == torch.int64
    b = torch.from_dlpack(lt.ones(3, dtype=lt.bfloat16))
    assert b.dtype == torch.bfloat16 and b.float().tolist() == [1.0, 1.0, 1.0]
    back = lt.from_dlpack(torch.arange(4, dtype=torch.float32))
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert lt.asarray(torch.ones(2, dtype=torch.bfloat16)).dtype == lt.bfloat16
