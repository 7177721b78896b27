"""transformers' data collators (transformers.data.data_collator) returning numpy
arrays (``return_tensors="np"``, the default here), lazytrain Tensors (``"lt"``)
or torch tensors (``"pt"``).

``DataCollatorForLanguageModeling`` is the C++ collator of
``src/data/data_collator.h``, the one ``lazytrain run_mlm`` trains with: the
same padding, the same masking draws for the same seed and batch number.
"""
from collections.abc import Mapping

import numpy as np

from .. import _C
from ._tensors import check_return_tensors, convert


def _tokenizer_ids(tokenizer, mlm):
    """What the collator needs from a tokenizer, read as transformers' collator
    reads it: ``len(tokenizer)`` (else ``vocab_size``), ``mask_token_id``,
    ``pad_token_id``, ``all_special_ids``."""
    try:
        vocab_size = len(tokenizer)
    except TypeError:
        vocab_size = getattr(tokenizer, "vocab_size", None)
    if not isinstance(vocab_size, int) or vocab_size < 1:
        raise TypeError(f"DataCollatorForLanguageModeling: the tokenizer ({type(tokenizer).__name__}) has no vocabulary size: "
                        "expected len(tokenizer) or tokenizer.vocab_size")
    mask = getattr(tokenizer, "mask_token_id", None)
    if mlm and mask is None:
        raise ValueError("This tokenizer does not have a mask token which is necessary for masked language modeling. "
                         "You should pass `mlm=False` to train on causal language modeling instead.")
    pad = getattr(tokenizer, "pad_token_id", None)
    special = [int(i) for i in getattr(tokenizer, "all_special_ids", []) if i is not None]
    return vocab_size, (-1 if mask is None else int(mask)), pad, special


def _as_dicts(examples, who):
    """A list of examples, each a dict (Mappings such as BatchEncoding copied into one) or an id sequence."""
    if isinstance(examples, Mapping) or isinstance(examples, (str, bytes)):
        raise TypeError(f"{who}: expected a list of examples (dicts with input_ids, or id lists), got a {type(examples).__name__}")
    return [ex if isinstance(ex, dict) or not isinstance(ex, Mapping) else dict(ex) for ex in examples]


class DataCollatorForLanguageModeling:
    """transformers.DataCollatorForLanguageModeling over the C++ collator.

    ``collator(examples)``: ``examples`` is a list of dicts with ``input_ids`` and
    optionally ``attention_mask`` and ``special_tokens_mask`` (lists or 1-D
    integer arrays), or a list of id lists. Returns a dict of ``input_ids``,
    ``attention_mask`` and ``labels``, int64 ``[batch, seq]`` where seq is the
    longest example rounded up to ``pad_to_multiple_of``:

    * rows are padded with ``pad_token_id`` (attention_mask 0) on the
      tokenizer's ``padding_side`` ("right" unless it says "left"), as
      transformers' collator pads;
    * ``token_type_ids``, when every example has them, are padded with 0 on
      that side and returned too (transformers keeps them);
    * ``mlm=True``: each position that is not special (by the example's
      ``special_tokens_mask``, else by the tokenizer's ``all_special_ids``;
      padding never) is chosen with probability ``mlm_probability``; ``labels``
      holds the original id there and -100 elsewhere; a chosen token becomes
      ``mask_token_id`` with probability 0.8, else a uniform random id in
      ``[0, len(tokenizer))`` with probability 0.5, else stays (transformers'
      80/10/10 rule);
    * ``mlm=False``: ``labels`` are the ids with the padding (ids equal to
      ``pad_token_id``) set to -100.

    Draws: ``collator(examples)`` draws from the collator's own generator
    (``std::mt19937_64(seed)``), which advances from call to call as
    transformers' does. ``collator.collate(examples, batch_number)`` draws from
    a generator seeded from ``(seed, batch_number)`` alone: thread-safe, and the
    batch does not depend on which thread makes it, in which order, or on a
    resumed run. ``lazytrain.data.DataLoader`` calls ``collate`` with each
    batch's number in the run (epoch * len(loader) + index; with a
    ``DistributedSampler``, that times num_replicas plus rank), which is what
    the C++ Trainer does, so a Python pipeline gives the ``lazytrain run_mlm``
    batches exactly.

    ``tokenizer`` is duck-typed: ``len(tokenizer)`` (or ``vocab_size``),
    ``mask_token_id``, ``pad_token_id``, ``all_special_ids``. Fields other than
    the four above are not collated. Errors: ValueError
    for mlm without a mask token, an mlm_probability outside [0, 1], a
    pad_to_multiple_of below 1, padding without a pad token, replacement
    probabilities other than 0.8/0.1; TypeError/KeyError naming the example
    for malformed examples; LazytrainError for masks of another length than
    their input_ids.
    """

    def __init__(self, tokenizer, mlm=True, mlm_probability=0.15, mask_replace_prob=0.8, random_replace_prob=0.1,
                 pad_to_multiple_of=None, tf_experimental_compile=False, return_tensors="np", seed=42):
        check_return_tensors(return_tensors, "DataCollatorForLanguageModeling")
        if not 0.0 <= float(mlm_probability) <= 1.0:
            raise ValueError(f"mlm_probability should be between 0 and 1, got {mlm_probability}")
        if (mask_replace_prob, random_replace_prob) != (0.8, 0.1):
            raise ValueError("DataCollatorForLanguageModeling: only mask_replace_prob=0.8 and random_replace_prob=0.1 "
                             f"(BERT's rule, the C++ collator's) are supported, got {mask_replace_prob}, {random_replace_prob}")
        if pad_to_multiple_of is not None and (not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of < 1):
            raise ValueError(f"pad_to_multiple_of should be None or a positive int, got {pad_to_multiple_of!r}")
        if tf_experimental_compile:
            raise ValueError("DataCollatorForLanguageModeling: tf_experimental_compile is TensorFlow's; lazytrain has none")
        if seed is None:
            seed = 42
        self.tokenizer = tokenizer
        self.mlm = bool(mlm)
        self.mlm_probability = float(mlm_probability)
        self.mask_replace_prob = mask_replace_prob
        self.random_replace_prob = random_replace_prob
        self.pad_to_multiple_of = pad_to_multiple_of
        self.return_tensors = return_tensors
        self.seed = int(seed)
        vocab_size, mask, self._pad, special = _tokenizer_ids(tokenizer, self.mlm)
        self._native = _C._DataCollatorForLanguageModeling(
            vocab_size, mask, -1 if self._pad is None else int(self._pad), special, self.mlm, True,
            self.mlm_probability, pad_to_multiple_of or 0, self.seed)

    def _check_padding(self, examples):
        if self._pad is not None:
            return
        lengths = {len(ex["input_ids"] if isinstance(ex, dict) and "input_ids" in ex else ex) for ex in examples}
        if len(lengths) > 1 or (self.pad_to_multiple_of and lengths and lengths.pop() % self.pad_to_multiple_of):
            raise ValueError(f"You are attempting to pad samples but the tokenizer you are using "
                             f"({type(self.tokenizer).__name__}) does not have a pad token.")

    def _finish(self, arrays, examples):
        input_ids, attention_mask, labels = arrays
        batch = {"input_ids": np.array(input_ids), "attention_mask": np.array(attention_mask), "labels": np.array(labels)}
        # The C++ collator pads on the right (its draws are made per token, so
        # moving a row's padding to the left keeps them).
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        lengths = [len(ex["input_ids"] if isinstance(ex, dict) else ex) for ex in examples]
        if all(isinstance(ex, dict) and ex.get("token_type_ids") is not None for ex in examples):
            seq = input_ids.shape[1]
            batch["token_type_ids"] = np.stack([
                np.concatenate([np.asarray(ex["token_type_ids"], dtype=np.int64), np.zeros(seq - n, np.int64)])
                for ex, n in zip(examples, lengths)])
        if left:
            for key, rows in batch.items():
                for i, n in enumerate(lengths):
                    rows[i] = np.roll(rows[i], rows.shape[1] - n)
        return convert(batch, self.return_tensors)

    def __call__(self, examples):
        examples = _as_dicts(examples, "DataCollatorForLanguageModeling")
        self._check_padding(examples)
        return self._finish(self._native(examples), examples)

    def collate(self, examples, batch_number):
        """The batch of `examples` with the draws of batch `batch_number` (an int >= 0): thread-safe, the same
        batch whatever was collated before."""
        if not isinstance(batch_number, (int, np.integer)) or batch_number < 0:
            raise ValueError(f"collate: batch_number should be an int >= 0, got {batch_number!r}")
        examples = _as_dicts(examples, "DataCollatorForLanguageModeling")
        self._check_padding(examples)
        return self._finish(self._native.collate(examples, int(batch_number)), examples)


def _stack(values, key):
    first = values[0]
    if isinstance(first, np.ndarray):
        shapes = {v.shape for v in values}
        if len(shapes) > 1:
            raise ValueError(f"'{key}' has arrays of shapes {sorted(shapes)}: expected equal shapes "
                             "(pad first: DataCollatorWithPadding or DataCollatorForLanguageModeling)")
        return np.stack(values)
    try:
        return np.array(values)
    except ValueError:
        lengths = sorted({len(v) for v in values if hasattr(v, "__len__")})
        raise ValueError(f"'{key}' has rows of lengths {lengths}: expected equal lengths "
                         "(pad first: DataCollatorWithPadding or DataCollatorForLanguageModeling)") from None


def default_data_collator(features, return_tensors="np"):
    """transformers.default_data_collator: stacks the examples' fields into
    arrays, ``[batch, ...]``. ``label`` (a number) or ``label_ids`` become
    ``labels`` (int64 for ints, float32 for floats); fields that are None or
    strings are left out. ``features`` are dicts (or objects, whose
    ``vars()`` are taken). ValueError for fields of unequal lengths."""
    check_return_tensors(return_tensors, "default_data_collator")
    if not features:
        raise ValueError("default_data_collator: no features: expected a non-empty list of examples")
    if not isinstance(features[0], Mapping):
        if not hasattr(features[0], "__dict__"):
            raise TypeError(f"default_data_collator: example 0 is a {type(features[0]).__name__}; expected a dict of field "
                            "name -> values (e.g. {'input_ids': [...], 'labels': [...]}: tokenize text first)")
        features = [vars(f) for f in features]
    first = features[0]
    batch = {}
    if first.get("label") is not None:
        label = first["label"].item() if isinstance(first["label"], np.ndarray) else first["label"]
        dtype = np.int64 if isinstance(label, (int, np.integer)) else np.float32
        batch["labels"] = np.array([f["label"] for f in features], dtype=dtype)
    elif first.get("label_ids") is not None:
        if isinstance(first["label_ids"], np.ndarray):
            batch["labels"] = _stack([f["label_ids"] for f in features], "label_ids")
        else:
            dtype = np.int64 if isinstance(first["label_ids"][0], (int, np.integer)) else np.float32
            batch["labels"] = np.array([f["label_ids"] for f in features], dtype=dtype)
    for key, value in first.items():
        if key in ("label", "label_ids") or value is None or isinstance(value, str):
            continue
        batch[key] = _stack([f[key] for f in features], key)
    return convert(batch, return_tensors)


class DataCollatorWithPadding:
    """transformers.DataCollatorWithPadding: pads every example to the longest
    (``padding=True``/``"longest"``), to ``max_length`` (``"max_length"``) or
    not at all (``False``/``"do_not_pad"``), rounded up to
    ``pad_to_multiple_of``, on the tokenizer's ``padding_side`` ("right" unless
    it says "left"). ``input_ids`` are padded with ``pad_token_id``,
    ``attention_mask`` with 0 (and made, all 1 before padding, when the
    examples lack it), ``token_type_ids`` with 0, ``special_tokens_mask`` with
    1; ``label``/``label_ids`` become ``labels``; other fields are stacked as
    ``default_data_collator`` does. ValueError for a missing pad token, a
    padding value it does not know, or ``"max_length"`` without max_length."""

    _PAD_VALUES = {"attention_mask": 0, "token_type_ids": 0, "special_tokens_mask": 1}

    def __init__(self, tokenizer, padding=True, max_length=None, pad_to_multiple_of=None, return_tensors="np"):
        check_return_tensors(return_tensors, "DataCollatorWithPadding")
        if padding not in (True, False, "longest", "max_length", "do_not_pad"):
            raise ValueError(f"DataCollatorWithPadding: padding={padding!r}; expected True, False, 'longest', "
                             "'max_length' or 'do_not_pad'")
        if padding == "max_length" and max_length is None:
            raise ValueError("DataCollatorWithPadding: padding='max_length' needs max_length")
        self.tokenizer = tokenizer
        self.padding = padding
        self.max_length = max_length
        self.pad_to_multiple_of = pad_to_multiple_of
        self.return_tensors = return_tensors

    def _target_length(self, lengths):
        if self.padding in (False, "do_not_pad"):
            return None
        n = self.max_length if self.padding == "max_length" else max(lengths)
        if self.pad_to_multiple_of:
            n = -(-n // self.pad_to_multiple_of) * self.pad_to_multiple_of
        return n

    def __call__(self, features):
        features = [dict(f) for f in _as_dicts(features, "DataCollatorWithPadding")]
        if not features or not all("input_ids" in f for f in features):
            raise ValueError("DataCollatorWithPadding: expected a non-empty list of dicts with input_ids")
        lengths = [len(f["input_ids"]) for f in features]
        for f, n in zip(features, lengths):
            f.setdefault("attention_mask", [1] * n)
        target = self._target_length(lengths)
        if target is not None and any(n != target for n in lengths):
            pad_id = getattr(self.tokenizer, "pad_token_id", None)
            if pad_id is None:
                raise ValueError(f"You are attempting to pad samples but the tokenizer you are using "
                                 f"({type(self.tokenizer).__name__}) does not have a pad token.")
            left = getattr(self.tokenizer, "padding_side", "right") == "left"
            for f, n in zip(features, lengths):
                for key in ["input_ids"] + [k for k in self._PAD_VALUES if k in f]:
                    value = pad_id if key == "input_ids" else self._PAD_VALUES[key]
                    row = np.asarray(f[key], dtype=np.int64)
                    fill = np.full(max(target - n, 0), value, dtype=np.int64)
                    f[key] = np.concatenate([fill, row] if left else [row, fill])
        return default_data_collator(features, self.return_tensors)
