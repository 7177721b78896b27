"""transformers' GPT-2 and Llama trained on the lazy device with torch.optim
(issue 56, item 3): 5 steps of AdamW (per-tensor, foreach, capturable,
fused), SGD with momentum and Adam, with clip_grad_norm_ and
transformers' linear schedule with warm-up, gradient accumulation and both
forms of zero_grad, each equal to eager PyTorch on the CPU (losses and every
parameter within 1e-4) with no compile after the second step. The learning
rate and AdamW's step count are device data: the graph of a step is the same
whatever the schedule gives."""
import math
import re

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")
pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")

import lazytrain as lt  # noqa: E402

from lazy_device_loops import assert_trains_as_eager, causal_batch, mlm_batch  # noqa: E402
from lazy_device_support import DEV, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)


def adamw(**options):
    return lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, **options)


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_causal_lm_trains_as_eager_with_one_graph_per_step(arch, foreach):
    run = assert_trains_as_eager(arch, adamw(foreach=foreach))
    # The schedule gave a new learning rate every step and nothing recompiled.
    assert len(set(run.lrs)) == len(run.lrs), run.lrs


def _constants(ir):
    return [float(v) for v in re.findall(r"prim::Constant\(\), value=(\S+)", ir)]


def test_the_learning_rate_is_device_data_not_a_constant():
    """Steps 3 and 4 record the same graph although their learning rates, and
    AdamW's bias corrections from the step count, differ: each enters as 0-d
    device data (a plain number other than 0 and +-1, PyTorch/XLA's rule)."""
    graphs = {}

    def record(step, optimizer):
        p = optimizer.param_groups[0]["params"][0]
        graphs[step] = lt.debug.ir_text([p._lt])

    run = assert_trains_as_eager("gpt2", adamw(foreach=True), before_mark_step=record)
    assert run.lrs[2] != run.lrs[3] and graphs[2] == graphs[3]
    beta1, beta2 = 0.9, 0.999
    for step in (2, 3):
        lr, count = run.lrs[step], step + 1
        step_size = lr / (1 - beta1 ** count)
        numbers = (lr, 1 - lr * 0.01, step_size, math.sqrt(1 - beta2 ** count))
        for c in _constants(graphs[step]):
            assert not any(math.isclose(c, n, rel_tol=1e-6) for n in numbers), (c, numbers)
    assert graphs[3].count("f32[] xla::device_data()") >= 4


@pytest.mark.parametrize("foreach", [False, True])
def test_capturable_adamw_keeps_the_step_count_on_the_device(foreach):
    """capturable=True: torch keeps state["step"] on the device and computes
    the bias corrections there. Eager PyTorch refuses capturable on the CPU,
    so the reference is the CPU's plain AdamW (the same update). Warm-up is
    off: torch's single-tensor capturable update divides by lr, NaN at lr 0
    (on CUDA too)."""
    seen = []

    def record(step, optimizer):
        p = optimizer.param_groups[0]["params"][0]
        seen.append(optimizer.state[p]["step"])

    assert_trains_as_eager("llama", adamw(foreach=foreach, capturable=True), eager_optimizer=adamw(foreach=foreach),
                           warmup=0, before_mark_step=record)
    assert all(s.device == DEV and s.dtype == torch.float32 for s in seen)
    assert seen[-1].item() == 5.0


@pytest.mark.parametrize("set_to_none", [True, False])
def test_gradient_accumulation_and_zero_grad_as_eager(set_to_none):
    """Two micro-batches per step, each loss / 2, in one graph per step;
    zero_grad(set_to_none=False) zeroes the gradients in place instead."""
    assert_trains_as_eager("gpt2", adamw(foreach=True), micro_batches=2, set_to_none=set_to_none)


@pytest.mark.parametrize("make_optimizer", [
    lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=0.01, foreach=False),
    lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, foreach=True),
    lambda params: torch.optim.Adam(params, lr=1e-3, weight_decay=0.01, foreach=True),
], ids=["sgd-momentum", "sgd-nesterov-foreach", "adam-foreach"])
def test_sgd_and_adam_train_as_eager(make_optimizer):
    assert_trains_as_eager("llama", make_optimizer)


@pytest.mark.parametrize("make_optimizer", [
    lambda params: torch.optim.AdamW(params, lr=torch.tensor(1e-3), weight_decay=0.01, fused=True),
    lambda params: torch.optim.Adam(params, lr=1e-3, weight_decay=0.01, amsgrad=True, fused=True),
    lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, fused=True),
], ids=["adamw-tensor-lr", "adam-amsgrad", "sgd-nesterov"])
def test_fused_optimizers_train_as_eager(make_optimizer):
    """fused=True: torch calls its fused kernels (_fused_adamw_, ...), which the
    device records as the CPU kernel's update; the CPU runs its own. (Llama:
    GPT-2's key biases have a zero gradient up to rounding, which Adam's
    L2 weight decay would turn into updates of rounding's sign.)"""
    assert_trains_as_eager("llama", make_optimizer)


def _padded(batch):
    """`batch` with an attention mask whose second row ends in 3 pad positions."""
    def with_mask(g):
        inputs = batch(g)
        mask = torch.ones_like(inputs["input_ids"])
        mask[1, -3:] = 0
        inputs["attention_mask"] = mask
        return inputs
    return with_mask


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_a_padded_batch_trains_as_eager_without_a_host_read(arch):
    """transformers reads padding_mask.all() on the host to skip an all-ones
    mask unless the mask is being traced; on the lazy device it is
    (lazy_device/_masking.py), so the step reads nothing before mark_step and
    tracing the next step overlaps executing this one."""
    assert_trains_as_eager(arch, adamw(), batch=_padded(mlm_batch if arch == "bert" else causal_batch))
