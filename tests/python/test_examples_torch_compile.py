"""examples/python/hf_run_mlm.py and hf_run_clm.py (transformers' run_mlm.py /
run_clm.py flow with transformers' own BertForMaskedLM and GPT2LMHeadModel,
issue 54 item 6): with `--torch_compile --torch_compile_backend lazytrain`
they log, step by step, the losses and gradient norms the same script logs in
torch eager, and the same eval loss; no graph break, no recompile, no op in
torch eager.

Needs torch, transformers, accelerate and datasets
(python/requirements-interop.txt) and the shared data (WikiText-2, BERT's
vocab, GPT-2's BPE files: LAZYTRAIN_DATA_DIR, else ../shared/data beside the
repository); skipped with the reason otherwise."""
import json
import math
import os
import subprocess
import sys

import pytest

for package in ("torch", "transformers", "accelerate", "datasets"):
    pytest.importorskip(package, reason=f"needs {package} (pip install -r python/requirements-interop.txt)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
EXAMPLES = os.path.join(ROOT, "examples", "python")

COMMON = ["--train_file", f"{DATA}/wikitext-2/valid.txt", "--validation_file", f"{DATA}/wikitext-2/test.txt",
          "--max_train_samples", "48", "--max_eval_samples", "16", "--per_device_train_batch_size", "8",
          "--per_device_eval_batch_size", "8", "--max_steps", "4", "--logging_steps", "1", "--learning_rate", "1e-3",
          "--seed", "7", "--do_train", "--do_eval", "--use_cpu", "--report_to", "none", "--save_strategy", "no",
          "--dataloader_num_workers", "0", "--disable_tqdm", "true"]
SCRIPTS = {
    "mlm": ["hf_run_mlm.py", "--model_type", "bert", "--tokenizer_name", f"{DATA}/bert-base-uncased",
            "--config_overrides", "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=64,"
                                  "hidden_dropout_prob=0,attention_probs_dropout_prob=0", "--max_seq_length", "32"],
    "clm": ["hf_run_clm.py", "--model_type", "gpt2", "--tokenizer_name", f"{DATA}/gpt2",
            "--config_overrides", "n_embd=32,n_layer=1,n_head=2,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0",
            "--block_size", "32"],
}
NEEDED = ["wikitext-2/valid.txt", "wikitext-2/test.txt", "bert-base-uncased/vocab.txt", "gpt2/vocab.json",
          "gpt2/merges.txt"]


def run(task, out, *extra):
    missing = [p for p in NEEDED if not os.path.exists(os.path.join(DATA, p))]
    if missing:
        pytest.skip(f"{DATA} lacks {', '.join(missing)} (set LAZYTRAIN_DATA_DIR to the shared data)")
    script, *arguments = SCRIPTS[task]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", LAZYTRAIN_DYNAMO_FALLBACK="error", TORCH_LOGS="recompiles,graph_breaks")
    cmd = [sys.executable, os.path.join(EXAMPLES, script)] + arguments + COMMON + ["--output_dir", str(out)] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr[-4000:]}"
    history = json.load(open(os.path.join(out, "trainer_state.json")))["log_history"]
    steps = [e for e in history if "loss" in e]
    results = json.load(open(os.path.join(out, "all_results.json")))
    return steps, results, r.stderr


@pytest.mark.parametrize("task", ["mlm", "clm"])
def test_hf_example_compiled_by_lazytrain_logs_the_eager_losses(tmp_path, task):
    eager, eager_results, _ = run(task, tmp_path / "eager")
    steps, results, log = run(task, tmp_path / "lazytrain", "--torch_compile", "--torch_compile_backend", "lazytrain")

    assert "Graph break" not in log and "Recompiling" not in log, log[-4000:]
    assert [e["step"] for e in steps] == [e["step"] for e in eager] == [1, 2, 3, 4]
    for got, want in zip(steps, eager):
        assert math.isfinite(got["loss"]) and math.isfinite(got["grad_norm"])
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-4, abs=1e-4), (steps, eager)
        assert got["grad_norm"] == pytest.approx(want["grad_norm"], rel=1e-4, abs=1e-4), (steps, eager)
    assert math.isfinite(results["eval_loss"])
    assert results["eval_loss"] == pytest.approx(eager_results["eval_loss"], rel=1e-4, abs=1e-4)
    assert results["train_samples"] == 48 and results["eval_samples"] == 16
    assert not os.path.exists(tmp_path / "eager" / "metrics_report.txt")
    assert counters(tmp_path / "lazytrain")["DynamoGraphs"] == 2  # the training step's forward and backward
    assert "DynamoFallbackNodes" not in counters(tmp_path / "lazytrain")


def counters(out):
    """The counters of lazytrain's metrics report (the scripts write it when compiling with lazytrain)."""
    lines = open(os.path.join(out, "metrics_report.txt")).read().splitlines()
    return {line.split(": ", 1)[1]: float(lines[i + 1].split(": ", 1)[1])
            for i, line in enumerate(lines) if line.startswith("Counter: ")}
