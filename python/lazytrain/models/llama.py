"""Llama: transformers' LlamaConfig, LlamaModel and LlamaForCausalLM over the C++
model (src/models/llama.h), with Hugging Face's parameter names and numerics
(RMSNorm, rotary embeddings of rope_theta, grouped-query attention through
num_key_value_heads, the SwiGLU MLP, lm_head tied to model.embed_tokens when
tie_word_embeddings), and generate()."""
from .configuration_utils import PretrainedConfig
from .generation import GenerationMixin
from .modeling_outputs import BaseModelOutput, CausalLMOutput
from .modeling_utils import PreTrainedModel


class LlamaConfig(PretrainedConfig):
    """transformers.LlamaConfig's fields and defaults (Llama-7B's), as 4.x writes
    them: num_key_value_heads and head_dim None until set (num_attention_heads,
    hidden_size / num_attention_heads), rope_theta with rope_scaling None (the
    only RoPE supported). transformers 5's rope_parameters {"rope_type": "default",
    "rope_theta": x} is read as rope_theta x (another rope_type is kept, and the
    model refuses it)."""
    model_type = "llama"

    def __init__(self, **kwargs):
        rope = kwargs.get("rope_parameters")
        if isinstance(rope, dict) and rope.get("rope_type", rope.get("type", "default")) == "default":
            del kwargs["rope_parameters"]
            if "rope_theta" in rope:
                kwargs["rope_theta"] = rope["rope_theta"]
        super().__init__(**kwargs)


class LlamaModel(PreTrainedModel):
    """input_ids int64 [B, S], attention_mask int64 [B, S] or None ->
    BaseModelOutput(last_hidden_state [B, S, hidden_size] f32, after model.norm)."""
    config_class = LlamaConfig
    _native_kind = "LlamaModel"

    def forward(self, input_ids, attention_mask=None, return_dict=True):
        _, hidden = self._run_native(input_ids, attention_mask, None)
        return BaseModelOutput(last_hidden_state=hidden) if return_dict else (hidden,)


class LlamaForCausalLM(PreTrainedModel, GenerationMixin):
    config_class = LlamaConfig
    _native_kind = "LlamaForCausalLM"
    base_model_prefix = "model"
    _base_model_class = LlamaModel
    _shifts_labels = True  # the Trainer counts the shifted labels' tokens, as for GPT-2

    def forward(self, input_ids, attention_mask=None, labels=None, return_dict=True):
        """labels int64 [B, S] (-100: no loss; usually input_ids, shifted inside as
        transformers does) -> CausalLMOutput(loss 0-d or None, logits [B, S, vocab_size];
        bf16 under lazytrain.autocast)."""
        loss, logits = self._run_native(input_ids, attention_mask, labels)
        out = CausalLMOutput(loss=loss, logits=logits)
        return out if return_dict else out.to_tuple()
