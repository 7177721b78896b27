"""The TensorBoard event files the C++ Trainer writes, read by the real
`tensorboard` package (its EventAccumulator, what TensorBoard's server reads
logs with): a tiny `lazytrain run_mlm` with evaluation, then the scalars
train/loss and eval/loss, their steps and values, against the run's
trainer_state.json log_history.

Needs tensorboard (pinned in python/requirements-interop.txt); skipped without it."""
import glob
import json
import os
import subprocess

import pytest

event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator",
    reason="the tensorboard package is not installed (pip install -r python/requirements-interop.txt)")

import lazytrain  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))


def lazytrain_cli():
    """The command line: the installed package's, else the build tree's."""
    for path in (os.path.join(os.path.dirname(lazytrain.__file__), "bin", "lazytrain"),
                 os.path.join(ROOT, "build", "lazytrain")):
        if os.access(path, os.X_OK):
            return path
    pytest.skip("no lazytrain command line (install the wheel, or bash scripts/build.sh --target lazytrain)")


def test_tensorboard_reads_the_trainers_scalars(tmp_path):
    out = tmp_path / "out"
    cmd = [lazytrain_cli(), "run_mlm",
           "--tokenizer_name", os.path.join(DATA, "bert-base-uncased", "vocab.txt"),
           "--config_name", os.path.join(DATA, "bert-base-uncased", "config.json"),
           "--config_overrides", "hidden_size=32,num_hidden_layers=1,num_attention_heads=2,intermediate_size=37",
           "--max_seq_length", "32", "--train_file", os.path.join(DATA, "sample-text", "sample_text.txt"),
           "--validation_file", os.path.join(DATA, "sample-text", "sample_text.txt"),
           "--per_device_train_batch_size", "4", "--per_device_eval_batch_size", "8", "--do_train", "--do_eval",
           "--max_steps", "8", "--logging_steps", "2", "--evaluation_strategy", "steps", "--eval_steps", "4",
           "--save_strategy", "no", "--report_to", "tensorboard", "--disable_tqdm", "--seed", "42",
           "--output_dir", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]

    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    want = {"train/loss": [(e["step"], e["loss"]) for e in history if "loss" in e],
            "eval/loss": [(e["step"], e["eval_loss"]) for e in history if "eval_loss" in e]}
    # Steps 2, 4, 6, 8 of training; evaluations at 4 and 8 and run_mlm's final one at 8.
    assert [s for s, _ in want["train/loss"]] == [2, 4, 6, 8]
    assert [s for s, _ in want["eval/loss"]] == [4, 8, 8]

    event_files = glob.glob(str(out / "runs" / "**" / "events.out.tfevents.*"), recursive=True)
    assert len(event_files) == 1, event_files
    acc = event_accumulator.EventAccumulator(os.path.dirname(event_files[0]), size_guidance={"scalars": 0})
    acc.Reload()
    assert {"train/loss", "eval/loss"} <= set(acc.Tags()["scalars"]), acc.Tags()
    for tag, expected in want.items():
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        assert [s for s, _ in got] == [s for s, _ in expected], tag
        for (step, value), (_, logged) in zip(got, expected):
            # Event files hold float32; the log history the double it was rounded from.
            assert value == pytest.approx(logged, rel=1e-6), (tag, step)
        assert all(e.wall_time > 1.6e9 for e in acc.Scalars(tag))
