"""BertTokenizer: transformers' class of that name (bert-base-uncased's
tokenizer) over lazytrain's C++ WordPieceTokenizer (src/data/wordpiece_tokenizer.h):
BasicTokenizer (clean-up, lower-casing, accent stripping, punctuation and CJK
splits), then greedy longest-match-first WordPiece with "##" continuations;
[CLS] text [SEP] around each text."""
import os

from .. import _C
from .tokenization_utils import PreTrainedTokenizer


class BertTokenizer(PreTrainedTokenizer):
    """BERT's WordPiece tokenizer, loaded from a vocab.txt (one token a line,
    id = line number). Special tokens [UNK] [SEP] [PAD] [CLS] [MASK] must be
    in the vocabulary (LazytrainError naming the file otherwise)."""

    vocab_files_names = {"vocab_file": "vocab.txt"}
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    _default_clean_up_tokenization_spaces = True
    _native_special_tokens = ("unk_token", "sep_token", "cls_token", "mask_token")
    _config_init_keys = PreTrainedTokenizer._config_init_keys + (
        "do_lower_case", "strip_accents", "tokenize_chinese_chars", "do_basic_tokenize", "never_split")

    def __init__(self, vocab_file, do_lower_case=True, do_basic_tokenize=True, never_split=None, unk_token="[UNK]",
                 sep_token="[SEP]", pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]",
                 tokenize_chinese_chars=True, strip_accents=None, clean_up_tokenization_spaces=True, **kwargs):
        if not do_basic_tokenize:
            raise ValueError("do_basic_tokenize=False: lazytrain's WordPiece tokenizer always runs BERT's "
                             "BasicTokenizer first")
        if never_split:
            raise ValueError("never_split: lazytrain's WordPiece tokenizer keeps only the special tokens whole")
        vocab_file = os.fspath(vocab_file)
        if not os.path.isfile(vocab_file):
            raise OSError(f"Can't find a vocabulary file at path '{vocab_file}' (BertTokenizer reads a vocab.txt)")
        options = _C._WordPieceTokenizerOptions()
        options.do_lower_case = bool(do_lower_case)
        options.strip_accents = strip_accents
        options.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        for name, token in (("unk_token", unk_token), ("sep_token", sep_token), ("pad_token", pad_token),
                            ("cls_token", cls_token), ("mask_token", mask_token)):
            setattr(options, name, token)
        self.do_lower_case = bool(do_lower_case)
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        super().__init__(_C._load_tokenizer("wordpiece", vocab_file, options),
                         clean_up_tokenization_spaces=clean_up_tokenization_spaces, unk_token=unk_token,
                         sep_token=sep_token, pad_token=pad_token, cls_token=cls_token, mask_token=mask_token, **kwargs)

    def _tokenizer_config(self):
        config = super()._tokenizer_config()
        config.update(do_basic_tokenize=True, do_lower_case=self.do_lower_case, never_split=None,
                      strip_accents=self.strip_accents, tokenize_chinese_chars=self.tokenize_chinese_chars)
        return config
