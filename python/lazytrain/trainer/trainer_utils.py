"""transformers.trainer_utils' names: EvalPrediction, TrainOutput,
get_last_checkpoint, set_seed."""
import os
from typing import Dict, NamedTuple

import numpy as np

from .. import _C


class EvalPrediction(NamedTuple):
    """predictions: numpy [N, ...] (the logits, or what
    preprocess_logits_for_metrics made of them); label_ids: numpy [N, ...], the
    batches' labels. N = every evaluation example (padding rows of a last
    partial batch left out); batches of other trailing lengths are padded with
    -100 to the longest, as transformers' nested_concat does."""
    predictions: np.ndarray
    label_ids: np.ndarray


class TrainOutput(NamedTuple):
    global_step: int
    training_loss: float
    metrics: Dict[str, float]


def get_last_checkpoint(folder):
    """The newest complete checkpoint-<step> directory in `folder`, or None
    (an incomplete one, as a killed save leaves none, is skipped)."""
    return _C._get_last_checkpoint(os.fspath(folder))


def set_seed(seed):
    """transformers.set_seed: lazytrain's generator (manual_seed) and numpy's global one."""
    _C.manual_seed(int(seed))
    np.random.seed(int(seed) % (2 ** 32))
