"""lazytrain.nn and lazytrain.optim: modules users subclass, their state, and
optimizers against numpy references of PyTorch's formulas."""
import math

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.nn as nn
import lazytrain.nn.functional as F
from conftest import assert_close


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.GELU()
        self.blocks = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8, bias=False)])
        self.norm = nn.LayerNorm(8)
        self.scale = nn.Parameter(lt.ones(1))
        self.register_buffer("offset", lt.zeros(8))

    def forward(self, x):
        h = self.act(self.fc1(x))
        for block in self.blocks:
            h = h + block(h)
        return self.norm(h) * self.scale + self.offset


def test_module_registers_parameters_buffers_and_children():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                     "norm.weight", "norm.bias"]
    assert all(p.requires_grad and isinstance(p, nn.Parameter) for p in m.parameters())
    assert [n for n, _ in m.named_buffers()] == ["offset"]
    assert list(m.state_dict()) == names[:1] + ["offset"] + names[1:]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "blocks", "norm"]
    assert "Linear(in_features=4, out_features=8, bias=True)" in repr(m)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.fc1.weight = lt.zeros(8, 4)
    with pytest.raises(AttributeError):
        m.missing


def test_tied_parameters_listed_once():
    m = nn.Module()
    m.a = nn.Linear(3, 3)
    m.b = nn.Linear(3, 3)
    m.b.weight = m.a.weight
    assert len(list(m.parameters())) == 3
    assert "b.weight" in m.state_dict()


def test_state_dict_round_trip_and_errors():
    m = TwoLayer()
    other = TwoLayer()
    other.load_state_dict(m.state_dict())
    for (n, a), (_, b) in zip(m.state_dict().items(), other.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)
    bad = dict(m.state_dict())
    bad["fc1.weight"] = lt.zeros(2, 2)
    bad["extra"] = lt.zeros(1)
    del bad["norm.bias"]
    with pytest.raises(RuntimeError) as e:
        other.load_state_dict(bad)
    text = str(e.value)
    assert 'Missing key(s) in state_dict: "norm.bias"' in text and '"extra"' in text
    assert "size mismatch for fc1.weight" in text
    result = other.load_state_dict({k: v for k, v in m.state_dict().items() if k != "scale"}, strict=False)
    assert result.missing_keys == ["scale"]


def test_linear_default_init_is_torchs_uniform_and_seeded():
    lt.manual_seed(3)
    a = nn.Linear(100, 50)
    lt.manual_seed(3)
    b = nn.Linear(100, 50)
    w = a.weight.numpy()
    np.testing.assert_array_equal(w, b.weight.numpy())
    bound = 1 / math.sqrt(100)
    assert w.min() >= -bound and w.max() <= bound and abs(w.mean()) < 0.01
    assert abs(w.std() - bound / math.sqrt(3)) < 0.005


def test_dropout_train_and_eval():
    d = nn.Dropout(0.5)
    x = lt.ones(1000)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 400 < (y == 0).sum() < 600
    d.eval()
    assert d(x).tolist() == x.tolist()
    assert not d.training and TwoLayer().eval().fc1.training is False


def test_module_forward_backward_and_zero_grad():
    m = TwoLayer()
    x = lt.randn(2, 4)
    m(x).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def _numpy_adamw(p, grads, lr, b1, b2, eps, wd):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        p = p * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step = lr / (1 - b1 ** t)
        p = p - step * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return p


def test_adamw_matches_pytorchs_formula():
    p0 = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    p = nn.Parameter(lt.tensor(p0))
    opt = lt.optim.AdamW([p], lr=0.1, weight_decay=0.1)
    grads = []
    for step in range(3):
        opt.zero_grad()
        loss = (p * p * float(step + 1)).sum()
        loss.backward()
        grads.append(p.grad.numpy().astype(np.float64))
        opt.step()
        lt.sync()
    expected = _numpy_adamw(p0.astype(np.float64), grads, 0.1, 0.9, 0.999, 1e-8, 0.1)
    assert_close(p, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        lt.optim.AdamW([p], lr=-1)


def test_sgd_momentum_weight_decay_nesterov():
    for nesterov, dampening in ((False, 0.0), (True, 0.0), (False, 0.5)):
        p0 = np.array([1.0, -2.0, 3.0], np.float32)
        p = nn.Parameter(lt.tensor(p0))
        opt = lt.optim.SGD([p], lr=0.1, momentum=0.9, dampening=dampening, weight_decay=0.01, nesterov=nesterov)
        ref = p0.astype(np.float64)
        buf = None
        for step in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
            lt.sync()
            g = 2 * ref + 0.01 * ref
            buf = g if buf is None else 0.9 * buf + (1 - dampening) * g
            ref = ref - 0.1 * (g + 0.9 * buf if nesterov else buf)
        assert_close(p, ref, rtol=1e-5, atol=1e-6)


def test_schedulers_follow_transformers():
    p = nn.Parameter(lt.ones(1))
    opt = lt.optim.AdamW([p], lr=1.0)
    sched = lt.optim.lr_scheduler.get_linear_schedule_with_warmup(opt, 2, 10)
    lrs = []
    for _ in range(10):
        lrs.append(sched.get_last_lr()[0])
        sched.step()
    assert lrs == [0.0, 0.5, 1.0, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125]
    opt2 = lt.optim.SGD([p], lr=2.0)
    cos = lt.optim.lr_scheduler.get_cosine_schedule_with_warmup(opt2, 0, 4)
    values = []
    for _ in range(5):
        values.append(opt2.param_groups[0]["lr"])
        cos.step()
    np.testing.assert_allclose(values, [2.0 * max(0.0, 0.5 * (1 + math.cos(math.pi * s / 4))) for s in range(5)])
    with pytest.raises(ValueError, match="unknown scheduler"):
        lt.optim.lr_scheduler.get_scheduler("cosin", opt)


def test_clip_grad_norm():
    a = nn.Parameter(lt.tensor([3.0, 0.0]))
    b = nn.Parameter(lt.tensor([4.0]))
    (a * a * 0.5).sum().backward()
    (b * b * 0.5).sum().backward()
    norm = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert abs(norm.item() - 5.0) < 1e-6
    assert_close(a.grad, [0.6, 0.0], atol=1e-6)
    assert_close(b.grad, [0.8], atol=1e-6)


def test_functional_names():
    x = lt.randn(2, 3)
    assert_close(F.relu(x), np.maximum(x.numpy(), 0))
    assert F.dropout(x, 0.2, training=False).tolist() == x.tolist()
    with pytest.raises(ValueError):
        F.dropout(x, 1.5)
