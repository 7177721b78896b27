"""Model outputs as transformers' ModelOutput: fields by attribute, by key
(``out["loss"]``) and by position (``out[0]``); fields that are None are left
out of the keys and the tuple, as transformers does."""
import collections


class ModelOutput(collections.OrderedDict):
    """transformers' ModelOutput: the fields (a subclass's ``_fields``) by
    attribute, by key (``out["loss"]``) and by position (``out[0]``); fields that
    are None are left out of the keys and the tuple."""

    _fields = ()

    def __init__(self, **kwargs):
        super().__init__()
        for name in self._fields:
            value = kwargs.pop(name, None)
            object.__setattr__(self, name, value)
            if value is not None:
                super().__setitem__(name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no fields {sorted(kwargs)}")

    def __getitem__(self, k):
        if isinstance(k, str):
            return super().__getitem__(k)
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name in self._fields and value is not None:
            super().__setitem__(name, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


class BaseModelOutput(ModelOutput):
    """last_hidden_state [B, S, hidden] f32."""
    _fields = ("last_hidden_state",)


class MaskedLMOutput(ModelOutput):
    """loss (0-d, when labels were given) and logits [B, S, vocab_size] f32;
    lazytrain's masked_lm_logits [K, vocab_size]: the labelled tokens' logits,
    when the model was given masked_lm_positions."""
    _fields = ("loss", "logits", "masked_lm_logits")


class CausalLMOutput(ModelOutput):
    """loss (0-d mean cross entropy of logits[:, :-1] against labels[:, 1:]) and logits [B, S, vocab_size]."""
    _fields = ("loss", "logits")


class SequenceClassifierOutput(ModelOutput):
    """loss and logits [B, num_labels], for heads written in Python."""
    _fields = ("loss", "logits")
