"""XLMRobertaTokenizer over lazytrain's C++ SentencePiece tokenizer
(src/data/sentencepiece_tokenizer.h), the tokenizer that
``lazytrain train_tokenizer`` trains for RoBERTa models.

Why this name: transformers calls a tokenizer that puts RoBERTa's special
tokens (<s> text </s>, <pad>, <unk>, <mask>) around the pieces of a
SentencePiece model XLMRobertaTokenizer ("adapted from RobertaTokenizer and
XLNetTokenizer, based on SentencePiece"); RobertaTokenizer itself is GPT-2's
byte-level BPE, and AlbertTokenizer / T5Tokenizer use other special tokens.
Two differences from transformers' class: the model file is spm.model
(transformers': sentencepiece.bpe.model), and the ids are the model's own,
<s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4 then the 256 byte pieces, with no
fairseq offset and <mask> inside the model rather than after it; so a
directory saved here is read by lazytrain, not by transformers' class."""
import os
import tempfile

from .. import _C
from .tokenization_utils import PreTrainedTokenizer


class XLMRobertaTokenizer(PreTrainedTokenizer):
    """A SentencePiece model (Unigram or BPE, byte fallback) with RoBERTa's
    special tokens; ``vocab_file`` is its spm.model."""

    vocab_files_names = {"vocab_file": "spm.model"}
    model_input_names = ["input_ids", "attention_mask"]
    _native_special_tokens = ("bos_token", "eos_token", "unk_token", "sep_token", "cls_token", "mask_token")

    def __init__(self, vocab_file, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
                 unk_token="<unk>", pad_token="<pad>", mask_token="<mask>", **kwargs):
        vocab_file = os.fspath(vocab_file)
        if not os.path.isfile(vocab_file):
            raise OSError(f"Can't find a SentencePiece model at '{vocab_file}' (XLMRobertaTokenizer reads spm.model, "
                          "as `lazytrain train_tokenizer` writes it)")
        native = _C._load_tokenizer("sentencepiece", vocab_file)
        expected = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
                    "unk_token": "<unk>", "mask_token": "<mask>"}
        given = {"bos_token": bos_token, "eos_token": eos_token, "sep_token": sep_token, "cls_token": cls_token,
                 "unk_token": unk_token, "mask_token": mask_token}
        for name, token in given.items():
            if token != expected[name]:
                raise ValueError(f"{name}={token!r}: lazytrain's SentencePiece models have {expected[name]} there")
        super().__init__(native, pad_token=pad_token, **given, **kwargs)

    def train_new_from_iterator(self, text_iterator, vocab_size, length=None, new_special_tokens=None,
                                special_tokens_map=None, model_type="unigram", character_coverage=0.9995,
                                max_sentence_length=None):
        """A new XLMRobertaTokenizer of the same kind trained on the texts of
        `text_iterator` (strings, or lists of strings as batches), as
        transformers' method of that name: SentencePiece ``model_type``
        ("unigram" or "bpe"; the kind of this model is not read back, so it is
        an argument) with ``vocab_size`` pieces, the special tokens and 256 byte
        pieces included. Training runs in a child process (the C++ side's).
        The new tokenizer's files live in a temporary directory for its
        lifetime; ``save_pretrained`` keeps them."""
        from .training import train_tokenizer
        if new_special_tokens or special_tokens_map:
            raise NotImplementedError("new_special_tokens / special_tokens_map: lazytrain's SentencePiece models have "
                                      "RoBERTa's fixed special tokens")
        workdir = tempfile.TemporaryDirectory(prefix="lazytrain-tokenizer-")
        corpus = os.path.join(workdir.name, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for item in text_iterator:
                for text in ([item] if isinstance(item, str) else item):
                    if not isinstance(text, str):
                        raise TypeError(f"text_iterator must yield str or lists of str, got {type(text).__name__}")
                    f.write(text.replace("\r", "\n") + "\n")
        tokenizer = train_tokenizer(corpus, os.path.join(workdir.name, "model"), model_type=model_type,
                                    vocab_size=vocab_size, character_coverage=character_coverage,
                                    max_sentence_length=max_sentence_length, model_max_length=self.model_max_length,
                                    padding_side=self.padding_side)
        tokenizer._workdir = workdir  # the model's files stay while the tokenizer lives
        return tokenizer
