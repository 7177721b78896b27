"""AutoConfig, AutoModelForMaskedLM, AutoModelForCausalLM, as transformers':
the class is chosen by config.json's model_type."""
import json
import os

from .bert import BertConfig, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM
from .gpt2 import GPT2Config, GPT2LMHeadModel
from .llama import LlamaConfig, LlamaForCausalLM

CONFIG_MAPPING = {"bert": BertConfig, "roberta": RobertaConfig, "gpt2": GPT2Config, "llama": LlamaConfig}
MASKED_LM_MAPPING = {"bert": BertForMaskedLM, "roberta": RobertaForMaskedLM}
CAUSAL_LM_MAPPING = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM}


def _register(model_type, config_class, masked_lm=None, causal_lm=None):
    CONFIG_MAPPING[model_type] = config_class
    if masked_lm is not None:
        MASKED_LM_MAPPING[model_type] = masked_lm
    if causal_lm is not None:
        CAUSAL_LM_MAPPING[model_type] = causal_lm


def _config_class(model_type, source):
    if model_type not in CONFIG_MAPPING:
        raise ValueError(f"{source}: unrecognized model_type '{model_type}' (lazytrain has {', '.join(CONFIG_MAPPING)})")
    return CONFIG_MAPPING[model_type]


class AutoConfig:
    @staticmethod
    def for_model(model_type, **kwargs):
        return _config_class(model_type, "AutoConfig.for_model")(**kwargs)

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path, **kwargs):
        path = os.fspath(pretrained_model_name_or_path)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        try:
            with open(path, encoding="utf-8") as f:
                model_type = json.load(f).get("model_type")
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such config file (a model directory holds config.json)") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if model_type is None:
            raise ValueError(f"{path}: no model_type field")
        return _config_class(model_type, path).from_pretrained(pretrained_model_name_or_path, **kwargs)


class _AutoModel:
    _mapping = {}
    _task = ""

    @classmethod
    def _model_class(cls, config):
        if config.model_type not in cls._mapping:
            raise ValueError(f"{cls.__name__}: no {cls._task} class for model_type '{config.model_type}' "
                             f"(lazytrain has {', '.join(cls._mapping)})")
        return cls._mapping[config.model_type]

    @classmethod
    def from_config(cls, config, attn_implementation=None):
        """A newly initialised model of config.model_type; attn_implementation
        ("eager" or "sdpa") instead of config._attn_implementation."""
        return cls._model_class(config)._from_config(config, attn_implementation=attn_implementation)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, config=None, **kwargs):
        """The model of a directory (config.json + model.safetensors); `config`
        (a PretrainedConfig) instead of the directory's config.json; kwargs
        override config fields."""
        if config is None:
            config = AutoConfig.from_pretrained(pretrained_model_name_or_path)
        return cls._model_class(config).from_pretrained(pretrained_model_name_or_path, config=config, **kwargs)


class AutoModelForMaskedLM(_AutoModel):
    _mapping = MASKED_LM_MAPPING
    _task = "masked-LM"


class AutoModelForCausalLM(_AutoModel):
    _mapping = CAUSAL_LM_MAPPING
    _task = "causal-LM"
