"""BERT and RoBERTa: transformers' BertConfig, BertModel, BertForMaskedLM,
RobertaConfig and RobertaForMaskedLM over the C++ models (src/models/bert.h,
roberta.h), with Hugging Face's parameter names and numerics.

Differences from transformers, stated: no pooler (BertModel returns the last
hidden state only, as BertModel(add_pooling_layer=False)). ``token_type_ids``
(int64 [B, S], None: type 0 everywhere) select rows of
token_type_embeddings as transformers' do (BERT; RoBERTa's checkpoints have
one token type, 0, which it uses whatever is given)."""
import contextlib

from .configuration_utils import PretrainedConfig
from .modeling_outputs import BaseModelOutput, MaskedLMOutput
from .modeling_utils import PreTrainedModel, _as_tensor


class BertConfig(PretrainedConfig):
    """transformers.BertConfig's fields and defaults (bert-base-uncased)."""
    model_type = "bert"


class RobertaConfig(PretrainedConfig):
    """transformers.RobertaConfig's fields with roberta-base's values (vocab
    50265, 514 positions, pad_token_id 1, type_vocab_size 1, layer_norm_eps 1e-5)."""
    model_type = "roberta"


class BertModel(PreTrainedModel):
    """input_ids, attention_mask int64 [B, S] (mask 1 = attend; None: all ones)
    -> BaseModelOutput(last_hidden_state [B, S, hidden_size] f32)."""
    config_class = BertConfig
    _native_kind = "BertModel"

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=True):
        with _token_types(self, token_type_ids):
            _, hidden = self._run_native(input_ids, attention_mask, None)
        return BaseModelOutput(last_hidden_state=hidden) if return_dict else (hidden,)


class _MaskedLM(PreTrainedModel):
    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, return_dict=True,
                masked_lm_positions=None, masked_lm_labels=None):
        """input_ids, attention_mask int64 [B, S]; labels int64 [B, S] with -100
        where no loss is taken -> MaskedLMOutput(loss 0-d or None, logits
        [B, S, vocab_size] f32). Raises LazytrainError naming the model and
        the caller's line for mismatched shapes or S > max_position_embeddings.

        lazytrain's addition: masked_lm_positions / masked_lm_labels int64 [K]
        (flat indices into the B*S tokens and their labels, -100 past the
        labelled ones; the Trainer's device batch carries them for a
        DataCollatorForLanguageModeling batch) run the LM head on those rows
        only for the loss, Google BERT's pre-training layout: the same loss,
        about 1/7 of the head's work under 15% masking. The logits are still
        every token's, a lazy value computed only if read; the output's
        masked_lm_logits [K, vocab_size] are the labelled tokens'."""
        with _token_types(self, token_type_ids):
            return self._forward(input_ids, attention_mask, labels, return_dict, masked_lm_positions, masked_lm_labels)

    def _forward(self, input_ids, attention_mask, labels, return_dict, masked_lm_positions, masked_lm_labels):
        if masked_lm_positions is not None and masked_lm_labels is not None:
            self._sync_training_mode()
            loss, logits, labelled = self._native.forward_labelled(
                _as_tensor(input_ids, "input_ids"), _as_tensor(attention_mask, "attention_mask"),
                _as_tensor(masked_lm_positions, "masked_lm_positions"), _as_tensor(masked_lm_labels, "masked_lm_labels"))
            out = MaskedLMOutput(loss=loss, logits=logits, masked_lm_logits=labelled)
            return out if return_dict else out.to_tuple()
        loss, logits = self._run_native(input_ids, attention_mask, labels)
        out = MaskedLMOutput(loss=loss, logits=logits)
        return out if return_dict else out.to_tuple()


@contextlib.contextmanager
def _token_types(model, token_type_ids):
    """The C++ BERT embeddings read `token_type_ids` during one forward call."""
    if token_type_ids is None or model._native_kind == "RobertaForMaskedLM":
        yield
        return
    model._native.set_token_type_ids(_as_tensor(token_type_ids, "token_type_ids"))
    try:
        yield
    finally:
        model._native.set_token_type_ids(None)


class BertForMaskedLM(_MaskedLM):
    """The MLM head (cls.predictions) on BertModel, the decoder tied to the word embeddings."""
    config_class = BertConfig
    _native_kind = "BertForMaskedLM"
    base_model_prefix = "bert"
    _base_model_class = BertModel


class RobertaForMaskedLM(_MaskedLM):
    """RoBERTa's embeddings (positions from pad_token_id + 1), BERT's encoder and lm_head."""
    config_class = RobertaConfig
    _native_kind = "RobertaForMaskedLM"
    base_model_prefix = "roberta"
