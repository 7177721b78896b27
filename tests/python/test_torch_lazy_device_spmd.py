"""Sharding torch tensors on the lazy device (issue 56, item 5): the
functions of lazytrain.distributed.spmd (torch_xla's `xs`) and FSDPv2 take
torch tensors and torch modules on the lazy device and lay out the lazytrain
tensors they hold, so a transformers Llama trained with torch.optim.AdamW on
a 2x2 mesh is partitioned by lazytrain's SPMD compiler. Every value is
checked against eager torch on the CPU (same seed, 3 steps); the compiled
step is checked to be partitioned (num_partitions=4 and its collectives)."""
import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")

import lazytrain as lt  # noqa: E402
import lazytrain.core.xla_model as xm  # noqa: E402
import lazytrain.distributed.parallel_loader as pl  # noqa: E402
import lazytrain.distributed.spmd as xs  # noqa: E402
import lazytrain.runtime as xr  # noqa: E402
from lazytrain.debug import metrics  # noqa: E402
from lazytrain.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2  # noqa: E402

from lazy_device_support import DEV, optimizer_step, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)

# torch_xla's column-parallel weights ([out, in]: rows split) and row-parallel ones (columns split).
COLWISE = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
ROWWISE = ("o_proj", "down_proj")


@pytest.fixture
def four_devices():
    xr.use_spmd(4)
    yield
    lt.sync(wait=True)
    xr._reset_spmd()


def _llama():
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=32))


def _batches(steps=3):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, 96, (4, 8), generator=g) for _ in range(steps)]


def _train(model, device, batches):
    """torch_xla's loop: AdamW, clipping, xm.optimizer_step, xm.mark_step."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses, compiles = [], []
    for ids in batches:
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer_step(opt, device)
        losses.append(loss.item())
        compiles.append(metrics.counter_value("UncachedCompile"))
    return losses, {n: p.detach().cpu() for n, p in model.named_parameters()}, compiles


def _assert_equal_to_eager(got, expected):
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-4)
    assert got[1].keys() == expected[1].keys()
    for name, p in got[1].items():
        torch.testing.assert_close(p, expected[1][name], rtol=1e-4, atol=1e-4, msg=name)
    # Step 1 makes AdamW's moments, step 2 reads them (as on one device); then one graph.
    assert got[2][1] == got[2][-1], got[2]


def test_mark_sharding_lays_out_torch_tensors(four_devices):
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
    cpu = torch.arange(48, dtype=torch.float32).reshape(8, 6)
    t = cpu.to(DEV)
    assert xs.mark_sharding(t, mesh, ("data", "model")) is t
    assert xs.get_sharding_spec(t) == "{devices=[2,2]<=[4]}" == lt._C._get_xla_sharding_spec(t._lt)
    torch.testing.assert_close(t.cpu(), cpu)  # the tiles read back whole
    # An activation (a pending value, under autograd) is annotated in the graph.
    w = torch.ones(6, 4, device=DEV, requires_grad=True)
    y = xs.mark_sharding(t @ w, mesh, (None, "model"))
    assert xs.get_sharding_spec(y) == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"
    y.sum().backward()
    xm.mark_step()
    assert "num_partitions=4" in lt._C._last_compiled_hlo()
    torch.testing.assert_close(y.detach().cpu(), cpu @ torch.ones(6, 4))
    torch.testing.assert_close(w.grad.cpu(), cpu.sum(0)[:, None].expand(6, 4))
    assert xs.clear_sharding(t) is t and xs.get_sharding_spec(t) == ""
    with pytest.raises(TypeError, match=r"mark_sharding: t is a torch tensor on cpu: .*t\.to\(xm\.xla_device\(\)\)"):
        xs.mark_sharding(cpu, mesh, ("data", None))
    with pytest.raises(RuntimeError, match=r"dimension 0 of \[6, 6\] does not divide into 4 tiles.*test_torch_lazy_device_spmd\.py"):
        xs.mark_sharding(cpu[:6].to(DEV), mesh, (("data", "model"), None))


def test_torch_xla_names_reach_the_same_functions():
    import lazytrain.torch_xla.distributed.spmd as txs
    import lazytrain.torch_xla.experimental.spmd_fully_sharded_data_parallel as tfsdp

    assert txs is xs and txs.mark_sharding is xs.mark_sharding
    assert tfsdp.SpmdFullyShardedDataParallel is FSDPv2


def test_llama_tensor_parallel_on_a_2x2_mesh_equals_eager(four_devices):
    """Megatron's layout by hand (xs.mark_sharding on each attention and MLP
    weight, the batch over "data"): eager's losses and parameters."""
    model, batches = _llama(), _batches()
    expected = _train(copy.deepcopy(model), torch.device("cpu"), batches)
    mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
    model.to(DEV)
    for name, p in model.named_parameters():
        module = name.rsplit(".", 2)[-2]
        if module in COLWISE:
            xs.mark_sharding(p, mesh, ("model", None))
        elif module in ROWWISE:
            xs.mark_sharding(p, mesh, (None, "model"))
    specs = {n: xs.get_sharding_spec(p) for n, p in model.named_parameters()}
    assert specs["model.layers.1.self_attn.q_proj.weight"] == "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"
    assert specs["model.layers.1.mlp.down_proj.weight"] == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"
    assert specs["model.embed_tokens.weight"] == "" and specs["lm_head.weight"] == ""
    # parallelize_module's Megatron plan gives a torch model the same layouts.
    planned = xs.parallelize_module(_llama().to(DEV), mesh, xs.megatron_plan())
    assert {n: xs.get_sharding_spec(p) for n, p in planned.named_parameters()} == specs
    del planned

    got = _train(model, DEV, [xs.mark_sharding(ids.to(DEV), mesh, ("data", None)) for ids in batches])
    hlo = lt._C._last_compiled_hlo()
    assert "num_partitions=4" in hlo and " all-reduce(" in hlo
    # The step's own layouts are the tiles': a q_proj weight tile is [16, 32] on each device.
    assert "f32[16,32]" in hlo
    _assert_equal_to_eager(got, expected)
    assert xs.get_sharding_spec(model.model.layers[1].self_attn.q_proj.weight) == specs["model.layers.1.self_attn.q_proj.weight"]


def test_llama_fsdpv2_equals_eager(four_devices):
    """FSDPv2 over a mesh of the 4 devices (torch_xla's (n, 1) "fsdp" mesh),
    each batch split by rows by MpDeviceLoader's input_sharding: every
    parameter in tiles, gathered a layer at a time, gradients reduce-scattered."""
    model, batches = _llama(), _batches()
    expected = _train(copy.deepcopy(model), torch.device("cpu"), batches)
    mesh = xs.Mesh(np.arange(4), (4, 1), ("fsdp", "model"))
    with pytest.raises(TypeError, match=r"parameter model\.embed_tokens\.weight is on cpu: move the model to the lazy device"):
        FSDPv2(model, mesh)
    wrapped = FSDPv2(model.to(DEV), mesh)
    assert isinstance(wrapped, torch.nn.Module) and isinstance(wrapped, FSDPv2) and wrapped.module is model
    assert [n for n, _ in wrapped.named_parameters()] == ["module." + n for n, _ in model.named_parameters()]
    specs = {n: xs.get_sharding_spec(p) for n, p in model.named_parameters()}
    assert specs["model.layers.1.mlp.up_proj.weight"] == '{devices=[4,1]<=[4] metadata={op_name="fsdp/model.layers.1"}}'
    assert specs["lm_head.weight"] == '{devices=[4,1]<=[4] metadata={op_name="fsdp"}}'
    assert all(specs.values()), specs  # every parameter: each dimension of this model divides by 4

    loader = pl.MpDeviceLoader(torch.utils.data.DataLoader(torch.cat(batches), batch_size=4), DEV,
                               input_sharding=xs.ShardingSpec(mesh, ("fsdp", None)))
    on_device = list(loader)
    assert all(xs.get_sharding_spec(ids) == "{devices=[4,1]<=[4]}" for ids in on_device)
    got = _train(wrapped, DEV, on_device)
    hlo = lt._C._last_compiled_hlo()
    assert "num_partitions=4" in hlo and " all-gather(" in hlo and " reduce-scatter(" in hlo
    # FSDP's units: a layer's parameters are gathered in one all-gather of all of them.
    layer = sum(p.numel() for p in model.model.layers[1].parameters())
    assert f"f32[{layer}]{{0}} all-gather(f32[{layer // 4}]{{0}}" in hlo
    _assert_equal_to_eager((got[0], {n[len("module."):]: p for n, p in got[1].items()}, got[2]), expected)
