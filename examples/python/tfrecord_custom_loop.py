"""GPT-2 trained by a custom loop over TFRecord shards, as the TPU/TensorFlow
tutorial trains it (a tf.data pipeline of tokenized shards, a training step
written out, the loss and the next-token accuracy reported every step):

    lazytrain make_tfrecords --tokenizer ../shared/data/gpt2 --max_seq_length 64 \\
      --input ../shared/data/wikitext-2/valid.txt --output_dir /tmp/shards --prefix train
    python examples/python/tfrecord_custom_loop.py --train_tfrecords "/tmp/shards/train-*.tfrecord"

The shards stream through lazytrain.data.TFRecordDataset (interleaved and
shuffled, as tf.data does), batches reach the device through an
MpDeviceLoader, and one step (forward, loss, accuracy, backward, clipping,
AdamW, the schedule) is one compiled graph: the per-step loss and accuracy
are read one step late, so reading them never stalls the device.
"""
import argparse
import sys
import time

import lazytrain as lt
import lazytrain.core.xla_model as xm
import lazytrain.debug.metrics as met
import lazytrain.distributed.parallel_loader as pl
from lazytrain.data import DataLoader, TFRecordDataset


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train_tfrecords", required=True, help="A glob of the shards (lazytrain make_tfrecords)")
    p.add_argument("--config_overrides", default="n_embd=64,n_layer=2,n_head=2,n_positions=128",
                   help="GPT-2 config fields over GPT-2 124M's")
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--warmup_steps", type=int, default=5)
    p.add_argument("--shuffle_buffer_size", type=int, default=1000)
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args(argv)


def next_token_accuracy(logits, input_ids):
    """The share of positions whose argmax is the next token (0-d f32, on the device)."""
    predictions = logits[:, :-1].argmax(-1)
    return (predictions == input_ids[:, 1:]).to(lt.float32).mean()


def main(argv=None):
    args = parse_args(argv)
    lt.manual_seed(args.seed)
    device = xm.xla_device()
    shards = TFRecordDataset(args.train_tfrecords, cycle_length=2, shuffle_buffer_size=args.shuffle_buffer_size,
                             seed=args.seed)
    block = len(next(iter(shards))["input_ids"])
    config = lt.GPT2Config()
    config.update_from_string(args.config_overrides)
    if block > config.n_positions:
        sys.exit(f"{args.train_tfrecords}: blocks of {block} tokens, more than n_positions {config.n_positions}")
    model = lt.GPT2LMHeadModel(config).to(device)
    model.train()
    optimizer = lt.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01)
    scheduler = lt.optim.lr_scheduler.get_linear_schedule_with_warmup(optimizer, args.warmup_steps, args.steps)
    loader = DataLoader(shards, batch_size=args.batch_size, drop_last=True)

    step, epoch, pending, start = 0, 0, None, time.time()
    while step < args.steps:
        shards.set_epoch(epoch)
        for batch in pl.MpDeviceLoader(loader, device):  # mark_step() on each next(): the previous step runs
            if pending is not None:  # the previous step's values, computed by now
                print(f"step {pending[0]:4d}  loss {pending[1].item():.4f}  accuracy {pending[2].item():.4f}", flush=True)
            optimizer.zero_grad()
            out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
            accuracy = next_token_accuracy(out.logits.detach(), batch["input_ids"])
            out.loss.backward()
            lt.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            pending = (step, out.loss.detach(), accuracy)
            if step == args.steps:
                break
        epoch += 1
    xm.mark_step()
    print(f"step {pending[0]:4d}  loss {pending[1].item():.4f}  accuracy {pending[2].item():.4f}")
    print(f"{step} steps in {time.time() - start:.1f} s; graphs compiled: {met.counter_value('UncachedCompile')}")
    print(met.short_metrics_report())


if __name__ == "__main__":
    main()
