"""The runtime from Python: one compile per distinct graph (read through
lazytrain.debug.metrics, as torch_xla's tests do), compile(fn), execution
modes, metrics functions and the xla_model module on one replica."""
import numpy as np
import pytest

import lazytrain as lt
import lazytrain.core.xla_model as xm
import lazytrain.debug.metrics as met
import lazytrain.nn as nn


def compiles():
    return met.counter_value("UncachedCompile")


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.fc = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 20)

    def forward(self, ids):
        return self.head(self.norm(nn.functional.gelu(self.fc(self.emb(ids)))))


def test_training_loop_compiles_once_then_hits_the_cache():
    model = Tiny()
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2)
    sched = lt.optim.lr_scheduler.get_linear_schedule_with_warmup(opt, 2, 10)
    after_warmup = None
    losses = []
    for step in range(6):
        ids = lt.tensor(np.random.default_rng(step).integers(0, 20, (4, 8)))
        opt.zero_grad()
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits.view(-1, 20), ids.view(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        xm.mark_step()
        losses.append(loss.item())
        if step == 1:
            after_warmup = compiles()
    assert compiles() == after_warmup, met.short_metrics_report()
    assert met.counter_value("CachedCompile") >= 4
    assert met.counter_value("MarkStep") == 6
    assert losses[-1] < losses[0]
    assert "CompileTime" in met.metric_names() and "ExecuteTime" in met.metric_names()
    total, accumulator, samples = met.metric_data("ExecuteTime")
    assert total >= 6 and accumulator > 0 and len(samples) == total
    assert "Counter: CachedCompile" in met.metrics_report()
    assert "Metric: CompileTime" in met.short_metrics_report()


def test_a_changed_shape_recompiles_with_a_reason_naming_the_line():
    lt.debug.clear_recompile_reasons()
    w = lt.ones(4, 4, requires_grad=True)
    for batch in (2, 2, 3):
        x = lt.ones(batch, 4)
        (x @ w).sum().backward()  # the line the reason names
        lt.sync()
    reasons = lt.debug.recompile_reasons()
    assert reasons and "test_runtime.py:" in reasons[-1], reasons


def test_compile_traces_once_per_signature():
    w = lt.ones(3, 3)
    calls = []

    @lt.compile
    def f(x, scale):
        calls.append(1)
        return {"y": (x @ w) * scale, "n": x.shape[0]}

    a = f(lt.ones(2, 3), 2.0)
    b = f(lt.full((2, 3), 2.0), 2.0)
    assert len(calls) == 1 and f.trace_count == 1
    assert a["y"].tolist() == [[6.0] * 3] * 2 and b["y"].tolist() == [[12.0] * 3] * 2 and a["n"] == 2
    f(lt.ones(4, 3), 2.0)
    f(lt.ones(2, 3), 3.0)
    assert len(calls) == 3 and f.graph_count == 3

    @lt.compile
    def reads(x):
        return x.sum().item()

    with pytest.raises(lt.LazytrainError):
        reads(lt.ones(2))


def test_execution_modes_share_the_pipeline():
    assert lt.execution_mode() == "lazy"
    with lt.execution_mode("debug_eager"):
        assert lt.execution_mode() == "debug_eager"
        before = met.counter_value("UncachedCompile")
        for _ in range(3):
            (lt.ones(3) * 2).sum()
        assert met.counter_value("UncachedCompile") - before <= 3  # one per distinct op
    assert lt.execution_mode() == "lazy"
    lt.execution_mode("strict_eager")
    assert (lt.ones(2) + 1).tolist() == [2.0, 2.0]
    lt.execution_mode("lazy")
    with pytest.raises(lt.LazytrainError, match="fused_eager"):
        lt.execution_mode("eager")


def test_xla_model_on_one_replica(tmp_path, capsys):
    assert xm.xrt_world_size() == 1 and xm.get_ordinal() == 0 and xm.is_master_ordinal()
    assert str(xm.xla_device()) == "cpu:0"
    xm.master_print("hello", 1)
    assert capsys.readouterr().out == "hello 1\n"
    assert xm.rendezvous("t") == []
    assert xm.mesh_reduce("m", 3.0, sum) == 3.0
    assert xm.all_reduce(xm.REDUCE_SUM, lt.ones(2)).tolist() == [1.0, 1.0]
    p = nn.Parameter(lt.ones(2))
    opt = lt.optim.SGD([p], lr=0.5)
    (p * p).sum().backward()
    xm.optimizer_step(opt, barrier=True)
    assert p.tolist() == [0.0, 0.0]
    q = nn.Parameter(lt.ones(2))
    adam = lt.optim.AdamW([q], lr=0.1, weight_decay=0.0)
    (q * q).sum().backward()
    xm.optimizer_step(adam)
    xm.mark_step()
    np.testing.assert_allclose(q.numpy(), [0.9, 0.9], rtol=1e-5)
    xm.save({"q": q}, tmp_path / "q.safetensors")
    assert lt.load(tmp_path / "q.safetensors")["q"].tolist() == q.tolist()


def test_step_analysis_names_the_read():
    lt.debug.set_step_analysis(True)
    try:
        x = lt.ones(3) * 2
        x.sum().item()  # read before mark_step
        lt.sync()
    finally:
        lt.debug.set_step_analysis(False)
    lines = lt.debug.recent_steps()
    assert any("item() at test_runtime.py:" in line for line in lines), lines
