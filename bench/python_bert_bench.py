"""Training-step throughput of a BERT masked LM three ways, in one run:

  cpp         the C++ model driven from C++ (build/bench/bench_bert_train --lm_head all)
  cpp-python  the same C++ model (models/bert.h) driven from Python (lazytrain.BertForMaskedLM)
  python      the same architecture written in Python with lazytrain.nn

Each way runs in its own process (so peak RSS is its own) with the same batch
(4 x 128 for bert-base), AdamW with Hugging Face's decay groups, clip 1.0, the
MLM head on every token, and mark_step + loss.item() per step. Prints steps/s,
the host's trace time per step and per IR node (from the step's graph size),
peak RSS, and the ratios against the C++ path. Then a tracing micro-benchmark:
the per-op cost of recording `y = x + 1` from Python.

A shared 2-CPU machine drifts by 10-15% over minutes, so the ways run
interleaved for --rounds rounds (cpp, cpp-python, python, cpp, ...) and each
way's steps/s is 1 / (median over rounds of its median step time); the
spread across rounds is printed beside it.

    python bench/python_bert_bench.py [--model bert-base|bert-tiny] [--warmup 2] [--steps 5] [--rounds 3]

Needs lazytrain installed in the running Python (pip install .) and
build/bench/bench_bert_train (bash scripts/build.sh).
"""
import argparse
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {
    "bert-tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, batch=8),
    "bert-mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, batch=8),
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, batch=4),
}
VOCAB, MAX_POSITIONS, TYPES = 30522, 512, 2
FLOAT32_LOWEST = -3.4028234663852886e38
WAYS = ("cpp", "cpp-python", "python")


def python_bert(cfg):
    """BertForMaskedLM in lazytrain.nn, op for op as models/bert.cpp writes it."""
    import lazytrain as lt
    import lazytrain.nn as nn
    import lazytrain.nn.functional as F

    H, L, A, I = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["intermediate_size"]

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
            self.attn_out = nn.Linear(H, H)
            self.attn_norm = nn.LayerNorm(H, eps=1e-12)
            self.intermediate = nn.Linear(H, I)
            self.output = nn.Linear(I, H)
            self.out_norm = nn.LayerNorm(H, eps=1e-12)
            self.drop = nn.Dropout(0.1)

        def forward(self, x, mask):
            b, s, _ = x.shape
            d = H // A

            def heads(proj):
                return proj(x).view(b, s, A, d).permute(0, 2, 1, 3)

            q, k, v = heads(self.query), heads(self.key), heads(self.value)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
            probs = self.drop((scores + mask).softmax(-1))
            ctx = (probs @ v).permute(0, 2, 1, 3).reshape(b, s, H)
            x = self.attn_norm(self.drop(self.attn_out(ctx)) + x)
            return self.out_norm(self.drop(self.output(F.gelu(self.intermediate(x)))) + x)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(VOCAB, H, padding_idx=0)
            self.position = nn.Embedding(MAX_POSITIONS, H)
            self.token_type = nn.Embedding(TYPES, H)
            self.emb_norm = nn.LayerNorm(H, eps=1e-12)
            self.drop = nn.Dropout(0.1)
            self.layers = nn.ModuleList([Layer() for _ in range(L)])
            self.transform = nn.Linear(H, H)
            self.transform_norm = nn.LayerNorm(H, eps=1e-12)
            self.decoder_bias = nn.Parameter(lt.zeros(VOCAB))
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

        def forward(self, input_ids, attention_mask, labels):
            b, s = input_ids.shape
            types = self.token_type(lt.zeros(b, s, dtype=lt.int64))
            x = self.drop(self.emb_norm(self.word(input_ids) + types + self.position(lt.arange(s)).unsqueeze(0)))
            mask = (1.0 - attention_mask.float().view(b, 1, 1, s)) * FLOAT32_LOWEST
            for layer in self.layers:
                x = layer(x, mask)
            h = self.transform_norm(F.gelu(self.transform(x)))
            logits = F.linear(h, self.word.weight, self.decoder_bias)
            return F.cross_entropy(logits.view(b * s, VOCAB), labels.view(b * s))

    return Bert()


def run_way(way, model, warmup, steps):
    """One way's timed steps in this process; prints one JSON line."""
    import numpy as np

    import lazytrain as lt
    import lazytrain.debug.metrics as met
    import lazytrain.nn as nn

    cfg = MODELS[model]
    lt.manual_seed(42)
    if way == "python":
        net = python_bert(cfg)
        named = list(net.named_parameters())
        forward = net
    else:
        net = lt.BertForMaskedLM(lt.BertConfig(**{k: v for k, v in cfg.items() if k != "batch"}))
        net.train()
        named = list(net.named_parameters())

        def forward(ids, mask, labels):
            return net(ids, attention_mask=mask, labels=labels).loss
    decay = [p for n, p in named if not ("bias" in n or "LayerNorm.weight" in n or "norm" in n)]
    no_decay = [p for n, p in named if "bias" in n or "LayerNorm.weight" in n or "norm" in n]
    params = decay + no_decay
    opt = lt.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                         lr=1e-4, weight_decay=0.0)
    batch, seq = cfg["batch"], 128
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(4):
        ids = rng.integers(1, VOCAB, (batch, seq))
        labels = np.where(rng.random((batch, seq)) < 0.15, ids, -100)
        labels[0, 0] = ids[0, 0]
        batches.append((lt.tensor(ids), lt.ones(batch, seq, dtype=lt.int64), lt.tensor(labels)))
    lt.sync(wait=True)

    lt.debug.set_step_analysis(False)
    times, traces = [], []
    for i in range(warmup + steps):
        ids, mask, labels = batches[i % len(batches)]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = forward(ids, mask, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        t1 = time.perf_counter()
        lt.sync()
        loss.item()
        t2 = time.perf_counter()
        if i >= warmup:
            times.append(t2 - t0)
            traces.append(t1 - t0)
        if i == warmup - 1:
            compiles = met.counter_value("UncachedCompile")
    nodes = 0
    for line in lt.debug.recent_steps():
        m = re.search(r"largest graph (\d+) nodes", line)
        if m:
            nodes = max(nodes, int(m.group(1)))
    result = dict(way=way, step_median_s=statistics.median(times), trace_ms=1e3 * sum(traces) / len(traces),
                  nodes=nodes, recompiles=met.counter_value("UncachedCompile") - compiles,
                  peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  loss=loss.item())
    print("RESULT " + json.dumps(result), flush=True)


def run_cpp(model, warmup, steps):
    binary = os.path.join(ROOT, "build", "bench", "bench_bert_train")
    if not os.path.exists(binary):
        sys.exit(f"python_bert_bench: {binary} is missing (bash scripts/build.sh builds it)")
    out = subprocess.run([binary, "--model", model, "--lm_head", "all", "--warmup", str(warmup), "--steps", str(steps),
                          "--batch_size", str(MODELS[model]["batch"])], capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("RESULT")][-1]
    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
    return dict(way="cpp", step_median_s=float(fields["step_median_s"]), trace_ms=float("nan"), nodes=0,
                recompiles=int(fields["recompiles"]), peak_rss_mib=int(fields["vmhwm_kb"]) / 1024,
                loss=float(fields["loss"]), raw=line)


def tracing_microbench(n=20000):
    """Seconds per op of `y = y + 1.0` recorded from Python (nothing runs: graph cut every 1000 ops)."""
    import lazytrain as lt
    x = lt.ones(8)
    lt.sync(wait=True)
    best = float("inf")
    for _ in range(3):
        y = x
        t0 = time.perf_counter()
        for i in range(n):
            y = y + 1.0
            if i % 1000 == 999:
                t1 = time.perf_counter()
                lt.sync(wait=True)
                t0 += time.perf_counter() - t1
                y = x
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="bert-base", choices=sorted(MODELS))
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--way", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.way:
        return run_way(a.way, a.model, a.warmup, a.steps)
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), platform.processor())
        f.seek(0)
        flags = next((l for l in f if l.startswith("flags")), "")
    isa = [x for x in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f" {x}" in flags]
    print(f"machine: {cpu}, {os.cpu_count()} CPUs, ISA {'+'.join(isa)}, load {os.getloadavg()[0]:.2f}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(default)')}")
    runs = {way: [] for way in WAYS}
    for _ in range(a.rounds):
        runs["cpp"].append(run_cpp(a.model, a.warmup, a.steps))
        for way in WAYS[1:]:
            out = subprocess.run([sys.executable, __file__, "--way", way, "--model", a.model, "--warmup",
                                  str(a.warmup), "--steps", str(a.steps)], capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"python_bert_bench: way {way} failed:\n{out.stderr[-3000:]}")
            runs[way].append(json.loads([l for l in out.stdout.splitlines() if l.startswith("RESULT ")][-1][7:]))
    rate = {way: 1.0 / statistics.median(r["step_median_s"] for r in rs) for way, rs in runs.items()}
    print(f"\n{a.model}, batch {MODELS[a.model]['batch']} x 128, f32, {a.warmup} warm-up + {a.steps} timed steps, "
          f"{a.rounds} interleaved rounds")
    print(f"{'way':<12} {'steps/s':>8} {'rounds min-max':>15} {'vs C++':>7} {'trace ms/step':>14} {'IR nodes':>9} "
          f"{'us/node':>8} {'recompiles':>10} {'peak RSS MiB':>13}")
    for way, rs in runs.items():
        r = rs[-1]
        spread = [1.0 / x["step_median_s"] for x in rs]
        trace_ms = statistics.median(x["trace_ms"] for x in rs)
        per_node = 1e3 * trace_ms / r["nodes"] if r["nodes"] else float("nan")
        print(f"{way:<12} {rate[way]:8.3f} {min(spread):7.3f}-{max(spread):<7.3f} {rate[way] / rate['cpp']:7.3f} "
              f"{trace_ms:14.1f} {r['nodes']:9d} {per_node:8.2f} {max(x['recompiles'] for x in rs):10d} "
              f"{max(x['peak_rss_mib'] for x in rs):13.0f}")
    print(f"\ntracing from Python: {1e6 * tracing_microbench():.2f} us per op (y = y + 1.0)")


if __name__ == "__main__":
    main()
