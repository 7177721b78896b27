"""lazytrain.save / load: a state dict (name -> Tensor) as a safetensors file,
Hugging Face's format (train/safetensors.h), written atomically: a failure never
leaves a half-written file."""
import json
import os
import struct
import warnings

import numpy as np

from . import _C


def save(obj, f, metadata=None):
    """Writes `obj` (a dict of name -> Tensor, e.g. model.state_dict()) to path `f`.
    Values are read from the device (synchronises). Raises TypeError for anything
    else, LazytrainError naming the path when it cannot be written."""
    if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, _C.Tensor) for k, v in obj.items()):
        raise TypeError("lazytrain.save: expected a dict of str -> Tensor (a state_dict)")
    _C._save_safetensors(os.fspath(f), dict(obj), {"format": "pt", **(metadata or {})})


# safetensors dtypes lazytrain has no dtype for -> (numpy dtype read, numpy dtype kept).
# Integers widen without loss; F64 narrows to float32 (lazytrain has no float64),
# with a warning, as lt.tensor() does for float64 data.
_FOREIGN = {"F64": ("<f8", np.float32), "U8": ("<u1", np.int32), "I8": ("<i1", np.int32),
            "I16": ("<i2", np.int32), "U16": ("<u2", np.int32), "U32": ("<u4", np.int64)}
_NATIVE = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8", "BOOL": "?", "BF16": "<u2"}


def load(f):
    """Reads a safetensors file into a dict of name -> Tensor on the current device.

    Tensors of dtypes lazytrain lacks are converted (torch would keep them):
    float64 (F64) becomes float32, with a UserWarning naming the tensors
    (values beyond float32's range or precision are rounded); uint8, int8,
    int16 and uint16 become int32 and uint32 int64 (no loss, no warning).
    Raises FileNotFoundError for a missing file (as torch.load), and
    LazytrainError naming the file for a damaged one or an unknown dtype."""
    path = os.fspath(f)
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    header = _header(path)
    if not any(isinstance(v, dict) and v.get("dtype") in _FOREIGN for v in header.values()):
        return _C._load_safetensors(path)
    return _load_converting(path, header)


def _header(path):
    """The safetensors JSON header, or {} when it cannot be read (the C++ loader then names the damage)."""
    try:
        with open(path, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            if n > os.path.getsize(path):
                return {}
            return json.loads(fh.read(n))
    except (OSError, ValueError, struct.error):
        return {}


def _load_converting(path, header):
    with open(path, "rb") as fh:
        data = fh.read()
    base = 8 + struct.unpack("<Q", data[:8])[0]
    out, narrowed = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        if dtype not in _FOREIGN and dtype not in _NATIVE:
            raise _C.LazytrainError(f"[lazytrain.load] {path}: tensor '{name}' has safetensors dtype '{dtype}', "
                                    "which lazytrain cannot read")
        begin, end = info["data_offsets"]
        raw = np.frombuffer(data[base + begin:base + end], dtype=_FOREIGN[dtype][0] if dtype in _FOREIGN else _NATIVE[dtype])
        raw = raw.reshape(info["shape"])
        if dtype == "BF16":  # numpy has no bfloat16: widen the bits to float32 exactly, then cast back
            t = _C.from_numpy(np.ascontiguousarray((raw.astype(np.uint32) << 16).view(np.float32))).to(_C.dtype.bfloat16)
        else:
            if dtype == "F64":
                narrowed.append(name)
            keep = _FOREIGN[dtype][1] if dtype in _FOREIGN else raw.dtype
            t = _C.from_numpy(np.ascontiguousarray(raw.astype(keep)))
        out[name] = t
    if narrowed:
        warnings.warn(f"lazytrain.load({path!r}): float64 tensors {narrowed} were loaded as float32 "
                      "(lazytrain has no float64)", UserWarning, stacklevel=3)
    return out
