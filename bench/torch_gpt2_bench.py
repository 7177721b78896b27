#!/usr/bin/python3
"""PyTorch eager peer of bench_gpt2_train (bench/README.md).

The same GPT2LMHeadModel (tools/torch_reference/gpt2.py, Hugging Face's architecture),
or with --model_type llama transformers' own LlamaForCausalLM (sdpa attention; needs
transformers: torch 2.13 from a venv, python/requirements-interop.txt), from the same config.json, the same kind of batches (random tokens, labels = input_ids,
no padding), the same step: forward, backward, clip_grad_norm_(1.0), AdamW (weight
decay 0.01 except biases and norm weights), zero_grad, loss.item().
--dtype f32 runs eager float32; --dtype bf16 runs the forward under
torch.autocast('cpu', dtype=torch.bfloat16) (backward outside it, as recommended).

GPT-2: run with torch 2.13 from bench/setup_peers.sh's venv (its wheel's MKL and oneDNN), as
bench/run_gpt2.sh does; or, for the older figures, with /usr/bin/python3 (Debian's torch 1.13)
under tools/torch_reference/with_openblas.sh with OPENBLAS_CORETYPE=SkylakeX for f32 (the
system libblas.so.3 is the netlib reference BLAS there); the script reports which BLAS it loaded.

Prints a human summary, then one line:
  RESULT bench=torch_gpt2_train dtype=f32 batch=4 seq=64 threads=2 ... tokens_per_s=... vmhwm_kb=...
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "torch_reference"))
sys.path.insert(0, HERE)
from gpt2 import GPT2LMHeadModel  # noqa: E402
from torch_bert_bench import time_training_steps  # noqa: E402


def train_flops_per_token(c, seq):
    """Matmul FLOPs of one training step per token (3x forward), as bench_gpt2_train."""
    if c.get("model_type") == "llama":
        e, n_layers, v, i = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
        heads = c["num_attention_heads"]
        d = c.get("head_dim") or e // heads
        a, g = heads * d, (c.get("num_key_value_heads") or heads) * d
        return 3 * (n_layers * (4 * e * a + 4 * e * g + 6 * e * i + 4 * seq * a) + 2 * e * v)
    e, n_layers, v = c["n_embd"], c["n_layer"], c["vocab_size"]
    i = c.get("n_inner") or 4 * e
    return 3 * (n_layers * (8 * e * e + 4 * e * i + 4 * seq * e) + 2 * e * v)


def make_model(cfg, model_type):
    """(the model, a test of a parameter name: True when it gets no weight decay)."""
    if model_type == "llama":
        import transformers  # noqa: PLC0415 (only the Llama peer needs it)
        fields = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**fields, attn_implementation="sdpa"))
        return model, lambda n: n.endswith("bias") or "norm" in n  # transformers' get_decay_parameter_names
    return GPT2LMHeadModel(cfg), lambda n: n.endswith("bias") or ".ln_" in n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=os.path.join(HERE, "..", "..", "shared", "data", "gpt2", "config.json"))
    p.add_argument("--model_type", choices=["gpt2", "llama"], default="gpt2")
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--seq_len", type=int, default=64)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    a = p.parse_args()
    if a.warmup < 1 or a.steps < 1:
        p.error("--warmup and --steps must be at least 1")

    torch.set_num_threads(a.threads)
    with open(a.config) as f:
        cfg = json.load(f)
    flops = train_flops_per_token(cfg, a.seq_len)
    torch.manual_seed(a.seed)
    if cfg.get("model_type", "gpt2") != a.model_type:
        p.error(f"--config {a.config} is a {cfg.get('model_type')} config, not --model_type {a.model_type}")
    model, is_no_decay = make_model(cfg, a.model_type)
    model.train()
    named = list(model.named_parameters())
    no_decay = [q for n, q in named if is_no_decay(n)]
    decay = [q for n, q in named if not is_no_decay(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    n_params = sum(q.numel() for q in model.parameters())
    gen = torch.Generator().manual_seed(a.seed)
    batches = [torch.randint(0, cfg["vocab_size"], (a.batch_size, a.seq_len), generator=gen) for _ in range(4)]
    print(f"torch_gpt2_bench: {a.model_type}, batch {a.batch_size} x seq {a.seq_len}, "
          f"{a.dtype}, torch {torch.__version__}, {torch.get_num_threads()} threads, {a.warmup} warm-up + {a.steps} timed steps, "
          f"{n_params} parameters", flush=True)

    def step(i):
        ids = batches[i % len(batches)]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = model(input_ids=ids, labels=ids)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss.item()

    time_training_steps(step, a.warmup, a.steps, a.batch_size * a.seq_len, flops,
                        f"bench=torch_gpt2_train model={a.model_type} dtype={a.dtype} batch={a.batch_size} seq={a.seq_len}")

if __name__ == "__main__":
    main()
