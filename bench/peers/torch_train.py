"""PyTorch 2.x peer of bench_bert_train / bench_gpt2_train: eager or torch.compile (Inductor).

transformers' own BertForMaskedLM (sdpa attention, no pooler) or GPT2LMHeadModel, built from the
sizes of bench_bert_train's --model (peer_common.bert_config) or GPT-2's config.json, Hugging
Face's initialisation, dropout on (train mode). The step: forward (BERT: the MLM head on the
labelled rows only, as bench_bert_train's --lm_head labelled; GPT-2: labels = input_ids, shifted
in the model), backward, clip_grad_norm_(1.0), AdamW (lr 1e-4, weight decay 0.01 except biases
and LayerNorm weights: the Trainer's groups), zero_grad, loss.item().

--mode eager: the MLM head takes exactly the labelled rows (boolean indexing; a shape that
varies per batch costs eager mode nothing). --mode compile: torch.compile (Inductor, default
mode) of forward + loss; the rows are lazytrain's static capacity (peer_common.labelled_rows:
padding rows carry label -100), since a compiler needs static shapes; backward comes compiled
by AOTAutograd, clip and AdamW stay eager (foreach kernels). The compile time is the first
step's excess over the median timed step.
--dtype bf16: the forward and loss under torch.autocast('cpu', dtype=torch.bfloat16), backward
outside it, f32 weights and AdamW state.

Run from the peers venv (bench/setup_peers.sh: torch 2.13.0's CPU wheel, transformers 5.23.0);
the allocator is whatever the process was started with (bench/run_all.sh preloads Debian's
jemalloc or tcmalloc, or none); the RESULT line says which (malloc=).

  ~/.cache/lazytrain/venv-peers/bin/python bench/peers/torch_train.py --model bert-base --mode compile --threads 2
"""
import os
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402


def build_model(a):
    """(model, names of the parameters without weight decay)."""
    if a.model == "gpt2":
        fields = {k: v for k, v in a.cfg.items() if k not in ("architectures", "model_type", "task_specific_params")}
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**fields, attn_implementation="sdpa"))
    else:
        model = transformers.BertForMaskedLM(transformers.BertConfig(**a.cfg, attn_implementation="sdpa"))
    # transformers' Trainer: no decay for biases and normalisation weights (get_decay_parameter_names).
    no_decay = {n for n, _ in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n or ".ln_" in n}
    return model, no_decay


def main():
    a = peer_common.parse_args(__doc__.splitlines()[0], lambda p: p.add_argument(
        "--mode", choices=["eager", "compile"], default="eager", help="compile: torch.compile, Inductor, default mode"))
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model, no_decay = build_model(a)
    model.train()
    named = list(model.named_parameters())
    opt = torch.optim.AdamW([{"params": [p for n, p in named if n not in no_decay], "weight_decay": 0.01},
                             {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    n_params = sum(p.numel() for p in model.parameters())
    batches, flops = peer_common.make_batches(a)
    compiled = a.mode == "compile"

    if a.model == "gpt2":
        inputs = [(torch.from_numpy(ids),) for ids in batches]

        def loss_fn(ids):
            return model(input_ids=ids, labels=ids).loss
    else:
        def rows(labels):
            if compiled:  # static capacity, padding rows ignored by the loss
                pos, lab = peer_common.labelled_rows(labels)
                return torch.from_numpy(pos), torch.from_numpy(lab)
            pos = np.nonzero(labels.reshape(-1) != peer_common.IGNORE_INDEX)[0]
            return torch.from_numpy(pos), torch.from_numpy(labels.reshape(-1)[pos])
        inputs = [(torch.from_numpy(ids), *rows(labels)) for ids, labels in batches]

        def loss_fn(ids, positions, labels):
            hidden = model.bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            logits = model.cls(hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions))
            return torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=peer_common.IGNORE_INDEX)

    if compiled:
        loss_fn = torch.compile(loss_fn)

    def step(i):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = loss_fn(*inputs[i % len(inputs)])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        return loss.item()

    peer = "torch_compile" if compiled else "torch_eager"
    peer_common.time_steps(a, peer, step, a.batch_size * a.seq_len, flops, n_params,
                           extra=f" torch={torch.__version__.split('+')[0]} transformers={transformers.__version__}")


if __name__ == "__main__":
    main()
