#!/usr/bin/env -S /usr/bin/python3
"""Reference MLM training run: HF examples/pytorch/language-modeling/run_mlm.py + Trainer, plain PyTorch.

  /usr/bin/python3 tools/torch_reference/run_mlm.py \
      --train_file ../shared/data/wikitext-2/valid.txt --validation_file ../shared/data/wikitext-2/test.txt \
      --tokenizer_name ../shared/data/bert-base-uncased/vocab.txt --output_dir /tmp/torch_mlm

Pipeline (what the C++ trainer is compared against):
  data     read lines (universal newlines), tokenize each line as [CLS] ... [SEP], blank lines
           too ([CLS] [SEP], as HF's `datasets` text loader keeps them), concatenate everything, cut into blocks of max_seq_length, drop the remainder (group_texts).
  batches  per epoch a permutation from torch.Generator seeded with seed + epoch, the last smaller
           batch kept (HF's dataloader_drop_last=False).
  masking  DataCollatorForLanguageModeling: each non-special token selected with p=mlm_probability;
           selected -> 80% [MASK], 10% random token, 10% unchanged; labels = -100 where not selected.
           (own torch.Generator seeded with `seed`; eval uses a fresh one seeded with `seed`.)
  model    tools/torch_reference/bert.py BertForMaskedLM, config.json + --config_overrides, HF init
           after torch.manual_seed(seed); dropout as in the config (train mode).
  optim    torch.optim.AdamW(betas=(0.9, 0.999), eps=1e-8), weight_decay only on non-bias,
           non-LayerNorm params; linear schedule with warmup, to 0 at max_steps;
           clip_grad_norm_(1.0) every step; one optimizer step per batch.
  logs     every logging_steps: mean training loss over the interval (as HF).
  eval     validation blocks, batch per_device_eval_batch_size (last batch kept), masked with the
           collator; eval_loss = per-batch losses weighted by their examples (HF's evaluation_loop);
           eval_accuracy over the masked tokens (run_mlm.py's compute_metrics); perplexity = exp(eval_loss).
Differences from HF kept on purpose (simpler to reproduce): HF groups per 1000-line chunk (dropping
each chunk's remainder); its RNG streams differ.
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
from bert import BertForMaskedLM  # noqa: E402
from wordpiece import BertTokenizer  # noqa: E402

DATA = "../shared/data"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train_file", default=f"{DATA}/wikitext-2/valid.txt")
    p.add_argument("--validation_file", default=f"{DATA}/wikitext-2/test.txt")
    p.add_argument("--tokenizer_name", default=f"{DATA}/bert-base-uncased/vocab.txt", help="vocab.txt")
    p.add_argument("--config_name", default=f"{DATA}/bert-base-uncased/config.json", help="config.json")
    p.add_argument("--config_overrides",
                   default="hidden_size=128,num_hidden_layers=2,num_attention_heads=2,intermediate_size=512")
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--per_device_train_batch_size", type=int, default=16)
    p.add_argument("--per_device_eval_batch_size", type=int, default=16)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--warmup_steps", type=int, default=0)
    p.add_argument("--max_steps", type=int, default=300)
    p.add_argument("--logging_steps", type=int, default=50)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--mlm_probability", type=float, default=0.15)
    p.add_argument("--max_grad_norm", type=float, default=1.0)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--dataloader_num_workers", type=int, default=0,
                   help="> 0: batches are masked in torch DataLoader worker processes (bench/shared_machine.sh); "
                        "each batch then has its own mask generator, so the losses differ from a 0-worker run")
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
    """Lines -> [CLS] ids [SEP] per line, blank ones included -> concatenated -> [n_blocks, block_size]."""
    ids = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            ids.extend(tok.encode(line.rstrip("\n")))
    n = len(ids) // block_size
    return torch.tensor(ids[:n * block_size], dtype=torch.int64).view(n, block_size), len(ids)


def mask_tokens(inputs, tok, prob, gen):
    """DataCollatorForLanguageModeling.torch_mask_tokens with an explicit generator."""
    inputs, labels = inputs.clone(), inputs.clone()
    special = (inputs == tok.cls_token_id) | (inputs == tok.sep_token_id) | (inputs == tok.pad_token_id)
    p = torch.full(labels.shape, prob).masked_fill_(special, 0.0)
    masked = torch.bernoulli(p, generator=gen).bool()
    labels[~masked] = -100
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8), generator=gen).bool() & masked
    inputs[replaced] = tok.mask_token_id
    rand = torch.bernoulli(torch.full(labels.shape, 0.5), generator=gen).bool() & masked & ~replaced
    inputs[rand] = torch.randint(len(tok), labels.shape, dtype=torch.int64, generator=gen)[rand]
    return inputs, labels  # the remaining 10% of selected tokens stay unchanged


class MaskedBatches(torch.utils.data.Dataset):
    """Batch b of an epoch, masked with its own generator (for DataLoader worker processes)."""

    def __init__(self, blocks, perm, steps, epoch, tok, args):
        self.blocks, self.perm, self.steps, self.epoch, self.tok, self.args = blocks, perm, steps, epoch, tok, args

    def __len__(self):
        return self.steps

    def __getitem__(self, b):
        bs = self.args.per_device_train_batch_size
        gen = torch.Generator().manual_seed(self.args.seed * 1000003 + self.epoch * self.steps + b)
        return mask_tokens(self.blocks[self.perm[b * bs:(b + 1) * bs]], self.tok, self.args.mlm_probability, gen)


def epoch_batches(blocks, perm, steps, epoch, tok, args, collate_gen):
    """One epoch's (inputs, labels): masked here in order with collate_gen, or by DataLoader workers."""
    if args.dataloader_num_workers == 0:
        bs = args.per_device_train_batch_size
        return (mask_tokens(blocks[perm[b * bs:(b + 1) * bs]], tok, args.mlm_probability, collate_gen) for b in range(steps))
    return torch.utils.data.DataLoader(MaskedBatches(blocks, perm, steps, epoch, tok, args), batch_size=None,
                                       num_workers=args.dataloader_num_workers)


def linear_schedule(warmup, total):
    """get_linear_schedule_with_warmup's lr multiplier at (0-based) step."""
    return lambda step: step / max(1, warmup) if step < warmup else \
        max(0.0, (total - step) / max(1, total - warmup))


def evaluate(model, blocks, tok, args):
    """HF's evaluation_loop with run_mlm.py's compute_metrics: every block counted (the last
    batch may be smaller), eval_loss = the batch losses repeated once per example and averaged,
    accuracy = argmax predictions equal to the labels over the masked tokens."""
    model.eval()
    gen = torch.Generator().manual_seed(args.seed)
    weighted, examples, right, masked = 0.0, 0, 0, 0
    with torch.no_grad():
        for i in range(0, len(blocks), args.per_device_eval_batch_size):
            inputs, labels = mask_tokens(blocks[i:i + args.per_device_eval_batch_size], tok,
                                         args.mlm_probability, gen)
            out = model(inputs, torch.ones_like(inputs), labels=labels)
            weighted += out["loss"].item() * len(inputs)
            examples += len(inputs)
            keep = labels != -100
            right += int((out["logits"].argmax(-1)[keep] == labels[keep]).sum())
            masked += int(keep.sum())
    model.train()
    return weighted / examples, right / masked


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.output_dir, exist_ok=True)

    tok = BertTokenizer(args.tokenizer_name)
    t0 = time.time()
    train_blocks, n_train_tok = load_blocks(args.train_file, tok, args.max_seq_length)
    eval_blocks, n_eval_tok = load_blocks(args.validation_file, tok, args.max_seq_length)
    print(f"tokenized in {time.time() - t0:.1f}s: train {n_train_tok} tokens -> {tuple(train_blocks.shape)} "
          f"blocks, eval {n_eval_tok} tokens -> {tuple(eval_blocks.shape)} blocks", flush=True)

    cfg = load_config(args.config_name, args.config_overrides)
    assert cfg["vocab_size"] == len(tok), (cfg["vocab_size"], len(tok))
    torch.manual_seed(args.seed)  # HF set_seed before the model is built
    model = BertForMaskedLM(cfg)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters, config overrides: {args.config_overrides}", flush=True)

    # HF Trainer grouping: no weight decay for biases and LayerNorm weights.
    decay = [p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.learning_rate, betas=(0.9, 0.999), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_schedule(args.warmup_steps, args.max_steps))

    bs = args.per_device_train_batch_size
    # HF's dataloader_drop_last=False: the last, smaller batch of an epoch is kept.
    steps_per_epoch = (len(train_blocks) + bs - 1) // bs
    if steps_per_epoch == 0:
        sys.exit(f"train file has {len(train_blocks)} blocks, fewer than one batch of {bs}")
    collate_gen = torch.Generator().manual_seed(args.seed)
    log_history, total_loss, interval_loss, step, epoch = [], 0.0, 0.0, 0, 0
    t_start = time.time()
    while step < args.max_steps:
        perm = torch.randperm(len(train_blocks), generator=torch.Generator().manual_seed(args.seed + epoch))
        for b, (inputs, labels) in enumerate(epoch_batches(train_blocks, perm, steps_per_epoch, epoch, tok, args, collate_gen)):
            loss = model(inputs, torch.ones_like(inputs), labels=labels)["loss"]
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
    eval_loss, eval_accuracy = evaluate(model, eval_blocks, tok, args)
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
