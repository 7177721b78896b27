"""A small in-memory column table with the part of Hugging Face's
``datasets.Dataset`` API that run_mlm.py and run_clm.py use: ``column_names``,
``len``, row and column access, ``map`` (batched or not), ``select``,
``filter``, ``remove_columns``; and ``DatasetDict`` of splits.

Columns are Python lists (what a map function returned) or numpy arrays (what
``group_texts`` returns: ``[rows, block_size]`` int64), kept as they come; a
map function sees each column of its batch as a list of rows (lists, or 1-D
arrays for array columns). Everything is in memory: no Arrow files, no cache,
no fingerprints (the caching arguments are accepted and do nothing).
"""
import numbers
from collections.abc import Mapping

import numpy as np


def _column_length(values):
    return values.shape[0] if isinstance(values, np.ndarray) else len(values)


def _rows(values, start, end):
    """Rows [start, end) of a column as a list (array rows stay arrays)."""
    part = values[start:end]
    if isinstance(part, np.ndarray):
        return part.tolist() if part.ndim == 1 else list(part)
    return list(part)


def _concatenate(chunks):
    """One column from the chunks map produced: one array when every chunk is an
    array of the same row shape, else a list of rows."""
    if chunks and all(isinstance(c, np.ndarray) and c.ndim >= 1 and c.shape[1:] == chunks[0].shape[1:] for c in chunks):
        return np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
    out = []
    for c in chunks:
        out.extend(_rows(c, 0, _column_length(c)) if isinstance(c, np.ndarray) else c)
    return out


def _names(columns):
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)


class Dataset:
    """``datasets.Dataset``'s subset over in-memory columns.

    ``Dataset.from_dict({"text": [...]})``; ``ds[i]`` a row (dict),
    ``ds["col"]`` a column, ``ds[a:b]`` / ``ds[[i, j]]`` a batch (dict of
    lists); ``ds.__getitems__(indices)`` a list of rows (what a DataLoader
    asks for). ValueError when columns differ in length.
    """

    def __init__(self, columns, split=None):
        if not isinstance(columns, Mapping):
            raise TypeError(f"Dataset: expected a dict of columns, got {type(columns).__name__}")
        lengths = {name: _column_length(values) for name, values in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"Dataset: columns of different lengths {lengths}: expected one length")
        self._columns = dict(columns)
        self._num_rows = next(iter(lengths.values()), 0)
        self.split = split

    @classmethod
    def from_dict(cls, mapping, features=None, info=None, split=None):
        """datasets.Dataset.from_dict: a dataset of the columns in `mapping`."""
        return cls({k: v if isinstance(v, np.ndarray) else list(v) for k, v in mapping.items()}, split=split)

    @property
    def column_names(self):
        return list(self._columns)

    @property
    def num_rows(self):
        return self._num_rows

    @property
    def num_columns(self):
        return len(self._columns)

    @property
    def shape(self):
        return (self._num_rows, len(self._columns))

    def __len__(self):
        return self._num_rows

    def __repr__(self):
        return f"Dataset({{\n    features: {self.column_names},\n    num_rows: {self._num_rows}\n}})"

    def _row(self, index):
        if index < -self._num_rows or index >= self._num_rows:
            raise IndexError(f"Invalid key: {index} is out of bounds for size {self._num_rows}")
        return {name: values[index] for name, values in self._columns.items()}

    def __getitem__(self, key):
        if isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, bool):
            return self._row(int(key))
        if isinstance(key, str):
            if key not in self._columns:
                raise KeyError(f"Column {key} not in the dataset. Current columns in the dataset: {self.column_names}")
            return self._columns[key]
        if isinstance(key, slice):
            start, stop, step = key.indices(self._num_rows)
            if step == 1:
                return {name: _rows(values, start, stop) for name, values in self._columns.items()}
            key = range(start, stop, step)
        rows = self.__getitems__(list(key))
        return {name: [row[name] for row in rows] for name in self._columns}

    def __getitems__(self, keys):
        """The rows at `keys` (ints), as a list of dicts."""
        return [self._row(int(k)) for k in keys]

    def __iter__(self):
        for i in range(self._num_rows):
            yield self._row(i)

    def select(self, indices, keep_in_memory=False, indices_cache_file_name=None, writer_batch_size=1000,
               new_fingerprint=None):
        """The rows at `indices` (an iterable of ints, in that order) as a new Dataset."""
        idx = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices, dtype=np.int64)
        if idx.size and (idx.min() < -self._num_rows or idx.max() >= self._num_rows):
            raise IndexError(f"Invalid key: indices {idx.min()}..{idx.max()} are out of bounds for size {self._num_rows}")
        columns = {}
        for name, values in self._columns.items():
            columns[name] = values[idx] if isinstance(values, np.ndarray) else [values[i] for i in idx.tolist()]
        return Dataset(columns, split=self.split)

    def remove_columns(self, column_names, new_fingerprint=None):
        names = self._check_columns(_names(column_names), "remove")
        return Dataset({k: v for k, v in self._columns.items() if k not in names}, split=self.split)

    def _check_columns(self, names, verb):
        missing = [n for n in names if n not in self._columns]
        if missing:
            raise ValueError(f"Column to {verb} {missing} not in the dataset. Current columns in the dataset: "
                             f"{self.column_names}")
        return names

    def _apply(self, function, args, fn_kwargs):
        result = function(*args, **fn_kwargs)
        if result is None:
            return {}
        if not isinstance(result, Mapping):
            raise TypeError(f"Provided `function` which is applied to all elements of table returns a variable of type "
                            f"{type(result)}. Make sure provided `function` returns a variable of type `dict` to update "
                            "the dataset or `None` if you are only interested in side effects.")
        return result

    def map(self, function=None, with_indices=False, with_rank=False, input_columns=None, batched=False,
            batch_size=1000, drop_last_batch=False, remove_columns=None, keep_in_memory=False, load_from_cache_file=None,
            cache_file_name=None, writer_batch_size=1000, features=None, disable_nullable=False, fn_kwargs=None,
            num_proc=None, suffix_template=None, new_fingerprint=None, desc=None):
        """datasets.Dataset.map: `function` on every row (a dict) or, with
        ``batched=True``, on every batch of `batch_size` rows (a dict of lists;
        None or <= 0: one batch of all rows); its returned dict updates the
        row/batch (whose `remove_columns` are dropped first), and a batch may
        come back with another number of rows (group_texts). ``input_columns``
        passes those columns as positional arguments instead of the dict;
        ``with_indices`` passes the index (or list of indices) last.
        ``num_proc`` is accepted and runs in this process (lazytrain's
        tokenizers and collators already use several threads in C++); the cache
        arguments do nothing. ValueError for unknown columns or output columns
        of different lengths; TypeError for a function that returns no dict."""
        if with_rank:
            raise NotImplementedError("Dataset.map(with_rank=True): map runs in one process here")
        function = function if function is not None else (lambda x: x)
        remove = self._check_columns(_names(remove_columns), "remove")
        inputs = self._check_columns(_names(input_columns), "use as input")
        fn_kwargs = dict(fn_kwargs or {})
        n = self._num_rows
        chunks = {}
        if batched:
            step = n if batch_size is None or batch_size <= 0 else batch_size
            starts = range(0, n, max(step, 1))
        else:
            step, starts = 1, range(n)
        for start in starts:
            end = min(start + step, n)
            if batched and drop_last_batch and end - start < step:
                break
            if batched:
                batch = {name: _rows(values, start, end) for name, values in self._columns.items()}
                index = list(range(start, end))
            else:
                batch = self._row(start)
                index = start
            args = [batch[c] for c in inputs] if inputs else [batch]
            if with_indices:
                args.append(index)
            out = {k: v for k, v in batch.items() if k not in remove}
            out.update(self._apply(function, args, fn_kwargs))
            if batched:
                lengths = {k: _column_length(v) for k, v in out.items()}
                if len(set(lengths.values())) > 1:
                    raise ValueError(f"Dataset.map: the batch of rows {start}..{end - 1} gives columns of different lengths "
                                     f"{lengths}: expected one length (remove the input columns the function does not return)")
                for k, v in out.items():
                    chunks.setdefault(k, []).append(v if isinstance(v, np.ndarray) else list(v))
            else:
                if chunks and set(out) != set(chunks):
                    raise ValueError(f"Dataset.map: row {start} gives columns {sorted(out)}, earlier rows {sorted(chunks)}")
                for k, v in out.items():
                    chunks.setdefault(k, [[]])[0].append(v)
        if not chunks and n == 0:
            return Dataset({k: v for k, v in self._columns.items() if k not in remove}, split=self.split)
        return Dataset({k: _concatenate(v) for k, v in chunks.items()}, split=self.split)

    def filter(self, function=None, with_indices=False, input_columns=None, batched=False, batch_size=1000,
               fn_kwargs=None, num_proc=None, desc=None, **cache_arguments):
        """datasets.Dataset.filter: the rows for which `function` (on a row, or a
        batch giving a list of bools) is true."""
        function = function if function is not None else (lambda *_: True)
        inputs = self._check_columns(_names(input_columns), "use as input")
        fn_kwargs = dict(fn_kwargs or {})
        keep = []
        n = self._num_rows
        step = (n if batch_size is None or batch_size <= 0 else batch_size) if batched else 1
        for start in range(0, n, max(step, 1)):
            end = min(start + step, n)
            batch = self[start:end] if batched else self._row(start)
            args = [batch[c] for c in inputs] if inputs else [batch]
            if with_indices:
                args.append(list(range(start, end)) if batched else start)
            verdict = function(*args, **fn_kwargs)
            flags = list(verdict) if batched else [bool(verdict)]
            if len(flags) != end - start:
                raise ValueError(f"Dataset.filter: the function gave {len(flags)} values for {end - start} rows")
            keep.extend(i for i, flag in zip(range(start, end), flags) if flag)
        return self.select(keep)


class DatasetDict(dict):
    """datasets.DatasetDict: split name -> Dataset; ``map``/``filter``/
    ``remove_columns`` apply to every split."""

    def _each(self, method, *args, **kwargs):
        return DatasetDict({name: getattr(ds, method)(*args, **kwargs) for name, ds in self.items()})

    def map(self, function=None, **kwargs):
        return self._each("map", function, **kwargs)

    def filter(self, function=None, **kwargs):
        return self._each("filter", function, **kwargs)

    def remove_columns(self, column_names):
        return self._each("remove_columns", column_names)

    @property
    def column_names(self):
        return {name: ds.column_names for name, ds in self.items()}

    @property
    def num_rows(self):
        return {name: ds.num_rows for name, ds in self.items()}

    def __repr__(self):
        inner = ",\n".join(f"    {name}: " + repr(ds).replace("\n", "\n    ") for name, ds in self.items())
        return "DatasetDict({\n" + inner + "\n})"
