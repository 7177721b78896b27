"""torch_xla.debug.metrics: the metrics and counters of the runtime (CompileTime,
ExecuteTime, TransferToDeviceTime, ...; CachedCompile, UncachedCompile, MarkStep, ...)
with PyTorch/XLA's report format (runtime/metrics.h).

Counters kept in Python join them: the lazy device for torch tensors counts
each ATen op it records as `xla::<op>` (`xla::add`, `xla::mm`, ...), as
PyTorch/XLA's report does."""
from .. import _C

_python_counters = []  # (counts() -> {name: value}, clear()) pairs, see register_counters


def register_counters(counts, clear):
    """Adds counters kept in Python: `counts()` returns {name: value}, `clear()`
    zeroes them (clear_all)."""
    _python_counters.append((counts, clear))


def _extra():
    out = {}
    for counts, _ in _python_counters:
        for name, value in counts().items():
            if value:
                out[name] = out.get(name, 0) + value
    return out


def _counter_lines(values):
    return "".join(f"Counter: {name}\n  Value: {value}\n" for name, value in sorted(values.items()))


def metrics_report():
    """Every metric with samples, then every non-zero counter, as PyTorch/XLA prints them."""
    return _C._metrics_report() + _counter_lines(_extra())


def short_metrics_report(counter_names=None, metric_names=None):
    """The named counters and metrics (defaults as torch_xla's: CompileTime,
    ExecuteTime, TransferFromDeviceTime; CachedCompile, MarkStep), then every
    aten:: counter."""
    if metric_names is None:
        metric_names = ["CompileTime", "ExecuteTime", "TransferFromDeviceTime"]
    if counter_names is None:
        counter_names = ["CachedCompile", "MarkStep"]
    extra = _extra()
    return _C._short_metrics_report(list(metric_names), list(counter_names)) + \
        _counter_lines({n: extra[n] for n in counter_names if n in extra})


def counter_names():
    """Names of the counters with a non-zero value, sorted."""
    return sorted(set(_C._counter_names()) | set(_extra()))


def counter_value(name):
    """The counter's value (0 when it never counted)."""
    return _C._counter_value(name) + _extra().get(name, 0)


def metric_names():
    """Names of the metrics with samples, sorted."""
    return _C._metric_names()


def metric_data(name):
    """(TotalSamples, Accumulator, [(timestamp_ns, value), ...]) of the metric's
    recent window, or None when it has no samples (torch_xla's metric_data)."""
    return _C._metric_data(name)


def clear_all():
    """Clears every metric and counter."""
    _C._clear_all()
    for _, clear in _python_counters:
        clear()
