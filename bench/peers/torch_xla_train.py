"""PyTorch/XLA peer of bench_bert_train / bench_gpt2_train: the PyTorch step traced lazily onto
PyTorch/XLA's CPU device (PJRT_DEVICE=CPU, XLA:CPU), one graph per step cut by torch_xla.sync().

The same transformers models, initialisation, optimizer groups and step as torch_train.py (its
build_model), on torch_xla.device(): forward (BERT: the MLM head on the labelled rows padded to
lazytrain's static capacity, padding rows ignored by the loss, since a graph compiler wants static
shapes; GPT-2: labels = input_ids), backward, clip_grad_norm_(1.0), AdamW, zero_grad, then
torch_xla.sync() and loss.item(). --dtype bf16: torch.autocast('xla', dtype=torch.bfloat16) over
the forward and loss. The first step compiles (the second too: AdamW's state appears in it);
compile_s is the first step's excess over the median timed step, and the RESULT line adds
PyTorch/XLA's own CompileTime metric (xla_compile_s, every compile of the run).
--threads 1 runs XLA:CPU single-threaded (XLA_FLAGS, as jax_train.py); otherwise its thread pool
takes the CPUs the process may use (bench/run_all.sh pins it with taskset).

Runs from its own venv (bench/setup_peers.sh: torch_xla 2.9.0 requires torch 2.9.0):

  PJRT_DEVICE=CPU ~/.cache/lazytrain/venv-torchxla/bin/python bench/peers/torch_xla_train.py --model bert-tiny
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

ARGS = peer_common.parse_args(__doc__.splitlines()[0])
os.environ.setdefault("PJRT_DEVICE", "CPU")
if ARGS.threads == 1:  # before the PJRT CPU client starts
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()

import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.debug.metrics as met  # noqa: E402
import transformers  # noqa: E402

from torch_train import build_model  # noqa: E402


def main():
    a = ARGS
    if os.environ["PJRT_DEVICE"] != "CPU":
        raise SystemExit(f"torch_xla_train.py: PJRT_DEVICE must be CPU (this is the CPU peer), got '{os.environ['PJRT_DEVICE']}'")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    device = torch_xla.device()
    model, no_decay = build_model(a)
    n_params = sum(p.numel() for p in model.parameters())
    model.to(device).train()
    model.tie_weights()  # moving to an XLA device unties shared parameters (transformers' documented fix)
    named = list(model.named_parameters())
    opt = torch.optim.AdamW([{"params": [p for n, p in named if n not in no_decay], "weight_decay": 0.01},
                             {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    if sum(p.numel() for p in model.parameters()) != n_params:
        raise SystemExit("torch_xla_train.py: the tied embeddings came apart on the XLA device")
    batches, flops = peer_common.make_batches(a)

    if a.model == "gpt2":
        inputs = [(torch.from_numpy(ids).to(device),) for ids in batches]

        def loss_fn(ids):
            return model(input_ids=ids, labels=ids).loss
    else:
        inputs = [(torch.from_numpy(ids).to(device), *(torch.from_numpy(t).to(device) for t in peer_common.labelled_rows(labels)))
                  for ids, labels in batches]

        def loss_fn(ids, positions, labels):
            hidden = model.bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            logits = model.cls(hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions))
            return torch.nn.functional.cross_entropy(logits.float(), labels, ignore_index=peer_common.IGNORE_INDEX)

    def step(i):
        with torch.autocast("xla", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = loss_fn(*inputs[i % len(inputs)])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        torch_xla.sync()
        return loss.item()

    def xla_compile_s():
        data = met.metric_data("CompileTime")  # (count, total ns, samples); None before any compile
        return data[1] * 1e-9 if data else float("nan")

    peer_common.time_steps(a, "torch_xla", step, a.batch_size * a.seq_len, flops, n_params,
                           extra=lambda: f" torch={torch.__version__.split('+')[0]} torch_xla={torch_xla.__version__} "
                                 f"transformers={transformers.__version__} xla_compile_s={xla_compile_s():.3f} "
                                 f"xla_threads={'1' if a.threads == 1 else 'all-allowed'}")


if __name__ == "__main__":
    main()
