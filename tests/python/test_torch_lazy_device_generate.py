"""transformers' generate() on the lazy device (issue 56, item 7): a tiny
GPT-2 and Llama with a static KV cache give eager PyTorch's greedy tokens,
and the number of graphs compiled does not grow with the number of tokens:
the prefill and one decode step, replayed for every token
(lazy_device/_generation.py). Counted with debug.metrics' UncachedCompile."""
import copy

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")

from lazytrain.debug import metrics  # noqa: E402
from lazytrain.torch_backend.lazy_device import _generation  # noqa: E402

from lazy_device_support import DEV, torch_device_handed_out  # noqa: E402,F401  (an autouse fixture)

_models = {}


def tiny(arch):
    """(eager model, the same weights on the device), built once per module."""
    if arch not in _models:
        torch.manual_seed(0)
        if arch == "gpt2":
            model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
                vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0))
        else:
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
                vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=64, max_position_embeddings=64, bos_token_id=0, eos_token_id=0))
        model.eval()
        _models[arch] = (model, copy.deepcopy(model).to(DEV))
    return _models[arch]


def prompt():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 99, (2, 6), generator=g)
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, :2] = 0  # the second row is left-padded
    return ids, mask


def generate(model, device, **kwargs):
    ids, mask = prompt()
    kwargs = dict(dict(do_sample=False, cache_implementation="static", pad_token_id=0), **kwargs)
    return model.generate(ids.to(device), attention_mask=mask.to(device), **kwargs)


def compiles(fn):
    before = metrics.counter_value("UncachedCompile")
    out = fn().cpu()  # the tokens are read here, as a user would
    return out, metrics.counter_value("UncachedCompile") - before


def test_generate_takes_the_static_loop_on_the_device_only():
    from transformers.generation.utils import GenerationMixin
    assert GenerationMixin._sample is _generation.static_sample
    eager, _ = tiny("gpt2")
    ids, mask = prompt()
    out = eager.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=False, pad_token_id=0)
    assert out.device.type == "cpu"


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_greedy_tokens_equal_eager_and_the_decode_graph_is_compiled_once(arch):
    eager, lazy = tiny(arch)
    # A cache sized for both calls (generation_config.max_cache_len): the
    # second call, 3x the tokens, compiles nothing new.
    for n in (4, 12):
        want = generate(eager, "cpu", max_new_tokens=n, max_cache_len=24)
        got, compiled = compiles(lambda: generate(lazy, DEV, max_new_tokens=n, max_cache_len=24))
        assert got.device.type == "cpu" and torch.equal(got, want), (n, got, want)
        if n == 4:
            # generate()'s own checks of the prompt (a few tiny graphs), the
            # prefill, one decode step: not one graph per token.
            assert 2 <= compiled <= 8, compiled
        else:
            assert compiled == 0, compiled
    if arch != "gpt2":
        return
    # A longer cache (max_length grows, no max_cache_len): for its shape,
    # transformers' check of the padded prompt mask, the prefill and the
    # decode step, again independent of the token count.
    want = generate(eager, "cpu", max_new_tokens=20)
    got, compiled = compiles(lambda: generate(lazy, DEV, max_new_tokens=20))
    assert torch.equal(got, want) and compiled <= 3, compiled


def test_eos_finishes_rows_with_the_pad_token_as_eager():
    eager, lazy = tiny("gpt2")
    free = generate(eager, "cpu", max_new_tokens=8, max_cache_len=24)
    eos = int(free[0, 6 + 2])  # row 0 makes this token as its third new one
    kwargs = dict(max_new_tokens=8, max_cache_len=24, eos_token_id=eos, pad_token_id=98)
    want = generate(eager, "cpu", **kwargs)
    assert (want[0, 6 + 3:] == 98).all()  # the case under test: row 0 finished early
    got, compiled = compiles(lambda: generate(lazy, DEV, **kwargs))
    assert torch.equal(got, want), (got, want)
    assert compiled <= 2, compiled  # the finished-row masking joins the decode graph once


def test_sampling_compiles_once_per_shape():
    # Sampling draws from lazytrain's generator (not torch's CPU stream), so
    # only its graphs and the tokens' range are checked.
    _, lazy = tiny("gpt2")
    kwargs = dict(do_sample=True, top_k=5, temperature=0.7, max_cache_len=24)
    generate(lazy, DEV, max_new_tokens=4, **kwargs).cpu()
    got, compiled = compiles(lambda: generate(lazy, DEV, max_new_tokens=12, **kwargs))
    assert compiled == 0 and got.shape == (2, 18) and 0 <= got.min() and got.max() < 99


def test_a_processor_reading_the_sequence_runs_transformers_loop():
    # repetition_penalty reads the growing input_ids: transformers' own loop
    # (a graph per token), with eager's tokens.
    eager, lazy = tiny("gpt2")
    want = generate(eager, "cpu", max_new_tokens=2, repetition_penalty=1.5)
    got = generate(lazy, DEV, max_new_tokens=2, repetition_penalty=1.5)
    assert torch.equal(got.cpu(), want)


def test_multinomial_draws_with_the_weights_probabilities():
    """aten.multinomial on the device (sampling's draw): frequencies follow
    the normalised weights; without replacement no index repeats in a row."""
    weights = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.0]).repeat(4000, 1)
    want = weights[0] / weights[0].sum()
    draws = torch.multinomial(weights.to(DEV), 1).cpu()
    assert draws.dtype == torch.int64 and draws.shape == (4000, 1)
    torch.testing.assert_close(torch.bincount(draws[:, 0], minlength=5) / 4000.0, want, atol=0.03, rtol=0)
    pairs = torch.multinomial(weights.to(DEV), 2).cpu()
    assert (pairs[:, 0] != pairs[:, 1]).all() and (pairs != 4).all()
    torch.testing.assert_close(torch.bincount(pairs[:, 0], minlength=5) / 4000.0, want, atol=0.03, rtol=0)
    repeated = torch.multinomial(weights.to(DEV), 3, replacement=True).cpu()
    assert repeated.shape == (4000, 3)
    torch.testing.assert_close(torch.bincount(repeated.flatten(), minlength=5) / 12000.0, want, atol=0.03, rtol=0)
