#!/usr/bin/env -S /usr/bin/python3
"""Golden AdamW steps, grad-norm clipping and linear warm-up schedule -> tests/golden/adamw_step.safetensors.

  /usr/bin/python3 tools/make_golden_adamw.py [OUT]     (default tests/golden/adamw_step.safetensors)

Params (names as the HF Trainer sees them; weight decay 0.01 on "dense.weight" only):
  dense.weight [4,5], dense.bias [5], LayerNorm.weight [5]
AdamW: torch.optim.AdamW(lr=1e-3, betas=(0.9, 0.999), eps=1e-8), 3 steps, fixed random grads.
  init.<name>                    parameters before step 1
  grad.<name>.step<k>            gradient used in step k (k = 1..3)
  param.<name>.step<k>           parameters after step k
  exp_avg.<name>.step<k>         first moment after step k
  exp_avg_sq.<name>.step<k>      second moment after step k
Clipping (torch.nn.utils.clip_grad_norm_(max_norm=1.0), global L2 norm over the three grads):
  clip.grad.<name>, clip.clipped.<name>, clip.total_norm []   (grads before / after, norm before)
Schedule: schedule.lr [20] = lr at steps 0..19 of get_linear_schedule_with_warmup(warmup=5, total=20,
  lr=1e-3): lr * (step/warmup if step < warmup else max(0, (total-step)/(total-warmup))).
__metadata__ holds the hyper-parameters as JSON under "hparams".
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from safetensors_io import save_file  # noqa: E402

LR, BETAS, EPS, WD, STEPS = 1e-3, (0.9, 0.999), 1e-8, 0.01, 3
WARMUP, TOTAL = 5, 20
SHAPES = {"dense.weight": (4, 5), "dense.bias": (5,), "LayerNorm.weight": (5,)}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden",
                                                             "adamw_step.safetensors")
    torch.manual_seed(0)
    t = {}
    params = {n: torch.nn.Parameter(torch.randn(s)) for n, s in SHAPES.items()}
    params["LayerNorm.weight"].data += 1.0  # LayerNorm weights live around 1
    for n, p in params.items():
        t[f"init.{n}"] = p.detach().clone()

    # HF Trainer grouping: decay everything but biases and LayerNorm weights.
    opt = torch.optim.AdamW(
        [{"params": [params["dense.weight"]], "weight_decay": WD},
         {"params": [params["dense.bias"], params["LayerNorm.weight"]], "weight_decay": 0.0}],
        lr=LR, betas=BETAS, eps=EPS)
    for k in range(1, STEPS + 1):
        for n, p in params.items():
            p.grad = torch.randn(SHAPES[n])
            t[f"grad.{n}.step{k}"] = p.grad.clone()
        opt.step()
        for n, p in params.items():
            st = opt.state[p]
            t[f"param.{n}.step{k}"] = p.detach().clone()
            t[f"exp_avg.{n}.step{k}"] = st["exp_avg"].clone()
            t[f"exp_avg_sq.{n}.step{k}"] = st["exp_avg_sq"].clone()

    # Gradient clipping: grads scaled up so that the total norm is well above max_norm.
    for n, p in params.items():
        p.grad = 3.0 * torch.randn(SHAPES[n])
        t[f"clip.grad.{n}"] = p.grad.clone()
    total = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm=1.0)
    t["clip.total_norm"] = total.detach().clone().float().reshape(())
    for n, p in params.items():
        t[f"clip.clipped.{n}"] = p.grad.clone()

    # Linear warm-up schedule, read from a real LambdaLR before each scheduler step.
    def lam(step):
        return step / max(1, WARMUP) if step < WARMUP else max(0.0, (TOTAL - step) / max(1, TOTAL - WARMUP))
    dummy = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=LR)
    sched = torch.optim.lr_scheduler.LambdaLR(dummy, lam)
    lrs = []
    for step in range(TOTAL):
        lrs.append(sched.get_last_lr()[0])
        assert abs(lrs[-1] - LR * lam(step)) < 1e-15
        dummy.step()
        sched.step()
    t["schedule.lr"] = torch.tensor(lrs, dtype=torch.float32)

    assert all(v.dtype == torch.float32 for v in t.values())
    hp = dict(lr=LR, betas=list(BETAS), eps=EPS, weight_decay={"dense.weight": WD, "dense.bias": 0.0,
              "LayerNorm.weight": 0.0}, steps=STEPS, clip_max_norm=1.0, warmup_steps=WARMUP,
              total_steps=TOTAL)
    save_file(t, out, metadata={"hparams": json.dumps(hp),
                                "generator": "tools/make_golden_adamw.py (torch " + torch.__version__ + ")"})
    print(f"wrote {out}: {len(t)} tensors, clip.total_norm={total.item():.6f}")


if __name__ == "__main__":
    main()
