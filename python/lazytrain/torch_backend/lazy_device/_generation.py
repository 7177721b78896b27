"""transformers' generate() on the lazy device with shapes that stay the same
from token to token, so its decode step compiles once and replays.

transformers' decoding loop (GenerationMixin._sample) grows `input_ids`, the
2-D attention mask and `position_ids` by one column per token
(`torch.cat`). On a lazy device each of those is part of the token's graph,
so every token would be a graph of a new shape, compiled anew (as on
PyTorch/XLA). Here, for inputs on the lazytrain device with a static KV cache
(`cache_implementation="static"`), the same loop runs with fixed shapes:
- the model is fed the new token (batch, 1), its position (batch, 1) and an
  attention mask as long as the cache, whose next column is switched on by a
  device-side comparison with a device counter (no Python int in the graph);
- the new tokens are kept as device tensors and joined with the prompt on
  the host at the end (each was already computed by its token's graph, so
  joining them is a copy, not a graph);
- as transformers does, each token reads `unfinished_sequences.max() == 0` on
  the host, which also cuts the graph there (one graph per token, replayed).
Prefill is transformers' own (`_prefill`): one graph per prompt length.

Everything else (return_dict_in_generate, streamers, synced GPUs, logits
processors or stopping criteria that read the growing `input_ids`, models
without a static cache) runs transformers' own loop unchanged: the same
tokens, a graph per token.
"""
from ._on_import import patch_on_import

_ORIGINAL = "_lazytrain_original_sample"
# Logits processors that ignore `input_ids` (only the scores matter), so the
# prompt may stand in for the growing sequence.
_SCORE_ONLY = {
    "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper", "MinPLogitsWarper",
    "TypicalLogitsWarper", "EpsilonLogitsWarper", "SuppressTokensLogitsProcessor",
    "InfNanRemoveLogitsProcessor", "LogitNormalization",
}


def _static_loop_applies(model, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus,
                         streamer, model_kwargs):
    from transformers.cache_utils import StaticCache
    from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria
    return (input_ids.device.type == "lazytrain" and input_ids.dim() == 2
            and not model.config.is_encoder_decoder
            and isinstance(model_kwargs.get("past_key_values"), StaticCache)
            # full attention in every layer: one mask as long as the cache (no sliding windows)
            and all(type(layer).__name__ == "StaticLayer" for layer in model_kwargs["past_key_values"].layers)
            and model_kwargs.get("use_cache", True)
            and not generation_config.return_dict_in_generate and not synced_gpus and streamer is None
            and generation_config.prefill_chunk_size is None
            and model_kwargs.get("inputs_embeds") is None and model_kwargs.get("token_type_ids") is None
            and (model_kwargs.get("attention_mask") is None or model_kwargs["attention_mask"].dim() == 2)
            and all(type(p).__name__ in _SCORE_ONLY for p in logits_processor)
            and all(isinstance(c, (MaxLengthCriteria, EosTokenCriteria)) for c in stopping_criteria)
            and stopping_criteria.max_length is not None)


def static_sample(self, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus=False,
                  streamer=None, **model_kwargs):
    """`self`: the model (this is GenerationMixin._sample on the lazy device).
    transformers' GenerationMixin._sample (greedy search or sampling, one
    sequence per row) with static shapes on the lazy device; the arguments and
    the result are _sample's: int64 [batch, prompt + new tokens] on the
    device, a finished row continued with the pad token. Falls back to
    transformers' own loop where the static one does not apply (see the
    module's docstring)."""
    original = _original_sample()
    if not _static_loop_applies(self, input_ids, logits_processor, stopping_criteria, generation_config,
                                synced_gpus, streamer, model_kwargs):
        return original(self, input_ids, logits_processor, stopping_criteria, generation_config,
                        synced_gpus=synced_gpus, streamer=streamer, **model_kwargs)
    import torch
    from transformers.generation.stopping_criteria import EosTokenCriteria

    device = input_ids.device
    batch, prompt_len = input_ids.shape
    max_length = stopping_criteria.max_length
    eos = [c for c in stopping_criteria if isinstance(c, EosTokenCriteria)]
    pad = generation_config._pad_token_tensor
    if pad is not None:
        pad = pad.to(device)
    unfinished = torch.ones(batch, dtype=torch.long, device=device)

    outputs = self._prefill(input_ids, generation_config, model_kwargs,
                            is_first_iteration=not generation_config.is_assistant)
    cache = model_kwargs["past_key_values"]  # the StaticCache, updated in place by each forward
    # The decode state, recorded into the prefill's graph: the prompt's mask
    # as long as the cache, its last positions, and the cache column of the
    # first new token as a device scalar. Every decode step updates it with
    # the same ops (the first too), so all of them are one graph.
    kv_length = cache.get_max_length()
    mask = model_kwargs.get("attention_mask")
    if mask is not None:
        mask = torch.nn.functional.pad(mask, (0, kv_length - mask.shape[1]))
        columns = torch.arange(kv_length, device=device)
    positions = model_kwargs.get("position_ids")
    if positions is not None:
        positions = positions[..., -1:]
    column = torch.tensor(prompt_len, dtype=torch.long).to(device)
    step_kwargs = {k: v for k, v in model_kwargs.items() if k not in ("attention_mask", "position_ids")}
    step_kwargs["past_key_values"] = cache
    tokens, length = [], prompt_len
    with self._optimize_model_for_decode():
        while True:
            logits = outputs.logits[:, -1].to(copy=True, dtype=torch.float32)
            del outputs
            scores = logits_processor(input_ids, logits)  # score-only processors (_SCORE_ONLY)
            if generation_config.do_sample:
                next_tokens = torch.multinomial(torch.nn.functional.softmax(scores, dim=-1), num_samples=1).squeeze(1)
            else:
                next_tokens = torch.argmax(scores, dim=-1)
            if eos:
                next_tokens = next_tokens * unfinished + pad * (1 - unfinished)
            tokens.append(next_tokens)
            length += 1
            for criterion in eos:  # EosTokenCriteria on the last column, without the growing sequence
                done = torch.isin(next_tokens[:, None], criterion.eos_token_id.to(device)).any(dim=-1)
                unfinished = unfinished & ~done
            del logits, scores  # not outputs of the token's graph
            # As transformers' StopCheck: a host read every token (it also cuts the
            # graph here). Recorded also when the length ends the loop, so the last
            # token's graph (computed when the tokens are read) is the same graph.
            stop = unfinished.max() == 0
            if length >= max_length or bool(stop):
                break
            if mask is not None:  # the new token's column joins the mask
                mask = torch.where(columns == column, torch.ones_like(mask), mask)
                step_kwargs["attention_mask"] = mask
            if positions is not None:
                positions = positions + 1
                step_kwargs["position_ids"] = positions
            column = column + 1
            model_inputs = self.prepare_inputs_for_generation(next_tokens[:, None], next_sequence_length=1,
                                                              **step_kwargs)
            outputs = self(**model_inputs, return_dict=True)
    # Each token is device data by now (its token's graph computed it): the
    # result is joined on the host and copied back, with no graph of its own.
    new = torch.stack([t.cpu() for t in tokens], dim=1)
    return torch.cat([input_ids.cpu(), new.to(input_ids.dtype)], dim=1).to(device)


def _original_sample():
    from transformers.generation.utils import GenerationMixin
    return getattr(GenerationMixin, _ORIGINAL)


def _patch(utils_module):
    mixin = utils_module.GenerationMixin
    if getattr(mixin, _ORIGINAL, None) is not None:
        return
    setattr(mixin, _ORIGINAL, mixin._sample)
    mixin._sample = static_sample


def install():
    """transformers' generate() takes the static loop for inputs on the lazy
    device (GenerationMixin._sample, which keeps its behaviour everywhere
    else): at once when transformers' generation module is loaded, else when
    it is. Idempotent."""
    patch_on_import("transformers.generation.utils", _patch)
