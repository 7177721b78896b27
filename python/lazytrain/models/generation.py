"""GenerationMixin.generate, as transformers': greedy search and sampling
(temperature, top_k, top_p) over the C++ generator (src/models/generation.h):
a static KV cache and padded buckets, so a call compiles at most two graphs
and repeated calls of the same sizes compile none."""
import numpy as np

from .. import _C
from .._tensor import tensor as _to_tensor


def _rows(x, name):
    if x is None:
        return None
    a = x.numpy() if isinstance(x, _C.Tensor) else np.asarray(x)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"generate: {name} must be [batch, seq], got shape {list(a.shape)}")
    return a.astype(np.int64)


class GenerationMixin:
    def generate(self, input_ids, attention_mask=None, max_new_tokens=20, do_sample=False, temperature=1.0, top_k=50,
                 top_p=1.0, num_return_sequences=1, eos_token_id=None, pad_token_id=None, seed=42):
        """input_ids int64 [B, S] (a Tensor, numpy array or nested list; a row may
        be left-padded, its padding marked 0 in attention_mask) -> int64 Tensor
        [B * num_return_sequences, S + T]: each input row followed by its new
        tokens (the copies of a row adjacent), T <= max_new_tokens, a sequence that
        made eos_token_id continued with pad_token_id (the config's eos_token_id and
        pad_token_id by default; pad is eos when the config has none, as GPT-2's
        generate does). Sampling draws from a generator
        seeded with `seed` (transformers.set_seed before generate). Runs in eval
        mode without autograd and waits for the result. Raises LazytrainError
        "[generate] ..." for an empty prompt, an id outside the vocabulary, a prompt
        plus max_new_tokens beyond the positions, or bad sampling arguments."""
        ids = _rows(input_ids, "input_ids")
        mask = _rows(attention_mask, "attention_mask")
        if mask is not None and mask.shape != ids.shape:
            raise ValueError(f"generate: attention_mask has shape {list(mask.shape)}, input_ids {list(ids.shape)}")
        prompts = [row[m.astype(bool)].tolist() if mask is not None else row.tolist()
                   for row, m in zip(ids, mask if mask is not None else ids)]
        was_training = self.training
        self.eval()
        self._sync_training_mode()
        try:
            new = self._native.generate(prompts, max_new_tokens, do_sample, temperature, top_k, top_p,
                                        num_return_sequences, seed, eos_token_id, pad_token_id)
        finally:
            self.train(was_training)
        inputs = np.repeat(ids, num_return_sequences, axis=0)
        width = max((len(r) for r in new), default=0)
        out = np.concatenate([inputs, np.array(new, dtype=np.int64).reshape(len(inputs), width)], axis=1)
        return _to_tensor(out)
