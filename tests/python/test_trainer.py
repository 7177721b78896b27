"""lazytrain.Trainer: a model written in Python trained by the C++ Trainer
with Hugging Face's API; checkpoints resumed exactly after a SIGKILL;
callbacks, compute_metrics, TrainingArguments and HfArgumentParser."""
import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lazytrain as lt

HERE = os.path.dirname(os.path.abspath(__file__))

# A model written in Python with dropout (so resuming must restore the RNG),
# and a dataset of token sequences whose next token is learnable.
MODEL_SOURCE = textwrap.dedent('''
    import numpy as np
    import lazytrain as lt
    import lazytrain.nn as nn

    class TinyLM(nn.Module):
        def __init__(self, vocab=32, width=16):
            super().__init__()
            self.vocab = vocab
            self.embed = nn.Embedding(vocab, width)
            self.hidden = nn.Linear(width, width)
            self.dropout = nn.Dropout(0.1)
            self.head = nn.Linear(width, vocab)

        def forward(self, input_ids, labels=None):
            h = self.dropout(nn.functional.gelu(self.hidden(self.embed(input_ids))))
            logits = self.head(h)
            loss = None
            if labels is not None:
                loss = nn.functional.cross_entropy(logits.reshape(-1, self.vocab), labels.reshape(-1))
            return {"loss": loss, "logits": logits}

    def dataset(n=48, length=6, vocab=32, seed=0):
        rng = np.random.default_rng(seed)
        rows = []
        for _ in range(n):
            start = int(rng.integers(0, vocab))
            ids = (start + np.arange(length)) % vocab
            rows.append({"input_ids": ids, "labels": (ids + 1) % vocab, "text": "not a number"})
        return rows
''')
exec(MODEL_SOURCE)  # noqa: S102 (the same source runs in the subprocesses below)


def args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path / "out"), max_steps=12, per_device_train_batch_size=8, learning_rate=3e-2,
                logging_steps=4, save_steps=6, report_to="none", disable_tqdm=True, seed=7)
    base.update(kw)
    return lt.TrainingArguments(**base)


def test_a_python_model_trains_and_compiles_one_step_graph(tmp_path):
    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path, max_steps=30, save_strategy="no"), train_dataset=dataset())
    out = trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    assert out.global_step == 30 and len(losses) == 7
    assert losses[-1] < 0.5 * losses[0]
    assert trainer._native.train_graph_count == 1  # static shapes: one step graph
    assert out.metrics["train_samples"] == 48


def test_output_directory_has_the_clis_files(tmp_path):
    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path, save_total_limit=1, evaluation_strategy="steps", eval_steps=6),
                         train_dataset=dataset(), eval_dataset=dataset(10, seed=1))
    out = trainer.train()
    metrics = trainer.evaluate()
    trainer.save_model()
    trainer.save_metrics("train", out.metrics)
    trainer.save_metrics("eval", metrics)
    trainer.save_state()
    files = set(os.listdir(tmp_path / "out"))
    assert {"checkpoint-12", "model.safetensors", "train_results.json", "eval_results.json", "all_results.json",
            "trainer_state.json", "training_args.json"} <= files
    assert "checkpoint-6" not in files  # save_total_limit 1
    assert set(os.listdir(tmp_path / "out" / "checkpoint-12")) >= {"model.safetensors", "optimizer.safetensors", "scheduler.json",
                                                                    "rng_state.json", "trainer_state.json", "data_state.json"}
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    assert [e["step"] for e in state["log_history"] if "eval_loss" in e] == [6, 12, 12]
    assert json.loads((tmp_path / "out" / "all_results.json").read_text())["eval_loss"] == pytest.approx(metrics["eval_loss"])
    saved = lt.load(str(tmp_path / "out" / "model.safetensors"))
    np.testing.assert_array_equal(saved["head.weight"].numpy(), trainer.model.head.weight.numpy())


RUN_SOURCE = MODEL_SOURCE + textwrap.dedent('''
    import os, signal, sys
    out, kill_at = sys.argv[1], int(sys.argv[2])

    class KillAt(lt.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    args = lt.TrainingArguments(output_dir=out, max_steps=14, per_device_train_batch_size=8, learning_rate=3e-2,
                                logging_steps=5, save_steps=5, report_to="none", disable_tqdm=True, seed=7)
    trainer = lt.Trainer(model=TinyLM(), args=args, train_dataset=dataset(), callbacks=[KillAt()])
    trainer.train(resume_from_checkpoint=True if lt.get_last_checkpoint(out) else None)
    trainer.save_model()
''')


def run_script(tmp_path, out, kill_at):
    script = tmp_path / "run.py"
    script.write_text(RUN_SOURCE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, str(script), str(out), str(kill_at)], env=env, capture_output=True, text=True, timeout=600)


def test_killed_and_resumed_run_gives_the_uninterrupted_model_byte_for_byte(tmp_path):
    whole = run_script(tmp_path, tmp_path / "whole", -1)
    assert whole.returncode == 0, whole.stderr
    killed = run_script(tmp_path, tmp_path / "resumed", 8)  # after checkpoint-5, in the middle of the next interval
    assert killed.returncode == -9, killed.stderr
    assert lt.get_last_checkpoint(tmp_path / "resumed").endswith("checkpoint-5")
    resumed = run_script(tmp_path, tmp_path / "resumed", -1)
    assert resumed.returncode == 0, resumed.stderr
    assert "Resuming training from" in resumed.stderr
    a = (tmp_path / "whole" / "model.safetensors").read_bytes()
    b = (tmp_path / "resumed" / "model.safetensors").read_bytes()
    assert a == b
    def history(d):  # the logged values, without the timings
        entries = json.loads((d / "checkpoint-14" / "trainer_state.json").read_text())["log_history"]
        return [{k: v for k, v in e.items() if "runtime" not in k and "per_second" not in k} for e in entries]
    assert history(tmp_path / "whole") == history(tmp_path / "resumed")


def test_callbacks_get_hugging_faces_events_and_can_stop_training(tmp_path):
    events = []

    class Recorder(lt.TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            events.append(("begin", state.max_steps))

        def on_log(self, args, state, control, logs=None, **kwargs):
            events.append(("log", state.global_step, sorted(logs)))

        def on_save(self, args, state, control, **kwargs):
            events.append(("save", state.global_step))

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 9:
                control.should_training_stop = True

        def on_train_end(self, args, state, control, model=None, **kwargs):
            events.append(("end", state.global_step, type(model).__name__))

    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path, max_steps=20, save_steps=6), train_dataset=dataset(),
                         callbacks=[Recorder])
    out = trainer.train()
    assert events[0] == ("begin", 20)
    assert ("save", 6) in events
    assert [e[1] for e in events if e[0] == "log" and "loss" in e[2]] == [4, 8]
    assert out.global_step in (9, 10)  # the step traced while 9 ran finishes too
    assert events[-1] == ("end", out.global_step, "TinyLM")


def test_compute_metrics_sees_every_evaluation_example(tmp_path):
    seen = {}

    def compute_metrics(p):
        seen["shapes"] = (p.predictions.shape, p.label_ids.shape)
        return {"accuracy": float((p.predictions == p.label_ids).mean())}

    eval_set = dataset(11, seed=3)  # a last partial batch of 3: its padding rows are left out
    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path, per_device_eval_batch_size=4), train_dataset=dataset(),
                         eval_dataset=eval_set, compute_metrics=compute_metrics,
                         preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1))
    trainer.model.eval()
    expected = np.concatenate([trainer.model(lt.tensor(np.stack([e["input_ids"] for e in eval_set])))["logits"].argmax(-1).numpy()])
    metrics = trainer.evaluate()
    labels = np.stack([e["labels"] for e in eval_set])
    assert seen["shapes"] == ((11, 6), (11, 6))
    assert metrics["eval_accuracy"] == pytest.approx(float((expected == labels).mean()))
    assert "eval_loss" in metrics and metrics["perplexity"] == pytest.approx(np.exp(metrics["eval_loss"]))


def test_training_arguments_are_checked_as_the_cli_checks_them(tmp_path):
    a = lt.TrainingArguments(output_dir=str(tmp_path), evaluation_strategy="steps")
    assert a.do_eval and a.eval_steps == a.logging_steps and a.report_to == ["tensorboard"]
    assert a.logging_dir.startswith(str(tmp_path / "runs"))
    assert json.loads(a.to_json_string())["evaluation_strategy"] == "steps"
    assert lt.TrainingArguments(output_dir=str(tmp_path), eval_strategy="epoch").evaluation_strategy == "epoch"
    with pytest.raises(ValueError, match="--learning_rate"):
        lt.TrainingArguments(output_dir=str(tmp_path), learning_rate=-1.0)
    with pytest.raises(ValueError, match="--save_steps to be a round multiple of --eval_steps"):
        lt.TrainingArguments(output_dir=str(tmp_path), load_best_model_at_end=True, evaluation_strategy="steps", eval_steps=3,
                             save_steps=4)
    with pytest.raises(TypeError):
        lt.TrainingArguments(output_dir=str(tmp_path), no_such_argument=1)


def test_hf_argument_parser_reads_dataclasses_from_the_command_line(tmp_path):
    @dataclasses.dataclass
    class ModelArguments:
        model_type: str = dataclasses.field(default="bert", metadata={"help": "bert or roberta"})
        config_overrides: str = None

    parser = lt.HfArgumentParser((ModelArguments, lt.TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses(
        ["--model_type", "roberta", "--output_dir", str(tmp_path), "--do_train", "--learning_rate", "1e-3", "--max_steps", "5",
         "--report_to", "none"])
    assert model_args.model_type == "roberta" and model_args.config_overrides is None
    assert training_args.do_train and training_args.learning_rate == 1e-3 and training_args.max_steps == 5
    assert training_args.report_to == ["none"]
    with pytest.raises(SystemExit):
        parser.parse_args_into_dataclasses(["--output_dir", str(tmp_path), "--learning_rate", "fast"])


def test_bad_models_data_and_collators_are_one_clear_error(tmp_path):
    with pytest.raises(TypeError, match="lazytrain.nn.Module"):
        lt.Trainer(model=object(), args=args(tmp_path))
    with pytest.raises(ValueError, match="num_cores"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path, num_cores=2))

    class NoLoss(TinyLM):
        def forward(self, input_ids):
            return {"logits": self.head(self.embed(input_ids))}

    trainer = lt.Trainer(model=NoLoss(), args=args(tmp_path), train_dataset=dataset())
    with pytest.raises(ValueError, match="returned no loss"):
        trainer.train()
    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path), train_dataset=dataset(), data_collator=lambda examples: [1, 2])
    with pytest.raises(TypeError, match="expected a dict of arrays"):
        trainer.train()


def test_user_mistakes_are_one_clear_python_error_before_training(tmp_path):
    # A loss that is no Tensor (was std::bad_cast from C++), or not a scalar.
    class FloatLoss(TinyLM):
        def forward(self, input_ids, labels=None):
            return {"loss": 1.0}

    class VectorLoss(TinyLM):
        def forward(self, input_ids, labels=None):
            return {"loss": self.head(self.embed(input_ids)).sum(-1)}

    with pytest.raises(TypeError, match="FloatLoss returned a loss of type float"):
        lt.Trainer(model=FloatLoss(), args=args(tmp_path), train_dataset=dataset()).train()
    with pytest.raises(ValueError, match=r"VectorLoss returned a loss of shape \[8, 6\]; expected a scalar"):
        lt.Trainer(model=VectorLoss(), args=args(tmp_path), train_dataset=dataset()).train()

    # Collated fields the model takes must be numeric; text-only examples name the fix.
    def strings(examples):
        return {"input_ids": [str(e["input_ids"]) for e in examples], "labels": np.stack([e["labels"] for e in examples])}

    with pytest.raises(TypeError, match="field 'input_ids' as a list of str; TinyLM.forward takes 'input_ids'"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path), train_dataset=dataset(), data_collator=strings).train()
    with pytest.raises(TypeError, match="no numeric array.*tokenize the text first"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path), train_dataset=[{"text": "hello"}] * 16).train()
    with pytest.raises(TypeError, match="default_data_collator: example 0 is a list"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path), train_dataset=[[1, 2, 3]] * 16).train()

    # A DatasetDict (or a dict of splits) instead of one split.
    with pytest.raises(TypeError, match=r"training dataset is a dict with keys \['train'\]"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path), train_dataset={"train": dataset()}).train()

    # An output_dir that is a file fails before the first step, not at the first checkpoint.
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path, output_dir=str(a_file)), train_dataset=dataset()).train()

    # An evaluation strategy without an eval_dataset.
    with pytest.raises(ValueError, match="eval_strategy is 'steps' but the Trainer has no eval_dataset"):
        lt.Trainer(model=TinyLM(), args=args(tmp_path, eval_strategy="steps", eval_steps=4),
                   train_dataset=dataset()).train()

    # compute_metrics must give a dict of numbers.
    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path), eval_dataset=dataset(8),
                         compute_metrics=lambda p: {"accuracy": "high"})
    with pytest.raises(TypeError, match="compute_metrics returned 'accuracy': 'high'"):
        trainer.evaluate()


def test_training_arguments_take_paths_and_reject_non_finite_numbers(tmp_path):
    assert lt.TrainingArguments(output_dir=tmp_path / "out").output_dir == str(tmp_path / "out")
    with pytest.raises(ValueError, match="'learning_rate': expected a finite number, got nan"):
        lt.TrainingArguments(output_dir=str(tmp_path), learning_rate=float("nan"))
    with pytest.raises(ValueError, match="'max_grad_norm': expected a finite number, got inf"):
        lt.TrainingArguments(output_dir=str(tmp_path), max_grad_norm=float("inf"))


def test_evaluate_on_another_dataset_keeps_the_training_state(tmp_path):
    trainer = lt.Trainer(model=TinyLM(), args=args(tmp_path, max_steps=6, save_strategy="no"), train_dataset=dataset(),
                         eval_dataset=dataset(16, seed=1))
    trainer.train()
    native = trainer._native
    first = trainer.evaluate()
    other_set = dataset(8, seed=5)
    other = trainer.evaluate(eval_dataset=other_set)
    # The other set's loss, computed here by the model itself.
    trainer.model.eval()
    batch = {k: lt.tensor(np.stack([e[k] for e in other_set])) for k in ("input_ids", "labels")}
    expected = trainer.model(**batch)["loss"].item()
    assert other["eval_loss"] == pytest.approx(expected, rel=1e-5)
    assert other["eval_loss"] != pytest.approx(first["eval_loss"], rel=1e-6)
    assert trainer._native is native and trainer.state.global_step == 6  # nothing was rebuilt or reset
    assert trainer.evaluate()["eval_loss"] == pytest.approx(first["eval_loss"], rel=1e-7)  # the own set again
