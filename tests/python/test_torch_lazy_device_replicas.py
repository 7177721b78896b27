"""Replicas of torch models on the lazy device (issue 56, item 5): xmp.spawn's
replicas (threads, each on its device lazytrain:<index>) and mpirun's
processes train, through xm.optimizer_step (the replicas' mean gradient) and
torch.optim.AdamW, what one replica trains on the global batch: each step's
loss averaged over the replicas and the final parameters equal eager PyTorch
on the CPU with the global batch (within 1e-4), and compiles stop moving
after warm-up. The loop is examples/python/torch_xla_spawn_loop.py's. (One
lazytrain replica equals eager on these models: test_torch_lazy_device.py.)"""
import copy
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")

import lazytrain  # noqa: E402
import lazytrain.core.xla_model as xm  # noqa: E402
import lazytrain.distributed.xla_multiprocessing as xmp  # noqa: E402
import lazytrain.runtime as xr  # noqa: E402
from lazytrain.debug import metrics  # noqa: E402
from lazytrain.torch_backend.lazy_device import LazyTensor  # noqa: E402

from lazy_device_support import torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "python", "torch_xla_spawn_loop.py")
# The lazytrain this test imports (the installed wheel in CI): mpirun's processes import that one.
PACKAGE_PATH = os.path.dirname(os.path.dirname(os.path.abspath(lazytrain.__file__)))
STEP = re.compile(r"^step (\d+) loss (\S+) compiles (\d+)$")
GLOBAL_BATCH = 8


@pytest.fixture
def loop():
    """The example as a module (imported inside a test: it enables the torch device)."""
    spec = importlib.util.spec_from_file_location("torch_xla_spawn_loop", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _eager(loop, name, steps):
    """Eager PyTorch on the CPU, one replica, the global batch: losses and parameters."""
    model = loop.build_model(name)
    losses, _ = loop.train(model, loop.make_batches(name, steps, GLOBAL_BATCH), torch.device("cpu"))
    return [loss.item() for loss in losses], {k: v.detach() for k, v in model.state_dict().items()}


def _assert_same_model(losses, state, eager_losses, eager_state):
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-4, atol=1e-4)
    assert state.keys() == eager_state.keys()
    for k, v in eager_state.items():
        torch.testing.assert_close(state[k], v, rtol=1e-4, atol=1e-4, msg=lambda m: f"{k}: {m}")


@pytest.mark.parametrize("name,steps", [("mlp", 5), ("gpt2", 4)])
def test_spawned_replicas_train_the_one_replica_model(loop, name, steps):
    if name == "gpt2":
        pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")
    eager_losses, eager_state = _eager(loop, name, steps)
    cpu_model = loop.build_model(name)
    batches = loop.make_batches(name, steps, GLOBAL_BATCH)
    results = {}

    def replica(index):
        device = xm.xla_device()
        model = copy.deepcopy(cpu_model).to(device)
        losses, compiles = loop.train(model, batches, device, xr.global_ordinal(), xr.world_size())
        results[index] = dict(
            device=device, ordinal=(xm.get_ordinal(), xr.global_ordinal()),
            world=(xm.xrt_world_size(), xr.world_size()), losses=loop.mean_losses(losses), compiles=compiles,
            lazy=all(isinstance(p, LazyTensor) for p in model.parameters()),
            state={k: v.cpu() for k, v in model.state_dict().items()})

    xmp.spawn(replica, nprocs=2, collective_timeout=60)  # a failing replica fails the test within a minute
    after = metrics.counter_value("UncachedCompile")
    assert sorted(results) == [0, 1]
    for index, r in results.items():
        assert r["device"] == torch.device("lazytrain", index) and r["lazy"]
        assert r["ordinal"] == (index, index) and r["world"] == (2, 2)
        _assert_same_model(r["losses"], r["state"], eager_losses, eager_state)
        # Warm-up is steps 0 and 1 (no optimizer state, then the steady step). A
        # replica reads the counter while the other may still be compiling the
        # step before; from step 2 on, both have compiled every graph.
        assert r["compiles"][2:] == [after] * (steps - 2), (r["compiles"], after)
    assert xr.world_size() == 1 and xm.get_ordinal() == 0  # outside spawn: one replica again


def test_reduce_gradients_and_all_reduce_on_torch_tensors_across_replicas():
    """xm.reduce_gradients on torch parameters: each .grad becomes the mean over
    the replicas, in place (the same tensor object); a gradient one replica
    lacks counts as zeros there, and one no replica has stays None. xm.all_reduce
    reduces torch tensors across the replicas (a list in place)."""
    grads, reduced = {}, {}

    def replica(index):
        device = xm.xla_device()
        params = [torch.nn.Parameter(torch.zeros(3).to(device)) for _ in range(3)]
        params[0].grad = torch.tensor([1.0, 2.0, 3.0]).to(device) * (index + 1)
        if index == 1:
            params[1].grad = torch.full((3,), 4.0).to(device)
        held = params[0].grad
        optimizer = torch.optim.SGD(params, lr=0.1)
        xm.reduce_gradients(optimizer)
        total = xm.all_reduce("sum", torch.full((2,), index + 1.0, device=device), scale=0.5)
        most = [torch.arange(3.0, device=device) * (index + 1)]
        assert xm.all_reduce(xm.REDUCE_MAX, most) is most
        xm.mark_step()
        assert params[0].grad is held
        grads[index] = [None if p.grad is None else p.grad.cpu().tolist() for p in params]
        reduced[index] = (total.cpu().tolist(), most[0].cpu().tolist())

    xmp.spawn(replica, nprocs=2, collective_timeout=60)  # a failing replica fails the test within a minute
    assert grads[0] == grads[1] == [[1.5, 3.0, 4.5], [2.0, 2.0, 2.0], None]
    assert reduced[0] == reduced[1] == ([1.5, 1.5], [0.0, 2.0, 4.0])


def test_mpirun_processes_train_the_one_replica_model(loop, tmp_path):
    """The example under `mpirun -np 2`, one replica a process: the same model."""
    pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed (scripts/install_deps.sh installs Open MPI)")
    steps = 4
    eager_losses, eager_state = _eager(loop, "gpt2", steps)
    out = tmp_path / "mpi.pt"
    launcher = [mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "tcp,self",
                "--mca", "btl_tcp_if_include", "lo", "-np", "2"]
    env = dict(os.environ, PYTHONPATH=PACKAGE_PATH, OMP_NUM_THREADS="1")
    r = subprocess.run(launcher + [sys.executable, EXAMPLE, "--model", "gpt2", "--num_cores", "1",
                                   "--steps", str(steps), "--global_batch", str(GLOBAL_BATCH), "--output", str(out)],
                       capture_output=True, text=True, timeout=600, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert "replicas 2" in lines, r.stdout
    steps_seen = [STEP.match(line).groups() for line in lines if STEP.match(line)]
    assert [int(s) for s, _, _ in steps_seen] == list(range(steps)), r.stdout
    compiles = [int(c) for _, _, c in steps_seen]
    assert compiles[1:] == [compiles[1]] * (steps - 1), compiles  # one process, one replica: no race
    _assert_same_model([float(loss) for _, loss, _ in steps_seen], torch.load(out), eager_losses, eager_state)
