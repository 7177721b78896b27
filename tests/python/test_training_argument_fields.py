"""One list of training arguments (src/train/training_argument_fields.h) drives
every form of them: Python's TrainingArguments dataclass (names, types,
defaults, help), the CLI's flags (docs/reference/cli_flags.json, which ctest
cli.reference_is_current keeps equal to ``lazytrain --help-json``) and the
values the C++ TrainingArguments reads and writes (training_args.json)."""
import dataclasses
import json
import typing
from pathlib import Path

import pytest

import lazytrain as lt
from lazytrain import _C

REPO = Path(__file__).resolve().parents[2]


def _cpp_fields():
    return [dict(zip(("name", "type", "default", "help", "alias_of"), f)) for f in _C._training_argument_fields()]


def test_every_listed_field_is_a_dataclass_field_with_its_default_type_and_help():
    fields = {f.name: f for f in dataclasses.fields(lt.TrainingArguments)}
    listed = _cpp_fields()
    assert [f["name"] for f in listed] == list(fields)  # the same fields, in the list's order
    hints = typing.get_type_hints(lt.TrainingArguments)
    for f in listed:
        field = fields[f["name"]]
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        assert default == f["default"], f["name"]
        assert field.metadata["help"] == f["help"], f["name"]
    # Hugging Face's names and defaults, where lazytrain has the field.
    assert fields["output_dir"].default == "trainer_output"
    assert fields["learning_rate"].default == 5e-5 and fields["seed"].default == 42
    assert fields["eval_strategy"].default is None and fields["tpu_metrics_debug"].default is False
    # The annotations of the list's types (HfArgumentParser reads them).
    assert (hints["learning_rate"], hints["max_steps"], hints["do_train"], hints["output_dir"]) == (float, int, bool, str)
    assert (hints["eval_steps"], hints["greater_is_better"], hints["logging_dir"]) == (typing.Optional[int], typing.Optional[bool],
                                                                                       typing.Optional[str])
    assert hints["report_to"] == typing.Union[str, typing.List[str]] and hints["fsdp"] is object
    assert lt.TrainingArguments.__init__.__code__.co_varnames[1:3] == ("output_dir", "overwrite_output_dir")


@pytest.mark.parametrize("command", ["run_mlm", "run_clm"])
def test_every_listed_field_is_a_flag_of_the_training_commands_with_its_help(command):
    reference = json.loads((REPO / "docs" / "reference" / "cli_flags.json").read_text())
    options = next(c for c in reference["commands"] if c["name"] == command)["options"]
    by_name = {name: o for o in options for name in o["names"]}
    for f in _cpp_fields():
        flag = by_name.get("--" + f["name"])
        assert flag is not None, f"--{f['name']} is not a flag of {command}"
        if f["alias_of"] is None:
            assert flag["help"] == f["help"], f["name"]
        else:
            assert flag is by_name["--" + f["alias_of"]], f"--{f['name']} is not another name of --{f['alias_of']}"
    assert by_name["--tpu_metrics_debug"]["name"] == "--metrics_debug"
    assert by_name["--output_dir"]["required"] is True
    assert by_name["--execution_mode"]["choices"] == ["lazy", "debug_eager", "strict_eager", "fused_eager"]


def test_every_field_round_trips_through_the_cpp_arguments(tmp_path):
    changed = {"output_dir": str(tmp_path), "overwrite_output_dir": True, "learning_rate": 1e-3, "max_steps": 9,
               "logging_dir": str(tmp_path / "logs"), "eval_steps": 3, "save_steps": 6, "save_total_limit": 2,
               "metric_for_best_model": "accuracy", "greater_is_better": True, "report_to": ["none"], "seed": 7,
               "tpu_metrics_debug": True, "execution_mode": "debug_eager", "collective_timeout": 12.5, "tp_size": 2}
    args = lt.TrainingArguments(**changed)
    values = args.to_dict()
    assert set(values) == {f["name"] for f in _cpp_fields() if f["alias_of"] is None}
    assert {k: values[k] for k in changed} == changed
    assert _C._TrainingArguments(values).to_dict() == values
    assert json.loads(args.to_json_string()) == values


def test_the_cpp_arguments_name_an_unknown_field_or_a_value_of_the_wrong_type():
    with pytest.raises(_C.LazytrainError, match="unknown training argument 'no_such_argument'"):
        _C._TrainingArguments({"no_such_argument": 1})
    with pytest.raises(_C.LazytrainError, match="training argument 'max_steps': expected an integer, got 1.5"):
        _C._TrainingArguments({"max_steps": 1.5})
    with pytest.raises(ValueError, match="'do_train': expected true or false"):
        lt.TrainingArguments(output_dir="out", do_train=1)
    with pytest.raises(TypeError, match="expected None, a bool, int, float, str, list or dict, got set"):
        lt.TrainingArguments(output_dir="out", report_to={"none"})


def test_hf_argument_parser_reads_the_listed_fields_with_their_help():
    parser = lt.HfArgumentParser(lt.TrainingArguments)
    (args,) = parser.parse_args_into_dataclasses(["--output_dir", "out", "--eval_strategy", "epoch", "--max_steps", "5"])
    assert (args.evaluation_strategy, args.max_steps, args.do_eval) == ("epoch", 5, True)
    assert "Log every X optimizer steps" in parser.format_help()


def test_callbacks_get_the_state_and_metrics_as_python_values(tmp_path):
    from test_trainer import TinyLM, dataset
    seen = []

    class Recorder(lt.TrainerCallback):
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            seen.append((state.global_step, dict(metrics), list(state.log_history), state.is_world_process_zero))

    args = lt.TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=8, per_device_train_batch_size=8, learning_rate=3e-2,
                                logging_steps=4, save_steps=4, eval_strategy="steps", eval_steps=4, load_best_model_at_end=True,
                                report_to="none", disable_tqdm=True, seed=7)
    trainer = lt.Trainer(model=TinyLM(), args=args, train_dataset=dataset(), eval_dataset=dataset(10, seed=1), callbacks=[Recorder])
    trainer.train()
    assert [s[0] for s in seen] == [4, 8]
    step, metrics, history, zero = seen[-1]
    assert isinstance(metrics["eval_loss"], float) and zero is True
    assert all(isinstance(entry, dict) for entry in history) and history[-1]["step"] == 8
    state = trainer.state  # the C++ Trainer's final state, field by field
    assert state.global_step == 8 and state.max_steps == 8 and state.eval_steps == 4
    assert state.best_metric == pytest.approx(min(s[1]["eval_loss"] for s in seen))
    assert state.best_model_checkpoint in (str(tmp_path / "out" / "checkpoint-4"), str(tmp_path / "out" / "checkpoint-8"))
    saved = json.loads((tmp_path / "out" / "checkpoint-8" / "trainer_state.json").read_text())
    assert saved["best_model_checkpoint"] == state.best_model_checkpoint and saved["log_history"] == state.log_history[:len(saved["log_history"])]
