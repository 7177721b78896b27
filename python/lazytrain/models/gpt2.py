"""GPT-2: transformers' GPT2Config, GPT2Model and GPT2LMHeadModel over the C++
model (src/models/gpt2.h), with Hugging Face's parameter names and numerics
(lm_head tied to transformer.wte), and generate()."""
from .configuration_utils import PretrainedConfig
from .generation import GenerationMixin
from .modeling_outputs import BaseModelOutput, CausalLMOutput
from .modeling_utils import PreTrainedModel


class GPT2Config(PretrainedConfig):
    """transformers.GPT2Config's fields and defaults (GPT-2 124M)."""
    model_type = "gpt2"


class GPT2Model(PreTrainedModel):
    """input_ids int64 [B, S], attention_mask int64 [B, S] or None ->
    BaseModelOutput(last_hidden_state [B, S, n_embd] f32, after ln_f)."""
    config_class = GPT2Config
    _native_kind = "GPT2Model"

    def forward(self, input_ids, attention_mask=None, return_dict=True):
        _, hidden = self._run_native(input_ids, attention_mask, None)
        return BaseModelOutput(last_hidden_state=hidden) if return_dict else (hidden,)


class GPT2LMHeadModel(PreTrainedModel, GenerationMixin):
    config_class = GPT2Config
    _native_kind = "GPT2LMHeadModel"
    base_model_prefix = "transformer"
    _base_model_class = GPT2Model
    # The loss takes logits[:, :-1] against labels[:, 1:]: the Trainer counts
    # the labelled tokens of the shifted labels (gradient accumulation by tokens).
    _shifts_labels = True

    def forward(self, input_ids, attention_mask=None, labels=None, return_dict=True):
        """labels int64 [B, S] (-100: no loss; usually input_ids, shifted inside as
        transformers does) -> CausalLMOutput(loss 0-d or None, logits [B, S, vocab_size])."""
        loss, logits = self._run_native(input_ids, attention_mask, labels)
        out = CausalLMOutput(loss=loss, logits=logits)
        return out if return_dict else out.to_tuple()
