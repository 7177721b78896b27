"""lazytrain.distributed.spmd (torch_xla.distributed.spmd's names, issue 34):
meshes give XLA's layouts, mark_sharding cuts a tensor into tiles that read
back whole, a step traced once on 4 devices gives one device's values, and
the device loader lays batches out by input_sharding. Expected layouts are
XLA's (device d of a 2x2 mesh sits at (d // 2, d % 2))."""
import json
import re

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.distributed.parallel_loader as pl
import lazytrain.distributed.spmd as xs
import lazytrain.nn as nn
import lazytrain.runtime as xr
from conftest import assert_close


@pytest.fixture
def four_devices():
    xr.use_spmd(4)
    yield xr.global_runtime_device_count()
    lt.sync(wait=True)
    xr._reset_spmd()


def test_use_spmd_reads_cpu_num_devices(monkeypatch):
    monkeypatch.setenv("CPU_NUM_DEVICES", "four")
    with pytest.raises(ValueError, match="use_spmd: CPU_NUM_DEVICES is 'four': expected a count of devices"):
        xr.use_spmd()
    monkeypatch.setenv("CPU_NUM_DEVICES", "-3")
    with pytest.raises(ValueError, match="use_spmd: CPU_NUM_DEVICES is -3: expected an int >= 1"):
        xr.use_spmd()
    try:
        xr.use_spmd(np.int64(2))  # numpy's integers, as Mesh takes them
        assert xr.global_runtime_device_count() == 2
    finally:
        xr._reset_spmd()


def test_mesh_gives_xlas_layouts(four_devices):
    assert four_devices == 4 and xr.addressable_runtime_device_count() == 4
    import lazytrain.core.xla_model as xm
    assert xm.xrt_world_size() == 1 and xm.get_ordinal() == 0  # SPMD: one process, one participant
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
    assert mesh.size() == 4 and list(mesh.shape().items()) == [("data", 2), ("model", 2)]
    assert mesh.get_logical_mesh().tolist() == [[0, 1], [2, 3]]
    assert mesh.get_op_sharding(("data", None)) == "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"
    assert mesh.get_op_sharding((None, 1)) == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"
    assert mesh.get_op_sharding(("data", "model")) == "{devices=[2,2]<=[4]}"
    assert mesh.get_op_sharding((("data", "model"), None)) == "{devices=[4,1]<=[4]}"
    assert mesh.get_op_sharding((None, None)) == "{replicated}"
    with pytest.raises(ValueError, match="mesh axis 2 out of range"):
        mesh.get_op_sharding((2, None))
    with pytest.raises(RuntimeError, match="no mesh axis named 'batch'"):
        mesh.get_op_sharding(("batch", None))
    with pytest.raises(RuntimeError, match="device_ids must hold each of the job's 4 devices"):
        xs.Mesh([0, 1], (2,))


def test_mark_sharding_cuts_tiles_that_read_back_whole(four_devices):
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
    values = np.arange(48, dtype=np.float32).reshape(8, 6)
    t = lt.tensor(values)
    assert xs.mark_sharding(t, mesh, ("data", "model")) is t
    assert xs.get_sharding_spec(t) == "{devices=[2,2]<=[4]}"
    np.testing.assert_array_equal(t.numpy(), values)
    # A pending value is annotated; the step's result keeps the layout.
    y = xs.mark_sharding(t * 2, mesh, (None, "model"))
    assert xs.get_sharding_spec(y) == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"
    lt.sync()
    np.testing.assert_array_equal(y.numpy(), values * 2)
    assert "num_partitions=4" in lt._C._last_compiled_hlo()
    xs.clear_sharding(t)
    assert xs.get_sharding_spec(t) == ""
    with pytest.raises(RuntimeError, match=r"dimension 0 of \[6, 6\] does not divide into 4 tiles"):
        xs.mark_sharding(lt.tensor(values[:6]), mesh, (("data", "model"), None))


def _train(mesh, steps=3):
    lt.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    lt.sync()
    if mesh is not None:
        # FSDP by hand: every weight split along its larger dimension over all devices.
        for p in model.parameters():
            spec = [None] * p.dim()
            spec[int(np.argmax(p.shape))] = ("data", "model")
            xs.mark_sharding(p, mesh, tuple(spec))
    optimizer = lt.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = lt.tensor(rng.standard_normal((8, 16)).astype(np.float32))
        if mesh is not None:
            xs.mark_sharding(x, mesh, (("data", "model"), None))
        loss = (model(x) ** 2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        lt.sync()
        losses.append(loss.item())
    return losses, [p.numpy() for p in model.parameters()]


def test_a_sharded_step_gives_one_devices_values(four_devices):
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
    losses, params = _train(mesh)
    assert "reduce-scatter" in lt._C._last_compiled_hlo() and "all-gather" in lt._C._last_compiled_hlo()
    xr._reset_spmd()
    expected_losses, expected_params = _train(None)
    assert_close(np.array(losses), np.array(expected_losses), rtol=1e-5)
    for got, expected in zip(params, expected_params):
        assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_device_loader_lays_batches_out_by_input_sharding(four_devices):
    mesh = xs.Mesh(np.arange(4), (4,), ("data",))
    batches = [{"input_ids": np.arange(16).reshape(8, 2) + 100 * i} for i in range(2)]
    loader = pl.MpDeviceLoader(batches, lt.device(), input_sharding=xs.ShardingSpec(mesh, ("data", None)))
    seen = []
    for batch in loader:
        assert xs.get_sharding_spec(batch["input_ids"]) == "{devices=[4,1]<=[4]}"
        seen.append(batch["input_ids"].numpy())
    np.testing.assert_array_equal(seen[1], batches[1]["input_ids"])


def test_megatron_mlp_matches_one_device(four_devices):
    """Megatron's MLP (up column-, down row-parallel) on a 2x2 mesh: one
    device's values, and one all-reduce in the forward."""
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.up_proj = nn.Linear(8, 16)
            self.down_proj = nn.Linear(16, 8)

        def forward(self, x):
            return self.down_proj(lt.tanh(self.up_proj(x)))

    def run(shard):
        lt.manual_seed(3)
        model = Mlp()
        lt.sync()
        if shard:
            xs.parallelize_module(model, mesh, {"up_proj": xs.ColwiseParallel(), "down_proj": xs.RowwiseParallel()})
            assert xs.get_sharding_spec(model.up_proj.weight) == "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"
            assert xs.get_sharding_spec(model.down_proj.bias) == ""
        x = lt.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8))
        if shard:
            xs.mark_sharding(x, mesh, ("data", None))
        y = model(x)
        lt.sync()
        return y.numpy()

    sharded = run(True)
    hlo = lt._C._last_compiled_hlo()
    assert hlo.count(" all-reduce(") == 1, hlo
    xr._reset_spmd()
    assert_close(sharded, run(False), rtol=1e-5, atol=1e-6)


def test_trainer_fsdp_full_shard_trains_one_devices_model(four_devices, tmp_path):
    """Hugging Face's fsdp="full_shard": the C++ Trainer splits every parameter
    and each batch of 4 devices x 2 rows; one device at batch 8 trains the same
    model (dropout included: its random bits are drawn whole, then sliced)."""
    import test_trainer as tt

    def run(out, **kw):
        args = tt.args(tmp_path, output_dir=str(tmp_path / out), max_steps=6, save_strategy="no", **kw)
        lt.manual_seed(0)
        model = tt.TinyLM()  # with dropout: the random bits are drawn whole, as on one device
        trainer = lt.Trainer(model=model, args=args, train_dataset=tt.dataset())
        return trainer.train().training_loss, [p.numpy() for p in model.parameters()]

    loss, params = run("fsdp", per_device_train_batch_size=2, fsdp="full_shard")
    xr._reset_spmd()
    expected_loss, expected = run("one", per_device_train_batch_size=8)
    assert abs(loss - expected_loss) <= 1e-5 * abs(expected_loss)
    for got, want in zip(params, expected):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="call it first"):
        lt.Trainer(model=tt.TinyLM(), args=tt.args(tmp_path, fsdp="full_shard"), train_dataset=tt.dataset())


def test_trainer_tp_size_trains_one_devices_model(tmp_path):
    """Hugging Face's tp_size: the C++ Trainer lays BERT out with Megatron's
    plan and its vocabulary-parallel loss over a 1 x 2 mesh (data x model);
    one device at the same batch trains the same model."""
    import test_trainer as tt

    config = dict(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

    def run(out, **kw):
        # adam_epsilon 1e-6: the key bias's gradient is rounding alone (softmax ignores a shift), which
        # eps 1e-8 would scale up to lr-sized steps that differ with the order of the sums.
        args = tt.args(tmp_path, output_dir=str(tmp_path / out), max_steps=6, save_strategy="no", adam_epsilon=1e-6, **kw)
        lt.manual_seed(0)
        model = lt.BertForMaskedLM(lt.BertConfig(**config))
        trainer = lt.Trainer(model=model, args=args, train_dataset=tt.dataset())
        loss = trainer.train().training_loss
        assert trainer._native.train_graph_count == 1  # the layouts add no graph
        return loss, [p.numpy() for p in model.parameters()], model

    xr.use_spmd(2)
    try:
        loss, params, model = run("tp", tp_size=2)
        split = [name for name, p in model.named_parameters() if xs.get_sharding_spec(p)]
        assert "bert.encoder.layer.0.attention.self.query.weight" in split and "bert.embeddings.word_embeddings.weight" in split
        assert "bert.embeddings.position_embeddings.weight" not in split
        lt.sync(wait=True)
    finally:
        xr._reset_spmd()
    expected_loss, expected, _ = run("one")
    assert abs(loss - expected_loss) <= 1e-5 * abs(expected_loss)
    for got, want in zip(params, expected):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="tp_size=2 trains on the devices of lazytrain.runtime.use_spmd"):
        lt.Trainer(model=tt.TinyLM(), args=tt.args(tmp_path, tp_size=2), train_dataset=tt.dataset())
    xr.use_spmd(2)
    try:
        trainer = lt.Trainer(model=tt.TinyLM(), args=tt.args(tmp_path, tp_size=2, max_steps=1), train_dataset=tt.dataset())
        with pytest.raises(RuntimeError, match="--tp_size 2 lays the model out with Megatron's plan for the built-in models"):
            trainer.train()
    finally:
        xr._reset_spmd()


def _trace_overlap():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "tools" / "trace_overlap.py"
    spec = importlib.util.spec_from_file_location("trace_overlap", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_trace_overlap_measures_exchange_hidden_behind_compute():
    # cpu:0's collective thread exchanges over [0, 100) us; its execution
    # thread computes over [50, 80) and waits in a done over [90, 100).
    def thread(tid, name):
        return {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}}

    def event(tid, cat, name, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}

    doc = {"traceEvents": [
        thread(1, "device cpu:0 execution"), thread(2, "device cpu:0 collectives"),
        event(2, "collective", "all-gather", 0, 60), event(2, "collective", "all-gather", 60, 40),
        event(1, "collective", "all-gather-start.3", 0, 1), event(1, "kernel", "fusion.4", 50, 20),
        event(1, "dot", "dot.5", 60, 20), event(1, "collective", "all-gather-done.6", 90, 10),
        event(1, "collective", "all-reduce.7", 120, 5), event(1, "collective", "all-reduce", 121, 3),
        event(1, "collective", "MPI all-reduce", 122, 1)]}  # the transport's spans nest in the instruction's
    rows = _trace_overlap().analyse(doc)
    assert rows == {"cpu:0": {"exchange_ms": 0.1, "hidden": 0.3, "waited_ms": 0.01, "in_place_ms": 0.005}}


_TRACED_STEP = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import lazytrain as lt
import lazytrain.debug.profiler as xp
import lazytrain.distributed.spmd as xs
import lazytrain.runtime as xr
from test_spmd import _train
xr.use_spmd(4)
xp.start_trace(sys.argv[2])
_train(xs.Mesh(np.arange(4), (4, 1), ("data", "model")), steps=2)
lt.wait_device_ops()
print(xp.stop_trace())
"""


def _traced_sharded_step(tmp_path, async_collectives):
    """tools/trace_overlap.py's rows for two FSDP steps on 4 devices, traced in a
    process of their own (LAZYTRAIN_ASYNC_COLLECTIVES is read at start-up)."""
    import os
    import pathlib
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("LAZYTRAIN_ASYNC_COLLECTIVES", None)
    if async_collectives is not None:
        env["LAZYTRAIN_ASYNC_COLLECTIVES"] = async_collectives
    run = subprocess.run([sys.executable, "-c", _TRACED_STEP, str(pathlib.Path(__file__).parent), str(tmp_path / "profile")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    with open(run.stdout.strip().splitlines()[-1]) as f:
        return _trace_overlap().analyse(json.load(f))


def test_collectives_overlap_compute_on_each_devices_collective_thread(tmp_path):
    # LAZYTRAIN_ASYNC_COLLECTIVES=1: start/done pairs; every device's exchanges
    # run on its collective thread, its execution thread only starts and waits.
    rows = _traced_sharded_step(tmp_path / "async", "1")
    assert sorted(rows) == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"], rows
    for device, r in rows.items():
        assert r["exchange_ms"] > 0 and r["in_place_ms"] == 0, (device, r)
    # Unset, the devices of one process run them in place (they share the cores).
    rows = _traced_sharded_step(tmp_path / "default", None)
    for device, r in rows.items():
        assert r["exchange_ms"] == 0 and r["in_place_ms"] > 0, (device, r)


def test_spmd_errors_name_the_callers_line(four_devices):
    import inspect

    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
    with pytest.raises(RuntimeError) as error:
        line = inspect.currentframe().f_lineno + 1
        xs.mark_sharding(lt.tensor(np.zeros((6, 6), np.float32)), mesh, (("data", "model"), None))
    assert str(error.value).startswith("[mark_sharding] dimension 0 of [6, 6] does not divide into 4 tiles"), error.value
    assert f"(called from test_spmd.py:{line})" in str(error.value), error.value
    with pytest.raises(RuntimeError) as error:
        line = inspect.currentframe().f_lineno + 1
        xs.Mesh(np.arange(4), (3, 2), ("data", "model"))
    assert f"(called from test_spmd.py:{line})" in str(error.value), error.value


def test_a_vocabulary_parallel_loss_matches_one_device_without_gathering_logits(four_devices):
    """megatron_plan(vocab_parallel=True) splits the LM head by vocabulary: the
    cross-entropy combines the devices' columns with all-reduces of one value
    a token, so no collective carries logits (vocabulary 40, hidden 6, 16 tokens)."""
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))

    class Lm(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(40, 6)
            self.lm_head = nn.Linear(6, 40, bias=False)

        def forward(self, ids):
            return self.lm_head(lt.tanh(self.embed_tokens(ids)))

    def run(shard):
        lt.manual_seed(5)
        model = Lm()
        lt.sync()
        if shard:
            plan = xs.megatron_plan(vocab_parallel=True)
            assert "lm_head" in plan and "lm_head" not in xs.megatron_plan()
            xs.parallelize_module(model, mesh, plan)
            assert xs.get_sharding_spec(model.lm_head.weight) == "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"
        optimizer = lt.optim.AdamW(model.parameters(), lr=1e-2)
        losses = []
        for step in range(3):
            ids = lt.tensor(np.random.default_rng(step).integers(0, 40, (4, 4)))
            if shard:
                xs.mark_sharding(ids, mesh, ("data", None))
            loss = nn.functional.cross_entropy(model(ids).view(-1, 40), ids.view(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            lt.sync()
            losses.append(loss.item())
        return losses, model.lm_head.weight.numpy()

    # GPT-2's 50257 rows, or any vocabulary the axis does not divide, stay whole, with a warning.
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.lm_head = nn.Linear(8, 41, bias=False)

    with pytest.warns(UserWarning, match=r"lm_head.weight \[41, 8\] stays whole: dimension 0 \(41\) does not divide into 2 tiles of axis 'model'"):
        xs.parallelize_module(Odd(), mesh, xs.megatron_plan(vocab_parallel=True))

    losses, weight = run(True)
    hlo = lt._C._last_compiled_hlo()
    collective_shapes = re.findall(r"= f32\[([\d,]*)\]\{[^}]*\} (?:all-reduce|all-gather|reduce-scatter)\(", hlo)
    # The logits are [16, 40], [8, 20] a device (16 tokens by "data", 40 words by
    # "model"); the weight gradients' [6, 20] all-reduces over "data" are data parallelism's.
    logits = {"16,40", "8,40", "16,20", "8,20"}
    assert collective_shapes and not logits & set(collective_shapes), collective_shapes
    xr._reset_spmd()
    expected_losses, expected_weight = run(False)
    assert_close(np.array(losses), np.array(expected_losses), rtol=1e-5)
    assert_close(weight, expected_weight, rtol=1e-5, atol=1e-6)


def test_fsdpv2_names_each_parameters_unit_and_the_compiler_gathers_a_layer_at_once(four_devices):
    """FSDPv2 names each parameter's unit (a transformer layer, or the root) in
    its layout's metadata; a training step then gathers each layer in one
    all-gather forward and one backward, and reduce-scatters its gradients in one."""
    from lazytrain.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

    mesh = xs.Mesh(np.arange(4), (4, 1), ("fsdp", "model"))
    lt.manual_seed(0)
    model = FSDPv2(lt.BertForMaskedLM(lt.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                                    intermediate_size=24, max_position_embeddings=16)), mesh)
    specs = {name: xs.get_sharding_spec(p) for name, p in model.module.named_parameters()}
    assert specs["bert.encoder.layer.1.output.dense.weight"].endswith('metadata={op_name="fsdp/bert.encoder.layer.1"}}')
    assert specs["bert.embeddings.word_embeddings.weight"].endswith('metadata={op_name="fsdp"}}')
    optimizer = lt.optim.AdamW(model.parameters(), lr=1e-3)
    ids = xs.mark_sharding(lt.tensor(np.random.default_rng(0).integers(0, 32, (8, 8))), mesh, ("fsdp", None))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    lt.sync()
    hlo = lt._C._last_compiled_hlo()
    # Two layers: two all-gathers each; the root (embeddings, heads): three, one for the tied decoder.
    assert hlo.count(" all-gather(") == 7 and hlo.count(" reduce-scatter(") == 3, hlo


def test_mesh_checks_its_arguments_and_fsdp_warns_for_a_parameter_it_leaves_whole(four_devices):
    from lazytrain.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

    with pytest.raises(RuntimeError, match=r"mesh_shape \[-2, -2\] has an axis of -2 devices: expected sizes >= 1"):
        xs.Mesh(np.arange(4), (-2, -2), ("a", "b"))
    with pytest.raises(TypeError, match=r"device_ids must be integer device ordinals, got \[0.0, 1.5, 2.0, 3.0\]"):
        xs.Mesh([0, 1.5, 2, 3], (4,))
    with pytest.raises(TypeError, match="mesh_shape must be a tuple of ints, one per mesh axis, got 4"):
        xs.Mesh(np.arange(4), 4)
    mesh = xs.Mesh(np.arange(4), (4, 1), ("fsdp", "model"))
    with pytest.raises(TypeError, match="mark_sharding: mesh must be a lazytrain.distributed.spmd.Mesh, got NoneType"):
        xs.mark_sharding(lt.tensor(np.zeros(4, np.float32)), None, ("fsdp",))
    with pytest.raises(TypeError, match="mark_sharding: partition_spec must be a tuple"):
        xs.mark_sharding(lt.tensor(np.zeros(4, np.float32)), mesh, "fsdp")
    with pytest.raises(TypeError, match=r"plan entry 'fc' is 'colwise': expected ColwiseParallel\(\) or RowwiseParallel\(\)"):
        xs.parallelize_module(nn.Sequential(nn.Linear(4, 4)), mesh, {"fc": "colwise"}, "fsdp")
    with pytest.raises(TypeError, match="ShardingSpec: partition_spec must be a tuple"):
        xs.ShardingSpec(mesh, "fsdp")
    with pytest.raises(TypeError, match="parallelize_module: mesh must be a lazytrain.distributed.spmd.Mesh, got tuple"):
        xs.parallelize_module(nn.Sequential(nn.Linear(4, 4)), (1, 4), {"0": xs.ColwiseParallel()}, "fsdp")
    with pytest.raises(TypeError, match="add the parentheses"):
        xs.parallelize_module(nn.Sequential(nn.Linear(4, 4)), mesh, {"0": xs.ColwiseParallel}, "fsdp")
    model = nn.Sequential(nn.Linear(6, 8), nn.Linear(8, 5))  # the last bias, [5], has no dimension 4 divides
    with pytest.warns(UserWarning, match=r"1\.bias \[5\] stays whole: no dimension divides into 4 tiles of axis 'fsdp'"):
        FSDPv2(model, mesh)
