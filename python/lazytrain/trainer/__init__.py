"""The training loop, Hugging Face's way: Trainer, TrainingArguments,
callbacks and the trainer utilities (transformers' names)."""
from .training_args import TrainingArguments  # noqa: F401
from .trainer_callback import TrainerCallback, TrainerControl, TrainerState  # noqa: F401
from .trainer_utils import EvalPrediction, TrainOutput, get_last_checkpoint, set_seed  # noqa: F401
from .trainer import Trainer  # noqa: F401
from .hf_argparser import HfArgumentParser  # noqa: F401
