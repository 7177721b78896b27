"""PreTrainedTokenizer: the base of lazytrain's tokenizers, with transformers'
API (``__call__``, ``encode``, ``decode``, ``batch_decode``,
``convert_ids_to_tokens``, special tokens, ``save_pretrained``,
``from_pretrained``) over a C++ tokenizer (src/data/tokenizer.h).

Tokenization, truncation and the special tokens around a text happen in C++
(``data::encode_batch``: a list of texts is encoded on several threads with
the GIL released); padding, masks and tensors are arranged here, as
transformers' ``PreTrainedTokenizerBase`` does. Pairs of texts (``text_pair``)
are not supported: the C++ tokenizers build single sequences only."""
import json
import os

import numpy as np

from .. import _C
from .tokenization_utils_base import (
    SPECIAL_TOKENS_ATTRIBUTES, VERY_LARGE_INTEGER, BatchEncoding, check_tensor_type, pad_batch,
    resolve_padding_truncation,
)

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"

# TOKENIZERS_PARALLELISM=false (Hugging Face tokenizers' switch) keeps batch
# encoding on one thread; read once, at import.
_NUM_THREADS = 1 if os.environ.get("TOKENIZERS_PARALLELISM", "").lower() in ("0", "false", "no", "off") else 0


def _token_content(value, source, name):
    """A special token from a config file: a string, or an AddedToken dict's "content"."""
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{source}: {name} must be a string or {{\"content\": ...}}, got {value!r}")


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _write_json_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def _ids_list(ids, what):
    """token ids (an int, a list, a 1-D numpy array or lazytrain Tensor) as a list of ints."""
    if isinstance(ids, _C.Tensor):
        ids = ids.tolist()
    elif isinstance(ids, np.ndarray):
        ids = ids.tolist()
    if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
        return [int(ids)]
    is_id = lambda i: isinstance(i, (int, np.integer)) and not isinstance(i, bool)  # noqa: E731
    if isinstance(ids, (list, tuple)) and all(is_id(i) for i in ids):
        return [int(i) for i in ids]
    raise TypeError(f"{what} expects token ids: an int, a list of ints or a 1-D array, got {type(ids).__name__}"
                    + (" of lists (use batch_decode)" if isinstance(ids, (list, tuple)) and ids
                       and isinstance(ids[0], (list, tuple)) else ""))


class PreTrainedTokenizer:
    """Hugging Face's tokenizer API over one C++ tokenizer.

    Attributes as transformers': ``model_max_length`` (the longest input the
    model takes, in tokens; ``int(1e30)``, "no limit", unless
    tokenizer_config.json or the caller gives one), ``padding_side``
    ("right" or "left"), ``truncation_side`` ("right" or "left": which end of
    a text truncation cuts, as transformers), ``model_input_names``, ``is_fast`` (False), the
    special tokens ``bos_token``, ``eos_token``, ``unk_token``, ``sep_token``,
    ``pad_token``, ``cls_token``, ``mask_token`` (None where the tokenizer has
    none) and their ``*_id``."""

    vocab_files_names = {}
    model_input_names = ["input_ids", "attention_mask"]
    _native_kind = ""
    _default_clean_up_tokenization_spaces = False
    # Special tokens the C++ tokenizer adds or knows by itself: they cannot be
    # changed from Python (pad_token, used only here, can).
    _native_special_tokens = ()
    is_fast = False

    def __init__(self, native, *, model_max_length=None, padding_side="right", truncation_side="right",
                 clean_up_tokenization_spaces=None, name_or_path="", **special_tokens):
        self._native = native
        self._vocab = None
        self.name_or_path = name_or_path
        self.model_max_length = VERY_LARGE_INTEGER if model_max_length is None else int(model_max_length)
        if padding_side not in ("right", "left"):
            raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
        self.padding_side = padding_side
        if truncation_side not in ("right", "left"):
            raise ValueError(f"truncation_side must be 'right' or 'left', got {truncation_side!r}")
        self.truncation_side = truncation_side
        self.clean_up_tokenization_spaces = (self._default_clean_up_tokenization_spaces
                                             if clean_up_tokenization_spaces is None else clean_up_tokenization_spaces)
        self._special_tokens = {name: None for name in SPECIAL_TOKENS_ATTRIBUTES}
        for name, token in special_tokens.items():
            if name not in SPECIAL_TOKENS_ATTRIBUTES:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{name}'")
            if token is not None:
                self._check_in_vocab(token, name)
            self._special_tokens[name] = token

    # ---- loading and saving ----
    @classmethod
    def _files_in(cls, directory):
        """The files the C++ tokenizer loads, checked to exist: {init argument: path}."""
        files = {}
        for arg, name in cls.vocab_files_names.items():
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                expected = ", ".join(cls.vocab_files_names.values())
                raise OSError(f"Can't load tokenizer from '{directory}': {name} is missing (a {cls.__name__} "
                              f"directory holds {expected})")
            files[arg] = path
        return files

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """The tokenizer saved in a directory: its vocabulary files
        (``vocab_files_names``), with tokenizer_config.json's and
        special_tokens_map.json's settings where present; keyword arguments
        override them (``model_max_length=512``, ``padding_side="left"``, ...).
        Raises OSError naming the directory and the missing file, ValueError
        naming a config file that is malformed or asks for what lazytrain's
        tokenizers do not do, LazytrainError naming a vocabulary file that is
        malformed."""
        path = os.fspath(pretrained_model_name_or_path)
        if not os.path.isdir(path):
            raise OSError(f"Can't load tokenizer for '{path}': it is not a directory (expected one holding "
                          f"{', '.join(cls.vocab_files_names.values())}, as save_pretrained writes)")
        init = {}
        config_file = os.path.join(path, TOKENIZER_CONFIG_FILE)
        if os.path.isfile(config_file):
            init.update(cls._init_kwargs_from_config(_read_json(config_file), config_file))
        map_file = os.path.join(path, SPECIAL_TOKENS_MAP_FILE)
        if os.path.isfile(map_file):
            for name, value in _read_json(map_file).items():
                if name in SPECIAL_TOKENS_ATTRIBUTES:
                    init[name] = _token_content(value, map_file, name)
        init.update(kwargs)
        files = cls._files_in(path)
        try:
            return cls(**files, name_or_path=path, **init)
        except ValueError as e:  # a setting of its config files lazytrain cannot follow: name the directory
            raise ValueError(f"Can't load tokenizer from '{path}': {e}") from None

    # Keys of tokenizer_config.json that __init__ takes; the others are
    # transformers' bookkeeping (added_tokens_decoder, tokenizer_class, ...).
    _config_init_keys = ("model_max_length", "padding_side", "truncation_side", "clean_up_tokenization_spaces")

    @classmethod
    def _init_kwargs_from_config(cls, config, source):
        init = {}
        for key, value in config.items():
            if key in SPECIAL_TOKENS_ATTRIBUTES:
                init[key] = _token_content(value, source, key)
            elif key in cls._config_init_keys:
                init[key] = value
        return init

    def _tokenizer_config(self):
        """tokenizer_config.json as transformers writes it for this class."""
        added = {}
        for token in self.all_special_tokens:
            added[str(self.convert_tokens_to_ids(token))] = {
                "content": token, "lstrip": token == "<mask>", "normalized": False, "rstrip": False,
                "single_word": False, "special": True}
        config = {"added_tokens_decoder": dict(sorted(added.items(), key=lambda kv: int(kv[0]))),
                  "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces,
                  "extra_special_tokens": {},
                  "model_max_length": self.model_max_length,
                  "padding_side": self.padding_side,
                  "tokenizer_class": type(self).__name__}
        config.update(self._special_tokens)
        return config

    def save_pretrained(self, save_directory, **kwargs):
        """Writes the vocabulary files (as the C++ tokenizer and the CLI write
        them), tokenizer_config.json and special_tokens_map.json (as
        transformers writes them), each atomically; returns their paths.
        Raises NotADirectoryError when `save_directory` is a file."""
        if kwargs:
            raise TypeError(f"save_pretrained() got unexpected keyword arguments: {', '.join(kwargs)}")
        directory = os.fspath(save_directory)
        if os.path.isfile(directory):
            raise NotADirectoryError(f"save_pretrained: '{directory}' is a file, expected a directory")
        os.makedirs(directory, exist_ok=True)
        self._native.save_pretrained(directory)
        config_file = os.path.join(directory, TOKENIZER_CONFIG_FILE)
        _write_json_atomically(config_file, self._tokenizer_config())
        map_file = os.path.join(directory, SPECIAL_TOKENS_MAP_FILE)
        _write_json_atomically(map_file, self.special_tokens_map)
        return (config_file, map_file) + tuple(os.path.join(directory, n) for n in self.vocab_files_names.values())

    # ---- special tokens ----
    def _check_in_vocab(self, token, name):
        if not isinstance(token, str):
            raise TypeError(f"{name} must be a string, got {type(token).__name__}")
        if token not in self._token_to_id():
            raise ValueError(f"{name} '{token}' is not in {type(self).__name__}'s vocabulary: lazytrain's tokenizers "
                             "cannot add tokens; pick one of the vocabulary (e.g. tokenizer.pad_token = "
                             "tokenizer.eos_token)")

    def _set_special_token(self, name, token):
        if name in self._native_special_tokens and token != self._special_tokens[name]:
            raise ValueError(f"{type(self).__name__}'s C++ tokenizer adds {name} "
                             f"'{self._special_tokens[name]}' itself; it cannot be changed to {token!r}")
        if token is not None:
            self._check_in_vocab(token, name)
        self._special_tokens[name] = token

    @property
    def special_tokens_map(self):
        """{attribute: token} for each special token the tokenizer has."""
        return {k: v for k, v in self._special_tokens.items() if v is not None}

    @property
    def all_special_tokens(self):
        """The special tokens, each once, in transformers' order (bos, eos, unk, sep, pad, cls, mask)."""
        seen = []
        for name in SPECIAL_TOKENS_ATTRIBUTES:
            token = self._special_tokens[name]
            if token is not None and token not in seen:
                seen.append(token)
        return seen

    @property
    def all_special_ids(self):
        return self.convert_tokens_to_ids(self.all_special_tokens)

    # ---- vocabulary ----
    @property
    def vocab_size(self):
        return self._native.vocab_size

    def __len__(self):
        return self._native.vocab_size

    def get_vocab(self):
        """{token: id} for the whole vocabulary (a copy)."""
        return dict(self._token_to_id())

    def _token_to_id(self):
        if self._vocab is None:  # built once; a later duplicate of a token wins, as HF's load_vocab
            self._vocab = {token: i for i, token in enumerate(self._native.vocab())}
        return self._vocab

    def convert_tokens_to_ids(self, tokens):
        """The id of a token (or a list of them); tokens not in the vocabulary give unk_token_id."""
        vocab = self._token_to_id()
        unk = vocab.get(self._special_tokens["unk_token"]) if self._special_tokens["unk_token"] else None
        if isinstance(tokens, str):
            return vocab.get(tokens, unk)
        return [vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids, skip_special_tokens=False):
        """The token of an id (a str), or of each id of a list (a list).
        Raises LazytrainError naming an id outside [0, vocab_size)."""
        if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
            return self._native.convert_id_to_token(int(ids))
        special = set(self.all_special_ids) if skip_special_tokens else ()
        ids = _ids_list(ids, "convert_ids_to_tokens")
        return [self._native.convert_id_to_token(i) for i in ids if i not in special]

    def tokenize(self, text, add_special_tokens=False):
        """The tokens of `text` (without special tokens unless asked for)."""
        return self.convert_ids_to_tokens(self.encode(text, add_special_tokens=add_special_tokens))

    def convert_tokens_to_string(self, tokens):
        return self.decode(self.convert_tokens_to_ids(tokens))

    def num_special_tokens_to_add(self, pair=False):
        if pair:
            raise NotImplementedError("lazytrain's tokenizers build single sequences only (no text pairs)")
        return sum(self._native.special_tokens_layout)

    def build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None):
        """[CLS] ids [SEP] (BERT), <s> ids </s> (XLM-R), ids (GPT-2)."""
        if token_ids_1 is not None:
            raise NotImplementedError("lazytrain's tokenizers build single sequences only (no text pairs)")
        return self._native.build_inputs_with_special_tokens(_ids_list(token_ids_0, "build_inputs_with_special_tokens"))

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None, already_has_special_tokens=False):
        """1 for each special token of build_inputs_with_special_tokens(token_ids_0),
        0 for each id of the sequence; with already_has_special_tokens, 1 where an
        id is one of all_special_ids."""
        if token_ids_1 is not None:
            raise NotImplementedError("lazytrain's tokenizers build single sequences only (no text pairs)")
        ids = _ids_list(token_ids_0, "get_special_tokens_mask")
        if already_has_special_tokens:
            special = set(self.all_special_ids)
            return [1 if i in special else 0 for i in ids]
        before, after = self._native.special_tokens_layout
        return [1] * before + [0] * len(ids) + [1] * after

    # ---- encoding ----
    def _truncate_left(self, seq, length, add_special_tokens):
        """`seq` cut to `length` tokens by dropping text tokens at its start;
        the special tokens around the text stay (transformers' truncation_side="left")."""
        if len(seq) <= length:
            return seq
        before, after = self._native.special_tokens_layout if add_special_tokens else (0, 0)
        keep = length - before - after
        body = seq[before:len(seq) - after]
        return seq[:before] + (body[len(body) - keep:] if keep > 0 else []) + seq[len(seq) - after:]

    def __call__(self, text=None, text_pair=None, add_special_tokens=True, padding=False, truncation=None,
                 max_length=None, pad_to_multiple_of=None, return_tensors=None, return_token_type_ids=None,
                 return_attention_mask=None, return_special_tokens_mask=False, return_length=False, **kwargs):
        """Hugging Face's tokenizer(text): a BatchEncoding of input_ids (plus
        token_type_ids where model_input_names has them, attention_mask, and
        special_tokens_mask / length where asked for).

        text: a str (values are lists of ints) or a list of str (a batch:
        lists of lists; encoded on several C++ threads without the GIL).
        padding: False/"do_not_pad", True/"longest" (to the longest text of the
        batch), "max_length" (to max_length, or model_max_length when None).
        truncation: True/"longest_first"/"only_first" cut each text so that it
        fits max_length (model_max_length when None) with its special tokens,
        at the end ``truncation_side`` names (its start for "left");
        None with a max_length and no padding truncates too (transformers' rule).
        return_tensors: None (lists), "np" (numpy int64 [batch, seq_len]) or
        "lt" (lazytrain int64 Tensors [batch, seq_len]); a single text gets a
        batch axis of 1. return_length: each text's count of tokens before
        padding (transformers' slow tokenizers give that for a batch; its fast
        ones, and the slow ones for one text, count the padding too).
        Raises ValueError for a bad argument, for padding without a pad token,
        for a max_length that leaves no room for the special tokens, for
        "lt" tensors of a ragged batch; NotImplementedError for text_pair."""
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__call__() got unexpected keyword arguments: {', '.join(kwargs)} "
                            "(lazytrain's tokenizers take text, add_special_tokens, padding, truncation, max_length, "
                            "pad_to_multiple_of, return_tensors, return_token_type_ids, return_attention_mask, "
                            "return_special_tokens_mask, return_length)")
        if text_pair is not None:
            raise NotImplementedError("text_pair: lazytrain's C++ tokenizers build single sequences only "
                                      "([CLS] A [SEP]); encode the texts separately")
        if text is None:
            raise ValueError("You need to specify `text`: a str or a list of str")
        is_batch = not isinstance(text, str)
        texts = list(text) if isinstance(text, (list, tuple)) else None
        if is_batch and (texts is None or not all(isinstance(t, str) for t in texts)):
            bad = type(text if texts is None else next(t for t in texts if not isinstance(t, str))).__name__
            raise ValueError(f"text input must be a str or a list of str, got {bad}"
                             + (" (pre-tokenized words are not supported)" if texts is not None else ""))
        if not is_batch:
            texts = [text]
        if return_tensors is not None:
            check_tensor_type(return_tensors)
        pad, trunc, max_length = resolve_padding_truncation(
            padding, truncation, max_length, pad_to_multiple_of, self.model_max_length, self.pad_token_id is not None)
        truncate_to = max_length if trunc != "do_not_truncate" else None
        num_special = self.num_special_tokens_to_add() if add_special_tokens else 0
        if truncate_to is not None and truncate_to < num_special:
            raise ValueError(f"max_length={truncate_to} leaves no room for the {num_special} special tokens that "
                             f"{type(self).__name__} adds to each text: expected max_length >= {num_special}")
        if self.truncation_side not in ("right", "left"):
            raise ValueError(f"truncation_side must be 'right' or 'left', got {self.truncation_side!r}")
        if self.truncation_side == "left" and truncate_to is not None:
            ids = [self._truncate_left(seq, truncate_to, add_special_tokens)
                   for seq in self._native.encode_batch(texts, add_special_tokens, None, _NUM_THREADS)]
        else:
            ids = self._native.encode_batch(texts, add_special_tokens, truncate_to, _NUM_THREADS)
        if return_token_type_ids is None:
            return_token_type_ids = "token_type_ids" in self.model_input_names
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        before, after = self._native.special_tokens_layout if add_special_tokens else (0, 0)
        keys = [k for k, wanted in (("input_ids", True), ("token_type_ids", return_token_type_ids),
                                    ("special_tokens_mask", return_special_tokens_mask),
                                    ("attention_mask", return_attention_mask)) if wanted]
        encoded = []
        for seq in ids:
            e = {"input_ids": seq}
            if return_token_type_ids:
                e["token_type_ids"] = [0] * len(seq)
            if return_special_tokens_mask:
                e["special_tokens_mask"] = [1] * before + [0] * (len(seq) - before - after) + [1] * after
            encoded.append(e)
        if return_length:  # before padding, as transformers' slow tokenizers give it for a batch
            keys.append("length")
            lengths = [len(e["input_ids"]) for e in encoded]
        pad_batch(encoded, pad, max_length, pad_to_multiple_of, self.pad_token_id, self.padding_side,
                  return_attention_mask)
        if return_length:
            for e, n in zip(encoded, lengths):
                e["length"] = n
        if not is_batch:
            return BatchEncoding(encoded[0], tensor_type=return_tensors, prepend_batch_axis=True)
        return BatchEncoding({k: [e[k] for e in encoded] for k in keys}, tensor_type=return_tensors)

    def encode(self, text, text_pair=None, add_special_tokens=True, padding=False, truncation=None, max_length=None,
               return_tensors=None, **kwargs):
        """The input_ids of one text (a list of ints; [1, seq_len] with return_tensors)."""
        if not isinstance(text, str):
            raise ValueError(f"encode takes one text (a str), got {type(text).__name__}; call the tokenizer on a list")
        return self(text, text_pair=text_pair, add_special_tokens=add_special_tokens, padding=padding,
                    truncation=truncation, max_length=max_length, return_tensors=return_tensors,
                    return_attention_mask=False, return_token_type_ids=False, **kwargs)["input_ids"]

    def encode_plus(self, text, **kwargs):
        return self(text, **kwargs)

    def batch_encode_plus(self, batch_text_or_text_pairs, **kwargs):
        return self(list(batch_text_or_text_pairs), **kwargs)

    # ---- decoding ----
    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=None):
        """The text of `token_ids` (an int, a list, a 1-D numpy array or Tensor),
        the tokenizer's way: BERT joins "##" pieces, GPT-2 maps its bytes back
        (bytes that are not UTF-8 become U+FFFD, errors="replace"), SentencePiece
        renders its pieces. clean_up_tokenization_spaces (default: the
        tokenizer's, True for BERT) tightens " ." " ," " n't" etc.
        Raises LazytrainError naming an id outside [0, vocab_size)."""
        return self._native.decode(_ids_list(token_ids, "decode"), skip_special_tokens,
                                   self._clean_up(clean_up_tokenization_spaces))

    def batch_decode(self, sequences, skip_special_tokens=False, clean_up_tokenization_spaces=None):
        """decode() of each row of `sequences` (a list of lists, a 2-D array or Tensor)."""
        if isinstance(sequences, (_C.Tensor, np.ndarray)):
            sequences = sequences.tolist()
        rows = [_ids_list(s, "batch_decode") for s in sequences]
        return self._native.decode_batch(rows, skip_special_tokens, self._clean_up(clean_up_tokenization_spaces))

    def _clean_up(self, clean_up_tokenization_spaces):
        return bool(self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None
                    else clean_up_tokenization_spaces)

    def train_new_from_iterator(self, text_iterator, vocab_size, **kwargs):
        """transformers trains a new tokenizer of the same kind; lazytrain
        trains SentencePiece models only (XLMRobertaTokenizer overrides this)."""
        raise NotImplementedError(f"{type(self).__name__}.train_new_from_iterator: lazytrain trains SentencePiece "
                                  "tokenizers only (XLMRobertaTokenizer.train_new_from_iterator, "
                                  "lazytrain.train_tokenizer)")

    def __repr__(self):
        return (f"{type(self).__name__}(name_or_path='{self.name_or_path}', vocab_size={self.vocab_size}, "
                f"model_max_length={self.model_max_length}, is_fast=False, padding_side='{self.padding_side}', "
                f"special_tokens={self.special_tokens_map})")


def _special_token_property(name):
    def get(self):
        return self._special_tokens[name]

    def set_(self, token):
        self._set_special_token(name, token)

    def get_id(self):
        token = self._special_tokens[name]
        return None if token is None else self.convert_tokens_to_ids(token)

    def set_id(self, token_id):
        self._set_special_token(name, None if token_id is None else self.convert_ids_to_tokens(int(token_id)))

    return property(get, set_, doc=f"HF {name} (None where the tokenizer has none)."), property(get_id, set_id)


for _name in SPECIAL_TOKENS_ATTRIBUTES:
    _token, _id = _special_token_property(_name)
    setattr(PreTrainedTokenizer, _name, _token)
    setattr(PreTrainedTokenizer, _name + "_id", _id)
