"""lazytrain's execution modes and diagnostics for torch tensors on the lazy
device (issue 56, item 4): debug / strict / fused eager, recompile reasons and
the per-step analysis naming the test's own line (not torch's or
lazytrain's), the metrics report with PyTorch/XLA's xla::<op> counters, the
profiler's Chrome trace of a torch step, and an error inside torch's backward
(raised to the caller, naming the backward() line, not aborting the
process)."""
import inspect
import json
import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")

import lazytrain as lt  # noqa: E402
import lazytrain.core.xla_model as xm  # noqa: E402
import lazytrain.debug as debug  # noqa: E402
import lazytrain.debug.metrics as met  # noqa: E402
import lazytrain.debug.profiler as xp  # noqa: E402

from lazy_device_support import DEV, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)

HERE = os.path.basename(__file__)


def next_line():
    """'test_file.py:N' of the line after the caller's."""
    return f"{HERE}:{inspect.currentframe().f_back.f_lineno + 1}"


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _int_division_by_zero(mode):
    """In `mode`: where an execution error surfaces ('op', 'next op', 'read')
    and its message."""
    with lt.execution_mode(mode):
        a, z = torch.tensor([4, 6], device=DEV), torch.tensor([0, 3], device=DEV)
        stage = "op"
        try:
            q = a // z
            stage = "next op"
            r = q + 1
            stage = "read"
            r.tolist()
        except lt.LazytrainError as e:
            return stage, str(e)
    return None, ""


@pytest.mark.parametrize("mode, stage", [("debug_eager", "op"), ("strict_eager", "next op"), ("lazy", "read"),
                                         ("fused_eager", "read")])
def test_execution_modes_report_an_execution_error_where_the_mode_says(mode, stage):
    source, first = inspect.getsourcelines(_int_division_by_zero)
    line = f"{HERE}:{first + next(i for i, s in enumerate(source) if 'q = a // z' in s)}"
    where, message = _int_division_by_zero(mode)
    assert where == stage
    assert "integer division by zero" in message and f"aten::floor_divide called from {line}" in message
    assert lt.execution_mode() == "lazy"


@pytest.mark.parametrize("mode", ["debug_eager", "strict_eager", "fused_eager"])
def test_eager_modes_train_a_torch_model_as_eager_torch(mode):
    x, y = torch.randn(6, 4), torch.randn(6, 2)

    def train(model, device):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in model.parameters()]

    want_losses, want_params = train(_mlp(), "cpu")
    with lt.execution_mode(mode):
        got_losses, got_params = train(_mlp().to(DEV), DEV)
    torch.testing.assert_close(torch.tensor(got_losses), torch.tensor(want_losses), rtol=1e-5, atol=1e-5)
    for got, want in zip(got_params, want_params):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_fused_eager_compiles_a_torch_step_once():
    model = _mlp().to(DEV)
    x = torch.randn(5, 4).to(DEV)
    with lt.execution_mode("fused_eager"):
        counts = []
        for _ in range(3):
            model(x).sum().backward()
            xm.mark_step()
            counts.append(met.counter_value("UncachedCompile"))
    # step 1 makes the gradients, step 2 accumulates into them; step 3 replays step 2's chunks
    assert counts[2] == counts[1]


def test_recompile_reason_names_the_change_and_the_users_line():
    model = _mlp().to(DEV)
    debug.clear_recompile_reasons()
    lines = []
    for n in (8, 8, 5):
        x = torch.randn(n, 4).to(DEV)
        lines.append(next_line())
        loss = model(x).pow(2).mean()
        loss.backward()
        xm.mark_step()
    reason = debug.recompile_reasons()[-1]
    assert "dimension 0 changed from 8 to 5" in reason
    assert f"at {lines[-1]}" in reason  # the line that called the model, not torch.nn's
    assert "linear.py" not in reason and "_dispatch.py" not in reason


def test_the_backwards_ops_are_recorded_at_the_backward_line():
    # torch runs the backward on its own thread, with no Python frame of the test's
    debug.clear_recompile_reasons()
    for grad_of_x in (False, False, True):  # the third step's backward has one more mul
        w = torch.ones(3, device=DEV, requires_grad=True)
        x = torch.full((3,), 2.0, device=DEV, requires_grad=grad_of_x)
        loss = (w * x).sum()
        line = next_line()
        loss.backward()
        xm.mark_step()
    reason = debug.recompile_reasons()[-1]
    assert f"here aten::mul f32[3] at {line}" in reason


def test_step_analysis_names_the_line_that_read_a_value(capfd):
    model = _mlp().to(DEV)
    x = torch.randn(3, 4).to(DEV)
    debug.set_step_analysis(True)
    try:
        loss = model(x).sum()
        read = next_line()
        loss.item()
        xm.mark_step()
    finally:
        debug.set_step_analysis(False)
    step = debug.recent_steps()[-1]
    assert step.startswith("[mark_step") and f"item() at {read}" in step
    assert "1 host transfer" in step
    assert step in capfd.readouterr().err


def test_metrics_report_counts_torch_ops_transfers_and_compiles():
    met.clear_all()
    assert met.counter_value("xla::mm") == 0
    model = torch.nn.Linear(4, 3, bias=False).to(DEV)
    x = torch.randn(2, 4).to(DEV)
    y = model(x) * 2
    y = y * 3
    y.sum().item()
    xm.mark_step()
    assert met.counter_value("xla::mul") == 2 and met.counter_value("xla::mm") == 1
    # transfers: model.to(DEV)'s weight and x.to(DEV) in, the loss out
    assert met.counter_value("LazyDeviceInputBytes") == (4 * 3 + 2 * 4) * 4
    assert met.counter_value("UncachedCompile") + met.counter_value("CachedCompile") >= 1
    report = met.metrics_report()
    assert "Counter: xla::mul\n  Value: 2\n" in report and "Metric: TransferFromDeviceTime" in report
    assert "Metric: CompileTime" in report or met.counter_value("CachedCompile") >= 1
    assert "xla::mul" in met.counter_names() and "xla::mm" in met.counter_names()
    assert "Counter: xla::mm\n  Value: 1\n" in met.short_metrics_report(counter_names=["MarkStep", "xla::mm"])
    met.clear_all()
    assert met.counter_value("xla::mul") == 0 and "xla::mul" not in met.metrics_report()


def test_profiler_trace_of_a_torch_step_is_chrome_trace_json(tmp_path):
    model = _mlp().to(DEV)
    x = torch.randn(3, 4).to(DEV)
    xp.start_trace(str(tmp_path))
    try:
        for _ in range(2):
            with xp.Trace("train_step"):
                model(x).sum().backward()
                xm.mark_step()
        xm.wait_device_ops()
    finally:
        path = xp.stop_trace()
    assert os.path.dirname(path) == str(tmp_path)
    events = json.load(open(path))["traceEvents"]
    assert all({"ph", "name", "pid", "tid"} <= set(e) for e in events)
    spans = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and "ts" in e for e in spans)
    names = [e["name"] for e in spans]
    assert names.count("train_step") == 2 and names.count("mark_step") == 2
    compiles = [e for e in spans if e["name"] == "compile"]
    assert compiles and all(e["args"]["ir_nodes"] > 0 for e in compiles)
    threads = {e["args"]["name"]: e["tid"] for e in events if e.get("name") == "thread_name"}
    assert "host (trace)" in threads and "device cpu:0 execution" in threads
    executions = [e for e in spans if e["tid"] == threads["device cpu:0 execution"] and e["name"].startswith("Sync")]
    assert len(executions) == 2  # one graph run per step


def test_an_error_inside_backward_raises_naming_the_backward_line():
    w = torch.ones(1, 1, 2, 2, device=DEV, requires_grad=True)
    y = torch.nn.functional.interpolate(w, scale_factor=2).sum()  # its backward op has no lowering
    with pytest.raises(RuntimeError) as raised:
        line = next_line()
        y.backward()
    assert "upsample_nearest2d_backward" in str(raised.value)
    assert f"{line} (in the backward, UpsampleNearest2DBackward0)" in str(raised.value)
    y = torch.nn.functional.interpolate(w, scale_factor=2).sum()
    with pytest.raises(RuntimeError) as raised:
        line = next_line()
        torch.autograd.grad(y, [w])
    assert f"{line} (in the backward" in str(raised.value)
    # a tensor hook that raises inside the backward: its own error, at the caller
    h = torch.ones(3, device=DEV, requires_grad=True)

    def failing_hook(grad):
        raise IndexError("the hook's own error")

    h.register_hook(failing_hook)
    with pytest.raises(IndexError, match="the hook's own error"):
        (h * 2).sum().backward()
    # the process lives on and the device still works, backward included
    v = torch.ones(3, device=DEV, requires_grad=True)
    (v * 2).sum().backward()
    assert v.grad.cpu().tolist() == [2.0, 2.0, 2.0]
