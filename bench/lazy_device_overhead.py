"""Host overhead of the lazy device for torch tensors (issue 56): microseconds
per op recorded from Python, against lazytrain's native tensors and torch
eager on the CPU, and the time to trace one training step of a tiny
transformers BERT MLM (forward, backward, clip_grad_norm_, torch AdamW) with
the number of ATen ops it dispatches. A measurement, not a test:

    PYTHONPATH=python build/venv-test/bin/python bench/lazy_device_overhead.py
"""
import argparse
import time

import torch

import lazytrain as lt
import lazytrain.core.xla_model as xm
from lazytrain.torch_backend import lazy_device
from lazytrain.torch_backend.lazy_device import LazyTensor


def per_op(make, n):
    x = make()
    y = x
    start = time.perf_counter()
    for _ in range(n):
        y = y + 1
    elapsed = time.perf_counter() - start
    return elapsed / n * 1e6, y


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
            start = time.perf_counter()
            x = ids.to(xm.xla_device())
            opt.zero_grad(set_to_none=True)
            loss = model(input_ids=x, labels=x).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            xm.optimizer_step(opt)
            sched.step()
            traces.append(time.perf_counter() - start)
            xm.mark_step()
            loss.item()
    finally:
        restore()
    return traces, counts["ops"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    args = parser.parse_args()
    dev = lazy_device.device()
    for name, make in (("torch eager (CPU)", lambda: torch.ones(16)),
                       ("lazytrain native", lambda: lt.ones(16)),
                       ("lazy device (torch)", lambda: torch.ones(16, device=dev))):
        per_op(make, 50)  # warm
        us, y = per_op(make, args.ops)
        lt.sync(wait=True)
        print(f"{name:22s} x = x + 1: {us:7.1f} us/op")
    traces, ops = bert_step_times(args.steps, args.layers, args.hidden)
    steady = sorted(traces[2:])[len(traces[2:]) // 2] if len(traces) > 2 else traces[-1]
    print(f"BERT MLM ({args.layers} layers, hidden {args.hidden}, batch 8x128): {ops} ATen ops per step, "
          f"tracing {steady * 1e3:.1f} ms per step (median after warm-up; {steady / ops * 1e6:.1f} us/op); "
          f"all steps {[round(t * 1e3, 1) for t in traces]} ms")


if __name__ == "__main__":
    main()
