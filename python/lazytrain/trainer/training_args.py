"""TrainingArguments: transformers.TrainingArguments with the fields lazytrain's
Trainer takes, which are the CLI's flags (``lazytrain run_mlm --help``): the
same names, defaults and checks. The checks and the resolved defaults
(Hugging Face's ``__post_init__``: do_eval with an evaluation strategy,
eval_steps = logging_steps, logging_dir = <output_dir>/runs/<date>_<host>,
greater_is_better, report_to "all" -> "tensorboard") are the C++ TrainingArguments'
(src/train/training_arguments.h), so a Python run and a CLI run agree.

lazytrain's additions to Hugging Face's fields: execution_mode, detect_anomaly,
debug_recompiles, debug_graphs, loader_prefetch_size, device_prefetch_size
(PyTorch/XLA's MpDeviceLoader), num_cores (xla_spawn.py's), num_threads,
collective_timeout, sharded_optimizer, fsdp (Hugging Face's name, FSDPv2 here),
tp_size."""
import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import List, Optional, Union

from .. import _C


@dataclass
class TrainingArguments:
    output_dir: str = "trainer_output"
    overwrite_output_dir: bool = False
    do_train: bool = False
    do_eval: bool = False
    evaluation_strategy: str = "no"
    eval_strategy: Optional[str] = None  # Hugging Face's newer name of evaluation_strategy
    per_device_train_batch_size: int = 8
    per_device_eval_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0
    num_train_epochs: float = 3.0
    max_steps: int = -1
    lr_scheduler_type: str = "linear"
    warmup_ratio: float = 0.0
    warmup_steps: int = 0
    logging_dir: Optional[str] = None
    logging_steps: int = 500
    eval_steps: Optional[int] = None
    save_strategy: str = "steps"
    save_steps: int = 500
    save_total_limit: Optional[int] = None
    load_best_model_at_end: bool = False
    metric_for_best_model: Optional[str] = None
    greater_is_better: Optional[bool] = None
    report_to: Union[str, List[str]] = field(default_factory=lambda: ["all"])
    resume_from_checkpoint: Optional[str] = None
    dataloader_drop_last: bool = False
    seed: int = 42
    tpu_metrics_debug: bool = False
    execution_mode: str = "lazy"
    detect_anomaly: bool = False
    debug_recompiles: bool = False
    debug_graphs: bool = False
    disable_tqdm: bool = False
    bf16: bool = False
    gradient_checkpointing: bool = False
    dataloader_num_workers: int = 0
    loader_prefetch_size: int = 8
    device_prefetch_size: int = 4
    num_cores: int = 1
    num_threads: int = 0
    collective_timeout: float = 300.0
    sharded_optimizer: bool = False
    # Hugging Face's fsdp ("full_shard", or a list of options): one SPMD program
    # over the devices of lazytrain.runtime.use_spmd(n), every parameter split
    # over all of them (FSDPv2); per_device_train_batch_size is per device.
    fsdp: object = ""
    # Hugging Face's tp_size: above 1, one SPMD program over the devices of
    # lazytrain.runtime.use_spmd(n) as a (n / tp_size) x tp_size mesh ("data",
    # "model"): Megatron's layout and vocabulary-parallel loss over "model",
    # the batch over "data" (per_device_train_batch_size x n / tp_size rows).
    tp_size: int = 1

    def __post_init__(self):
        """Checks every field as the CLI does and fills the resolved defaults.
        Raises ValueError naming the field ("[TrainingArguments] --learning_rate ...")."""
        if self.eval_strategy is not None:
            self.evaluation_strategy = self.eval_strategy
        if isinstance(self.report_to, str):
            self.report_to = [self.report_to]
        for name in ("output_dir", "logging_dir", "resume_from_checkpoint"):  # pathlib.Path, as transformers takes
            if isinstance(getattr(self, name), os.PathLike):
                setattr(self, name, os.fspath(getattr(self, name)))
        fields = {k: v for k, v in self._cpp_fields().items()}
        for name, value in fields.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"[TrainingArguments] training argument '{name}': expected a finite number, got {value}")
        try:
            resolved = json.loads(_C._training_arguments(json.dumps(fields)))
        except _C.LazytrainError as e:
            raise ValueError(str(e)) from None
        for key, value in resolved.items():
            setattr(self, "tpu_metrics_debug" if key == "tpu_metrics_debug" else key, value)
        self.eval_strategy = self.evaluation_strategy

    def _cpp_fields(self):
        d = dataclasses.asdict(self)
        d.pop("eval_strategy")
        return d

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
