"""A small causal transformer written in plain lazytrain Python, trained on
WikiText-2 text (bytes as tokens) with PyTorch/XLA's loop: forward, backward,
clip, AdamW, a warm-up schedule and xm.mark_step(). The step compiles once; the
metrics report at the end shows it.

    python examples/python/custom_training_loop.py [--data ../shared/data/wikitext-2/valid.txt] [--steps 60]
"""
import argparse
import math
import os
import time

import numpy as np

import lazytrain as lt
import lazytrain.core.xla_model as xm
import lazytrain.debug.metrics as met
import lazytrain.nn as nn
import lazytrain.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        d = c // self.heads
        qkv = self.qkv(x).view(b, t, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=256, dim=128, heads=4, layers=2, context=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        for m in self.modules():  # GPT-2's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, ids, labels):
        b, t = ids.shape
        x = self.wte(ids) + self.wpe(lt.arange(t))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(b * t, -1), labels.view(b * t))


def batches(data, batch_size, context, rng):
    while True:
        starts = rng.integers(0, len(data) - context - 1, batch_size)
        window = np.stack([data[s:s + context + 1] for s in starts]).astype(np.int64)
        yield lt.tensor(window[:, :-1]), lt.tensor(window[:, 1:])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_data = os.path.join(here, "..", "..", "..", "shared", "data", "wikitext-2", "valid.txt")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.environ.get("LAZYTRAIN_DATA_DIR") and
                        os.path.join(os.environ["LAZYTRAIN_DATA_DIR"], "wikitext-2", "valid.txt") or default_data)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--learning_rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    if not os.path.exists(args.data):
        parser.error(f"--data {args.data}: no such file (WikiText-2's valid.txt; set LAZYTRAIN_DATA_DIR or --data)")

    with open(args.data, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8)
    lt.manual_seed(args.seed)
    model = TinyLM(context=args.context)
    opt = lt.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01)
    sched = lt.optim.lr_scheduler.get_linear_schedule_with_warmup(opt, args.steps // 10, args.steps)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters, {len(data):,} bytes of text")

    stream = batches(data, args.batch_size, args.context, np.random.default_rng(args.seed))
    compiles_after_warmup = None
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        ids, labels = next(stream)
        opt.zero_grad()
        loss = model(ids, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        xm.mark_step()
        if step == 2:
            compiles_after_warmup = met.counter_value("UncachedCompile")
        if step % 10 == 0 or step == 1:
            value = loss.item()
            print(f"step {step:4d}  loss {value:.4f}  bits/byte {value / math.log(2):.3f}")
    elapsed = time.perf_counter() - start
    print(f"{args.steps} steps in {elapsed:.1f} s; graphs compiled after warm-up: "
          f"{met.counter_value('UncachedCompile') - compiles_after_warmup}")
    print(met.metrics_report())


if __name__ == "__main__":
    main()
