"""TrainerCallback, TrainerState and TrainerControl as transformers names them.

A callback is called on every replica with (args, state, control, **kwargs);
``on_log`` gets ``logs``, ``on_evaluate`` gets ``metrics``, and every hook
gets ``model``. Setting ``control.should_training_stop`` in any hook ends
training after the current step. The progress bar, the printed log lines and
TensorBoard are the C++ Trainer's own callbacks (train/trainer_callback.h),
which run first."""
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class TrainerState:
    """transformers.TrainerState's fields (trainer_state.json) at the time of the event."""
    epoch: Optional[float] = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    eval_steps: int = 500
    save_steps: int = 500
    num_train_epochs: float = 0
    train_batch_size: Optional[int] = None
    best_metric: Optional[float] = None
    best_model_checkpoint: Optional[str] = None
    log_history: List[Dict[str, Any]] = field(default_factory=list)
    is_world_process_zero: bool = True
    is_local_process_zero: bool = True
    is_hyper_param_search: bool = False
    total_flos: float = 0

    @classmethod
    def _from_native(cls, state):
        """The fields of the C++ Trainer's state (a _C._TrainerState)."""
        return cls(epoch=state.epoch, global_step=state.global_step, max_steps=state.max_steps, logging_steps=state.logging_steps,
                   eval_steps=state.eval_steps, save_steps=state.save_steps, num_train_epochs=state.num_train_epochs,
                   train_batch_size=state.train_batch_size, best_metric=state.best_metric,
                   best_model_checkpoint=state.best_model_checkpoint, log_history=state.log_history,
                   is_world_process_zero=state.is_world_process_zero)

    def save_to_json(self, json_path):
        with open(json_path, "w", encoding="utf-8") as f:
            f.write(json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\n")


@dataclass
class TrainerControl:
    should_training_stop: bool = False
    should_epoch_stop: bool = False
    should_save: bool = False
    should_evaluate: bool = False
    should_log: bool = False


class TrainerCallback:
    """Override the events you need; each takes ``(args, state, control, **kwargs)``."""

    def on_init_end(self, args, state, control, **kwargs):
        pass

    def on_train_begin(self, args, state, control, **kwargs):
        pass

    def on_train_end(self, args, state, control, **kwargs):
        pass

    def on_epoch_begin(self, args, state, control, **kwargs):
        pass

    def on_epoch_end(self, args, state, control, **kwargs):
        pass

    def on_step_end(self, args, state, control, **kwargs):
        pass

    def on_evaluate(self, args, state, control, **kwargs):
        pass

    def on_save(self, args, state, control, **kwargs):
        pass

    def on_log(self, args, state, control, **kwargs):
        pass


class CallbackHandler:
    """Calls the callbacks in order with Hugging Face's arguments (the C++
    Trainer's events arrive through handle_event)."""

    def __init__(self, callbacks, model, processing_class):
        self.callbacks = []
        for cb in callbacks or []:
            self.add_callback(cb)
        self.model = model
        self.processing_class = processing_class

    def add_callback(self, callback):
        cb = callback() if isinstance(callback, type) else callback
        if not isinstance(cb, TrainerCallback) and not any(hasattr(cb, n) for n in ("on_log", "on_step_end", "on_evaluate")):
            raise TypeError(f"callbacks: {type(cb).__name__} is not a TrainerCallback")
        self.callbacks.append(cb)

    def pop_callback(self, callback):
        for cb in self.callbacks:
            if cb is callback or (isinstance(callback, type) and isinstance(cb, callback)):
                self.callbacks.remove(cb)
                return cb
        return None

    def remove_callback(self, callback):
        self.pop_callback(callback)

    @property
    def events(self):
        """The events some callback handles (a method other than
        TrainerCallback's no-op): the others are not sent from C++ (on_step_end
        would cost a state copy every step)."""
        names = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_step_end", "on_log",
                 "on_evaluate", "on_save")
        return [n for n in names if any(getattr(type(cb), n, None) is not getattr(TrainerCallback, n) for cb in self.callbacks)]

    def call_event(self, event, args, state, control, **kwargs):
        for cb in self.callbacks:
            method = getattr(cb, event, None)
            if method is not None:
                result = method(args, state, control, model=self.model, processing_class=self.processing_class, **kwargs)
                if result is not None:
                    control = result
        return control
