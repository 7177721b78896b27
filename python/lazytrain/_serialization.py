"""lazytrain.save / load: a state dict (name -> Tensor) as a safetensors file,
Hugging Face's format (train/safetensors.h), written atomically: a failure never
leaves a half-written file."""
import os

from . import _C


def save(obj, f, metadata=None):
    """Writes `obj` (a dict of name -> Tensor, e.g. model.state_dict()) to path `f`.
    Values are read from the device (synchronises). Raises TypeError for anything
    else, LazytrainError naming the path when it cannot be written."""
    if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, _C.Tensor) for k, v in obj.items()):
        raise TypeError("lazytrain.save: expected a dict of str -> Tensor (a state_dict)")
    _C._save_safetensors(os.fspath(f), dict(obj), {"format": "pt", **(metadata or {})})


def load(f):
    """Reads a safetensors file into a dict of name -> Tensor on the current device.
    Raises LazytrainError naming the file for a missing or damaged one."""
    return _C._load_safetensors(os.fspath(f))
