"""AutoTokenizer: the tokenizer class of a saved directory, chosen as
transformers' AutoTokenizer.from_pretrained chooses it: tokenizer_config.json's
``tokenizer_class``, else config.json's ``model_type``; lazytrain adds a last
step, the kind of the vocabulary files (as ``lazytrain tokenize`` does)."""
import json
import os

from .tokenization_bert import BertTokenizer
from .tokenization_gpt2 import GPT2Tokenizer
from .tokenization_utils import TOKENIZER_CONFIG_FILE, _read_json
from .tokenization_xlm_roberta import XLMRobertaTokenizer

TOKENIZER_CLASSES = {cls.__name__: cls for cls in (BertTokenizer, GPT2Tokenizer, XLMRobertaTokenizer)}
# model_type -> class. lazytrain's RoBERTa models use the SentencePiece
# tokenizer `lazytrain train_tokenizer` trains (XLMRobertaTokenizer).
TOKENIZER_MAPPING = {"bert": BertTokenizer, "gpt2": GPT2Tokenizer, "roberta": XLMRobertaTokenizer,
                     "xlm-roberta": XLMRobertaTokenizer}


def _class_from_files(path):
    if os.path.isfile(os.path.join(path, "vocab.json")) and os.path.isfile(os.path.join(path, "merges.txt")):
        return GPT2Tokenizer
    if os.path.isfile(os.path.join(path, "spm.model")):
        return XLMRobertaTokenizer
    if os.path.isfile(os.path.join(path, "vocab.txt")):
        return BertTokenizer
    return None


class AutoTokenizer:
    """Not to be instantiated: ``AutoTokenizer.from_pretrained(directory)``."""

    def __init__(self):
        raise OSError("AutoTokenizer is designed to be instantiated using the "
                      "`AutoTokenizer.from_pretrained(pretrained_model_name_or_path)` method.")

    @staticmethod
    def tokenizer_class_for(path):
        """The class from_pretrained would use for the directory `path`."""
        config_file = os.path.join(path, TOKENIZER_CONFIG_FILE)
        if os.path.isfile(config_file):
            name = _read_json(config_file).get("tokenizer_class")
            if name is not None:
                cls = TOKENIZER_CLASSES.get(name[:-len("Fast")] if name.endswith("Fast") else name)
                if cls is None:
                    raise ValueError(f"{config_file}: tokenizer_class '{name}' is not one of lazytrain's "
                                     f"({', '.join(TOKENIZER_CLASSES)})")
                return cls
        model_config = os.path.join(path, "config.json")
        if os.path.isfile(model_config):
            try:
                with open(model_config, encoding="utf-8") as f:
                    model_type = json.load(f).get("model_type")
            except (json.JSONDecodeError, AttributeError) as e:
                raise ValueError(f"{model_config}: not a JSON object with model_type ({e})") from None
            if model_type is not None:
                if model_type not in TOKENIZER_MAPPING:
                    raise ValueError(f"{model_config}: model_type '{model_type}' has no tokenizer in lazytrain "
                                     f"({', '.join(TOKENIZER_MAPPING)})")
                cls = TOKENIZER_MAPPING[model_type]
                by_files = _class_from_files(path)
                if model_type == "roberta" and by_files is GPT2Tokenizer:
                    raise ValueError(f"'{path}': a RoBERTa model with byte-level BPE files (vocab.json, merges.txt) "
                                     "needs transformers' RobertaTokenizer, which lazytrain does not have; lazytrain's "
                                     "RoBERTa models use a SentencePiece spm.model (`lazytrain train_tokenizer`)")
                return cls
        cls = _class_from_files(path)
        if cls is None:
            raise OSError(f"Can't load tokenizer for '{path}': no tokenizer_config.json with tokenizer_class, no "
                          "config.json with model_type, and none of vocab.json + merges.txt (GPT2Tokenizer), "
                          "spm.model (XLMRobertaTokenizer), vocab.txt (BertTokenizer)")
        return cls

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """The tokenizer saved in a directory (see tokenizer_class_for); kwargs
        go to that class's from_pretrained. Raises OSError naming the path when
        it is not a directory or holds no tokenizer."""
        path = os.fspath(pretrained_model_name_or_path)
        if not os.path.isdir(path):
            raise OSError(f"Can't load tokenizer for '{path}': it is not a directory")
        return cls.tokenizer_class_for(path).from_pretrained(path, **kwargs)
