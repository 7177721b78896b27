"""torch_xla.distributed.xla_multiprocessing (xmp) on lazytrain: replicas are
threads of this process, each with its own device (cpu:0, cpu:1, ...), its
own graphs and its own execution queue; under ``mpirun -np P`` every process
runs its own replicas and the job has P x nprocs of them (global ordinal =
rank x nprocs + index). The same script therefore runs on one machine with
spawn(fn, nprocs=N) and across hosts under mpirun.

Replica threads run Python under the GIL: they trace in turn and execute side
by side (every wait on the device, a read or a collective, releases the GIL).
bench/python_spawn_bench.py measures how much of a step is spent waiting for it."""
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
    _C._spawn(lambda index: fn(index, *args), n, float(collective_timeout), int(threads_per_replica))
