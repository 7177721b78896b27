#!/usr/bin/env -S /usr/bin/python3
"""Re-check tests/golden/{bert_tiny_mlm,adamw_step}.safetensors independently, in float64:
BERT forward written out with raw tensor ops (not bert.py) + autograd for the grads, AdamW /
clipping / schedule from their formulas (not torch.optim). Exits 1 if anything is off.

  /usr/bin/python3 tools/verify_golden.py [GOLDEN_DIR]     (default tests/golden)
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from safetensors_io import load_file  # noqa: E402


def err(a, b):
    return (a.double() - b.double()).abs().max().item()


def check_bert(path):
    t, meta = load_file(path, with_metadata=True)
    c = json.loads(meta["config"])
    P = {k: v.double().requires_grad_(True) for k, v in t.items() if k.startswith(("bert.", "cls."))}
    ids, am, lab = t["input_ids"], t["attention_mask"], t["labels"]
    B, S = ids.shape
    H, nh = c["hidden_size"], c["num_attention_heads"]
    hd = H // nh

    def ln(x, p):
        m = x.mean(-1, keepdim=True)
        v = ((x - m) ** 2).mean(-1, keepdim=True)
        return (x - m) / torch.sqrt(v + c["layer_norm_eps"]) * P[p + ".weight"] + P[p + ".bias"]

    def lin(x, p):
        return x @ P[p + ".weight"].T + P[p + ".bias"]

    def gelu(x):
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    def heads(y):
        return y.view(B, S, nh, hd).transpose(1, 2)

    e = "bert.embeddings."
    x = (P[e + "word_embeddings.weight"][ids] + P[e + "token_type_embeddings.weight"][0]
         + P[e + "position_embeddings.weight"][:S])
    hs = [ln(x, e + "LayerNorm")]
    mask = (1 - am[:, None, None, :].double()) * torch.finfo(torch.float32).min
    for layer in range(c["num_hidden_layers"]):
        p, x = f"bert.encoder.layer.{layer}.", hs[-1]
        q, k, v = (heads(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + mask, -1) @ v
        x1 = ln(lin(a.transpose(1, 2).reshape(B, S, H), p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm")
        hs.append(ln(lin(gelu(lin(x1, p + "intermediate.dense")), p + "output.dense") + x1,
                     p + "output.LayerNorm"))
    h = ln(gelu(lin(hs[-1], "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
    logits = h @ P[e + "word_embeddings.weight"].T + P["cls.predictions.bias"]  # tied decoder
    sel = lab != -100
    loss = -torch.log_softmax(logits, -1)[sel].gather(-1, lab[sel][:, None]).mean()
    loss.backward()
    errs = {"logits": err(logits, t["logits"]), "loss": err(loss, t["loss"]),
            "hidden_states": max(err(hs[i], t[f"hidden_states.{i}"]) for i in range(len(hs))),
            "grads": max(err(P[k].grad, t["grad." + k]) for k in P)}
    assert set(k[5:] for k in t if k.startswith("grad.")) == set(P), "grad.* names != parameter names"
    return errs


def check_adamw(path):
    a = load_file(path)
    names = ["dense.weight", "dense.bias", "LayerNorm.weight"]
    wd = {"dense.weight": 0.01, "dense.bias": 0.0, "LayerNorm.weight": 0.0}
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    worst = 0.0
    for n in names:
        p = a["init." + n].double()
        m, v = torch.zeros_like(p), torch.zeros_like(p)
        for k in (1, 2, 3):
            g = a[f"grad.{n}.step{k}"].double()
            p = p * (1 - lr * wd[n])  # decoupled weight decay
            m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
            p = p - lr * (m / (1 - b1 ** k)) / ((v / (1 - b2 ** k)).sqrt() + eps)
            worst = max(worst, err(p, a[f"param.{n}.step{k}"]), err(m, a[f"exp_avg.{n}.step{k}"]),
                        err(v, a[f"exp_avg_sq.{n}.step{k}"]))
    norm = math.sqrt(sum((a["clip.grad." + n].double() ** 2).sum().item() for n in names))
    coef = min(1.0, 1.0 / (norm + 1e-6))
    lam = [s / 5 if s < 5 else max(0.0, (20 - s) / 15) for s in range(20)]
    return {"adamw": worst, "clip.total_norm": abs(norm - a["clip.total_norm"].item()),
            "clip.clipped": max(err(a["clip.grad." + n].double() * coef, a["clip.clipped." + n]) for n in names),
            "schedule": err(torch.tensor(lam) * 1e-3, a["schedule.lr"])}


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden")
    errs = {**check_bert(os.path.join(d, "bert_tiny_mlm.safetensors")),
            **check_adamw(os.path.join(d, "adamw_step.safetensors"))}
    ok = True
    for k, e in errs.items():
        good = e < 1e-5
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {k:16s} max abs err {e:.3g}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
