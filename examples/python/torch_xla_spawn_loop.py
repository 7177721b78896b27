"""PyTorch/XLA's multi-replica loop for a torch model on lazytrain's lazy
device, with only the torch_xla imports changed: xmp.spawn runs one replica
per device (threads of this process), each trains on its share of the global
batch, xm.optimizer_step averages the gradients across the replicas inside
the step's graph and xm.mark_step runs it; under mpirun every process runs
its replicas and the job has processes x replicas of them.

    python examples/python/torch_xla_spawn_loop.py --num_cores 2 --output /tmp/two.pt
    mpirun -np 2 python examples/python/torch_xla_spawn_loop.py --num_cores 1 --output /tmp/mpi.pt

Replica r of W takes rows [r*B/W, (r+1)*B/W) of each global batch of B; with
dropout off the W replicas train the model one replica trains on the whole
batch (the loss is a mean over equal shares, so the mean of the replicas'
losses is the global batch's). The master ordinal prints each step's mean
loss and the compile count, then saves the state dict (xm.save: CPU tensors
that plain torch.load reads). tests/python/test_torch_lazy_device_replicas.py
checks both launches against eager PyTorch on the CPU.
"""
import argparse
import copy

import torch

import lazytrain.torch_xla.core.xla_model as xm
import lazytrain.torch_xla.debug.metrics as met
import lazytrain.torch_xla.distributed.xla_multiprocessing as xmp
import lazytrain.torch_xla.runtime as xr


def build_model(name, seed=0):
    """A small model on the CPU: "mlp" (16 -> 32 -> 4) or "gpt2" (transformers,
    2 layers of width 32, dropout off)."""
    torch.manual_seed(seed)
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    if name == "gpt2":
        import transformers
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0,
            attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))
        model.loss_type = "ForCausalLM"  # transformers 5.23 leaves it None for GPT-2
        return model
    raise ValueError(f"--model {name!r}: expected 'mlp' or 'gpt2'")


def make_batches(name, steps, global_batch, seed=1):
    """`steps` global batches on the CPU (dicts of tensors, batch first)."""
    g = torch.Generator().manual_seed(seed)
    if name == "mlp":
        return [{"x": torch.randn(global_batch, 16, generator=g),
                 "y": torch.randint(0, 4, (global_batch,), generator=g)} for _ in range(steps)]
    # Runs of consecutive token ids from random starts: a next token to learn.
    return [{"input_ids": (torch.randint(0, 99, (global_batch, 1), generator=g) + torch.arange(12)) % 99}
            for _ in range(steps)]


def loss_of(model, batch):
    if "x" in batch:
        return torch.nn.functional.cross_entropy(model(batch["x"]), batch["y"])
    return model(input_ids=batch["input_ids"], labels=batch["input_ids"]).loss


def train(model, batches, device, ordinal=0, world=1, lr=1e-2):
    """Trains `model` (on `device`) on this replica's share of each batch with
    torch.optim.AdamW; on the lazy device through xm.optimizer_step and
    xm.mark_step. Returns the losses (detached tensors) and UncachedCompile
    after each step."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    losses, compiles = [], []
    for batch in batches:
        size = next(iter(batch.values())).shape[0]
        if size % world:
            raise ValueError(f"a global batch of {size} does not split evenly over {world} replicas")
        share = size // world
        mine = {k: v[ordinal * share:(ordinal + 1) * share].to(device) for k, v in batch.items()}
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model, mine)
        loss.backward()
        if device.type == "cpu":
            optimizer.step()
        else:
            xm.optimizer_step(optimizer)  # the replicas' mean gradient, then AdamW, in the step's graph
            xm.mark_step()
        losses.append(loss.detach())
        compiles.append(met.counter_value("UncachedCompile"))
    return losses, compiles


def mean_losses(losses):
    """Each step's loss averaged over the replicas (host meetings; reads the values)."""
    return [xm.mesh_reduce(f"loss{step}", loss.item(), lambda v: sum(v) / len(v)) for step, loss in enumerate(losses)]


def replica(index, args, cpu_model, batches):
    device = xm.xla_device()
    model = copy.deepcopy(cpu_model).to(device)  # every replica starts from the same parameters
    losses, compiles = train(model, batches, device, xr.global_ordinal(), xr.world_size(), args.learning_rate)
    for step, (loss, count) in enumerate(zip(mean_losses(losses), compiles)):
        xm.master_print(f"step {step} loss {loss:.8f} compiles {count}")
    xm.master_print(f"replicas {xr.world_size()}")
    xm.save(model.state_dict(), args.output)  # the master ordinal writes, after every replica arrived


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="gpt2", choices=["mlp", "gpt2"])
    p.add_argument("--num_cores", type=int, default=1, help="replicas in this process (xmp.spawn's nprocs)")
    p.add_argument("--global_batch", type=int, default=8, help="examples per step over all replicas")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--learning_rate", type=float, default=1e-2)
    p.add_argument("--output", required=True, help="where the master ordinal saves the state dict")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    # Made once, before the replicas start: torch's generator is the process's, shared by its threads.
    cpu_model = build_model(args.model)
    batches = make_batches(args.model, args.steps, args.global_batch)
    xmp.spawn(replica, args=(args, cpu_model, batches), nprocs=args.num_cores)


if __name__ == "__main__":
    main()
