"""A 3-layer MLP and a small causal transformer written in Python train 20 steps
to the same losses and parameters, bit for bit, as the same models built
through the C++ API with the same seed (tests/python/equivalence_reference.cpp).

The C++ program is built with the test suite (build/python_equivalence_reference);
LAZYTRAIN_EQUIVALENCE_REFERENCE names it (scripts/test.sh sets it)."""
import math
import os
import subprocess

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.nn as nn
import lazytrain.nn.functional as F

STEPS = 20
SEED = 1234
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def reference_binary():
    path = os.environ.get("LAZYTRAIN_EQUIVALENCE_REFERENCE")
    if path:
        assert os.path.exists(path), f"LAZYTRAIN_EQUIVALENCE_REFERENCE={path} does not exist"
        return path
    default = os.path.join(ROOT, "build", "python_equivalence_reference")
    if not os.path.exists(default):
        pytest.skip("build/python_equivalence_reference is not built (bash scripts/build.sh builds it)")
    return default


def reinit_like_cpp(linears_and_embeddings):
    """C++'s nn::Linear/Embedding draw N(0, 0.02) weights at construction (biases 0):
    the same draws, in the same order, after reseeding."""
    lt.manual_seed(SEED)
    for module in linears_and_embeddings:
        nn.init.normal_(module.weight, std=0.02)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.l2 = nn.Linear(32, 32)
        self.l3 = nn.Linear(32, 5)
        reinit_like_cpp([self.l1, self.l2, self.l3])

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


class Block(nn.Module):
    VOCAB, DIM, HEADS, SEQ, HIDDEN = 50, 32, 2, 8, 64

    def __init__(self):
        super().__init__()
        d = self.DIM
        self.wte = nn.Embedding(self.VOCAB, d)
        self.wpe = nn.Embedding(self.SEQ, d)
        self.ln1 = nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, self.HIDDEN)
        self.fc2 = nn.Linear(self.HIDDEN, d)
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, self.VOCAB, bias=False)
        reinit_like_cpp([self.wte, self.wpe, self.q, self.k, self.v, self.o, self.fc1, self.fc2, self.head])

    def forward(self, tokens, labels):
        b, t = tokens.shape
        d = self.DIM // self.HEADS
        h = self.wte(tokens) + self.wpe(lt.arange(t))
        a = self.ln1(h)

        def heads(proj):
            return proj(a).view(b, t, self.HEADS, d).transpose(1, 2)

        qh, kh, vh = heads(self.q), heads(self.k), heads(self.v)
        scores = (qh @ kh.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        mask = lt.arange(t).unsqueeze(0) > lt.arange(t).unsqueeze(1)
        probs = scores.masked_fill(mask, float("-inf")).softmax(-1)
        ctx = (probs @ vh).transpose(1, 2).reshape(b, t, self.DIM)
        h = h + self.o(ctx)
        h = h + self.fc2(F.gelu(self.fc1(self.ln2(h))))
        logits = self.head(self.lnf(h))
        return F.cross_entropy(logits.view(b * t, self.VOCAB), labels.view(b * t))


def mlp_inputs():
    i, j = np.meshgrid(np.arange(8), np.arange(16), indexing="ij")
    x = np.sin(0.37 * i + 0.11 * j).astype(np.float32)
    return lt.tensor(x), lt.tensor((np.arange(8) * 7) % 5)


def tokens(step, shift):
    b, t = np.meshgrid(np.arange(4), np.arange(8), indexing="ij")
    return lt.tensor((b * 13 + (t + shift) * 7 + step * 3) % 50)


def train(model, loss_of_step):
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    sched = lt.optim.lr_scheduler.get_linear_schedule_with_warmup(opt, 2, STEPS)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = loss_of_step(step)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        lt.sync()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("which", ["mlp", "transformer"])
def test_python_model_equals_cpp_model_bit_for_bit(which, tmp_path):
    out = tmp_path / f"{which}.safetensors"
    subprocess.run([reference_binary(), which, str(out)], check=True, timeout=600)
    reference = lt.load(out)
    if which == "mlp":
        model = Mlp()
        x, y = mlp_inputs()
        losses = train(model, lambda step: F.cross_entropy(model(x), y))
    else:
        model = Block()
        losses = train(model, lambda step: model(tokens(step, 0), tokens(step, 1)))
    np.testing.assert_array_equal(np.float32(losses), reference["losses"].numpy())
    assert losses[-1] < losses[0]
    params = dict(model.named_parameters())
    assert sorted(params) == sorted(k for k in reference if k != "losses")
    for name, p in params.items():
        np.testing.assert_array_equal(p.numpy(), reference[name].numpy(), err_msg=name)
