"""BatchEncoding and the padding/truncation rules of Hugging Face's
``PreTrainedTokenizerBase`` (transformers/tokenization_utils_base.py), which
lazytrain's tokenizers follow argument for argument.

Nothing here tokenizes: ids come from the C++ tokenizers (src/data/)."""
import warnings

import numpy as np

# transformers' constants: a model_max_length this large means "no limit".
VERY_LARGE_INTEGER = int(1e30)
LARGE_INTEGER = int(1e20)

SPECIAL_TOKENS_ATTRIBUTES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]

PADDING_STRATEGIES = ("longest", "max_length", "do_not_pad")
TRUNCATION_STRATEGIES = ("longest_first", "only_first", "do_not_truncate")
TENSOR_TYPES = ("np", "lt")


class BatchEncoding(dict):
    """What a tokenizer's ``__call__`` returns: a dict of ``input_ids``,
    ``attention_mask`` (and ``token_type_ids``, ``special_tokens_mask``,
    ``length`` where asked for) whose keys are also attributes
    (``enc.input_ids``), as transformers' class of that name.

    Values are lists of ints (one text) or lists of lists (a batch), or with
    ``return_tensors`` int64 arrays of shape [batch, seq_len]: numpy arrays
    ("np") or lazytrain Tensors ("lt")."""

    def __init__(self, data=None, tensor_type=None, prepend_batch_axis=False):
        super().__init__(data or {})
        if tensor_type is not None:
            self.convert_to_tensors(tensor_type, prepend_batch_axis=prepend_batch_axis)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"BatchEncoding has no '{name}' (it holds {', '.join(self)})") from None

    def __getitem__(self, item):
        if not isinstance(item, str):
            raise KeyError(f"BatchEncoding is indexed by key ({', '.join(self)}), got {item!r}: lazytrain's "
                           "tokenizers have no per-text Encoding objects (a fast tokenizer's)")
        return super().__getitem__(item)

    def __getstate__(self):
        return dict(self)

    def __setstate__(self, state):
        self.update(state)

    def convert_to_tensors(self, tensor_type, prepend_batch_axis=False):
        """Every value as an int64 array: "np" (numpy) or "lt" (lazytrain Tensor).
        A ragged batch (texts of different lengths, no padding) becomes a numpy
        object array of int64 rows for "np", as transformers 4.57 returns, and
        raises ValueError for "lt", as transformers does for torch tensors."""
        check_tensor_type(tensor_type)
        for key, value in list(self.items()):
            if prepend_batch_axis:
                value = [value]
            if value and all(isinstance(v, int) for v in value):  # "length": one int a text
                array = np.asarray(value, dtype=np.int64)
                self[key] = _tensor_of(array) if tensor_type == "lt" else array
                continue
            lengths = {len(row) for row in value}
            if len(lengths) > 1:
                if tensor_type == "np":
                    rows = np.empty(len(value), dtype=object)
                    rows[:] = [np.asarray(row, dtype=np.int64) for row in value]
                    self[key] = rows
                    continue
                raise ValueError(f"Unable to create tensor from '{key}': the texts have different lengths "
                                 f"({sorted(lengths)}); pass padding=True (and truncation=True) to get tensors of one "
                                 "shape")
            array = np.asarray(value, dtype=np.int64).reshape(len(value), lengths.pop() if lengths else 0)
            self[key] = _tensor_of(array) if tensor_type == "lt" else array
        return self

    def to(self, device):
        """The lazytrain Tensors moved to `device` (others unchanged)."""
        from .. import _C
        for key, value in self.items():
            if isinstance(value, _C.Tensor):
                self[key] = value.to(device)
        return self


def _tensor_of(array):
    from .._tensor import tensor
    return tensor(array)


def check_tensor_type(tensor_type):
    if tensor_type not in TENSOR_TYPES:
        raise ValueError(f"return_tensors must be None, 'np' (numpy int64 arrays) or 'lt' (lazytrain int64 Tensors), "
                         f"got {tensor_type!r}")


def padding_strategy(padding):
    """HF's reading of ``padding``: True -> "longest", False -> "do_not_pad"."""
    if padding is True:
        return "longest"
    if padding is False or padding is None:
        return "do_not_pad"
    if padding in PADDING_STRATEGIES:
        return padding
    raise ValueError(f"padding must be True, False, 'longest', 'max_length' or 'do_not_pad', got {padding!r}")


def truncation_strategy(truncation):
    """HF's reading of ``truncation`` for one sequence: True -> "longest_first"."""
    if truncation is True:
        return "longest_first"
    if truncation is False or truncation is None:
        return "do_not_truncate"
    if truncation == "only_second":
        raise ValueError("truncation='only_second' truncates the second text of a pair; lazytrain's tokenizers take "
                         "single texts (text_pair is not supported)")
    if truncation in TRUNCATION_STRATEGIES:
        return truncation
    raise ValueError(f"truncation must be True, False, 'longest_first', 'only_first' or 'do_not_truncate', "
                     f"got {truncation!r}")


def resolve_padding_truncation(padding, truncation, max_length, pad_to_multiple_of, model_max_length, has_pad_token):
    """(padding strategy, truncation strategy, max_length), decided as
    transformers' ``_get_padding_truncation_strategies`` does:
    max_length alone turns truncation on ("longest_first"); padding=True pads
    to the longest text whatever max_length says; "max_length" padding or
    truncation without max_length use model_max_length, and do nothing when the
    tokenizer has none (model_max_length above 1e20). Raises ValueError for
    padding without a pad token and for a max_length that pad_to_multiple_of
    does not divide (both when truncating and padding)."""
    if max_length is not None and padding is False and truncation is None:
        warnings.warn("Truncation was not explicitly activated but `max_length` is provided a specific value, "
                      "please use `truncation=True` to explicitly truncate examples to max length. Defaulting to "
                      "'longest_first' truncation strategy.", stacklevel=3)
        truncation = "longest_first"
    pad = padding_strategy(padding)
    trunc = truncation_strategy(truncation)
    if max_length is not None and padding is True and trunc == "do_not_truncate":
        warnings.warn("`max_length` is ignored when `padding`=`True` and there is no truncation strategy. To pad to "
                      "max length, use `padding='max_length'`.", stacklevel=3)
    if max_length is None:
        if pad == "max_length":
            if model_max_length > LARGE_INTEGER:
                warnings.warn("Asking to pad to max_length but no maximum length is provided and the model has no "
                              "predefined maximum length. Default to no padding.", stacklevel=3)
                pad = "do_not_pad"
            else:
                max_length = model_max_length
        if trunc != "do_not_truncate":
            if model_max_length > LARGE_INTEGER:
                warnings.warn("Asking to truncate to max_length but no maximum length is provided and the model has "
                              "no predefined maximum length. Default to no truncation.", stacklevel=3)
                trunc = "do_not_truncate"
            else:
                max_length = model_max_length
    elif not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0:
        raise ValueError(f"max_length must be a non-negative int or None, got {max_length!r}")
    if pad_to_multiple_of is not None and (not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of <= 0):
        raise ValueError(f"pad_to_multiple_of must be a positive int or None, got {pad_to_multiple_of!r}")
    if pad != "do_not_pad" and not has_pad_token:
        raise ValueError("Asking to pad but the tokenizer does not have a padding token. Please select a token to use "
                         "as `pad_token` (`tokenizer.pad_token = tokenizer.eos_token` e.g.)")
    if (trunc != "do_not_truncate" and pad != "do_not_pad" and pad_to_multiple_of is not None and max_length is not None
            and max_length % pad_to_multiple_of != 0):
        raise ValueError("Truncation and padding are both activated but truncation length "
                         f"({max_length}) is not a multiple of pad_to_multiple_of ({pad_to_multiple_of}).")
    return pad, trunc, max_length


def pad_batch(encoded, pad, max_length, pad_to_multiple_of, pad_token_id, padding_side, return_attention_mask):
    """HF ``pad`` over a batch of prepared sequences (dicts of lists, the same
    keys): "longest" pads to the longest, "max_length" to max_length, either
    rounded up to a multiple of pad_to_multiple_of; input_ids take the pad id,
    token_type_ids 0, special_tokens_mask 1, attention_mask 0. Sequences
    longer than the target are left as they are."""
    lengths = [len(e["input_ids"]) for e in encoded]
    target = None
    if pad == "longest":
        target = max(lengths, default=0)
    elif pad == "max_length":
        target = max_length
    if target is not None and pad_to_multiple_of is not None and target % pad_to_multiple_of != 0:
        target = (target // pad_to_multiple_of + 1) * pad_to_multiple_of
    fill = {"input_ids": pad_token_id, "token_type_ids": 0, "special_tokens_mask": 1, "attention_mask": 0}
    for e, n in zip(encoded, lengths):
        if return_attention_mask:
            e["attention_mask"] = [1] * n
        missing = 0 if target is None else target - n
        if missing <= 0:
            continue
        for key in e:
            if key in fill:
                e[key] = e[key] + [fill[key]] * missing if padding_side == "right" else [fill[key]] * missing + e[key]
    return encoded
