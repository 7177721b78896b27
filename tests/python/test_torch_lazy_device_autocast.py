"""torch.autocast on the lazy device (lazy_device/_autocast.py): the casts of
CPU autocast, so a bf16 training step on the device equals eager PyTorch's
under torch.autocast("cpu") (same seed, dropout off)."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")
transformers = pytest.importorskip("transformers")

import lazytrain.core.xla_model as xm  # noqa: E402

from lazy_device_support import DEV, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)


def test_autocast_casts_as_cpu_autocast():
    x = torch.ones(2, 3, device=DEV)
    w = torch.ones(4, 3, device=DEV)
    with torch.autocast(DEV.type, dtype=torch.bfloat16):
        y = torch.nn.functional.linear(x, w)  # lower precision
        loss = torch.nn.functional.cross_entropy(y, torch.zeros(2, dtype=torch.long, device=DEV))  # float32
        cat = torch.cat([y, x], dim=1)  # the widest input dtype
        plain = (x + 1).softmax(-1)  # untouched
    assert (y.dtype, loss.dtype, cat.dtype, plain.dtype) == (torch.bfloat16, torch.float32, torch.float32,
                                                             torch.float32)
    with torch.autocast(DEV.type, dtype=torch.bfloat16, enabled=False):
        assert torch.nn.functional.linear(x, w).dtype == torch.float32


def test_bf16_bert_steps_equal_eager_cpu_autocast():
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    ref = transformers.BertForMaskedLM(cfg)
    model = copy.deepcopy(ref).to(DEV)
    batches = [torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(i)) for i in range(3)]
    losses = {}
    for name, m, dev in (("eager", ref, "cpu"), ("lazy", model, DEV)):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        out = []
        for ids in batches:
            ids = ids.to(dev)
            with torch.autocast(torch.device(dev).type, dtype=torch.bfloat16):
                loss = m(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if dev != "cpu":
                xm.mark_step()
            out.append(loss.item())
        losses[name] = out
    # bf16 matmuls: the two sides round alike but not bit for bit (kernels differ)
    assert losses["lazy"] == pytest.approx(losses["eager"], abs=2e-2)
    got = model.bert.encoder.layer[1].output.dense.weight.detach().cpu()
    want = ref.bert.encoder.layer[1].output.dense.weight.detach()
    assert torch.allclose(got, want, atol=2e-3)
