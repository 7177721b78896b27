"""PyTorch/XLA's modules serving torch tensors on the lazy device (issue 56,
items 2 and 6, one replica): the same lazytrain.core.xla_model and
lazytrain.distributed.parallel_loader that serve lazytrain's native tensors.
xm.save writes a file plain torch loads (checked in a process without
lazytrain), safetensors / save_pretrained write files plain transformers
loads, MpDeviceLoader over a torch DataLoader hands out batches on the device
and a loop over it trains as eager with one compile after warm-up, and the
collectives take torch tensors."""
import copy
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")

import lazytrain.core.xla_model as xm  # noqa: E402
from lazytrain.debug import metrics  # noqa: E402
from lazytrain.distributed.parallel_loader import MpDeviceLoader  # noqa: E402
from lazytrain.torch_backend.lazy_device import LazyTensor  # noqa: E402

from lazy_device_support import DEV, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))


def _plain_python(code):
    """Runs `code` in a fresh interpreter without lazytrain on its path; its stdout."""
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", "import sys\nassert 'lazytrain' not in sys.modules\n" + code],
                         capture_output=True, text=True, env=env, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_xm_save_writes_a_file_plain_torch_loads(tmp_path):
    model = _mlp()
    eager = copy.deepcopy(model).state_dict()
    model.to(xm.xla_device())
    with torch.no_grad():  # a value computed on the device, not only moved there
        model[0].bias.add_(1.0)
    eager["0.bias"] = eager["0.bias"] + 1.0
    path = tmp_path / "ckpt.pt"
    extra = {"step": 3, "nested": [torch.ones(2, device=DEV) * 5, (torch.arange(3, device=DEV),)]}
    xm.save({"model": model.state_dict(), "extra": extra}, path)

    loaded = torch.load(path)
    for k, v in eager.items():
        assert type(loaded["model"][k]) is torch.Tensor and loaded["model"][k].device.type == "cpu"
        torch.testing.assert_close(loaded["model"][k], v, rtol=0, atol=0)
    assert loaded["extra"]["step"] == 3 and loaded["extra"]["nested"][0].tolist() == [5.0, 5.0]
    assert loaded["extra"]["nested"][1][0].tolist() == [0, 1, 2]

    # A process without lazytrain (nor its path) reads it with plain torch.
    code = (f"import torch\nsd = torch.load({str(path)!r})['model']\n"
            "print(';'.join(f'{k}={v.double().sum().item():.6f}' for k, v in sd.items()))\n"
            "assert 'lazytrain' not in sys.modules\n")
    sums = dict(kv.split("=") for kv in _plain_python(code).strip().split(";"))
    assert sums == {k: f"{v.double().sum().item():.6f}" for k, v in eager.items()}

    # Loaded back onto a model on the device.
    other = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3)).to(DEV)
    other.load_state_dict(torch.load(path)["model"])
    assert all(isinstance(p, LazyTensor) for p in other.parameters())
    for k, v in other.state_dict().items():
        torch.testing.assert_close(v.cpu(), eager[k], rtol=0, atol=0)
    x = torch.randn(4, 8)
    eager_model = _mlp()
    eager_model.load_state_dict(eager)
    torch.testing.assert_close(other(x.to(DEV)).cpu(), eager_model(x), rtol=1e-5, atol=1e-5)


def test_xm_save_master_only_and_native_tensors_unchanged(tmp_path):
    import lazytrain as lt
    xm.save({"w": torch.ones(2, device=DEV)}, tmp_path / "a.pt", master_only=False)
    assert torch.load(tmp_path / "a.pt")["w"].tolist() == [1.0, 1.0]
    xm.save({"w": torch.ones(2, device=DEV)}, tmp_path / "b.pt", global_master=True)
    assert (tmp_path / "b.pt").exists()
    xm.save({"q": lt.ones(2)}, tmp_path / "q.safetensors")  # lazytrain's own tensors: safetensors, as before
    assert lt.load(tmp_path / "q.safetensors")["q"].tolist() == [1.0, 1.0]


def test_safetensors_save_file_from_the_device(tmp_path):
    from safetensors.torch import load_file, save_file
    model = _mlp()
    eager = copy.deepcopy(model).state_dict()
    model.to(DEV)
    save_file(model.state_dict(), tmp_path / "m.safetensors")
    loaded = load_file(tmp_path / "m.safetensors")
    assert loaded.keys() == eager.keys()
    for k, v in eager.items():
        torch.testing.assert_close(loaded[k], v, rtol=0, atol=0)
    storage = model[0].weight.untyped_storage()
    assert storage.nbytes() == 16 * 8 * 4 and storage.data_ptr() != 0
    # a view answers its base's storage (tied weights are found so); another tensor does not
    assert model[0].weight.detach()[1:].t().untyped_storage().data_ptr() == storage.data_ptr()
    assert model[0].weight[1:].untyped_storage().nbytes() == storage.nbytes()
    assert model[2].weight.untyped_storage().data_ptr() != storage.data_ptr()
    with pytest.raises(RuntimeError, match=r"no storage in host memory.*\.cpu\(\)"):
        storage.tolist()


def test_save_pretrained_from_the_device_loads_in_plain_transformers(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")
    cfg = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                  intermediate_size=37, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(cfg)
    model.save_pretrained(tmp_path / "cpu")
    model.to(DEV)
    with torch.no_grad():  # weights changed on the device
        for p in model.parameters():
            p.mul_(1.5)
    eager = {k: v.cpu() for k, v in model.state_dict().items()}
    model.save_pretrained(tmp_path / "bert")
    from safetensors import safe_open
    with safe_open(tmp_path / "bert" / "model.safetensors", "pt") as f, \
            safe_open(tmp_path / "cpu" / "model.safetensors", "pt") as g:
        assert set(f.keys()) == set(g.keys())  # the tied weights found on the device too: saved once

    back = transformers.BertForMaskedLM.from_pretrained(tmp_path / "bert")
    for k, v in back.state_dict().items():
        torch.testing.assert_close(v, eager[k], rtol=0, atol=0)
    ids = torch.randint(0, 99, (2, 7))
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids.to(DEV)).logits.cpu(), back(input_ids=ids).logits,
                                   rtol=1e-4, atol=1e-4)

    # The same file read in a process without lazytrain.
    code = ("import transformers, torch\n"
            f"m = transformers.BertForMaskedLM.from_pretrained({str(tmp_path / 'bert')!r})\n"
            "print(f\"{m.bert.encoder.layer[0].output.dense.weight.double().sum().item():.6f}\")\n")
    want = eager["bert.encoder.layer.0.output.dense.weight"].double().sum().item()
    assert _plain_python(code).strip() == f"{want:.6f}"


class _Pairs(torch.utils.data.Dataset):
    def __init__(self, n=12):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 8, generator=g)
        self.y = torch.randint(0, 3, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": self.y[i], "half": self.x[i].to(torch.bfloat16), "id": i}


def test_mp_device_loader_hands_out_torch_batches_on_the_device():
    data = torch.utils.data.DataLoader(_Pairs(), batch_size=4)
    loader = MpDeviceLoader(data, xm.xla_device())
    assert len(loader) == 3
    batches = list(loader)
    want = list(data)
    assert len(batches) == 3
    for got, ref in zip(batches, want):
        assert set(got) == {"x", "y", "half", "id"}
        for k in ("x", "y", "half"):
            assert isinstance(got[k], LazyTensor) and got[k].device == DEV and got[k].dtype == ref[k].dtype
            torch.testing.assert_close(got[k].cpu(), ref[k], rtol=0, atol=0)
        assert isinstance(got["id"], torch.Tensor) and got["id"].tolist() == ref["id"].tolist()
    # tuples (a TensorDataset's batches), the loader's keyword arguments kept
    pairs = torch.utils.data.TensorDataset(torch.arange(10.0).reshape(5, 2), torch.arange(5))
    tuples = list(MpDeviceLoader(torch.utils.data.DataLoader(pairs, batch_size=2, drop_last=True), DEV,
                                 loader_prefetch_size=2, device_prefetch_size=1))
    assert [type(b) for b in tuples] == [list, list]  # torch's default_collate makes lists
    assert tuples[1][0].tolist() == [[4.0, 5.0], [6.0, 7.0]] and tuples[1][1].tolist() == [2, 3]
    with pytest.raises(ValueError, match="batches_per_execution"):
        iter(MpDeviceLoader(data, DEV, batches_per_execution=2))


def _loop(model, device, batches, loader=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses, compiles = [], []
    for batch in (loader if loader is not None else batches):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(batch["x"]), batch["y"])
        loss.backward()
        if device.type == "lazytrain":
            xm.optimizer_step(opt)
        else:
            opt.step()
        losses.append(loss)
        compiles.append(metrics.counter_value("UncachedCompile"))
    return [float(v.item()) for v in losses], compiles


def test_mp_device_loader_loop_trains_as_eager_with_one_compile_after_warm_up():
    data = torch.utils.data.DataLoader(_Pairs(16), batch_size=4)  # 4 steps: warm-up and 3 more
    model = _mlp()
    ref = copy.deepcopy(model)
    eager_losses, _ = _loop(ref, torch.device("cpu"), list(data))
    model.to(DEV)
    losses, compiles = _loop(model, DEV, None, MpDeviceLoader(data, DEV))  # next() marks the step
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-5)
    for p, e in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach().cpu(), e.detach(), rtol=1e-5, atol=1e-5)
    # compiles[i] is read while step i is traced (step i-1 compiled by then): step 0
    # (momentum buffers made) and step 1 (the steady step) compile, steps 2 and 3
    # replay step 1's graph.
    compiles.append(metrics.counter_value("UncachedCompile"))
    assert compiles[2] == compiles[3] == compiles[4] and compiles[4] - compiles[0] <= 2, compiles


def test_mp_device_loader_transfers_on_a_background_thread():
    import threading
    seen = []

    class Loader:
        def __iter__(self):
            for i in range(3):
                seen.append(threading.current_thread() is threading.main_thread())
                yield torch.full((2,), float(i))

    out = [b.cpu().tolist() for b in MpDeviceLoader(Loader(), DEV)]
    assert out == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert seen == [False, False, False]


def test_collectives_on_one_replica_take_torch_tensors(capsys):
    assert xm.xrt_world_size() == 1 and xm.is_master_ordinal() and xm.is_master_ordinal(local=False)
    x = torch.arange(3.0, device=DEV)
    for kind in (xm.REDUCE_SUM, "sum"):
        r = xm.all_reduce(kind, x)
        assert isinstance(r, LazyTensor) and r.tolist() == [0.0, 1.0, 2.0]
    assert xm.all_reduce("sum", x, scale=0.5).tolist() == [0.0, 0.5, 1.0]
    assert xm.all_reduce("max", x).tolist() == [0.0, 1.0, 2.0]
    grads = [torch.ones(2, device=DEV), torch.full((3,), 4.0, device=DEV)]
    out = xm.all_reduce("sum", grads, scale=0.25)  # a list: reduced in place, as torch_xla
    assert out is grads and grads[0].tolist() == [0.25, 0.25] and grads[1].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="reduce type 'avg'"):
        xm.all_reduce("avg", x)

    assert xm.mesh_reduce("loss", torch.tensor(2.5, device=DEV), lambda v: sum(t.item() for t in v)) == 2.5
    means = xm.mesh_reduce("acc", {"a": x}, lambda v: v[0]["a"])
    assert means.device.type == "cpu" and means.tolist() == [0.0, 1.0, 2.0]
    assert xm.mesh_reduce("n", 3.0, sum) == 3.0
    assert xm.rendezvous("t") == [] and xm.rendezvous("p", b"hi") == [b"hi"]
    xm.master_print("loss", x.sum())
    assert capsys.readouterr().out == "loss tensor(3., device='lazytrain:0')\n"
