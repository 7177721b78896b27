"""torch.utils.data's default_collate and default_convert, with numpy arrays
where torch makes tensors."""
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .. import _C

_NOT_COLLATABLE = ("default_collate: batch must contain numpy arrays, lazytrain Tensors, numbers, dicts or lists; "
                   "found {}")


def default_convert(data):
    """The example unchanged (batch_size=None: no batching; numpy arrays already are the host format)."""
    return data


def _is_number_row(value):
    return isinstance(value, list) and all(isinstance(v, (numbers.Number, np.generic)) for v in value)


def default_collate(batch):
    """Puts a list of examples together, field by field, as torch's
    default_collate does: numpy arrays are stacked (``[batch, ...]``),
    lazytrain Tensors stacked with ``lt.stack``, Python ints become an int64
    array, floats float64, bools bool; strings stay a list; dicts are
    collated per key, tuples (and namedtuples) per position.

    One difference from torch: a list of numbers (a row of token ids, as
    ``datasets`` rows hold them) is stacked as a row, ``[batch, len]``, where
    torch would transpose a batch of lists into len arrays of the batch's size.
    ValueError when arrays or rows differ in shape (pad them first: a
    collator such as ``DataCollatorForLanguageModeling``); KeyError when an
    example lacks a key of the first; TypeError for other types."""
    if not isinstance(batch, Sequence) or isinstance(batch, (str, bytes)) or len(batch) == 0:
        raise TypeError(f"default_collate: expected a non-empty list of examples, got {type(batch).__name__}")
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return _C.stack(list(batch), 0)
    if isinstance(elem, np.ndarray) or _is_number_row(elem):
        arrays = [np.asarray(b) for b in batch]
        shapes = sorted({a.shape for a in arrays})
        if len(shapes) > 1:
            raise ValueError(f"default_collate: examples of shapes {shapes} cannot be stacked: expected equal shapes "
                             "(pad them first, e.g. collate_fn=DataCollatorForLanguageModeling(tokenizer))")
        if arrays[0].dtype.kind in "US" or arrays[0].dtype == object:
            raise TypeError(_NOT_COLLATABLE.format(arrays[0].dtype))
        return np.stack(arrays)
    if isinstance(elem, (bool, np.bool_)):
        return np.array(batch, dtype=np.bool_)
    if isinstance(elem, (numbers.Integral, np.integer)):
        return np.array(batch, dtype=np.int64)
    if isinstance(elem, (numbers.Real, np.floating)):
        return np.array(batch, dtype=np.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        out = {}
        for key in elem:
            try:
                values = [example[key] for example in batch]
            except KeyError:
                missing = next(i for i, example in enumerate(batch) if key not in example)
                raise KeyError(f"default_collate: example {missing} has no '{key}' (example 0 has it)") from None
            out[key] = default_collate(values)
        return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise ValueError("default_collate: each element in list of batch should be of equal size")
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise TypeError(_NOT_COLLATABLE.format(type(elem)))
