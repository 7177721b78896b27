"""lazytrain.LlamaForCausalLM against transformers' own LlamaForCausalLM (the
goldens of tools/make_golden_llama.py, which the C++ tests use too): logits,
loss and every gradient, f32 and under bf16 autocast, untied and tied; the
save_pretrained/from_pretrained round trip; greedy generation token for token."""
import json
import os

import numpy as np
import pytest

import lazytrain as lt
from conftest import assert_close
from test_models import golden, model_from_golden


@pytest.mark.parametrize("name", ["llama_tiny_clm.safetensors", "llama_tiny_clm_tied.safetensors"])
def test_forward_and_gradients_match_transformers(name):
    model, g, _ = model_from_golden(lt.LlamaForCausalLM, lt.LlamaConfig, name)
    out = model(lt.tensor(g["input_ids"]), attention_mask=lt.tensor(g["attention_mask"]), labels=lt.tensor(g["labels"]))
    out.loss.backward()
    assert_close(out.logits, g["logits"], rtol=1e-4, atol=1e-5)
    assert_close(out.loss, g["loss"], rtol=1e-5)
    names = [n for n, _ in model.named_parameters()]
    assert sorted(names) == sorted(n for n in g if n.startswith("model.") or n == "lm_head.weight")  # HF's names
    for n, p in model.named_parameters():
        assert_close(p.grad, g["grad." + n], rtol=1e-4, atol=1e-6)


def test_bf16_autocast_matches_transformers_autocast():
    model, g, _ = model_from_golden(lt.LlamaForCausalLM, lt.LlamaConfig, "llama_tiny_clm_bf16.safetensors")
    with lt.autocast("cpu", dtype=lt.bfloat16):
        out = model(lt.tensor(g["input_ids"]), attention_mask=lt.tensor(g["attention_mask"]), labels=lt.tensor(g["labels"]))
    out.loss.backward()
    assert out.logits.dtype == lt.bfloat16

    def rel(a, b):
        return np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b)
    assert rel(out.logits.float().numpy(), g["logits"]) < 1e-2
    assert_close(out.loss, g["loss"], rtol=2e-3)
    for n, p in model.named_parameters():
        assert rel(p.grad.numpy(), g["grad." + n]) < 3e-2, n


def test_tied_lm_head_is_the_embeddings():
    model, g, _ = model_from_golden(lt.LlamaForCausalLM, lt.LlamaConfig, "llama_tiny_clm_tied.safetensors")
    names = [n for n, _ in model.named_parameters()]
    assert "lm_head.weight" not in names and names[0] == "model.embed_tokens.weight"
    assert isinstance(model.model, lt.LlamaModel) and model.base_model is model.model
    # Setting the embeddings moves the logits: lm_head reads the same tensor.
    model.model.embed_tokens.weight.data = lt.zeros(99, 32)
    assert np.abs(model(lt.tensor(g["input_ids"])).logits.numpy()).max() == 0


def test_config_defaults_overrides_and_errors():
    c = lt.LlamaConfig()
    assert (c.hidden_size, c.intermediate_size, c.num_key_value_heads, c.rope_theta, c.rope_scaling) == (4096, 11008, None, 10000.0, None)
    c = lt.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=4)
    c.update_from_string("num_key_value_heads=2,pad_token_id=0")
    assert c.num_key_value_heads == 2 and c.pad_token_id == 0
    assert dict(lt.LlamaForCausalLM(c).named_parameters())["model.layers.0.self_attn.k_proj.weight"].shape == (16, 32)
    with pytest.raises(lt.LazytrainError, match=r"num_attention_heads \(4\) is not a multiple of num_key_value_heads \(3\)"):
        lt.LlamaForCausalLM(lt.LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=3))
    with pytest.raises(lt.LazytrainError, match="rope_scaling .* is not supported"):
        lt.LlamaForCausalLM(lt.LlamaConfig(rope_scaling={"rope_type": "linear", "factor": 2.0}))


def test_save_pretrained_and_auto_classes_round_trip(tmp_path):
    config = lt.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, max_position_embeddings=32, tie_word_embeddings=True)
    model = lt.AutoModelForCausalLM.from_config(config)
    assert type(model) is lt.LlamaForCausalLM
    model.save_pretrained(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["config.json", "model.safetensors"]
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "llama" and saved["architectures"] == ["LlamaForCausalLM"] and saved["num_key_value_heads"] == 2
    assert "lm_head.weight" not in lt.load(str(tmp_path / "model.safetensors"))  # tied: stored once
    assert type(lt.AutoConfig.from_pretrained(tmp_path)) is lt.LlamaConfig
    loaded = lt.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert type(loaded) is lt.LlamaForCausalLM and not loaded.training
    model.eval()
    ids = lt.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    np.testing.assert_array_equal(loaded(ids).logits.numpy(), model(ids).logits.numpy())


def test_generate_matches_transformers_greedy_search():
    g, meta = golden("llama_generate.safetensors")
    model = lt.LlamaForCausalLM(lt.LlamaConfig.from_dict(json.loads(meta["config"])))
    model.load_state_dict({n: lt.tensor(g[n]) for n, _ in model.named_parameters()}, strict=False)
    model.eval()
    n = int(meta["max_new_tokens"])
    prompts = [g[f"prompt.{i}"] for i in range(3)]
    # The three prompts as one left-padded batch (the attention mask marks the padding).
    width = max(len(p) for p in prompts)
    ids = np.zeros((3, width), np.int64)
    mask = np.zeros((3, width), np.int64)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = p
        mask[i, width - len(p):] = 1
    out = model.generate(ids, attention_mask=mask, max_new_tokens=n).numpy()
    for i in range(3):
        np.testing.assert_array_equal(out[i, width:], g[f"generated.{i}"])
