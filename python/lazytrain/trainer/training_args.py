"""TrainingArguments: transformers.TrainingArguments with the fields lazytrain's
Trainer takes, which are the CLI's flags (``lazytrain run_mlm --help``): the
same names, defaults and checks. The checks and the resolved defaults
(Hugging Face's ``__post_init__``: do_eval with an evaluation strategy,
eval_steps = logging_steps, logging_dir = <output_dir>/runs/<date>_<host>,
greater_is_better, report_to "all" -> "tensorboard") are the C++ TrainingArguments'
(src/train/training_arguments.h), so a Python run and a CLI run agree; so are
the fields themselves (name, type, default, help: the one list of
src/train/training_argument_fields.h).

lazytrain's additions to Hugging Face's fields: execution_mode, detect_anomaly,
debug_recompiles, debug_graphs, loader_prefetch_size, device_prefetch_size
(PyTorch/XLA's MpDeviceLoader), num_cores (xla_spawn.py's), num_threads,
collective_timeout, sharded_optimizer, fsdp (Hugging Face's name, FSDPv2 here),
tp_size."""
import dataclasses
import json
import math
import os
from typing import List, Optional, Union

from .. import _C

# The annotations the C++ field list names (python/src/trainer.cpp python_type).
_TYPES = {"bool": bool, "int": int, "float": float, "str": str, "object": object, "Optional[int]": Optional[int],
          "Optional[bool]": Optional[bool], "Optional[str]": Optional[str], "Union[str, List[str]]": Union[str, List[str]]}


def _with_cpp_fields(cls):
    """Makes `cls` a dataclass whose fields are the C++ TrainingArguments'
    (src/train/training_argument_fields.h, the one list the CLI's flags and
    training_args.json come from too): name, type, default and help
    (``metadata["help"]``, which HfArgumentParser prints), in the list's order.
    An alias field (eval_strategy) defaults to None and sets its field in
    __post_init__."""
    annotations = {}
    aliases = {}
    for name, type_name, default, help_text, alias_of in _C._training_argument_fields():
        annotations[name] = _TYPES[type_name]
        metadata = {"help": help_text}
        if isinstance(default, list):
            value = dataclasses.field(default_factory=lambda d=tuple(default): list(d), metadata=metadata)
        else:
            value = dataclasses.field(default=default, metadata=metadata)
        setattr(cls, name, value)
        if alias_of is not None:
            aliases[name] = alias_of
    cls.__annotations__ = annotations
    cls._aliases = aliases
    return dataclasses.dataclass(cls)


@_with_cpp_fields
class TrainingArguments:
    """transformers.TrainingArguments with lazytrain's fields: one per flag of
    ``lazytrain run_mlm --help``, with the same names, defaults and checks
    (``dataclasses.fields(TrainingArguments)`` lists them, each with its help
    in ``metadata["help"]``). ``eval_strategy`` is ``evaluation_strategy``'s
    newer name; ``output_dir`` defaults to "trainer_output" as Hugging Face's."""

    def __post_init__(self):
        """Checks every field as the CLI does and fills the resolved defaults.
        Raises ValueError naming the field ("[TrainingArguments] --learning_rate ...")."""
        for alias, name in self._aliases.items():
            if getattr(self, alias) is not None:
                setattr(self, name, getattr(self, alias))
        if isinstance(self.report_to, str):
            self.report_to = [self.report_to]
        for name in ("output_dir", "logging_dir", "resume_from_checkpoint"):  # pathlib.Path, as transformers takes
            if isinstance(getattr(self, name), os.PathLike):
                setattr(self, name, os.fspath(getattr(self, name)))
        fields = self._cpp_fields()
        for name, value in fields.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"[TrainingArguments] training argument '{name}': expected a finite number, got {value}")
        try:
            native = _C._TrainingArguments(fields)
            native.validate()
            native.resolve()
        except _C.LazytrainError as e:
            raise ValueError(str(e)) from None
        for key, value in native.to_dict().items():
            setattr(self, key, value)
        for alias, name in self._aliases.items():
            setattr(self, alias, getattr(self, name))

    def _cpp_fields(self):
        d = dataclasses.asdict(self)
        for alias in self._aliases:
            d.pop(alias)
        return d

    def _native(self):
        """The C++ TrainingArguments of these fields (not resolved again), for the C++ Trainer."""
        try:
            return _C._TrainingArguments(self._cpp_fields())
        except _C.LazytrainError as e:
            raise ValueError(str(e)) from None

    def to_dict(self):
        return self._cpp_fields()

    def to_json_string(self):
        """The fields as training_args.json holds them (the CLI's keys and values)."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @property
    def world_size(self):
        return _C._world_size()

    @property
    def process_index(self):
        return _C._ordinal()

    @property
    def should_save(self):
        """Whether this replica writes files (the master ordinal)."""
        return _C._is_master_ordinal(False)
