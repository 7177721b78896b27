"""The lazy device for real torch tensors (issue 56, first slice): torch
tensors on torch.device("lazytrain") whose ATen ops record lazytrain's lazy
graph (python/lazytrain/torch_backend/lazy_device/). Every value is checked
against eager torch on the CPU: factories and reads, torch's view and
in-place aliasing, autograd, a training loop with torch.optim.AdamW (foreach
off and on), gradient clipping and a schedule compiled once per step, the
device handle shared with lazytrain's own tensors, and the errors for mixed
devices and unlowerable ops."""
import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")

import lazytrain as lt  # noqa: E402
import lazytrain.core.xla_model as xm  # noqa: E402
from lazytrain.debug import metrics  # noqa: E402
from lazytrain.torch_backend import lazy_device  # noqa: E402
from lazytrain.torch_backend.lazy_device import LazyTensor  # noqa: E402


from lazy_device_support import DEV, optimizer_step, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)


def close(actual, expected, tol=1e-5):
    assert isinstance(actual, torch.Tensor) and actual.device.type == "lazytrain"
    got = actual.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=tol, atol=tol)


def test_importing_lazytrain_does_not_import_torch():
    import subprocess
    import sys

    code = "import lazytrain, lazytrain.core.xla_model as xm, sys; xm.xla_device(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_factories_transfers_and_reads():
    assert str(DEV) == "lazytrain:0"
    z = torch.zeros(2, 3, device=DEV)
    assert isinstance(z, LazyTensor) and z.device == DEV and z.dtype == torch.float32
    close(z, torch.zeros(2, 3))
    close(torch.ones(2, dtype=torch.int64, device=DEV), torch.ones(2, dtype=torch.int64))
    close(torch.full((2, 2), 3.5, device=DEV), torch.full((2, 2), 3.5))
    close(torch.arange(5, device=DEV), torch.arange(5))
    close(torch.arange(1.0, 2.0, 0.25, device=DEV), torch.arange(1.0, 2.0, 0.25))
    close(torch.tensor([[1, 2], [3, 4]], device=DEV), torch.tensor([[1, 2], [3, 4]]))
    r = torch.randn(64, 64, device=DEV)
    assert r.shape == (64, 64) and abs(r.cpu().mean().item()) < 0.1 and 0.9 < r.cpu().std().item() < 1.1
    u = torch.rand(1000, device=DEV).cpu()
    assert 0 <= u.min().item() and u.max().item() < 1
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    d = x.to(DEV)
    close(d * 2 + 1, x * 2 + 1)
    assert (d.sum() * 2).item() == 30.0
    assert d.cpu().numpy().tolist() == x.numpy().tolist()
    assert d.tolist() == x.tolist()
    assert repr(d + 1) == "tensor([[1., 2., 3.],\n        [4., 5., 6.]], device='lazytrain:0')"
    assert "grad_fn=<MulBackward0>" in repr(torch.ones(2, device=DEV, requires_grad=True) * 2)
    x.add_(100)  # .to() copied: the CPU tensor's later writes do not reach the device
    assert d.cpu()[0, 0].item() == 0.0
    c = d.cpu()
    c.add_(1)  # nor do writes into .cpu()'s result
    assert d.cpu()[0, 0].item() == 0.0
    close(d.to(torch.int64), torch.arange(6).reshape(2, 3))
    r = torch.randint(3, 7, (2000,), device=DEV).cpu()
    assert r.dtype == torch.int64 and r.min().item() == 3 and r.max().item() == 6
    kept = torch.nn.functional.dropout(torch.ones(4000, device=DEV), 0.5).cpu()
    assert set(kept.unique().tolist()) == {0.0, 2.0} and 0.45 < (kept == 0).float().mean().item() < 0.55
    import lazytrain.torch_backend as tb
    assert tb.device() == DEV


def test_views_and_inplace_follow_torch():
    a = torch.zeros(2, 3, device=DEV)
    b = a[0]
    b.add_(1)
    close(a, torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))
    x = torch.ones(2, 3, device=DEV)
    x.detach().zero_()
    close(x, torch.zeros(2, 3))
    x = torch.arange(12.0).reshape(3, 4)
    lx = x.to(DEV)
    for t in (x, lx):
        v = t.t()
        assert not v.is_contiguous() and v.stride() == (1, 4)
        v[1].mul_(10)
        t[:, 2:].sub_(1)
        t.view(12)[0] = -5.0
        r = v.reshape(12)  # a copy: the transposed view cannot be reshaped in place
        r.add_(1000)
    close(lx, x)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        lx.t().view(12)
    y = torch.arange(6.0).to(DEV)
    s = y.unsqueeze(0).expand(2, 6)
    assert s.stride() == (0, 1)
    y.mul_(2)
    close(s.sum(0), (torch.arange(6.0) * 2) * 2)


def test_views_report_torchs_strides_and_offsets():
    base = torch.arange(120.0).reshape(2, 3, 4, 5)
    views = [
        lambda t: t.view(6, 20), lambda t: t.view(-1), lambda t: t.permute(3, 1, 0, 2), lambda t: t.transpose(1, -1),
        lambda t: t[1], lambda t: t[:, 1:3], lambda t: t[..., ::2], lambda t: t[:, -1, 1:, :-1],
        lambda t: t.select(2, -1), lambda t: t.unsqueeze(2), lambda t: t.unsqueeze(-1), lambda t: t[0, 0].t(),
        lambda t: t[:, :1].expand(2, 4, 4, 5), lambda t: t[0, 0, 0].expand(3, 5), lambda t: t.squeeze(),
        lambda t: t[:, :1].squeeze(1), lambda t: t.permute(1, 0, 2, 3).reshape(3, 2, 20),
        lambda t: t.transpose(0, 1)[1:].view(2, 2, 20), lambda t: t.detach()[1:], lambda t: t.split(2, 3)[2],
        lambda t: t.unbind(1)[2], lambda t: t.narrow(3, 1, 2), lambda t: t.transpose(2, 3).unsqueeze(0)[0, :, 1],
    ]
    lazy = base.to(DEV)
    for i, view in enumerate(views):
        want, got = view(base), view(lazy)
        assert (got.shape, got.stride(), got.storage_offset(), got.is_contiguous()) == \
            (want.shape, want.stride(), want.storage_offset(), want.is_contiguous()), i
        close(got, want)


def test_inplace_writes_under_autograd_and_data_assignment():
    grads = []
    for d in ("cpu", DEV):
        x = torch.arange(6.0, device=d).reshape(2, 3).requires_grad_()
        y = x * 2
        y[0].mul_(3)  # a write into a view of a tensor autograd saw (torch's CopySlices)
        (y * y).sum().backward()
        grads.append(x.grad)
    close(grads[1], grads[0])
    p = torch.nn.Parameter(torch.ones(2, device=DEV))
    z = torch.zeros(3, device=DEV)
    p.data = z  # p now shares z's values, as in torch
    assert p.shape == (3,) and p.requires_grad and isinstance(p, LazyTensor)
    z.add_(5)
    close(p, torch.full((3,), 5.0))
    p.data.mul_(2)
    close(z, torch.full((3,), 10.0))
    with pytest.raises(RuntimeError, match="move it with"):
        p.data = torch.ones(3)


def test_gradients_accumulate_over_micro_batches():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    ref = copy.deepcopy(model)
    model.to(DEV)
    xs = [torch.randn(3, 4) for _ in range(3)]
    for m, d in ((ref, "cpu"), (model, DEV)):
        for x in xs:
            (m(x.to(d)) ** 2).mean().backward()
    close(model.weight.grad, ref.weight.grad)
    close(model.bias.grad, ref.bias.grad)


def test_autograd_matches_cpu():
    torch.manual_seed(0)
    w, x = torch.randn(4, 3, requires_grad=True), torch.randn(5, 4)
    lw = w.detach().to(DEV).requires_grad_()
    for weight, inp in ((w, x), (lw, x.to(DEV))):
        h = torch.nn.functional.gelu(inp @ weight)
        h = h.transpose(0, 1).softmax(-1)
        loss = (h * h).sum() + torch.nn.functional.cross_entropy(inp @ weight, torch.arange(5) % 3 if weight is w
                                                                  else (torch.arange(5) % 3).to(DEV))
        loss.backward()
    close(lw.grad, w.grad)


def _train(model, device, foreach, steps=5, clip=True):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01, foreach=foreach)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
    g = torch.Generator().manual_seed(1)
    losses, compiles = [], []
    for _ in range(steps):
        x, y = torch.randn(8, 16, generator=g).to(device), torch.randint(0, 4, (8,), generator=g).to(device)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer_step(opt, device)
        sched.step()
        losses.append(loss.item())
        compiles.append(metrics.counter_value("UncachedCompile"))
    return losses, [p.detach().cpu() for p in model.parameters()], compiles


@pytest.mark.parametrize("foreach", [False, True])
def test_mlp_trains_as_eager_with_one_graph_per_step(foreach):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    ref = copy.deepcopy(model)
    eager_losses, eager_params, _ = _train(ref, torch.device("cpu"), foreach)
    model.to(xm.xla_device())
    assert all(isinstance(p, LazyTensor) and isinstance(p, torch.nn.Parameter) for p in model.parameters())
    losses, params, compiles = _train(model, DEV, foreach)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-4, atol=1e-4)
    for p, e in zip(params, eager_params):
        torch.testing.assert_close(p, e, rtol=1e-4, atol=1e-4)
    # The schedule changes the learning rate every step: it is device data, not a constant.
    assert compiles[1] == compiles[-1], compiles


def test_mark_step_cuts_torch_tensors():
    x = torch.ones(3, device=DEV)
    y = (x * 3 + 1).sum()
    before = metrics.counter_value("UncachedCompile") + metrics.counter_value("CachedCompile")
    xm.mark_step()
    after = metrics.counter_value("UncachedCompile") + metrics.counter_value("CachedCompile")
    assert after == before + 1
    assert y.item() == 12.0
    assert metrics.counter_value("UncachedCompile") + metrics.counter_value("CachedCompile") == after


def test_xla_device_serves_both_tensor_kinds():
    device = xm.xla_device()
    assert device == torch.device("lazytrain", 0)
    assert torch.ones(2).to(device).device == device
    native = lt.ones(2).to(device)
    assert isinstance(native, lt.Tensor) and str(native.device) == "cpu:0"
    assert str(lt.nn.Linear(2, 3).to(device).weight.device) == "cpu:0"
    lazy_device.enable(False)
    assert str(xm.xla_device()) == "cpu:0"


def test_mixing_devices_raises_torchs_error_naming_the_line():
    x = torch.ones(3, device=DEV)
    mismatch = r"Expected all tensors to be on the same device.*test_torch_lazy_device\.py"
    with pytest.raises(RuntimeError, match=mismatch):
        x + torch.ones(3)
    close(x + torch.tensor(2.0), torch.full((3,), 3.0))  # a 0-d CPU tensor is a scalar, as in torch


def test_an_unlowerable_op_raises_naming_it():
    x = torch.arange(6.0, device=DEV)
    with pytest.raises(RuntimeError, match=r"aten\.unfold.*test_torch_lazy_device\.py"):
        x.unfold(0, 2, 1)


@pytest.mark.parametrize("foreach", [False, True])
def test_bert_mlm_trains_as_eager_with_one_graph_per_step(foreach, capfd):
    pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")
    from lazy_device_loops import assert_trains_as_eager, tiny_bert

    torch.manual_seed(0)
    tied = tiny_bert().to(xm.xla_device())
    assert tied.cls.predictions.decoder.weight is tied.bert.embeddings.word_embeddings.weight
    lt.debug.set_step_analysis(True)
    try:
        assert_trains_as_eager("bert", lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01,
                                                                        foreach=foreach))
    finally:
        lt.debug.set_step_analysis(False)
    # The step reads nothing on the host before mark_step: the only transfers are
    # the test's own loss.item() after it.
    steps = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("[mark_step")]
    assert len(steps) == 5, steps
    for line in steps:  # clip_grad_norm_, AdamW and the schedule read nothing on the host
        reads = line.split("host transfer")[1]
        assert "0 host transfers" in line or reads.count(" at ") == reads.count("lazy_device_loops.py"), line


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_causal_lm_loss_and_gradients_match_eager(arch):
    pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")
    from lazy_device_loops import MODELS

    torch.manual_seed(0)
    model = MODELS[arch]()
    ref = copy.deepcopy(model)
    ids = torch.randint(0, 99, (2, 10))
    results = []
    for m, d in ((ref, "cpu"), (model.to(DEV), DEV)):
        m.train()
        loss = m(input_ids=ids.to(d), labels=ids.to(d)).loss
        loss.backward()
        xm.mark_step()
        results.append((loss, [p.grad for p in m.parameters()]))
    torch.testing.assert_close(results[1][0].cpu(), results[0][0], rtol=1e-4, atol=1e-4)
    for got, want in zip(results[1][1], results[0][1]):
        assert (got is None) == (want is None)
        if want is not None:
            close(got, want, tol=1e-4)



def test_the_device_leaves_accelerate_on_the_cpu():
    """transformers' Trainer frees memory through accelerate, which asks
    torch.accelerator; the lazy device must not pass for an accelerator there
    (torch would assert that it has no caching allocator)."""
    accelerate_memory = pytest.importorskip("accelerate.utils.memory")
    x = torch.ones(3, device=DEV) * 2
    assert not torch.accelerator.is_available()
    accelerate_memory.clear_device_cache(garbage_collection=True)
    assert x.cpu().tolist() == [2.0, 2.0, 2.0]
