"""train_tokenizer: ``lazytrain train_tokenizer`` from Python. Trains a
SentencePiece Unigram or BPE model with RoBERTa's special tokens
(data::train_sentencepiece: the trainer runs in a child process, so that
SentencePiece's fatal checks cannot end this one) and returns it as an
XLMRobertaTokenizer."""
import os
import warnings

from .. import _C
from .tokenization_xlm_roberta import XLMRobertaTokenizer


def train_tokenizer(input_files, output_dir, model_type="unigram", vocab_size=8000, character_coverage=0.9995,
                    max_sentence_length=None, **tokenizer_kwargs):
    """Trains on `input_files` (a path or a list of them: UTF-8 text, one
    sentence a line, empty lines ignored) and writes spm.model, spm.vocab and
    special_tokens_map.json into `output_dir`, as the CLI's ``train_tokenizer
    --input ... --output_dir ...`` does, with its options:

    model_type: "unigram" or "bpe". vocab_size: pieces, the 5 special tokens
    and 256 byte pieces included (at least 262). character_coverage: the share
    of characters the pieces cover, in [0.98, 1]. max_sentence_length: the
    longest line trained on, in bytes (None: the longest line; longer lines
    are skipped with a warning). tokenizer_kwargs go to
    XLMRobertaTokenizer.from_pretrained (model_max_length, padding_side).

    Raises ValueError naming the argument for a bad option, FileNotFoundError
    naming a missing input file, LazytrainError for a corpus SentencePiece
    cannot train on (e.g. too small for vocab_size: its message, with the
    count of lines skipped for length)."""
    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    files = [os.fspath(f) for f in input_files]
    if not files:
        raise ValueError("input_files is empty: expected one or more text files")
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"train_tokenizer: input file '{f}' does not exist or is not a file")
    if model_type not in ("unigram", "bpe"):
        raise ValueError(f"model_type must be 'unigram' or 'bpe', got {model_type!r}")
    if not isinstance(vocab_size, int) or vocab_size < 262:
        raise ValueError(f"vocab_size must be an int of at least 262 (5 special tokens, 256 bytes and a piece), "
                         f"got {vocab_size!r}")
    if not 0.98 <= character_coverage <= 1.0:
        raise ValueError(f"character_coverage must be between 0.98 and 1, got {character_coverage!r}")
    if max_sentence_length is not None and (not isinstance(max_sentence_length, int) or not
                                            1 <= max_sentence_length <= 2**31 - 1):
        raise ValueError(f"max_sentence_length must be None or an int in [1, 2147483647] bytes, "
                         f"got {max_sentence_length!r}")
    output_dir = os.fspath(output_dir)
    summary = _C._train_sentencepiece(files, output_dir, model_type, vocab_size, float(character_coverage),
                                      max_sentence_length or 0, 2)
    if summary["skipped_long_lines"] > 0:
        warnings.warn(f"{summary['skipped_long_lines']} of {summary['num_lines']} lines were skipped as longer than "
                      f"max_sentence_length {summary['max_sentence_length']} bytes (the longest has "
                      f"{summary['longest_line_bytes']}); pass max_sentence_length={summary['longest_line_bytes']}, "
                      "or leave it None, to train on them", stacklevel=2)
    return XLMRobertaTokenizer.from_pretrained(output_dir, **tokenizer_kwargs)
