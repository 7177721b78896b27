"""Several Python threads using lazytrain on one device at once, as they may
with torch: ops, backward, item()/tolist(), in-place updates and syncs from
every thread, each thread's values compared with torch's. A read in one thread
syncs every pending tensor of the device, including the other threads' half-
traced ones (lazy/lazy_tensor.h, lazy/graph_executor.h say how that stays safe)."""
import threading
import time

import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

THREADS = 4
ITERATIONS = 20
BUDGET_S = 120.0  # the whole test: a hang or a deadlock fails instead of blocking the suite


def run_threads(work, count=THREADS):
    """Runs work(index) in `count` threads; returns the errors they raised."""
    errors = []

    def guarded(index):
        try:
            work(index)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(f"thread {index}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + BUDGET_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock?"
    return errors


def test_item_in_two_threads():
    # The reported case: both threads failed with IndexError: unordered_map::at.
    values = {}

    def work(index):
        values[index] = [(lt.ones(4) * 2).sum().item() for _ in range(20)]

    assert run_threads(work, 2) == []
    assert values == {i: [float((torch.ones(4) * 2).sum())] * 20 for i in range(2)}


def test_training_steps_in_every_thread_match_torch():
    # Each thread trains its own little model: forward, backward, an SGD update
    # in place, a read of the loss and the weights, now and then a sync.
    rng = np.random.default_rng(0)
    data = [(rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3,)).astype(np.float32))
            for _ in range(THREADS)]
    results = {}

    def train(m, index, sync):
        x, w0 = data[index]
        w = m.tensor(w0.tolist(), requires_grad=True)
        xs = m.tensor(x.tolist())
        losses = []
        for step in range(ITERATIONS):
            loss = ((xs * w).sum(1).tanh() * (1.0 + 0.25 * index)).pow(2).mean()
            loss.backward()
            with m.no_grad():
                w.sub_(w.grad * 0.1)
            w.grad = None
            losses.append(loss.item())
            if sync and step % 7 == 0:
                lt.sync()
        return losses, w.tolist()

    def work(index):
        results[index] = train(lt, index, sync=True)

    assert run_threads(work) == []
    for index in range(THREADS):
        losses, weights = train(torch, index, sync=False)
        np.testing.assert_allclose(results[index][0], losses, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(results[index][1], weights, rtol=1e-5, atol=1e-6)


def test_a_tensor_shared_by_threads_stays_consistent():
    # One thread updates a shared tensor in place (a running total) while the
    # others read it: a read sees some total, never garbage, and none is lost.
    total = lt.zeros(3)
    lt.sync()
    seen = []

    def work(index):
        nonlocal total
        for _ in range(ITERATIONS):
            if index == 0:
                total.add_(1.0)
            else:
                value = total.tolist()
                seen.append(value)
            (lt.ones(2, 2) * 3).sum().item()

    assert run_threads(work) == []
    assert total.tolist() == [float(ITERATIONS)] * 3
    for value in seen:
        assert value[0] == value[1] == value[2] and value[0] == int(value[0]) and 0 <= value[0] <= ITERATIONS


def test_reads_and_syncs_from_threads_while_one_traces_a_chain():
    # One thread records a long chain without reading; the others read and
    # sync meanwhile, so its pending chain is cut under it at any point.
    results = {}

    def work(index):
        if index == 0:
            x = lt.ones(8)
            for _ in range(400):
                x = x * 1.001 + 0.001
            results[index] = x.tolist()
        else:
            for _ in range(ITERATIONS):
                lt.sync()
                results[index] = lt.arange(5).sum().item()

    assert run_threads(work) == []
    expected = torch.ones(8)
    for _ in range(400):
        expected = expected * 1.001 + 0.001
    np.testing.assert_allclose(results[0], expected.tolist(), rtol=1e-4)
    assert all(results[i] == 10 for i in range(1, THREADS))


@pytest.mark.parametrize("mode", ["lazy", "debug_eager", "strict_eager", "fused_eager"])
def test_backward_of_every_thread_accumulates_into_a_shared_parameter(mode):
    # Each thread's backward adds to one shared parameter's grad (the eager
    # modes run ops without the GIL): no addition is lost, as in torch.
    def run(m, threaded):
        shared = m.ones(3, requires_grad=True)
        own = [m.full((3,), float(i + 1), requires_grad=True) for i in range(THREADS)]

        def work(index):
            w = own[index]
            for _ in range(ITERATIONS):
                (w * shared).sum().mul(2).backward()
                with m.no_grad():
                    w.sub_(w.grad * 0.01)
                w.grad = None
                w.tolist()

        if threaded:
            assert run_threads(work) == []
        else:
            for index in range(THREADS):
                work(index)
        return shared.grad.tolist()

    previous = lt.execution_mode()
    lt.execution_mode(mode)
    try:
        ours = run(lt, threaded=True)
    finally:
        lt.execution_mode(previous)
    np.testing.assert_allclose(ours, run(torch, threaded=False), rtol=1e-5)
