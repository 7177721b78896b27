"""The op census of issue 54 (tests/python/data/torch_op_census.json, written by
tools/torch_op_census.py): every ATen op that the census's transformers models
emit through aot_autograd with lazytrain's decomposition table must be lowered
(lazytrain.torch_backend.lowering.LOWERINGS) or handled structurally, and the
census must still hold for the pinned torch and transformers."""
import importlib.util
import json
import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pinned 5.23.0)")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CENSUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch_op_census.json")
TOOL = os.path.join(ROOT, "tools", "torch_op_census.py")

# Call targets the backend handles without a lowering: FX plumbing of multi-output ops.
STRUCTURAL = {"operator.getitem"}


def _census():
    with open(CENSUS) as f:
        return json.load(f)


def _tool():
    spec = importlib.util.spec_from_file_location("torch_op_census", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_census_op_is_lowered_or_decomposed():
    import lazytrain.torch_backend.lowering as lowering
    from lazytrain.torch_backend._decompositions import decomposition_table

    lowered = {str(op) for op in lowering.LOWERINGS}
    # Decomposed ops never reach the backend (aot_autograd replaces them), so they
    # cannot be in the census; listed here so that a stale census still passes for them.
    decomposed = {str(op) for op in decomposition_table()}
    handled = lowered | decomposed | STRUCTURAL
    census = _census()
    missing_by_arch = {}
    for name, arch in census["architectures"].items():
        missing = sorted(set(arch["ops"]) - handled)
        if missing:
            missing_by_arch[name] = missing
    missing_all = sorted(set(census["union"]) - handled)
    if missing_all:
        lines = [f"{len(missing_all)} of the census's {len(census['union'])} ops are neither lowered "
                 f"(LOWERINGS) nor decomposed: {', '.join(missing_all)}", "per architecture:"]
        lines += [f"  {name} ({census['architectures'][name]['class']}): {', '.join(ops)}"
                  for name, ops in missing_by_arch.items()]
        pytest.fail("\n".join(lines), pytrace=False)


def test_census_is_consistent():
    census = _census()
    union = set()
    for name, arch in census["architectures"].items():
        ops = set()
        for mode, entry in arch["modes"].items():
            assert "error" not in entry, (name, mode, entry["error"])
            ops.update(entry.get("ops", ()))
        assert sorted(ops) == arch["ops"], name
        union |= ops
    assert sorted(union) == census["union"]
    # the minimum: BERT, RoBERTa, GPT-2, Llama and twelve more
    assert {"bert", "roberta", "gpt2", "llama"} <= set(census["architectures"])
    assert len(census["architectures"]) >= 16


def test_census_bert_train_is_current():
    """Re-runs the census for BERT in train mode (sdpa and eager): a torch or
    transformers bump that changes the ops, graphs or graph breaks fails here;
    refresh with `tools/torch_op_census.py` and review the lowering test."""
    census = _census()
    tool = _tool()
    spec = next(s for s in tool.ARCHITECTURES if s[0] == "bert")
    stored = census["architectures"]["bert"]["modes"]
    for mode in ("train/sdpa", "train/eager"):
        now = tool.census_mode(spec, mode)
        assert now == stored[mode], (
            f"BertForMaskedLM {mode} differs from {os.path.basename(CENSUS)} "
            f"(recorded with torch {census['torch']}, transformers {census['transformers']}; "
            f"now torch {torch.__version__}, transformers {transformers.__version__}):\n"
            f"  ops added: {sorted(set(now.get('ops', ())) - set(stored[mode].get('ops', ())))}\n"
            f"  ops gone: {sorted(set(stored[mode].get('ops', ())) - set(now.get('ops', ())))}\n"
            f"  now: {{k: v for k, v in now.items() if k != 'ops'}} = "
            f"{ {k: v for k, v in now.items() if k != 'ops'} }")
