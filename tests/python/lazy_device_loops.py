"""The training loop the lazy device's transformers tests share: tiny models
(hidden 32, 2 layers, dropout off), a seeded batch stream, and one loop that
runs the same steps in eager PyTorch on the CPU and on the lazy device
(xm.optimizer_step, the schedule, xm.mark_step), so a test compares the two.
Import it after torch and transformers are known to be installed."""
import copy
from dataclasses import dataclass, field

import numpy as np
import torch
import transformers

import lazytrain as lt
import lazytrain.core.xla_model as xm
from lazytrain.debug import metrics

VOCAB = 99


def tiny_bert():
    return transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def tiny_gpt2():
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))
    model.loss_type = "ForCausalLM"  # transformers 5.23 leaves it None for GPT-2 (docs/torch_compile.md)
    return model


def tiny_llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=64))


MODELS = {"bert": tiny_bert, "gpt2": tiny_gpt2, "llama": tiny_llama}


def mlm_batch(g):
    ids = torch.randint(0, VOCAB, (2, 10), generator=g)
    return {"input_ids": ids, "labels": torch.where(torch.rand(2, 10, generator=g) < 0.3, ids, -100)}


def causal_batch(g):
    ids = torch.randint(0, VOCAB, (2, 10), generator=g)
    return {"input_ids": ids, "labels": ids}


@dataclass
class Run:
    losses: list = field(default_factory=list)  # each step's loss (the micro-batches' sum)
    params: list = field(default_factory=list)  # the parameters after the last step, on the CPU
    compiles: list = field(default_factory=list)  # UncachedCompile after each step
    lrs: list = field(default_factory=list)  # the learning rate each step's update used


def train(model, device, make_optimizer, *, batch=causal_batch, steps=5, micro_batches=1, set_to_none=True,
          clip=1.0, warmup=2, total=10, before_mark_step=None):
    """`steps` steps of `model` on `device`: zero_grad(set_to_none), the
    micro-batches' backward of loss / micro_batches each, clip_grad_norm_,
    the optimizer step and transformers' linear schedule with warm-up. On the
    lazy device the step is xm.optimizer_step + xm.mark_step: one graph.
    before_mark_step(step, optimizer) runs after the update, before the cut."""
    model.train()
    optimizer = make_optimizer(model.parameters())
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, warmup, total)
    lazy = torch.device(device).type == "lazytrain"
    g = torch.Generator().manual_seed(1)
    run = Run()
    for step in range(steps):
        optimizer.zero_grad(set_to_none=set_to_none)
        micro_losses = []
        for _ in range(micro_batches):
            inputs = {k: v.to(device) for k, v in batch(g).items()}
            loss = model(**inputs).loss / micro_batches
            loss.backward()
            micro_losses.append(loss)
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        run.lrs.append(optimizer.param_groups[0]["lr"])
        if lazy:
            xm.optimizer_step(optimizer)
            schedule.step()
            if before_mark_step is not None:
                before_mark_step(step, optimizer)
            xm.mark_step()
        else:
            optimizer.step()
            schedule.step()
        run.losses.append(sum(loss.item() for loss in micro_losses))
        run.compiles.append(metrics.counter_value("UncachedCompile"))
    run.params = [p.detach().cpu() for p in model.parameters()]
    return run


def assert_trains_as_eager(arch, make_optimizer, *, eager_optimizer=None, tol=1e-4, **loop):
    """Train a tiny `arch` model ("bert", "gpt2", "llama") from one seed in
    eager PyTorch on the CPU and on the lazy device; the losses and every
    parameter agree within `tol` and UncachedCompile stops moving after the
    first two steps (the first makes the optimizer's state); no step reads a
    value on the host before its mark_step. Returns the lazy device's Run.
    eager_optimizer: the CPU's optimizer when it differs (torch allows
    capturable=True on accelerators only)."""
    torch.manual_seed(0)
    model = MODELS[arch]()
    reference = copy.deepcopy(model)
    loop.setdefault("batch", mlm_batch if arch == "bert" else causal_batch)
    eager = train(reference, "cpu", eager_optimizer or make_optimizer, **loop)
    lazy = train(model.to(xm.xla_device()), xm.xla_device(), make_optimizer, **loop)
    np.testing.assert_allclose(lazy.losses, eager.losses, rtol=tol, atol=tol)
    assert len(lazy.params) == len(eager.params)
    for got, want in zip(lazy.params, eager.params):
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    assert lazy.lrs == eager.lrs
    assert lazy.compiles[1] == lazy.compiles[-1], f"UncachedCompile after each step: {lazy.compiles}"
    # Clipping, the optimizer and the schedule read nothing on the host: each
    # step's only reads are the loop's loss.item() calls after the step before.
    for line in lt.debug.recent_steps()[-len(lazy.losses):]:
        reads = line.split("host transfer")[1]
        assert reads.count(" at ") == reads.count(" at lazy_device_loops.py:"), line
    return lazy
