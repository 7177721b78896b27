"""Host overhead of the lazy device for torch tensors (issue 56): microseconds
per op recorded from Python, against lazytrain's native tensors and torch
eager on the CPU, and the time to trace one training step of a tiny
transformers BERT MLM (forward, backward, clip_grad_norm_, torch AdamW) with
the number of ATen ops it dispatches. A measurement, not a test. Every figure is
given as wall time and as the process's CPU time (time.process_time: on a
loaded machine the wall time includes waiting for a core, the CPU time hardly
moves), each the best of many short repeats:

    PYTHONPATH=python build/venv-test/bin/python bench/lazy_device_overhead.py
"""
import argparse
import os
import time

import torch

import lazytrain as lt
import lazytrain.core.xla_model as xm
from lazytrain.torch_backend import lazy_device
from lazytrain.torch_backend.lazy_device import LazyTensor


OPS = {  # a lowered op, an in-place op, a view; each on the same x (no chain of views)
    "x + 1": lambda x: x + 1,
    "x.mul_(1.0)": lambda x: x.mul_(1.0),
    "x.t()": lambda x: x.t(),
}


def per_op(make, op, n, chunk=50):
    """(wall us, CPU us) per op: the best chunk of `chunk` ops among n ops (a chunk that no other process
    interrupted), synchronised after each chunk outside the timing (an in-place op's graph would grow)."""
    x = make()
    wall = cpu = float("inf")
    for _ in range(max(1, n // chunk)):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(chunk):
            op(x)
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
        lt.sync(wait=True)
    return wall / chunk * 1e6, cpu / chunk * 1e6


def counting_dispatch():
    """Counts the ATen ops that reach the lazy device's __torch_dispatch__."""
    counts = {"ops": 0}
    original = LazyTensor.__dict__["__torch_dispatch__"]
    inner = original.__func__

    def counted(cls, func, types, args=(), kwargs=None):
        counts["ops"] += 1
        return inner(cls, func, types, args, kwargs)

    LazyTensor.__torch_dispatch__ = classmethod(counted)
    return counts, lambda: setattr(LazyTensor, "__torch_dispatch__", original)


def bert_step_times(steps, layers, hidden):
    import transformers

    cfg = transformers.BertConfig(vocab_size=1000, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                                  intermediate_size=4 * hidden, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(cfg).to(xm.xla_device())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sched = transformers.get_linear_schedule_with_warmup(opt, 2, 100)
    ids = torch.randint(0, 1000, (8, 128))
    counts, restore = counting_dispatch()
    traces = []
    try:
        for _ in range(steps):
            counts["ops"] = 0
            start, cpu = time.perf_counter(), time.process_time()
            x = ids.to(xm.xla_device())
            opt.zero_grad(set_to_none=True)
            loss = model(input_ids=x, labels=x).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            xm.optimizer_step(opt)
            sched.step()
            traces.append((time.perf_counter() - start, time.process_time() - cpu))
            xm.mark_step()
            loss.item()  # the step runs before the next is traced: the CPU time is the tracing's
    finally:
        restore()
    return traces, counts["ops"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5000, help="ops per measurement, timed in chunks of 50")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    args = parser.parse_args()
    dev = lazy_device.device()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; us per op, wall / CPU, the best "
          f"chunk of 50 ops among {args.ops}")
    for label, op in OPS.items():
        for name, make in (("torch eager (CPU)", lambda: torch.ones(4, 4)),
                           ("lazytrain native", lambda: lt.ones(4, 4)),
                           ("lazy device (torch)", lambda: torch.ones(4, 4, device=dev))):
            per_op(make, op, 100)  # warm
            wall, cpu = per_op(make, op, args.ops)
            print(f"{label:12s} {name:22s} {wall:7.2f} / {cpu:7.2f} us/op")
    if not args.steps:
        return
    traces, ops = bert_step_times(args.steps, args.layers, args.hidden)
    steady = traces[2:] or traces[-1:]
    wall, cpu = min(t[0] for t in steady), min(t[1] for t in steady)
    print(f"BERT MLM ({args.layers} layers, hidden {args.hidden}, batch 8x128): {ops} ATen ops per step, tracing "
          f"{wall * 1e3:.1f} ms wall / {cpu * 1e3:.1f} ms CPU per step (best after warm-up; {wall / ops * 1e6:.1f} / "
          f"{cpu / ops * 1e6:.1f} us/op); all steps' wall {[round(t[0] * 1e3, 1) for t in traces]} ms")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
