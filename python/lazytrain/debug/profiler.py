"""torch_xla.debug.profiler: a timeline of the run, written as a Chrome
trace-event JSON file (the format torch.profiler exports), which Perfetto
(https://ui.perfetto.dev) and chrome://tracing open::

    import lazytrain.debug.profiler as xp
    xp.start_trace("/tmp/profile")
    ...                                  # training steps
    path = xp.stop_trace()               # /tmp/profile/lazytrain-<host>-<pid>.trace.json

One row per thread: the host's tracing thread (mark_step, compiles, waits),
each device's execution thread (each graph's run, and inside it every fused
kernel and oneDNN dot with its HLO name and shape), loader threads. Setting
LAZYTRAIN_PROFILE=DIR traces a whole process instead (the file is written at
exit). The C++ side is runtime/profiler.h.
"""
import functools

from .. import _C


def start_trace(log_dir):
    """Starts recording; the file goes to `log_dir` (created if missing).
    Raises LazytrainError when the directory cannot be created or written, or
    when a trace is already recording (LAZYTRAIN_PROFILE starts one at the
    process's first event)."""
    _C._start_trace(str(log_dir))


def stop_trace():
    """Stops recording, writes the trace file and returns its path:
    <log_dir>/lazytrain-<host>-<pid>.trace.json (a later trace of the same
    process: ...-<pid>.2.trace.json, ...). Raises LazytrainError when no trace
    is recording or the file cannot be written."""
    return _C._stop_trace()


def is_tracing():
    """True while a trace records."""
    return _C._is_tracing()


def trace_path():
    """The file stop_trace() will write ("" when no trace records)."""
    return _C._trace_path()


class Trace:
    """A named span of this thread on the timeline (category "python"), as
    torch_xla.debug.profiler.Trace: a context manager, or a decorator.

        with xp.Trace("forward"):
            loss = model(batch)
    """

    def __init__(self, name):
        self.name = str(name)
        self._begin = None

    def __enter__(self):
        self._begin = _C._now_ns() if _C._is_tracing() else None
        return self

    def __exit__(self, *exc):
        if self._begin is not None:
            _C._record_trace_span(self.name, self._begin)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with Trace(self.name):
                return fn(*args, **kwargs)

        return wrapper
