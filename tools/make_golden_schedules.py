#!/usr/bin/env -S /usr/bin/python3
"""Golden learning-rate schedules (Hugging Face transformers) -> tests/golden/schedules.json.

  /usr/bin/python3 tools/make_golden_schedules.py [OUT]    (default tests/golden/schedules.json)

The multipliers are transformers' (src/transformers/optimization.py, v4.x; transformers is not
installed here, so the four lambdas below are written from its formulas), applied by a real
torch.optim.lr_scheduler.LambdaLR (PyTorch 1.13) over torch.optim.AdamW(lr=LR):
  linear                step < w: step / max(1, w); else max(0, (total - step) / max(1, total - w))
  cosine                step < w: step / max(1, w); else progress = (step - w) / max(1, total - w),
                        max(0, 0.5 * (1 + cos(pi * num_cycles * 2 * progress)))
  constant              1
  constant_with_warmup  step < w: step / max(1.0, w); else 1
JSON (doubles written with repr, so they read back exactly):
  {"lr": LR, "cases": [{"name", "num_warmup_steps", "num_training_steps", "num_cycles",
                        "lrs": [get_last_lr()[0] before the scheduler step k, k = 0 .. total + 2]}],
   "state_dict": {"name", "num_warmup_steps", "num_training_steps", "steps": 7,
                  "value": LambdaLR.state_dict() after 7 steps (JSON-able keys only)}}
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
LR = 3e-4


def warmup(step, w):
    return float(step) / float(max(1, w))


def linear(w, total, _cycles):
    return lambda s: warmup(s, w) if s < w else max(0.0, float(total - s) / float(max(1, total - w)))


def cosine(w, total, cycles):
    def lam(s):
        if s < w:
            return warmup(s, w)
        progress = float(s - w) / float(max(1, total - w))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(cycles) * 2.0 * progress)))
    return lam


def constant(_w, _total, _cycles):
    return lambda _s: 1.0


def constant_with_warmup(w, _total, _cycles):
    return lambda s: float(s) / float(max(1.0, w)) if s < w else 1.0


SCHEDULES = {"linear": linear, "cosine": cosine, "constant": constant,
             "constant_with_warmup": constant_with_warmup}
# (name, warmup, total, num_cycles): warm-up and none, totals past the end, an odd cycle count.
CASES = [("linear", 3, 10, 0.5), ("linear", 0, 5, 0.5), ("cosine", 3, 10, 0.5), ("cosine", 0, 7, 0.5),
         ("cosine", 2, 12, 1.5), ("constant", 3, 10, 0.5), ("constant_with_warmup", 4, 10, 0.5),
         ("constant_with_warmup", 0, 5, 0.5)]


def scheduler(name, w, total, cycles):
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=LR)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, SCHEDULES[name](w, total, cycles))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden", "schedules.json")
    cases = []
    for name, w, total, cycles in CASES:
        opt, sched = scheduler(name, w, total, cycles)
        lrs = []
        for _ in range(total + 3):
            lrs.append(sched.get_last_lr()[0])
            assert lrs[-1] == opt.param_groups[0]["lr"]
            opt.step()
            sched.step()
        cases.append(dict(name=name, num_warmup_steps=w, num_training_steps=total, num_cycles=cycles, lrs=lrs))

    opt, sched = scheduler("linear", 3, 10, 0.5)
    for _ in range(7):
        opt.step()
        sched.step()
    state = {k: v for k, v in sched.state_dict().items() if k in ("base_lrs", "last_epoch", "_step_count", "_last_lr")}
    doc = dict(lr=LR, cases=cases, state_dict=dict(name="linear", num_warmup_steps=3, num_training_steps=10,
                                                   steps=7, value=state),
               generator="tools/make_golden_schedules.py (torch " + torch.__version__ + ")")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {out}: {len(cases)} schedules")


if __name__ == "__main__":
    main()
