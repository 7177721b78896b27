#!/usr/bin/env -S /usr/bin/python3
"""Reference CLM training run: HF examples/pytorch/language-modeling/run_clm.py + Trainer, plain PyTorch.

  /usr/bin/python3 tools/torch_reference/run_clm.py --output_dir /tmp/torch_clm
      (defaults: WikiText-2 valid.txt to train, test.txt to evaluate, GPT-2's tokenizer, n_embd 128,
       2 layers, 2 heads, block 128, batch 16, 300 steps, lr 1e-3, seed 42)

Pipeline (what `lazytrain run_clm` is compared against):
  data     the text loader with keep_linebreaks (every line keeps its "\n", blank ones too), each
           line tokenized with GPT-2's BPE (gpt2_bpe.py), concatenated, cut into blocks of block_size,
           the remainder dropped (group_texts); labels = input_ids.
  batches  per epoch a permutation from torch.Generator seeded with seed + epoch, the last smaller
           batch kept (HF's dataloader_drop_last=False).
  model    gpt2.py GPT2LMHeadModel, ../shared/data/gpt2/config.json + --config_overrides, HF init
           after torch.manual_seed(seed); dropout as in the config (train mode); labels shifted inside.
  optim    torch.optim.AdamW(betas=(0.9, 0.999), eps=1e-8, weight_decay 0), linear schedule to 0 at
           max_steps; clip_grad_norm_(1.0) every step.
  eval     validation blocks, batch per_device_eval_batch_size (last batch kept); eval_loss = batch
           losses weighted by their examples; eval_accuracy = next-token argmax accuracy
           (run_clm.py's compute_metrics); perplexity = exp(eval_loss).
Outputs in --output_dir: train_results.json, eval_results.json, all_results.json, trainer_state.json.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2 import GPT2LMHeadModel  # noqa: E402
from gpt2_bpe import GPT2Tokenizer  # noqa: E402

DATA = "../shared/data"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train_file", default=f"{DATA}/wikitext-2/valid.txt")
    p.add_argument("--validation_file", default=f"{DATA}/wikitext-2/test.txt")
    p.add_argument("--tokenizer_name", default=f"{DATA}/gpt2", help="a directory with vocab.json, merges.txt")
    p.add_argument("--config_name", default=f"{DATA}/gpt2/config.json", help="config.json")
    p.add_argument("--config_overrides", default="n_embd=128,n_layer=2,n_head=2")
    p.add_argument("--block_size", type=int, default=128)
    p.add_argument("--per_device_train_batch_size", type=int, default=16)
    p.add_argument("--per_device_eval_batch_size", type=int, default=16)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--warmup_steps", type=int, default=0)
    p.add_argument("--max_steps", type=int, default=300)
    p.add_argument("--logging_steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--max_grad_norm", type=float, default=1.0)
    p.add_argument("--output_dir", required=True)
    return p.parse_args()


def load_config(path, overrides):
    """config.json + HF-style "k=v,k=v" overrides (value typed like the existing field)."""
    with open(path) as f:
        cfg = json.load(f)
    for item in filter(None, overrides.split(",")):
        k, v = item.split("=", 1)
        old = cfg.get(k)
        if isinstance(old, bool):
            v = v.lower() in ("true", "1", "yes")
        elif isinstance(old, int):
            v = int(v)
        elif isinstance(old, float):
            v = float(v)
        cfg[k] = v
    return cfg


def load_blocks(path, tok, block_size):
    """Lines with their line breaks -> BPE ids per line -> concatenated -> [n_blocks, block_size]."""
    ids = []
    with open(path, encoding="utf-8") as f:  # text mode, as HF's text loader: "\r\n" reads as "\n"
        for line in f:
            ids.extend(tok.encode(line))
    n = len(ids) // block_size
    return torch.tensor(ids[:n * block_size], dtype=torch.int64).view(n, block_size), len(ids)


def linear_schedule(warmup, total):
    """get_linear_schedule_with_warmup's lr multiplier at (0-based) step."""
    return lambda step: step / max(1, warmup) if step < warmup else \
        max(0.0, (total - step) / max(1, total - warmup))


def evaluate(model, blocks, args):
    """HF's evaluation_loop with run_clm.py's compute_metrics (next-token accuracy)."""
    model.eval()
    weighted, examples, right, counted = 0.0, 0, 0, 0
    with torch.no_grad():
        for i in range(0, len(blocks), args.per_device_eval_batch_size):
            inputs = blocks[i:i + args.per_device_eval_batch_size]
            out = model(inputs, torch.ones_like(inputs), labels=inputs)
            weighted += out["loss"].item() * len(inputs)
            examples += len(inputs)
            right += int((out["logits"][:, :-1].argmax(-1) == inputs[:, 1:]).sum())
            counted += inputs[:, 1:].numel()
    model.train()
    return weighted / examples, right / counted


def main():
    args = parse_args()
    torch.set_num_threads(2)
    os.makedirs(args.output_dir, exist_ok=True)

    tok = GPT2Tokenizer(args.tokenizer_name)
    t0 = time.time()
    train_blocks, n_train_tok = load_blocks(args.train_file, tok, args.block_size)
    eval_blocks, n_eval_tok = load_blocks(args.validation_file, tok, args.block_size)
    print(f"tokenized in {time.time() - t0:.1f}s: train {n_train_tok} tokens -> {tuple(train_blocks.shape)} "
          f"blocks, eval {n_eval_tok} tokens -> {tuple(eval_blocks.shape)} blocks", flush=True)

    cfg = load_config(args.config_name, args.config_overrides)
    assert cfg["vocab_size"] == len(tok), (cfg["vocab_size"], len(tok))
    torch.manual_seed(args.seed)  # HF set_seed before the model is built
    model = GPT2LMHeadModel(cfg)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters, config overrides: {args.config_overrides}", flush=True)

    # HF Trainer grouping: no weight decay for biases and LayerNorm weights.
    decay = [p for n, p in model.named_parameters() if not ("bias" in n or "ln_" in n)]
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "ln_" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_schedule(args.warmup_steps, args.max_steps))

    bs = args.per_device_train_batch_size
    # HF's dataloader_drop_last=False: the last, smaller batch of an epoch is kept.
    steps_per_epoch = (len(train_blocks) + bs - 1) // bs
    if steps_per_epoch == 0:
        sys.exit(f"train file has {len(train_blocks)} blocks, fewer than one batch of {bs}")
    log_history, total_loss, interval_loss, step, epoch = [], 0.0, 0.0, 0, 0
    t_start = time.time()
    while step < args.max_steps:
        perm = torch.randperm(len(train_blocks), generator=torch.Generator().manual_seed(args.seed + epoch))
        for b in range(steps_per_epoch):
            inputs = train_blocks[perm[b * bs:(b + 1) * bs]]
            loss = model(inputs, torch.ones_like(inputs), labels=inputs)["loss"]
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            total_loss += loss.item()
            interval_loss += loss.item()
            if step % args.logging_steps == 0:
                entry = {"loss": round(interval_loss / args.logging_steps, 4),
                         "grad_norm": round(grad_norm.item(), 4),
                         "learning_rate": sched.get_last_lr()[0],
                         "epoch": round(step / steps_per_epoch, 4), "step": step,
                         "elapsed_s": round(time.time() - t_start, 1)}
                log_history.append(entry)
                print(entry, flush=True)
                interval_loss = 0.0
            if step >= args.max_steps:
                break
        epoch += 1
    runtime = time.time() - t_start

    train_results = {"epoch": round(step / steps_per_epoch, 4), "train_loss": total_loss / step,
                     "train_runtime": round(runtime, 4), "train_samples": len(train_blocks),
                     "train_samples_per_second": round(step * bs / runtime, 3),
                     "train_steps_per_second": round(step / runtime, 3)}
    t0 = time.time()
    eval_loss, eval_accuracy = evaluate(model, eval_blocks, args)
    eval_runtime = time.time() - t0
    try:
        ppl = math.exp(eval_loss)
    except OverflowError:
        ppl = float("inf")
    eval_results = {"eval_loss": eval_loss, "eval_accuracy": eval_accuracy, "perplexity": ppl, "eval_samples": len(eval_blocks),
                    "eval_runtime": round(eval_runtime, 4)}
    log_history.append({**train_results, "step": step})
    log_history.append({**eval_results, "step": step})

    def dump(name, obj):
        with open(os.path.join(args.output_dir, name), "w") as f:
            json.dump(obj, f, indent=2)
    dump("train_results.json", train_results)
    dump("eval_results.json", eval_results)
    dump("all_results.json", {**train_results, **eval_results})
    dump("trainer_state.json", {"global_step": step, "max_steps": args.max_steps,
                                "logging_steps": args.logging_steps, "log_history": log_history,
                                "args": vars(args), "config": cfg})
    print("***** train metrics *****")
    for k, v in train_results.items():
        print(f"  {k} = {v}")
    print("***** eval metrics *****")
    for k, v in eval_results.items():
        print(f"  {k} = {v}")


if __name__ == "__main__":
    main()
