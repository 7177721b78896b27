"""``load_dataset("text", data_files=...)``: Hugging Face ``datasets``' text
builder, reading the files as ``lazytrain run_mlm`` / ``run_clm`` read them
(``src/data/text_dataset.h``)."""
import glob
import os

from .. import _C
from .dataset import Dataset, DatasetDict

_GLOB_CHARS = set("*?[")


def _files(patterns, split):
    """The files of a split: paths, or glob patterns expanded (sorted)."""
    patterns = [patterns] if isinstance(patterns, (str, os.PathLike)) else list(patterns)
    files = []
    for pattern in map(os.fspath, patterns):
        if _GLOB_CHARS & set(pattern):
            matched = sorted(glob.glob(pattern))
            if not matched:
                raise FileNotFoundError(f"Unable to find '{pattern}' (data_files of split '{split}')")
            files.extend(matched)
        elif not os.path.isfile(pattern):
            raise FileNotFoundError(f"Unable to find '{pattern}' (data_files of split '{split}')")
        else:
            files.append(pattern)
    return files


def load_dataset(path, name=None, data_dir=None, data_files=None, split=None, cache_dir=None, features=None,
                 download_config=None, download_mode=None, verification_mode=None, keep_in_memory=None,
                 save_infos=False, revision=None, token=None, streaming=False, num_proc=None, storage_options=None,
                 trust_remote_code=None, keep_linebreaks=False, sample_by="line", encoding="utf-8", **config_kwargs):
    """datasets.load_dataset for the "text" builder: one row per line, column ``text``.

    ``data_files``: a path or glob, a list of them (split "train"), or a dict
    split name -> path(s). Lines end at "\\n", "\\r\\n" or "\\r"; with
    ``keep_linebreaks=False`` (the default, run_mlm.py's) the line ends are
    removed and blank lines kept as "" or whitespace (each tokenizes to the
    special tokens alone, as in Hugging Face's pipeline); with
    ``keep_linebreaks=True`` (run_clm.py's) each line keeps its "\\n". A file
    is read as the C++ CLI reads it, so the rows are the ones it trains on.

    Returns a DatasetDict, or the Dataset of `split`. Errors:
    FileNotFoundError naming a missing file or unmatched pattern; ValueError
    for a builder other than "text", no data_files or an unknown split;
    LazytrainError naming the file for invalid UTF-8 (with line and byte
    offset) or a file with no text. Streaming, split slicing ("train[:5%]")
    and encodings other than UTF-8 are not supported (NotImplementedError).
    """
    if path != "text":
        raise ValueError(f"load_dataset: only the 'text' builder is built into lazytrain, got {path!r}; other formats need "
                         "Hugging Face datasets (lazytrain's DataLoader and collators take its Datasets as they are)")
    if config_kwargs:
        raise TypeError(f"load_dataset('text'): unexpected arguments {sorted(config_kwargs)}")
    if streaming:
        raise NotImplementedError("load_dataset('text', streaming=True): the text files are read into memory")
    if sample_by != "line":
        raise NotImplementedError(f"load_dataset('text', sample_by={sample_by!r}): only 'line' is supported")
    if encoding.replace("-", "").lower() != "utf8":
        raise NotImplementedError(f"load_dataset('text', encoding={encoding!r}): only UTF-8 files are read")
    if data_files is None:
        raise ValueError("load_dataset('text') needs data_files: a path, a list of paths or {split: path(s)}")
    if data_dir is not None:
        base = os.fspath(data_dir)
        join = (lambda p: os.path.join(base, p))
    else:
        join = os.fspath
    if not isinstance(data_files, dict):
        data_files = {"train": data_files}
    splits = DatasetDict()
    for split_name, patterns in data_files.items():
        patterns = [patterns] if isinstance(patterns, (str, os.PathLike)) else list(patterns)
        lines = []
        for file in _files([join(p) for p in patterns], split_name):
            lines.extend(_C._read_text_lines(file, bool(keep_linebreaks)))
        splits[split_name] = Dataset({"text": lines}, split=split_name)
    if split is None:
        return splits
    if "[" in str(split):
        raise NotImplementedError(f"load_dataset: split slicing ({split!r}) is not supported; pass a split name")
    if split not in splits:
        raise ValueError(f'Unknown split "{split}". Should be one of {list(splits)}.')
    return splits[split]
