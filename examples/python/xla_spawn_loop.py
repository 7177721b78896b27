"""The PyTorch/XLA training loop on lazytrain: xmp.spawn runs one replica per
device, each reads its DistributedSampler share through an MpDeviceLoader,
xm.optimizer_step averages the gradients across the replicas inside the
compiled step, and the master ordinal alone saves the model (host tensors,
safetensors). A GPT-2 (tiny by default) trains on WikiText-2 blocks:

    python examples/python/xla_spawn_loop.py --num_cores 2 --output_dir /tmp/spawn2
    mpirun -np 2 python examples/python/xla_spawn_loop.py --num_cores 1 --output_dir /tmp/mpi2

Every replica draws the same permutation of the blocks; replica r of W takes
every W-th, so with --per_device_train_batch_size B a step of W replicas sees
the same W*B blocks as one replica with batch W*B: with dropout off (the
default here) they train the same model, up to the order of float sums
(tests/python/test_examples_trainer.py). The report at the end gives the
metrics (CompileTime, ExecuteTime, ...) and how long the replica threads
waited for the GIL (GilWaitTime) against the training time.
"""
import argparse
import os
import time

import lazytrain as lt
import lazytrain.core.xla_model as xm
import lazytrain.debug.metrics as met
import lazytrain.distributed.parallel_loader as pl
import lazytrain.distributed.xla_multiprocessing as xmp
from lazytrain.data import DataLoader, DistributedSampler, default_data_collator, group_texts, load_dataset


def parse_args(argv=None):
    data = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num_cores", type=int, default=1, help="Replicas in this process (xmp.spawn's nprocs)")
    p.add_argument("--train_file", default=os.path.join(data, "wikitext-2", "valid.txt"))
    p.add_argument("--tokenizer_name", default=os.path.join(data, "gpt2"))
    p.add_argument("--config_overrides", default="n_embd=64,n_layer=2,n_head=2,n_positions=128")
    p.add_argument("--dropout", type=float, default=0.0, help="resid/embd/attn dropout (0: replicas match one device)")
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--per_device_train_batch_size", type=int, default=8)
    p.add_argument("--max_steps", type=int, default=20)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--logging_steps", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--output_dir", required=True)
    return p.parse_args(argv)


def load_blocks(args):
    """run_clm.py's blocks (line breaks kept, labels = input_ids), made once before the replicas start."""
    tokenizer = lt.AutoTokenizer.from_pretrained(args.tokenizer_name)
    raw = load_dataset("text", data_files={"train": args.train_file}, keep_linebreaks=True)
    tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    return tokenized.map(lambda b: group_texts(b, args.block_size, add_labels=True), batched=True)["train"]


def train_replica(index, args, blocks):
    device = xm.xla_device()
    lt.manual_seed(args.seed)  # every replica starts from the same parameters
    config = lt.GPT2Config()
    config.update_from_string(args.config_overrides)
    config.resid_pdrop = config.embd_pdrop = config.attn_pdrop = args.dropout
    model = lt.GPT2LMHeadModel(config).to(device)
    model.train()
    sampler = DistributedSampler(blocks, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=True, seed=args.seed)
    loader = DataLoader(blocks, batch_size=args.per_device_train_batch_size, sampler=sampler,
                        collate_fn=default_data_collator, drop_last=True)
    device_loader = pl.MpDeviceLoader(loader, device)
    optimizer = lt.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.0)
    step, epoch, start = 0, 0, time.time()
    losses = []
    while step < args.max_steps:
        sampler.set_epoch(epoch)
        for batch in device_loader:
            optimizer.zero_grad()
            loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
            loss.backward()
            xm.optimizer_step(optimizer)  # the replicas' mean gradient, then AdamW, in the step's graph
            step += 1
            losses.append(loss.detach())
            if step % args.logging_steps == 0:
                # The mean over the replicas of this step's loss (a host meeting; the value is read here).
                xm.master_print(f"step {step} loss {xm.mesh_reduce('loss', losses[-1].item(), lambda v: sum(v) / len(v)):.4f}")
            if step == args.max_steps:
                break
        epoch += 1
    xm.mark_step()
    xm.wait_device_ops()
    elapsed = time.time() - start
    # Host tensors, written by the master ordinal alone after every replica arrived.
    xm.save({name: p.detach() for name, p in model.named_parameters()}, os.path.join(args.output_dir, "model.safetensors"))
    if xm.is_master_ordinal(local=False):
        gil = met.metric_data("GilWaitTime")
        waited = gil[1] / 1e9 if gil else 0.0
        print(f"replicas: {xm.xrt_world_size()}, steps: {step}, training time: {elapsed:.2f} s; GIL waits of all "
              f"replica threads of this process: {waited:.3f} s ({100 * waited / max(elapsed, 1e-9) / max(1, args.num_cores):.1f}% "
              "of each replica's time)")
        print(met.metrics_report())


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.output_dir, exist_ok=True)
    blocks = load_blocks(args)
    xmp.spawn(train_replica, args=(args, blocks), nprocs=args.num_cores)


if __name__ == "__main__":
    main()
