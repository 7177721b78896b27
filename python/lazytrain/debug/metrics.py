"""torch_xla.debug.metrics: the metrics and counters of the runtime (CompileTime,
ExecuteTime, TransferToDeviceTime, ...; CachedCompile, UncachedCompile, MarkStep, ...)
with PyTorch/XLA's report format (runtime/metrics.h)."""
from .. import _C


def metrics_report():
    """Every metric with samples, then every non-zero counter, as PyTorch/XLA prints them."""
    return _C._metrics_report()


def short_metrics_report(counter_names=None, metric_names=None):
    """The named counters and metrics (defaults as torch_xla's: CompileTime,
    ExecuteTime, TransferFromDeviceTime; CachedCompile, MarkStep), then every
    aten:: counter."""
    if metric_names is None:
        metric_names = ["CompileTime", "ExecuteTime", "TransferFromDeviceTime"]
    if counter_names is None:
        counter_names = ["CachedCompile", "MarkStep"]
    return _C._short_metrics_report(list(metric_names), list(counter_names))


def counter_names():
    """Names of the counters with a non-zero value, sorted."""
    return _C._counter_names()


def counter_value(name):
    """The counter's value (0 when it never counted)."""
    return _C._counter_value(name)


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
