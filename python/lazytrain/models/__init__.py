"""Hugging Face's model classes over lazytrain's C++ models: configs,
models with from_pretrained/save_pretrained, outputs and generate()."""
from .configuration_utils import PretrainedConfig  # noqa: F401
from .modeling_outputs import (  # noqa: F401
    ModelOutput, BaseModelOutput, MaskedLMOutput, CausalLMOutput, SequenceClassifierOutput,
)
from .modeling_utils import PreTrainedModel  # noqa: F401
from .generation import GenerationMixin  # noqa: F401
from .bert import BertConfig, BertModel, BertForMaskedLM, RobertaConfig, RobertaForMaskedLM  # noqa: F401
from .gpt2 import GPT2Config, GPT2Model, GPT2LMHeadModel  # noqa: F401
from .llama import LlamaConfig, LlamaModel, LlamaForCausalLM  # noqa: F401
from .auto import AutoConfig, AutoModelForMaskedLM, AutoModelForCausalLM  # noqa: F401
