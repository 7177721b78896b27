"""Trainer: transformers.Trainer on lazytrain, the C++ Trainer underneath
(src/train/trainer.h): one compiled step per batch shape (forward, backward,
clipping and AdamW in one graph), checkpoints with exact resume, evaluation
of every example, TensorBoard, gradient accumulation by tokens, bf16
autocast, and data-parallel replicas (one Trainer per replica under
lazytrain.distributed.xla_multiprocessing.spawn or mpirun, as xla_spawn.py
runs Hugging Face's).

The model is any lazytrain.nn.Module whose forward takes the batch's fields
as keyword arguments and returns the loss first (a ModelOutput, a dict with
"loss", or a tuple), as transformers' models do: the built-in models
(BertForMaskedLM, GPT2LMHeadModel, ...) or one written in Python. Its
parameters are trained in place (no copy). The datasets are any sequences of
examples (``len`` and ``[i]``: a list of dicts, a lazytrain.data Dataset, a
Hugging Face ``datasets.Dataset``); ``data_collator`` is any callable on a list
of examples that returns a dict of arrays (numpy, lists or lazytrain Tensors).

What differs from transformers: a last partial batch is padded to the batch
size with rows that carry no loss (static shapes: one compiled step), so every
example counts once; a collator with a ``collate(examples, batch_number)``
method (lazytrain's DataCollatorForLanguageModeling) draws its randomness per
batch number, which makes batches independent of the worker count and resume
exact, while another collator is called as ``data_collator(examples)`` and its
randomness is its own. TrainingArguments holds the CLI's fields
(training_args.py)."""
import inspect
import json
import os
import sys

import numpy as np

from .. import _C
from .._tensor import full_like
from .._runtime import execution_mode as _execution_mode
from .. import debug as _debug
from ..data import default_data_collator
from .trainer_callback import CallbackHandler, TrainerControl, TrainerState
from .trainer_utils import EvalPrediction, TrainOutput, set_seed
from .training_args import TrainingArguments


def _host_array(name, value):
    """A collated field as a C-contiguous numpy array of a dtype the device takes."""
    if isinstance(value, _C.Tensor):
        value = value.numpy()
    a = np.ascontiguousarray(value)
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    elif a.dtype.kind in "iu" and a.dtype not in (np.int32, np.int64):
        a = a.astype(np.int64)
    elif a.dtype.kind not in "biuf":
        return None
    return a


def _kind_of(value):
    """What a collated field that is no numeric array holds, for messages: "str", "list of str", "object array"."""
    if isinstance(value, np.ndarray):
        return f"a numpy array of dtype {value.dtype}"
    if isinstance(value, (list, tuple)) and value:
        return f"a {type(value).__name__} of {type(value[0]).__name__}"
    return type(value).__name__


def _field(output, name, index):
    """A model output's field by name (ModelOutput, dict) or position (tuple)."""
    if isinstance(output, dict):
        return output.get(name)
    if isinstance(output, (tuple, list)):
        return output[index] if len(output) > index else None
    return getattr(output, name, None)


class Trainer:
    def __init__(self, model=None, args=None, data_collator=None, train_dataset=None, eval_dataset=None,
                 processing_class=None, compute_metrics=None, callbacks=None, preprocess_logits_for_metrics=None,
                 tokenizer=None):
        """As transformers.Trainer (``tokenizer`` is processing_class's older
        name). Seeds lazytrain's generators with args.seed (set_seed), as
        Hugging Face's does. Raises ValueError for a missing model and
        TypeError for a model that is not a lazytrain.nn.Module."""
        from ..nn import Module
        if model is None:
            raise ValueError("Trainer: `model` is required (a lazytrain.nn.Module, e.g. AutoModelForMaskedLM.from_config(config))")
        if not isinstance(model, Module):
            raise TypeError(f"Trainer: model must be a lazytrain.nn.Module, got {type(model).__name__}")
        self.args = args if args is not None else TrainingArguments(output_dir="trainer_output")
        if not isinstance(self.args, TrainingArguments):
            raise TypeError(f"Trainer: args must be a lazytrain TrainingArguments, got {type(self.args).__name__}")
        if self.args.num_cores != 1:
            raise ValueError("Trainer: num_cores is the CLI's replica count; from Python, run one Trainer per replica under "
                             "lazytrain.distributed.xla_multiprocessing.spawn(fn, nprocs=N) (or mpirun), as xla_spawn.py does")
        from .. import runtime as _xr
        if self.args.fsdp and not _xr.is_spmd():
            raise ValueError("Trainer: fsdp='full_shard' trains on the devices of lazytrain.runtime.use_spmd(n): call it first")
        if self.args.tp_size > 1 and not _xr.is_spmd():
            raise ValueError(f"Trainer: tp_size={self.args.tp_size} trains on the devices of lazytrain.runtime.use_spmd(n): call it first")
        set_seed(self.args.seed)
        self.model = model
        self.processing_class = processing_class if processing_class is not None else tokenizer
        self.data_collator = data_collator if data_collator is not None else default_data_collator
        self.train_dataset = train_dataset
        self.eval_dataset = eval_dataset
        self.compute_metrics = compute_metrics
        self.preprocess_logits_for_metrics = preprocess_logits_for_metrics
        self.callback_handler = CallbackHandler(callbacks, model, self.processing_class)
        self.state = TrainerState()
        self.control = TrainerControl()
        if self.args.gradient_checkpointing:
            if not hasattr(model, "gradient_checkpointing_enable"):
                raise ValueError(f"gradient_checkpointing: {type(model).__name__} has no gradient_checkpointing_enable()")
            model.gradient_checkpointing_enable()
        self._signature = self._forward_signature(model)
        self._ignored_columns_noted = False
        self._native = None
        self._native_datasets = None

    # ---- what the C++ Trainer calls ----
    @staticmethod
    def _forward_signature(model):
        """The batch fields forward takes (None: any, it has **kwargs)."""
        params = inspect.signature(model.forward).parameters
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return None
        return set(params)

    def _model_inputs(self, inputs):
        if self._signature is None:
            return inputs
        kept = {k: v for k, v in inputs.items() if k in self._signature}
        ignored = sorted(k for k in inputs if k not in kept and k not in ("masked_lm_positions", "masked_lm_labels"))
        if ignored and not self._ignored_columns_noted and self.args.should_save:
            self._ignored_columns_noted = True
            print(f"[Trainer] the batch fields {', '.join(ignored)} are not arguments of {type(self.model).__name__}.forward "
                  "and were ignored", file=sys.stderr)
        return kept

    def _loss_for_native(self, inputs):
        """The batch dict -> (loss, logits for metrics or None, labels whose
        non -100 entries are the tokens the loss is the mean of)."""
        batch = inputs
        inputs = self._model_inputs(batch)
        loss, outputs = self.compute_loss(self.model, inputs, return_outputs=True)
        if not isinstance(loss, _C.Tensor):
            raise TypeError(f"{type(self.model).__name__} returned a loss of type {type(loss).__name__}; expected a scalar "
                            "lazytrain Tensor computed from the model's outputs (e.g. nn.functional.cross_entropy(logits, labels))")
        if loss.numel() != 1:
            raise ValueError(f"{type(self.model).__name__} returned a loss of shape {list(loss.shape)}; expected a scalar "
                             "(reduce it, e.g. .mean())")
        predictions = None
        if self.compute_metrics is not None and not self.model.training:
            predictions = self._predictions(outputs, inputs, batch)
            if predictions is not None and not isinstance(predictions, _C.Tensor):
                raise TypeError(f"the predictions for compute_metrics are a {type(predictions).__name__}; expected a lazytrain "
                                f"Tensor (the logits {type(self.model).__name__} returns, or preprocess_logits_for_metrics' result)")
        # The labelled rows the model took (masked_lm_*), else the labels.
        labels = inputs.get("masked_lm_labels")
        if labels is None:
            labels = batch.get("labels")
            if labels is not None and getattr(self.model, "_shifts_labels", False):
                labels = _C._shift_labels_left(labels)
        return loss, predictions, labels

    def _predictions(self, outputs, inputs, batch):
        """What compute_metrics gets of this batch: preprocess_logits_for_metrics
        (logits, labels), or the logits. For a masked LM given the labelled
        tokens (masked_lm_positions), a preprocessing that gives one value per
        token (argmax) runs on those tokens' logits only and the values are put
        at their positions, -100 elsewhere: run_mlm.py's accuracy (which reads
        only labelled positions) is the same, without the vocabulary-sized head
        on every token."""
        preprocess = self.preprocess_logits_for_metrics
        labels = batch.get("labels")
        labelled = _field(outputs, "masked_lm_logits", 99)
        if preprocess is not None and labelled is not None and labels is not None and "masked_lm_positions" in inputs:
            values = preprocess(labelled, inputs["masked_lm_labels"])
            if isinstance(values, _C.Tensor) and values.dim() == 1 and values.shape[0] == labelled.shape[0]:
                positions, mlm_labels = inputs["masked_lm_positions"], inputs["masked_lm_labels"]
                # Each labelled position once; padding entries point at 0 and add 0.
                shifted = _C.where(mlm_labels != -100, values.to(_C.dtype.int64) + 100, _C.scalar_tensor(0, _C.dtype.int64))
                flat = _C.scatter_add(full_like(labels.reshape(-1), -100), 0, positions, shifted)
                return flat.reshape(labels.shape)
        logits = _field(outputs, "logits", 1)
        if logits is None or preprocess is None:
            return logits
        return preprocess(logits, labels)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Hugging Face's: ``model(**inputs)`` and the loss from its outputs. Override
        it in a subclass for another loss (it is traced once per batch shape)."""
        outputs = model(**inputs)
        loss = _field(outputs, "loss", 0)
        if loss is None:
            raise ValueError(f"{type(model).__name__} returned no loss: the batch has fields {sorted(inputs)}; a model "
                             "computes its loss when given `labels` (or override Trainer.compute_loss)")
        return (loss, outputs) if return_outputs else loss

    def _dataset_spec(self, dataset, training):
        """(size, collate(indices, batch_number), pad_token_id, mlm_probability, fingerprint)."""
        if dataset is None:
            return None
        if isinstance(dataset, dict):
            raise TypeError(f"Trainer: the {'training' if training else 'evaluation'} dataset is a {type(dataset).__name__} "
                            f"with keys {sorted(dataset)[:8]}; expected one split's examples (e.g. dataset['train'])")
        if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise TypeError(f"Trainer: the {'training' if training else 'evaluation'} dataset must have __len__ and "
                            f"__getitem__ (a list of dicts, a lazytrain or Hugging Face Dataset), got {type(dataset).__name__}")
        collator = self.data_collator
        per_batch = getattr(collator, "collate", None)
        skipped = set()

        def collate(indices, batch_number):
            examples = [dataset[i] for i in indices]
            batch = per_batch(examples, batch_number) if per_batch is not None else collator(examples)
            if not isinstance(batch, dict):
                raise TypeError(f"data_collator returned {type(batch).__name__}; expected a dict of arrays")
            arrays = {}
            left_out = {}
            for name, value in batch.items():
                try:
                    a = _host_array(name, value)
                except ValueError as e:  # numpy: rows of unequal lengths
                    raise ValueError(f"data_collator returned field '{name}' that is not one rectangular array ({e}); "
                                     "expected a numeric array [batch, ...] (pad the examples to one length)") from None
                if a is not None:
                    arrays[name] = a
                elif value is not None:
                    left_out[name] = _kind_of(value)
            for name, kind in left_out.items():
                if self._signature is not None and name in self._signature:
                    raise TypeError(f"data_collator returned field '{name}' as {kind}; {type(self.model).__name__}.forward takes "
                                    f"'{name}', and the Trainer feeds the model numeric arrays only (int, float or bool)")
            if not arrays:
                fields = ", ".join(f"'{k}' ({v})" for k, v in left_out.items()) or "none"
                example_fields = sorted(examples[0]) if examples and isinstance(examples[0], dict) else type(examples[0]).__name__
                raise TypeError(f"data_collator returned no numeric array (its fields: {fields}; the examples have {example_fields}): "
                                "expected a dict of int/float arrays such as input_ids (tokenize the text first: "
                                "dataset.map(lambda b: tokenizer(b['text']), batched=True, remove_columns=['text']))")
            new_fields = sorted(set(left_out) - skipped)
            if new_fields and self.args.should_save:
                print(f"[Trainer] the collated fields {', '.join(f'{k} ({left_out[k]})' for k in new_fields)} are not numeric "
                      "arrays and were left out of the device batch", file=sys.stderr)
            skipped.update(left_out)
            return arrays

        pad_token_id = None
        for holder in (self.processing_class, getattr(collator, "tokenizer", None)):
            pad_token_id = getattr(holder, "pad_token_id", None) if holder is not None else None
            if pad_token_id is not None:
                break
        mlm_probability = float(getattr(collator, "mlm_probability", 0.0)) if getattr(collator, "mlm", False) else 0.0

        def fingerprint():
            # CRC32C of every example's input_ids as int64, in order: the C++
            # Trainer's, so data_state.json matches the CLI's for the same data.
            try:
                rows = dataset["input_ids"]  # a column (lazytrain or Hugging Face Dataset)
            except (KeyError, TypeError, IndexError):
                rows = None
            if rows is None or isinstance(rows, dict):
                rows = [example.get("input_ids") if isinstance(example, dict) else None
                        for example in (dataset[i] for i in range(len(dataset)))]
            crc = 0
            for ids in rows:
                if ids is None:
                    return 0
                crc = _C._crc32c_int64(np.ascontiguousarray(np.asarray(ids, dtype=np.int64)), crc)
            return crc

        return (len(dataset), collate, int(pad_token_id or 0), mlm_probability, fingerprint if training else None)

    def _handle_event(self, event, state, payload):
        """The C++ Trainer's event: its state (a _C._TrainerState) and on_log's
        logs or on_evaluate's metrics (a dict)."""
        self.state = TrainerState._from_native(state)
        kwargs = {}
        if event == "on_log":
            kwargs["logs"] = payload
        elif event == "on_evaluate":
            kwargs["metrics"] = payload
        self.control = self.callback_handler.call_event(event, self.args, self.state, self.control, **kwargs)
        return bool(self.control.should_training_stop)

    def _native_trainer(self):
        datasets = (self.train_dataset, self.eval_dataset, self.data_collator)
        if self._native is not None and all(a is b for a, b in zip(datasets, self._native_datasets)):
            return self._native
        parameters = list(self.model.named_parameters())
        native = _C._Trainer(self.args._native(), parameters, lambda on: self.model.train(on), self._loss_for_native,
                             self._dataset_spec(self.train_dataset, True), self._dataset_spec(self.eval_dataset, False),
                             self._handle_event, self.callback_handler.events)
        if self.compute_metrics is not None:
            compute = self.compute_metrics

            def metrics(predictions, label_ids):
                result = compute(EvalPrediction(predictions, label_ids))
                if not isinstance(result, dict):
                    raise TypeError(f"compute_metrics returned {type(result).__name__}; expected a dict of metric name -> number")
                values = {}
                for k, v in result.items():
                    try:
                        values[k] = float(v)
                    except (TypeError, ValueError):
                        raise TypeError(f"compute_metrics returned {k!r}: {v!r} ({type(v).__name__}); expected a number") from None
                return values
            native.set_compute_metrics(metrics, None)  # preprocess_logits_for_metrics runs in _predictions
        config = getattr(self.model, "config", None)
        if config is not None and hasattr(config, "to_dict"):
            native.set_model_config(json.dumps(self._config_json(config)))
        if self.processing_class is not None and hasattr(self.processing_class, "save_pretrained"):
            native.on_save_files(lambda directory: self.processing_class.save_pretrained(directory))
        self._native, self._native_datasets = native, datasets
        return native

    @staticmethod
    def _config_json(config):
        checked = getattr(config, "_checked_json", None)
        return json.loads(checked("Trainer")) if checked is not None else config.to_dict()

    class _RunSettings:
        """The execution settings of TrainingArguments, for one train/evaluate call."""

        def __init__(self, args):
            self.args = args

        def __enter__(self):
            self.mode = _execution_mode(self.args.execution_mode)
            self.anomaly = _C.is_anomaly_enabled()
            _C.set_detect_anomaly(bool(self.args.detect_anomaly) or self.anomaly)
            if self.args.debug_recompiles:
                _debug.set_recompile_debug(True)
            if self.args.debug_graphs:
                _debug.set_step_analysis(True)
            return self

        def __exit__(self, *exc):
            self.mode.__exit__(*exc)
            _C.set_detect_anomaly(self.anomaly)
            return False

    # ---- Hugging Face's API ----
    def train(self, resume_from_checkpoint=None, **kwargs):
        """Trains for args.max_steps (or num_train_epochs) steps; returns
        TrainOutput(global_step, training_loss, metrics). resume_from_checkpoint:
        a checkpoint directory, or True for the newest complete one in
        args.output_dir (ValueError when there is none); the run then reaches
        the parameters an uninterrupted one would. Raises LazytrainError naming
        the step for a NaN loss, the checkpoint for one made for another config
        or data, and the Python line of a shape error in the model."""
        if kwargs:
            raise TypeError(f"train() got unexpected arguments {sorted(kwargs)}")
        if self.train_dataset is None:
            raise ValueError("Trainer.train() needs a train_dataset")
        if self.args.evaluation_strategy != "no" and self.eval_dataset is None:
            raise ValueError(f"TrainingArguments.eval_strategy is '{self.args.evaluation_strategy}' but the Trainer has no "
                             "eval_dataset: pass eval_dataset=... or set eval_strategy='no'")
        self._check_output_dir()
        if resume_from_checkpoint is True:
            resume_from_checkpoint = _C._get_last_checkpoint(self.args.output_dir)
            if resume_from_checkpoint is None:
                raise ValueError(f"No valid checkpoint found in output directory ({self.args.output_dir})")
        elif resume_from_checkpoint in (False, None):
            resume_from_checkpoint = ""
        else:
            resume_from_checkpoint = _C._resolve_checkpoint(os.fspath(resume_from_checkpoint), self.args.output_dir)
        native = self._native_trainer()
        with self._RunSettings(self.args):
            metrics = native.train(resume_from_checkpoint)
        self.state = TrainerState._from_native(native.state())
        return TrainOutput(native.global_step, metrics.get("train_loss", 0.0), metrics)

    def _check_output_dir(self):
        """Before any step: an output_dir that cannot be a directory fails now, not at the first checkpoint."""
        path = os.fspath(self.args.output_dir)
        probe = path
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe.rstrip(os.sep))
        if probe and not os.path.isdir(probe):
            raise NotADirectoryError(f"TrainingArguments.output_dir '{path}': '{probe}' is a file; expected a directory "
                                     "(or a path that does not exist yet) for the checkpoints")

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
        """Loss (and compute_metrics' metrics) over every evaluation example:
        eval_loss, eval_runtime, eval_samples_per_second, eval_steps_per_second,
        perplexity (lazytrain's run_mlm/run_clm report it), epoch."""
        if eval_dataset is None and self.eval_dataset is None:
            raise ValueError("Trainer.evaluate() needs an eval_dataset")
        if metric_key_prefix != "eval":
            raise ValueError("evaluate: lazytrain names its metrics eval_*; metric_key_prefix must be 'eval'")
        native = self._native_trainer()
        # Another dataset is read for this call only, as Hugging Face's
        # evaluate(eval_dataset=...) does: the training state stays.
        other = eval_dataset is not None and eval_dataset is not self.eval_dataset
        if other:
            native.set_eval_dataset(self._dataset_spec(eval_dataset, False))
        try:
            with self._RunSettings(self.args):
                metrics = native.evaluate()
        finally:
            if other:
                native.set_eval_dataset(self._dataset_spec(self.eval_dataset, False))
        self.state = TrainerState._from_native(native.state())
        return metrics

    def add_callback(self, callback):
        self.callback_handler.add_callback(callback)
        self._update_events()

    def pop_callback(self, callback):
        popped = self.callback_handler.pop_callback(callback)
        self._update_events()
        return popped

    def remove_callback(self, callback):
        self.callback_handler.remove_callback(callback)
        self._update_events()

    def _update_events(self):
        if self._native is not None:
            self._native.set_events(self.callback_handler.events)

    def is_world_process_zero(self):
        return _C._is_master_ordinal(False)

    def save_model(self, output_dir=None, _internal_call=False):
        """The model's files in output_dir (default args.output_dir): its
        save_pretrained (config.json + model.safetensors) or, for a module
        without one, model.safetensors of its state_dict; and the
        processing_class's files. Only the master ordinal writes."""
        output_dir = os.fspath(output_dir if output_dir is not None else self.args.output_dir)
        if not self.is_world_process_zero():
            return
        os.makedirs(output_dir, exist_ok=True)
        if hasattr(self.model, "save_pretrained"):
            self.model.save_pretrained(output_dir)
        else:
            from .._serialization import save
            save(self.model.state_dict(), os.path.join(output_dir, "model.safetensors"))
            config = getattr(self.model, "config", None)
            if config is not None and hasattr(config, "save_pretrained"):
                config.save_pretrained(output_dir)
        if self.processing_class is not None and hasattr(self.processing_class, "save_pretrained"):
            self.processing_class.save_pretrained(output_dir)

    def log_metrics(self, split, metrics):
        """Prints "***** <split> metrics *****" and a line per metric, as the CLI does."""
        if self.is_world_process_zero():
            sys.stdout.flush()
            _C._log_metrics(split, {k: float(v) for k, v in metrics.items()})

    def save_metrics(self, split, metrics, combined=True):
        """<output_dir>/<split>_results.json and, combined, all_results.json (the CLI's files)."""
        if self.is_world_process_zero():
            _C._save_metrics(self.args.output_dir, split, {k: float(v) for k, v in metrics.items()}, combined)

    def save_state(self):
        """trainer_state.json and training_args.json in args.output_dir."""
        if self._native is not None:
            self._native.save_state()
