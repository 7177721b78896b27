"""PyTorch/XLA's training loop, in the shape of its blog's and README's: the
model and the batches on the XLA device, MpDeviceLoader over a torch
DataLoader, xm.optimizer_step, torch_xla.sync() per step, the metrics report.
examples/python/torch_xla_loop.py is this loop on lazytrain with only its
imports changed (torch_xla -> lazytrain.torch_xla), and
torch_xla_loop.orig.py.txt its PyTorch/XLA original; docs/lazy_device.md
shows the diff."""
import torch
import torch.nn as nn
import lazytrain.torch_xla as torch_xla
import lazytrain.torch_xla.core.xla_model as xm
import lazytrain.torch_xla.debug.metrics as met
import lazytrain.torch_xla.distributed.parallel_loader as pl
import lazytrain.torch_xla.runtime as xr

STEPS = 5


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    features = torch.randn(STEPS * 16, 8)
    labels = torch.randint(0, 3, (STEPS * 16,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels), batch_size=16)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for step, (x, y) in enumerate(pl.MpDeviceLoader(loader, device)):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
        xm.master_print(f"step {step} loss {loss.item():.6f} compiles {met.counter_value('UncachedCompile')}")
    xm.master_print(f"replicas {xr.world_size()} ordinal {xr.global_ordinal()} device {xm.xla_device()}")
    xm.master_print(met.short_metrics_report())


if __name__ == "__main__":
    main()
