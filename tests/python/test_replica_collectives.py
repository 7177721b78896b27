"""Replicas (xmp.spawn) that disagree: an all-reduce of different shapes
raises naming each replica's shape, and a parameter with a gradient on some
replicas only gets the mean with zeros elsewhere on every replica (torch DDP
with find_unused_parameters), compared with torch on the same numbers."""
import numpy as np
import pytest

import lazytrain as lt
import lazytrain.core.xla_model as xm
import lazytrain.distributed.xla_multiprocessing as xmp

torch = pytest.importorskip("torch")


def test_all_reduce_of_different_shapes_raises_naming_each_replica():
    results = {}

    def fn(i):
        results[i] = xm.all_reduce(xm.REDUCE_SUM, lt.ones(2 + i)).tolist()

    with pytest.raises(RuntimeError) as e:
        xmp.spawn(fn, nprocs=2, collective_timeout=10.0)
    assert "replica 0 f32[2], replica 1 f32[3]" in str(e.value), str(e.value)
    assert "test_replica_collectives.py:" in str(e.value), str(e.value)  # the all_reduce's line
    assert results == {}
    # The next job runs.
    xmp.spawn(lambda i: results.__setitem__(i, xm.all_reduce(xm.REDUCE_SUM, lt.ones(2)).tolist()), nprocs=2)
    assert results == {0: [2.0, 2.0], 1: [2.0, 2.0]}


def torch_reference(make_optimizer, losses_per_replica, steps):
    """torch on the replicas' mean gradient, zeros where a replica's loss does
    not use a parameter; a parameter no replica uses keeps grad None."""
    w1, w2, w3 = (torch.nn.Parameter(torch.ones(2)) for _ in range(3))
    opt = make_optimizer(torch, [w1, w2, w3])
    for _ in range(steps):
        opt.zero_grad()
        grads = []
        for loss_fn in losses_per_replica:
            for p in (w1, w2, w3):
                p.grad = None
            loss_fn(w1, w2).backward()
            grads.append([None if p.grad is None else p.grad.clone() for p in (w1, w2, w3)])
        for k, p in enumerate((w1, w2, w3)):
            got = [g[k] for g in grads if g[k] is not None]
            p.grad = None if not got else sum(got) / len(losses_per_replica)
        opt.step()
    return [w1.tolist(), w2.tolist(), w3.tolist()]


def loss_of(i):
    # w2 only on replica 0 (an unused branch elsewhere); w3 on none.
    def loss(w1, w2):
        out = (w1 * (i + 1)).pow(2).sum()
        return out + (w2 * 3).pow(2).sum() if i == 0 else out
    return loss


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_a_gradient_on_one_replica_is_averaged_with_zeros_on_every_replica(optimizer):
    def make(m, params):
        if optimizer == "SGD":
            return m.optim.SGD(params, lr=0.1)
        return m.optim.AdamW(params, lr=0.1, weight_decay=0.01)

    steps = 3
    results = {}

    def fn(i):
        ps = [lt.nn.Parameter(lt.ones(2)) for _ in range(3)]
        opt = make(lt, ps)
        for _ in range(steps):
            opt.zero_grad()
            loss_of(i)(ps[0], ps[1]).backward()
            xm.optimizer_step(opt)
            xm.mark_step()
        results[i] = ([p.tolist() for p in ps], ps[2].grad is None)

    xmp.spawn(fn, nprocs=2, collective_timeout=30.0)
    expected = torch_reference(make, [loss_of(0), loss_of(1)], steps)
    for i in (0, 1):
        np.testing.assert_allclose(results[i][0], expected, rtol=1e-5, atol=1e-6)
        assert results[i][1], "a parameter no replica used keeps grad None"
    assert results[0][0] == results[1][0]  # bit-identical replicas
