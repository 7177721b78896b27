"""PreTrainedModel: a C++ model (src/models/) as an nn.Module, as transformers'
class of that name: ``from_pretrained(dir)``, ``from_config(config)`` (through
the Auto classes), ``save_pretrained(dir)``, and the parameters under Hugging
Face's names.

The numerics are the C++ model's, the CLI's: forward runs the C++ forward. Its
parameters are registered as this module's Parameters that alias the C++
tensors (no copy), in the C++ order, so ``model.parameters()`` goes to any
optimizer, ``load_state_dict`` and optimizer steps change what the C++ forward
reads, and the model composes with modules written in Python (a head on
``BertModel``, trained end to end)."""
import copy
import json
import os
import warnings

from .. import _C
from .. import nn
from .._tensor import tensor as _to_tensor


def _as_tensor(x, name):
    if x is None or isinstance(x, _C.Tensor):
        return x
    try:
        return _to_tensor(x, dtype=_C.dtype.int64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: expected a lazytrain Tensor or an int array, got {type(x).__name__}") from e


def _apply_loading_kwargs(cls_name, config, kwargs):
    """from_pretrained's kwargs: config fields to override (ones config.json
    or the defaults have, as transformers only sets attributes the config has),
    attn_implementation ("eager" or "sdpa": config._attn_implementation), and
    torch_dtype/dtype, which must be f32 (a C++ model's parameters stay f32).
    TypeError naming the others: transformers' model __init__ rejects them too."""
    kwargs = dict(kwargs)
    attention = kwargs.pop("attn_implementation", None)
    if attention is not None:
        config = copy.deepcopy(config)  # a config the caller passed stays as it was
        config._attn_implementation = attention
    for name in ("torch_dtype", "dtype"):
        dtype = kwargs.pop(name, None)
        if dtype is not None and str(dtype).rsplit(".", 1)[-1] not in ("auto", "float32"):  # also torch.float32
            raise ValueError(f"{cls_name}.from_pretrained({name}={dtype}): a C++ model's parameters stay float32; "
                             "train in bfloat16 under lazytrain.autocast(dtype=lazytrain.bfloat16)")
    unknown = sorted(k for k in kwargs if k not in config.__dict__)
    if unknown:
        raise TypeError(f"{cls_name}.from_pretrained() got unexpected keyword argument(s) {', '.join(unknown)}: not fields of "
                        f"its {type(config).__name__}, which has {', '.join(sorted(config.to_dict()))}")
    if kwargs:
        config = copy.deepcopy(config)  # a config the caller passed stays as it was
        config.__dict__.update(kwargs)
    return config


class _NativeSubmodule(nn.Module):
    """A level of a C++ model's parameter tree (e.g. ``bert.encoder.layer.0``):
    it holds parameters and submodules; the model above it runs the forward."""

    _native_parameters = True

    def forward(self, *args, **kwargs):
        raise TypeError("this part of a C++ model has no forward of its own; call the model")

    def _no_hooks(self, *args, **kwargs):
        # Its forward runs inside the C++ model: a hook here would never be called.
        raise NotImplementedError("this part of a C++ model runs inside the model's C++ forward: module hooks on it "
                                  "would never be called; hook the model itself, or a tensor (register_hook)")

    register_forward_pre_hook = register_forward_hook = _no_hooks
    register_full_backward_hook = register_full_backward_pre_hook = _no_hooks


class PreTrainedModel(nn.Module):
    config_class = None
    _native_kind = None  # the C++ class
    base_model_prefix = ""
    _base_model_class = None  # the Python class of the base model inside a head model
    _native_parameters = True  # Module.to(dtype) refuses: the C++ forward runs f32 parameters

    def __init__(self, config, _native=None):
        super().__init__()
        if self.config_class is not None and not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} takes a {self.config_class.__name__}, got {type(config).__name__}")
        object.__setattr__(self, "config", config)
        if _native is None:
            source = type(self).__name__
            _native = _C._native_model(self._native_kind, config._native_json(source), source)
        object.__setattr__(self, "_native", _native)
        object.__setattr__(self, "_native_training", True)
        self._register_native_parameters()

    def _register_native_parameters(self):
        prefix = self.base_model_prefix + "."
        if self._base_model_class is not None:
            base = self._base_model_class(self.config, _native=self._native.base_model())
            self.add_module(self.base_model_prefix, base)
        for name, value in self._native.named_parameters():
            if self._base_model_class is not None and name.startswith(prefix):
                continue  # registered by the base model
            *path, leaf = name.split(".")
            module = self
            for part in path:
                child = module._modules.get(part)
                if child is None:
                    child = _NativeSubmodule()
                    module.add_module(part, child)
                module = child
            module.register_parameter(leaf, nn.Parameter._alias(value))

    def _sync_training_mode(self):
        # Module.train() sets `training` on every module without calling it, so
        # the C++ model takes the mode when it runs.
        if self._native_training != self.training:
            self._native.train(self.training)
            object.__setattr__(self, "_native_training", self.training)

    def _run_native(self, input_ids, attention_mask, labels):
        self._sync_training_mode()
        return self._native.forward(_as_tensor(input_ids, "input_ids"), _as_tensor(attention_mask, "attention_mask"),
                                    _as_tensor(labels, "labels"))

    # ---- Hugging Face's API ----
    @property
    def base_model(self):
        return getattr(self, self.base_model_prefix, self) if self.base_model_prefix else self

    def num_parameters(self, only_trainable=False):
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not only_trainable)

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        """Each layer's activations are recomputed during backward in training."""
        self._native.gradient_checkpointing_enable()

    def save_pretrained(self, save_directory, safe_serialization=True):
        """config.json and model.safetensors (tied weights stored once), the files
        the CLI writes, each written atomically. Syncs pending values first."""
        if not safe_serialization:
            raise ValueError("lazytrain saves safetensors only (safe_serialization=True)")
        save_directory = os.fspath(save_directory)
        os.makedirs(save_directory, exist_ok=True)
        config = json.loads(self.config._checked_json(type(self).__name__))
        config["architectures"] = [type(self).__name__]
        self._native.save_pretrained(save_directory, json.dumps(config))

    @classmethod
    def _from_config(cls, config, attn_implementation=None):
        if attn_implementation is not None:
            config = copy.deepcopy(config)
            config._attn_implementation = attn_implementation
        return cls(config)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, config=None, **kwargs):
        """The model of a directory holding config.json and model.safetensors
        (what save_pretrained and the CLI write, or a Hugging Face checkpoint of
        this architecture), in eval mode as transformers returns it. kwargs
        override config fields. Raises FileNotFoundError naming the missing file,
        LazytrainError naming the file and every mismatched tensor."""
        directory = os.fspath(pretrained_model_name_or_path)
        if config is None:
            config = cls.config_class.from_pretrained(directory)
        config = _apply_loading_kwargs(cls.__name__, config, kwargs)
        weights = os.path.join(directory, "model.safetensors")
        if not os.path.isfile(weights):
            raise FileNotFoundError(f"{weights}: no such file (from_pretrained reads config.json and model.safetensors)")
        model = cls(config)
        warning = model._native.load_safetensors(weights)
        if warning:
            warnings.warn(warning, stacklevel=2)
        return model.eval()
