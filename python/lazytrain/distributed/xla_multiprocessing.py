"""torch_xla.distributed.xla_multiprocessing (xmp) on lazytrain: replicas are
threads of this process, each with its own device (cpu:0, cpu:1, ...), its
own graphs and its own execution queue; under ``mpirun -np P`` every process
runs its own replicas and the job has P x nprocs of them (global ordinal =
rank x nprocs + index). The same script therefore runs on one machine with
spawn(fn, nprocs=N) and across hosts under mpirun.

Replica threads run Python under the GIL: they trace in turn and execute side
by side (every wait on the device, a read or a collective, releases the GIL).
bench/python_spawn_bench.py measures how much of a step is spent waiting for it.

Torch tensors on the lazy device (torch.device("lazytrain", index)): torch's
autograd engine runs a device's backward on a thread of its own, which for
this device lacks the replica's current lazytrain device, and it has such a
thread for device index 0 only (a Python device guard reports one device to
torch 2.13). Each replica therefore runs its backward on its own thread
(torch.autograd.set_multithreading_enabled(False) on the replica thread),
where its device is already current, as lazytrain's native backward does."""
import sys

from .. import _C


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn", collective_timeout=300.0,
          threads_per_replica=0):
    """Runs ``fn(index, *args)`` on `nprocs` replica threads (None or 1: one
    replica, on this thread's device cpu:0), index 0 .. nprocs - 1, each with
    its device current (xm.xla_device() is cpu:<index>), and returns when all
    have ended and their devices are idle. When one raises, the others'
    collectives fail at once and the first error raised is re-raised here.
    `threads_per_replica`: OpenMP threads each (0: the process's divided
    among the replicas). join/daemon/start_method are accepted for
    torch_xla's signature (threads always join). Raises ValueError for
    nprocs < 1."""
    if not join:
        raise ValueError("spawn(join=False): lazytrain's replicas are threads of this process; spawn always joins them")
    n = 1 if nprocs is None else int(nprocs)
    if n < 1:
        raise ValueError(f"spawn: nprocs must be at least 1, got {nprocs}")
    _C._spawn(lambda index: _run_replica(fn, index, args), n, float(collective_timeout), int(threads_per_replica))


def _run_replica(fn, index, args):
    torch = sys.modules.get("torch")  # lazytrain never imports torch itself
    if torch is None:
        return fn(index, *args)
    # A backward on this thread, where the replica's device is current (see above).
    with torch.autograd.set_multithreading_enabled(False):
        return fn(index, *args)
