#!/usr/bin/env python3
"""Golden gradient accumulation (HF Trainer semantics) -> tests/golden/grad_accumulation.safetensors.

  python3 tools/make_golden_grad_accumulation.py [OUT]
      (default tests/golden/grad_accumulation.safetensors; torch 2.x: pip install torch==2.13.0)

A tiny BertForMaskedLM (tools/torch_reference/bert.py, dropout 0) takes ONE optimizer step two ways:
  (a) one batch of K*B examples: loss (mean over its labelled tokens), backward;
  (b) K micro-batches of B rows (rows k*B .. k*B+B-1) as transformers' Trainer accumulates them since
      4.46 (PR #34191, "num_items_in_batch"): N = the labelled tokens of all K micro-batches, each
      micro-batch's loss = (sum of its labelled tokens' losses) / N, backward, gradients
      accumulating in .grad;
each followed by torch.nn.utils.clip_grad_norm_(max_norm=MAX_NORM) and one torch.optim.AdamW step
(lr, betas, eps, weight_decay on every parameter except biases and LayerNorm weights, as the
Trainer groups them). The micro-batches hold different numbers of labels (LABELS_PER_MICRO_BATCH),
so the old semantics (the mean of the micro-batch means) would differ from (a); (b) equals (a) up
to float rounding.

Contents (float tensors float32, integer tensors int64):
  init.<param>            parameters before the step (HF names, the tied decoder stored once)
  input_ids, attention_mask, labels   [K*B, S]  the whole batch; micro-batch k = rows k*B .. k*B+B-1
  grad_b.<param>          (b): gradient accumulated over the K micro-batches, before clipping
  grad_norm_a, grad_norm_b  []   clip_grad_norm_'s total norm (before clipping) of (a) / (b)
  final_a.<param>, final_b.<param>   parameters after the step of (a) / (b)
  loss_b                  [K]    each micro-batch's mean loss over its own labelled tokens
  labels_b                [K]    each micro-batch's labelled tokens (int64)
(a) and (b) agree to ~1e-8 except on attention.self.key.bias: its gradient is 0 in exact
arithmetic (softmax ignores a per-row shift), so it is rounding noise, and AdamW's first step
(lr * g / (|g| + eps)) moves each element by an arbitrary amount of at most lr.
__metadata__: "config" (HF config.json names), "hparams" (K, B, lr, betas, eps, weight_decay,
max_grad_norm, labels_per_micro_batch).
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "torch_reference"))
from safetensors_io import save_file  # noqa: E402
from bert import BertForMaskedLM  # noqa: E402

CONFIG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=24, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, max_position_embeddings=16, type_vocab_size=2,
              initializer_range=0.2, layer_norm_eps=1e-12, pad_token_id=0)
K, B, S = 3, 2, 8
LABELS_PER_MICRO_BATCH = [2, 5, 8]
HP = dict(lr=1e-3, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.01, max_grad_norm=1.0)


def make_batch(gen):
    V = CONFIG["vocab_size"]
    input_ids = torch.randint(1, V, (K * B, S), generator=gen)
    attention_mask = torch.ones(K * B, S, dtype=torch.int64)
    attention_mask[1, -3:] = 0  # padding in some rows: no label there
    attention_mask[4, -2:] = 0
    input_ids[attention_mask == 0] = CONFIG["pad_token_id"]
    labels = torch.full((K * B, S), -100, dtype=torch.int64)
    for k in range(K):
        rows = slice(k * B, (k + 1) * B)
        real = attention_mask[rows].flatten().nonzero().flatten()
        count = LABELS_PER_MICRO_BATCH[k]
        chosen = real[torch.randperm(len(real), generator=gen)[:count]]
        flat = labels[rows].flatten()
        flat[chosen] = torch.randint(0, V, (count,), generator=gen)
        labels[rows] = flat.view(B, S)
    return input_ids, attention_mask, labels


def optimizer(model):
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm.weight" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm.weight" in n]
    return torch.optim.AdamW([{"params": decay, "weight_decay": HP["weight_decay"]},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=HP["lr"], betas=tuple(HP["betas"]), eps=HP["eps"])


def fresh_model(init):
    model = BertForMaskedLM(CONFIG)
    model.load_state_dict(init, strict=False)  # init holds the named parameters (tied ones once)
    model.tie_weights()
    model.train()  # dropout probabilities are 0
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden",
                                                             "grad_accumulation.safetensors")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    init = {n: p.detach().clone() for n, p in BertForMaskedLM(CONFIG).named_parameters()}
    input_ids, attention_mask, labels = make_batch(torch.Generator().manual_seed(1))
    t = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
    for n, p in init.items():
        t[f"init.{n}"] = p

    # (a) one batch of K*B.
    model = fresh_model(init)
    opt = optimizer(model)
    model(input_ids, attention_mask, labels=labels)["loss"].backward()
    norm_a = torch.nn.utils.clip_grad_norm_(model.parameters(), HP["max_grad_norm"])
    opt.step()
    for n, p in model.named_parameters():
        t[f"final_a.{n}"] = p.detach().clone()

    # (b) K micro-batches of B, each loss's token sum / N (N: the step's labelled tokens), accumulated.
    model = fresh_model(init)
    opt = optimizer(model)
    losses = []
    num_items_in_batch = (labels != -100).sum()
    for k in range(K):
        rows = slice(k * B, (k + 1) * B)
        n_k = (labels[rows] != -100).sum()
        assert n_k.item() == LABELS_PER_MICRO_BATCH[k]
        loss = model(input_ids[rows], attention_mask[rows], labels=labels[rows])["loss"]
        losses.append(loss.detach().clone())
        (loss * n_k / num_items_in_batch).backward()
    for n, p in model.named_parameters():
        t[f"grad_b.{n}"] = p.grad.detach().clone()
    norm_b = torch.nn.utils.clip_grad_norm_(model.parameters(), HP["max_grad_norm"])
    opt.step()
    for n, p in model.named_parameters():
        t[f"final_b.{n}"] = p.detach().clone()
    t["grad_norm_a"] = norm_a.detach().float().reshape(())
    t["grad_norm_b"] = norm_b.detach().float().reshape(())
    t["loss_b"] = torch.stack(losses).float()
    t["labels_b"] = torch.tensor(LABELS_PER_MICRO_BATCH, dtype=torch.int64)

    # attention.self.key.bias has a zero gradient in exact arithmetic (softmax ignores a per-row
    # shift), so its gradient is rounding noise and AdamW's first step (lr * g / (|g| + eps))
    # moves it by an arbitrary fraction of lr: (a) and (b) agree on every other parameter.
    worst = max((t[f"final_a.{n}"] - t[f"final_b.{n}"]).abs().max().item() for n in init if "key.bias" not in n)
    assert worst < 1e-6, f"(a) and (b) differ by {worst}"
    assert norm_b.item() > HP["max_grad_norm"], "clipping should be active"
    assert all(v.dtype in (torch.float32, torch.int64) for v in t.values())
    hp = dict(HP, K=K, B=B, labels_per_micro_batch=LABELS_PER_MICRO_BATCH)
    save_file(t, out, metadata={"config": json.dumps(CONFIG, sort_keys=True), "hparams": json.dumps(hp),
                                "generator": "tools/make_golden_grad_accumulation.py (torch "
                                             + torch.__version__ + ")"})
    print(f"wrote {out}: {len(t)} tensors, grad_norm a={norm_a.item():.6f} b={norm_b.item():.6f}, "
          f"micro-batch losses={[round(x.item(), 6) for x in losses]}, max |final_a - final_b|={worst:.3g}")


if __name__ == "__main__":
    main()
