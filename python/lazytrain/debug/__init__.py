"""Debugging: metrics (torch_xla.debug.metrics), the profiler's timeline
(torch_xla.debug.profiler), recompile reasons, per-step analysis, and the IR /
HLO text of graphs."""
from .. import _C
from . import metrics  # noqa: F401
from . import profiler  # noqa: F401


def set_recompile_debug(enabled=True):
    """Print every recompile's reason on stderr ("[recompile] input 0 ... at train.py:40")."""
    _C._set_recompile_debug(bool(enabled))


def recompile_reasons():
    """The reasons found so far in this process (the last 256), oldest first. Each
    names the op and the user's Python line that changed the graph."""
    return _C._recompile_reasons()


def clear_recompile_reasons():
    _C._clear_recompile_reasons()


def set_step_analysis(enabled=True):
    """One line per mark_step on stderr: compiles, executions, host transfers with
    the Python line that read a value (PyTorch/XLA's PT_XLA_DEBUG analysis)."""
    _C._set_step_analysis(bool(enabled))


def recent_steps(device=None):
    """The device's last finished steps, one line each."""
    return _C._recent_steps(device)


def set_graph_size_warning(nodes):
    """Warn once when a graph exceeds `nodes` IR nodes (0: never)."""
    _C._set_graph_size_warning(int(nodes))


def ir_text(tensors):
    """The IR graph computing `tensors` (torch_xla's _get_xla_tensors_text)."""
    if isinstance(tensors, _C.Tensor):
        tensors = [tensors]
    return _C._ir_text(list(tensors))


def last_compiled_hlo():
    """The HLO text of the graph compiled last ("" before the first)."""
    return _C._last_compiled_hlo()
