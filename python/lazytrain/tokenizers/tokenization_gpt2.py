"""GPT2Tokenizer: transformers' class of that name over lazytrain's C++
byte-level BPE (src/data/gpt2_tokenizer.h): GPT-2's pre-tokenization pattern,
bytes mapped to printable characters, merges by rank. No special tokens are
added to a text; <|endoftext|> is bos, eos and unk. GPT-2 has no pad token:
set one before padding (``tokenizer.pad_token = tokenizer.eos_token``)."""
import os

from .. import _C
from .tokenization_utils import PreTrainedTokenizer

END_OF_TEXT = "<|endoftext|>"


class GPT2Tokenizer(PreTrainedTokenizer):
    """GPT-2's tokenizer, loaded from vocab.json (token -> id) and merges.txt,
    which must lie in one directory under those names (the C++ tokenizer
    reads the directory)."""

    vocab_files_names = {"vocab_file": "vocab.json", "merges_file": "merges.txt"}
    model_input_names = ["input_ids", "attention_mask"]
    _native_special_tokens = ("bos_token", "eos_token", "unk_token")
    _config_init_keys = PreTrainedTokenizer._config_init_keys + ("errors", "add_prefix_space", "add_bos_token")

    def __init__(self, vocab_file, merges_file, errors="replace", unk_token=END_OF_TEXT, bos_token=END_OF_TEXT,
                 eos_token=END_OF_TEXT, pad_token=None, add_prefix_space=False, add_bos_token=False, **kwargs):
        if errors != "replace":
            raise ValueError(f"errors={errors!r}: lazytrain's GPT-2 decode replaces bytes that are not UTF-8 "
                             "(errors='replace')")
        if add_prefix_space or add_bos_token:
            raise ValueError("add_prefix_space and add_bos_token: lazytrain's GPT-2 tokenizer encodes the text as it "
                             "is and adds no <|endoftext|> (both False, GPT-2's defaults)")
        vocab_file, merges_file = os.fspath(vocab_file), os.fspath(merges_file)
        directory = os.path.dirname(os.path.abspath(vocab_file))
        if (os.path.basename(vocab_file) != "vocab.json" or os.path.basename(merges_file) != "merges.txt"
                or os.path.dirname(os.path.abspath(merges_file)) != directory):
            raise ValueError(f"GPT2Tokenizer reads vocab.json and merges.txt from one directory, got vocab_file="
                             f"'{vocab_file}' and merges_file='{merges_file}'")
        for path in (vocab_file, merges_file):
            if not os.path.isfile(path):
                raise OSError(f"Can't find '{path}' (GPT2Tokenizer reads vocab.json and merges.txt)")
        native = _C._load_tokenizer("gpt2", directory)
        for name, token in (("unk_token", unk_token), ("bos_token", bos_token), ("eos_token", eos_token)):
            if token != END_OF_TEXT:
                raise ValueError(f"{name}={token!r}: lazytrain's GPT-2 tokenizer has {END_OF_TEXT} as bos, eos and unk")
        super().__init__(native, unk_token=unk_token, bos_token=bos_token, eos_token=eos_token, pad_token=pad_token,
                         **kwargs)

    def _tokenizer_config(self):
        config = super()._tokenizer_config()
        config.update(add_bos_token=False, add_prefix_space=False, errors="replace")
        return config
