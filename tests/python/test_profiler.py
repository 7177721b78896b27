"""lazytrain.debug.profiler (torch_xla.debug.profiler's start_trace /
stop_trace / Trace): a traced training loop writes a Chrome trace-event file
with the steps, the device's executions and kernels, and the user's Trace
spans; the interpreter fallback counter reads 0 for these steps."""
import json
import os
import re
import socket

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.debug.metrics as met
import lazytrain.debug.profiler as xp
import lazytrain.nn as nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.fc = nn.Linear(16, 16)
        self.head = nn.Linear(16, 20)

    def forward(self, ids):
        return self.head(nn.functional.gelu(self.fc(self.emb(ids))))


def train(model, opt, steps):
    losses = []
    for step in range(steps):
        ids = lt.tensor(np.random.default_rng(step).integers(0, 20, (4, 8)))
        opt.zero_grad()
        with xp.Trace("forward"):
            logits = model(ids)
        loss = nn.functional.cross_entropy(logits.view(-1, 20), ids.view(-1))
        loss.backward()
        opt.step()
        lt.sync()
        losses.append(loss.item())
    return losses


def test_start_and_stop_trace_write_a_chrome_trace(tmp_path):
    model = Tiny()
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2)
    met.clear_all()
    assert not xp.is_tracing()
    xp.start_trace(tmp_path / "profile")
    assert xp.is_tracing()
    losses = train(model, opt, 3)
    lt.wait_device_ops()
    path = xp.stop_trace()
    assert not xp.is_tracing()
    assert all(np.isfinite(losses))

    assert os.path.dirname(path) == str(tmp_path / "profile")
    # <dir>/lazytrain-<host>-<pid>.trace.json (a later trace of the process: ...-<pid>.N.trace.json)
    assert re.fullmatch(rf"lazytrain-{re.escape(socket.gethostname())}-{os.getpid()}(\.\d+)?\.trace\.json", os.path.basename(path)), path
    with open(path) as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    rows = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in events:
        assert {"ph", "ts", "dur", "pid", "tid", "name", "cat"} <= set(e), e
        assert e["tid"] in rows, e
    assert "host (trace)" in rows.values()
    assert "device cpu:0 execution" in rows.values()

    def named(cat, name=None):
        return [e for e in events if e["cat"] == cat and (name is None or e["name"] == name)]

    assert len(named("python", "forward")) == 3
    assert all(rows[e["tid"]] == "host (trace)" for e in named("python"))
    assert len(named("trace", "mark_step")) == 3
    assert [c["args"]["cache"] for c in named("compile", "compile")].count("miss") >= 1
    executions = named("execute")
    assert len(executions) >= 3
    kernels = named("kernel") + named("dot")
    assert kernels
    for k in kernels:  # inside an execution of the same thread
        assert any(
            e["tid"] == k["tid"] and e["ts"] - 0.002 <= k["ts"] and k["ts"] + k["dur"] <= e["ts"] + e["dur"] + 0.002 for e in executions
        ), k
    assert met.counter_value("InterpreterFallback") == 0, met.short_metrics_report()


def test_trace_errors_are_lazytrain_errors(tmp_path):
    with pytest.raises(lt.LazytrainError, match="no trace is recording"):
        xp.stop_trace()
    xp.start_trace(tmp_path)
    try:
        with pytest.raises(lt.LazytrainError, match="already recording"):
            xp.start_trace(tmp_path)
        assert xp.trace_path().startswith(str(tmp_path))
    finally:
        xp.stop_trace()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(lt.LazytrainError, match="cannot create the directory"):
        xp.start_trace(a_file / "sub")


def test_trace_decorator_passes_calls_through_when_off():
    assert not xp.is_tracing()

    @xp.Trace("decorated")
    def f(x):
        return x + 1

    assert f(1) == 2
