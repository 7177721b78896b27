"""cross_entropy, nll_loss and mse_loss against torch.nn.functional on the same inputs:
every reduction, weight, label_smoothing, ignore_index, [N, C, d...] inputs,
probability targets; values and gradients."""
import itertools

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((4, 5)).astype(np.float32)
LOGITS_3D = RNG.standard_normal((2, 5, 3)).astype(np.float32)
WEIGHT = np.array([0.5, 1.0, 2.0, 0.25, 1.5], np.float32)


def check(lt_fn, torch_fn, input, *args, rtol=1e-5, atol=1e-6):
    """Loss values and input gradients equal torch's (args are numpy; ints become int64 targets)."""
    x, t = lt.tensor(input, requires_grad=True), torch.tensor(input, requires_grad=True)
    lt_args = [lt.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    t_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    got, want = lt_fn(x, *lt_args), torch_fn(t, *t_args)
    assert list(got.shape) == list(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=rtol, atol=atol)
    if want.numel() and not np.isnan(want.detach().numpy()).any():
        w = np.arange(1, 1 + want.numel(), dtype=np.float32).reshape(want.shape)
        (got * lt.tensor(w)).sum().backward()
        (want * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-5)


TARGETS = {
    "plain": (LOGITS, np.array([1, 2, 3, 4])),
    "ignored": (LOGITS, np.array([1, -100, 3, -100])),
    "all ignored": (LOGITS, np.array([-100, -100, -100, -100])),
    "3-d": (LOGITS_3D, np.array([[1, 2, 0], [4, -100, 3]])),
    "1-d": (LOGITS[0], np.array(2)),
}


@pytest.mark.parametrize("case,reduction,weighted,smoothing", list(itertools.product(
    TARGETS, ["mean", "sum", "none"], [False, True], [0.0, 0.2])))
def test_cross_entropy_class_targets(case, reduction, weighted, smoothing):
    logits, target = TARGETS[case]
    weight = WEIGHT if weighted else None
    kwargs = dict(reduction=reduction, label_smoothing=smoothing)
    check(lambda x, tg, w: F.cross_entropy(x, tg, weight=w, **kwargs),
          lambda x, tg, w: TF.cross_entropy(x, tg, weight=w, **kwargs), logits, target, weight)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_custom_ignore_index(reduction):
    check(lambda x, tg: F.cross_entropy(x, tg, ignore_index=2, reduction=reduction),
          lambda x, tg: TF.cross_entropy(x, tg, ignore_index=2, reduction=reduction), LOGITS, np.array([2, 0, 2, 1]))


@pytest.mark.parametrize("shape,reduction,weighted,smoothing", list(itertools.product(
    ["2-d", "3-d", "1-d"], ["mean", "sum", "none"], [False, True], [0.0, 0.3])))
def test_cross_entropy_probability_targets(shape, reduction, weighted, smoothing):
    logits = {"2-d": LOGITS, "3-d": LOGITS_3D, "1-d": LOGITS[0]}[shape]
    probs = RNG.random(logits.shape).astype(np.float32)
    probs /= probs.sum(axis=0 if logits.ndim == 1 else 1, keepdims=True)
    weight = WEIGHT if weighted else None
    kwargs = dict(reduction=reduction, label_smoothing=smoothing)
    check(lambda x, tg, w: F.cross_entropy(x, tg, weight=w, **kwargs),
          lambda x, tg, w: TF.cross_entropy(x, tg, weight=w, **kwargs), logits, probs, weight)


@pytest.mark.parametrize("case,reduction,weighted", list(itertools.product(TARGETS, ["mean", "sum", "none"], [False, True])))
def test_nll_loss(case, reduction, weighted):
    logits, target = TARGETS[case]
    weight = WEIGHT if weighted else None
    check(lambda x, tg, w: F.nll_loss(x.log_softmax(0 if x.ndim == 1 else 1), tg, weight=w, reduction=reduction),
          lambda x, tg, w: TF.nll_loss(x.log_softmax(0 if x.ndim == 1 else 1), tg, weight=w, reduction=reduction),
          logits, target, weight)


def test_cross_entropy_all_ignored_sum_is_zero():
    got = F.cross_entropy(lt.ones(2, 3), lt.tensor([-100, -100]), reduction="sum")
    want = TF.cross_entropy(torch.ones(2, 3), torch.tensor([-100, -100]), reduction="sum")
    assert got.item() == want.item() == 0.0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    a, b = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal((3, 4)).astype(np.float32)
    check(lambda x, y: F.mse_loss(x, y, reduction=reduction), lambda x, y: TF.mse_loss(x, y, reduction=reduction), a, b)


def test_loss_errors_match_torch_types():
    x, t = lt.tensor(LOGITS), torch.tensor(LOGITS)
    for call in (lambda f, m: f.cross_entropy(x if m is lt else t, m.tensor([1, 2, 3, 4]), reduction="avg"),
                 lambda f, m: f.mse_loss(m.ones(2), m.ones(2), reduction="bad")):
        with pytest.raises(Exception) as want:
            call(TF, torch)
        with pytest.raises(want.type):
            call(F, lt)
    # A batch-size mismatch is a shape error: a LazytrainError (RuntimeError) naming the line, as every shape
    # error of lazytrain (torch raises ValueError with the same words).
    with pytest.raises(ValueError, match="to match target batch_size"):
        TF.cross_entropy(t, torch.tensor([1, 2, 3]))
    with pytest.raises(lt.LazytrainError, match=r"to match target batch_size .*test_losses_torch.py:\d+"):
        F.cross_entropy(x, lt.tensor([1, 2, 3]))


def test_loss_modules():
    target = np.array([1, -100, 3, 0])
    for lt_mod, t_mod in ((lt.nn.CrossEntropyLoss(weight=lt.tensor(WEIGHT), label_smoothing=0.1, reduction="sum"),
                           torch.nn.CrossEntropyLoss(weight=torch.tensor(WEIGHT), label_smoothing=0.1, reduction="sum")),
                          (lt.nn.NLLLoss(ignore_index=0), torch.nn.NLLLoss(ignore_index=0))):
        check(lt_mod, t_mod, LOGITS, target if isinstance(t_mod, torch.nn.CrossEntropyLoss) else np.abs(target) % 5)
    assert [k for k, _ in lt.nn.CrossEntropyLoss(weight=lt.ones(3)).state_dict().items()] == ["weight"]
    assert list(lt.nn.CrossEntropyLoss().state_dict()) == []
    check(lt.nn.MSELoss(reduction="none"), torch.nn.MSELoss(reduction="none"), LOGITS, LOGITS[::-1].copy())
