"""``group_texts``: run_mlm.py's and run_clm.py's grouping of tokenized text
into fixed-size blocks, in numpy."""
import numbers

import numpy as np

from .. import _C


def _concatenated(rows, name):
    """The rows of a column (a list of id lists or 1-D integer arrays, or a 2-D
    integer array) concatenated into one int64 array, and each row's length."""
    if isinstance(rows, np.ndarray) and rows.ndim == 2 and rows.dtype.kind in "iub":
        return rows.reshape(-1).astype(np.int64), np.full(rows.shape[0], rows.shape[1])
    try:
        return _C._concatenate_rows(list(rows))
    except TypeError as error:
        raise TypeError(f"group_texts: column '{name}' does not hold token id sequences ({error}): remove text columns "
                        "first (map(..., remove_columns=...))") from None


def group_texts(examples, block_size, add_labels=False):
    """run_mlm.py's group_texts: every column of `examples` (a batch: a dict of
    rows of token ids, as ``Dataset.map(batched=True)`` passes it) is
    concatenated, the remainder that does not fill a block is dropped (total
    // block_size * block_size tokens are kept), and the rest is cut into
    blocks of `block_size`. Returns a dict of int64 arrays ``[blocks,
    block_size]``, one per column; ``add_labels=True`` adds ``labels``, a copy
    of ``input_ids`` (run_clm.py's).

    Used as run_mlm.py does, ``tokenized.map(lambda b: group_texts(b, 512),
    batched=True)`` (batches of 1000 rows: each drops its own remainder), it
    gives the blocks ``lazytrain run_mlm`` makes from the same text file and
    tokenizer. ValueError for block_size < 1 or columns whose rows differ in
    length; TypeError for a column that holds something other than ids."""
    if not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError(f"group_texts: block_size is {block_size!r}: expected a positive int (run_mlm's max_seq_length)")
    out, first_lengths, first_name = {}, None, None
    for name, rows in examples.items():
        flat, lengths = _concatenated(rows, name)
        if first_lengths is None:
            first_lengths, first_name = lengths, name
        elif not np.array_equal(lengths, first_lengths):
            row = int(np.flatnonzero(lengths != first_lengths)[0]) if lengths.shape == first_lengths.shape else 0
            raise ValueError(f"group_texts: row {row} of '{name}' has another length than in '{first_name}': "
                             "expected columns of equal row lengths")
        total = flat.shape[0] // block_size * block_size
        out[name] = flat[:total].reshape(-1, block_size)
    if add_labels:
        if "input_ids" not in out:
            raise ValueError("group_texts(add_labels=True): no input_ids column to copy into labels")
        out["labels"] = out["input_ids"].copy()
    return out
