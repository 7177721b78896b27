#!/usr/bin/python3
"""PyTorch 1.13 eager peer of bench_bert_train (bench/README.md).

The same BertForMaskedLM (tools/torch_reference/bert.py, Hugging Face's architecture),
the same random masked-LM batches (tokens in [1000, vocab), 15% of positions
labelled), the same step: forward (by default the MLM head on the labelled rows only,
as bench_bert_train; --lm_head all for HF's every token), backward, clip_grad_norm_(1.0), AdamW (weight
decay 0.01 except biases and LayerNorm weights), zero_grad, loss.item().
--dtype f32 runs eager float32; --dtype bf16 runs the forward under
torch.autocast('cpu', dtype=torch.bfloat16) (backward outside it, as recommended).

Run with /usr/bin/python3 (Debian's torch). For f32, torch's matmuls go to the system
libblas.so.3, the netlib reference BLAS here: run under
tools/torch_reference/with_openblas.sh with OPENBLAS_CORETYPE=SkylakeX (bench/run_all.sh
does); the script reports which BLAS it loaded.

Prints a human summary, then one line:
  RESULT bench=torch_bert_train model=bert-tiny dtype=f32 ... tokens_per_s=... vmhwm_kb=...
"""
import argparse
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "torch_reference"))
from bert import BertForMaskedLM  # noqa: E402

CONFIGS = {
    "bert-tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
    "bert-mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "bert-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}


def train_flops_per_token(c, seq, head_rows=1.0):
    """Matmul FLOPs of one training step per token (3x forward), as bench_bert_train;
    head_rows is the share of tokens the MLM head runs on."""
    h, i, n_layers, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    forward = n_layers * (8 * h * h + 4 * h * i + 4 * seq * h) + head_rows * (2 * h * h + 2 * h * v)
    return 3 * forward


def proc_status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def loaded_blas():
    """Which BLAS PyTorch's f32 matmuls use: "mkl" where torch links MKL (the PyPI x86 wheels of
    torch 2.x, linked in statically), else the library the process mapped (openblas / netlib
    reference / other). The maps alone would name numpy's bundled OpenBLAS under a torch with MKL."""
    if torch.backends.mkl.is_available():
        return "mkl"
    with open("/proc/self/maps") as f:
        maps = f.read()
    if "openblas" in maps:
        return "openblas"
    if "/blas/libblas.so" in maps:
        return "netlib-reference"
    return "other"


def time_training_steps(step, warmup, steps, tokens_per_step, flops_per_token, result_prefix):
    """Runs `warmup` then `steps` timed calls of step(i) (each returns the loss) and prints the
    summary and the line "RESULT <result_prefix> steps=... tokens_per_s=... vmhwm_kb=... loss=..."
    that bench/run_*.sh parse (the same keys as lazytrain's bench_support.h)."""
    t0 = time.perf_counter()
    for i in range(warmup):
        loss = step(i)
    warm = time.perf_counter() - t0

    def cpu_seconds():  # user + system CPU time of the whole process (every thread)
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    times = []
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    for i in range(steps):
        t = time.perf_counter()
        loss = step(warmup + i)
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    cpu_per_step = (cpu_seconds() - cpu_start) / steps
    tok_s = tokens_per_step * steps / total
    tok_s_best = tokens_per_step / min(times)  # contention only slows steps down
    median = statistics.median(times)
    hwm = proc_status_kb("VmHWM")
    blas = loaded_blas()
    gflops, gflops_best = tok_s * flops_per_token * 1e-9, tok_s_best * flops_per_token * 1e-9
    print(f"warm-up {warm:.3f} s; timed: {steps} steps in {total:.3f} s: {tok_s:.1f} tokens/s (best step {tok_s_best:.1f}), "
          f"step median {median:.3f} s (min {min(times):.3f}, max {max(times):.3f}), loss {loss:.4f}, "
          f"model {gflops:.2f} GFLOP/s, CPU {cpu_per_step:.3f} s/step, peak RSS {hwm / 1024:.1f} MiB, BLAS {blas}")
    print(f"RESULT {result_prefix} steps={steps} tokens_per_s={tok_s:.2f} tokens_per_s_best={tok_s_best:.2f} "
          f"step_median_s={median:.4f} flops_per_token={flops_per_token} model_gflops={gflops:.3f} "
          f"model_gflops_best={gflops_best:.3f} cpu_s_per_step={cpu_per_step:.4f} vmhwm_kb={hwm} blas={blas} "
          f"threads={torch.get_num_threads()} loss={loss:.4f}")


def random_batch(gen, batch, seq, vocab):
    low = 1000 if vocab > 2000 else 0
    ids = torch.randint(low, vocab, (batch, seq), generator=gen)
    labels = torch.where(torch.rand(batch, seq, generator=gen) < 0.15, ids, torch.full_like(ids, -100))
    labels[0, 0] = ids[0, 0]
    return ids, torch.ones_like(ids), labels


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(CONFIGS), default="bert-tiny")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p.add_argument("--batch_size", type=int, default=0, help="0: 8 for tiny/mini, 4 for base/large")
    p.add_argument("--seq_len", type=int, default=128)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--lm_head", choices=["labelled", "all"], default="labelled",
                   help="labelled: the MLM head on the labelled rows only (boolean indexing, a shape "
                        "that varies per batch, free in eager mode); all: every token, as HF's forward")
    a = p.parse_args()
    if a.warmup < 1 or a.steps < 1:
        p.error("--warmup and --steps must be at least 1")

    torch.set_num_threads(a.threads)
    batch = a.batch_size or (4 if a.model in ("bert-base", "bert-large") else 8)
    cfg = dict(vocab_size=30522, **CONFIGS[a.model])
    torch.manual_seed(a.seed)
    model = BertForMaskedLM(cfg)
    model.train()
    decay = [p_ for n, p_ in model.named_parameters() if not (n.endswith("bias") or "LayerNorm.weight" in n)]
    no_decay = [p_ for n, p_ in model.named_parameters() if n.endswith("bias") or "LayerNorm.weight" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    n_params = sum(p_.numel() for p_ in model.parameters())
    if a.dtype == "bf16":
        # torch 1.13's CPU autocast leaves layer_norm out of its cast lists and its CPU
        # kernel rejects a bf16 input with f32 weights ("expected scalar type BFloat16 but
        # found Float"; the MLM head's transform LayerNorm gets GELU's bf16 output). Do what
        # CUDA autocast does for layer_norm: run it in f32.
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.register_forward_pre_hook(lambda mod, args: tuple(
                    x.float() if torch.is_tensor(x) and x.dtype == torch.bfloat16 else x for x in args))
    gen = torch.Generator().manual_seed(a.seed)
    batches = [random_batch(gen, batch, a.seq_len, cfg["vocab_size"]) for _ in range(4)]
    labelled = sum(int((labels != -100).sum()) for _, _, labels in batches) / len(batches)
    head_rows = labelled / (batch * a.seq_len) if a.lm_head == "labelled" else 1.0
    flops = train_flops_per_token(cfg, a.seq_len, head_rows)
    print(f"MLM head on {head_rows * batch * a.seq_len:.1f} of {batch * a.seq_len} rows on average (--lm_head {a.lm_head})")
    print(f"torch_bert_bench: {a.model} {CONFIGS[a.model]}, batch {batch} x seq {a.seq_len}, {a.dtype}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, {a.warmup} warm-up + {a.steps} timed steps, "
          f"{n_params} parameters", flush=True)

    def forward(ids, mask, labels):
        if a.lm_head == "all":
            return model(ids, mask, labels=labels)["loss"]
        hidden = model.bert(ids, mask)[-1]
        flat = labels.view(-1)
        rows = flat != -100
        logits = model.cls(hidden.reshape(-1, hidden.shape[-1])[rows])
        return torch.nn.functional.cross_entropy(logits, flat[rows])

    def step(i):
        ids, mask, labels = batches[i % len(batches)]
        if a.dtype == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = forward(ids, mask, labels)
        else:
            loss = forward(ids, mask, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss.item()

    time_training_steps(step, a.warmup, a.steps, batch * a.seq_len, flops,
                        f"bench=torch_bert_train model={a.model} dtype={a.dtype} batch={batch} seq={a.seq_len} lm_head={a.lm_head}")

if __name__ == "__main__":
    main()
