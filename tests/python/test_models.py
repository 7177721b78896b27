"""lazytrain.models: Hugging Face's model classes over the C++ models.

Numerics against the transformers goldens the C++ tests use (tests/golden/,
made by tools/make_golden_bert.py, make_golden_gpt2.py, make_golden_generate.py);
files, composition with Python modules, and errors."""
import json
import os
import struct

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.nn as nn
from conftest import assert_close

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden")


def golden(name):
    """(tensors by name as numpy, metadata) of a golden file."""
    path = os.path.join(GOLDEN, name)
    with open(path, "rb") as f:
        header = f.read(struct.unpack("<Q", f.read(8))[0])
    return {k: v.numpy() for k, v in lt.load(path).items()}, json.loads(header)["__metadata__"]


def model_from_golden(cls, config_cls, name, attn_implementation=None):
    values, meta = golden(name)
    config = config_cls.from_dict(dict(json.loads(meta["config"]), attn_implementation=attn_implementation))
    model = cls(config)
    model.load_state_dict({n: lt.tensor(values[n]) for n, _ in model.named_parameters()}, strict=False)
    return model, values, meta


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("cls,config_cls,name", [
    (lt.BertForMaskedLM, lt.BertConfig, "bert_tiny_mlm.safetensors"),
    (lt.RobertaForMaskedLM, lt.RobertaConfig, "roberta_tiny_mlm.safetensors"),
    (lt.GPT2LMHeadModel, lt.GPT2Config, "gpt2_tiny_clm.safetensors"),
])
def test_forward_and_gradients_match_transformers(cls, config_cls, name, attn_implementation):
    # The goldens ran eager attention; the fused sdpa path must give the same.
    model, g, _ = model_from_golden(cls, config_cls, name, attn_implementation)
    assert model.config._attn_implementation == attn_implementation
    model.eval()  # the goldens are made without dropout
    out = model(lt.tensor(g["input_ids"]), attention_mask=lt.tensor(g["attention_mask"]), labels=lt.tensor(g["labels"]))
    out.loss.backward()
    assert_close(out.logits, g["logits"], rtol=1e-4, atol=1e-5)
    assert_close(out.loss, g["loss"], rtol=1e-5)
    for n, p in model.named_parameters():
        assert_close(p.grad, g["grad." + n], rtol=1e-4, atol=1e-6)


def test_parameters_are_the_cpp_models_in_its_order():
    config = lt.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=24, max_position_embeddings=32)
    model = lt.BertForMaskedLM(config)
    names = [n for n, _ in model.named_parameters()]
    assert names[0] == "bert.embeddings.word_embeddings.weight"
    assert names[-5:] == ["cls.predictions.bias", "cls.predictions.transform.dense.weight",
                          "cls.predictions.transform.dense.bias", "cls.predictions.transform.LayerNorm.weight",
                          "cls.predictions.transform.LayerNorm.bias"]
    assert names == [n for n, _ in model._native.named_parameters()]
    assert isinstance(model.bert, lt.BertModel) and model.base_model is model.bert
    assert model.bert.embeddings.word_embeddings.weight is dict(model.named_parameters())[names[0]]
    assert "cls.predictions.decoder.weight" not in names  # tied: listed once, as named_parameters does
    # Setting a parameter's value is what the C++ forward reads: the decoder's
    # bias shifts every logit by exactly its value.
    model.eval()
    ids = lt.tensor([[1, 2, 3, 4]])
    before = model(ids).logits.numpy()
    model.cls.predictions.bias.data = lt.full((64,), 0.5)
    after = model(ids).logits.numpy()
    np.testing.assert_allclose(after, before + 0.5, rtol=1e-5, atol=1e-5)


def test_outputs_by_attribute_key_and_position():
    out = lt.models.MaskedLMOutput(loss=lt.tensor(2.0), logits=lt.ones(1, 2, 3))
    assert out.loss is out["loss"] is out[0]
    assert list(out.keys()) == ["loss", "logits"]
    no_loss = lt.models.MaskedLMOutput(logits=lt.ones(1))
    assert no_loss.loss is None and list(no_loss.keys()) == ["logits"] and no_loss[0] is no_loss.logits


def test_save_pretrained_and_auto_classes_round_trip(tmp_path):
    config = lt.GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=1, n_head=2)
    model = lt.AutoModelForCausalLM.from_config(config)
    assert type(model) is lt.GPT2LMHeadModel
    model.save_pretrained(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["config.json", "model.safetensors"]
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "gpt2" and saved["n_embd"] == 16 and saved["architectures"] == ["GPT2LMHeadModel"]
    assert type(lt.AutoConfig.from_pretrained(tmp_path)) is lt.GPT2Config
    loaded = lt.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert not loaded.training  # from_pretrained returns eval mode, as transformers
    model.eval()
    ids = lt.tensor([[3, 1, 4, 1, 5]])
    np.testing.assert_array_equal(loaded(ids).logits.numpy(), model(ids).logits.numpy())
    with pytest.raises(ValueError, match="no masked-LM class for model_type 'gpt2'"):
        lt.AutoModelForMaskedLM.from_pretrained(tmp_path)


def test_a_python_head_on_bert_model_fine_tunes_end_to_end():
    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = lt.BertModel(lt.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=16, hidden_dropout_prob=0.0,
                                                   attention_probs_dropout_prob=0.0))
            self.head = nn.Linear(16, 2)

        def forward(self, ids, labels):
            logits = self.head(self.bert(ids).last_hidden_state[:, 0])
            return lt.models.SequenceClassifierOutput(loss=nn.functional.cross_entropy(logits, labels), logits=logits)

    model = Classifier()
    names = [n for n, _ in model.named_parameters()]
    assert names[0] == "bert.embeddings.word_embeddings.weight" and names[-1] == "head.bias"
    rng = np.random.default_rng(0)
    ids = lt.tensor(rng.integers(1, 40, (8, 6)))
    labels = lt.tensor(np.array([0, 1] * 4))
    embedding = model.bert.embeddings.word_embeddings.weight
    start = embedding.numpy().copy()
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = model(ids, labels).loss
        loss.backward()
        opt.step()
        lt.sync()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert not np.allclose(embedding.numpy(), start)  # the C++ encoder was trained too
    assert lt.debug.metrics.counter_value("UncachedCompile") <= 3  # the first step's graphs, then cache hits


def test_generate_matches_transformers_greedy_search():
    g, meta = golden("gpt2_generate.safetensors")
    model = lt.GPT2LMHeadModel(lt.GPT2Config.from_dict(json.loads(meta["config"])))
    model.load_state_dict({n: lt.tensor(g[n]) for n, _ in model.named_parameters()}, strict=False)
    model.eval()
    n = int(meta["max_new_tokens"])
    for i in range(3):
        prompt = g[f"prompt.{i}"]
        out = model.generate(lt.tensor(prompt[None, :]), max_new_tokens=n).numpy()
        np.testing.assert_array_equal(out[0, :len(prompt)], prompt)
        np.testing.assert_array_equal(out[0, len(prompt):], g[f"generated.{i}"][:out.shape[1] - len(prompt)])


def test_generate_pads_left_and_returns_sequences_per_prompt():
    model = lt.GPT2LMHeadModel(lt.GPT2Config(vocab_size=30, n_positions=64, n_embd=16, n_layer=1, n_head=2))
    ids = [[0, 0, 5, 6], [1, 2, 3, 4]]
    mask = [[0, 0, 1, 1], [1, 1, 1, 1]]
    out = model.generate(ids, attention_mask=mask, max_new_tokens=3, eos_token_id=-1)
    assert out.shape == (2, 7) and out.dtype == lt.int64
    assert model.training  # generate restores the mode
    np.testing.assert_array_equal(out.numpy()[:, :4], np.array(ids))
    # A left-padded row generates what the same prompt unpadded generates (greedy).
    alone = model.generate([[5, 6]], max_new_tokens=3, eos_token_id=-1)
    np.testing.assert_array_equal(alone.numpy()[0, 2:], out.numpy()[0, 4:])
    # Sampling: num_return_sequences copies of each prompt, adjacent; seeded.
    sampled = model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=True, top_k=5,
                             num_return_sequences=2, eos_token_id=-1, seed=7)
    assert sampled.shape == (4, 7)
    np.testing.assert_array_equal(sampled.numpy()[:, :4], np.repeat(np.array(ids), 2, axis=0))
    again = model.generate(ids, attention_mask=mask, max_new_tokens=3, do_sample=True, top_k=5,
                           num_return_sequences=2, eos_token_id=-1, seed=7)
    np.testing.assert_array_equal(again.numpy(), sampled.numpy())


def test_attn_implementation_is_a_keyword_never_saved(tmp_path):
    assert lt.GPT2Config()._attn_implementation == "sdpa"
    assert lt.BertConfig()._attn_implementation == "eager" and lt.LlamaConfig()._attn_implementation == "sdpa"
    assert "attn_implementation" not in lt.GPT2Config(attn_implementation="eager").to_dict()
    config = lt.GPT2Config(vocab_size=50, n_positions=80, n_embd=16, n_layer=2, n_head=2, attn_pdrop=0.0)
    sdpa = lt.AutoModelForCausalLM.from_config(config)
    sdpa.save_pretrained(tmp_path)
    assert "attn_implementation" not in json.loads((tmp_path / "config.json").read_text())
    eager = lt.AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager")
    assert eager.config._attn_implementation == "eager" and sdpa.config._attn_implementation == "sdpa"
    assert lt.AutoModelForCausalLM.from_config(config, attn_implementation="eager").config._attn_implementation == "eager"
    assert config._attn_implementation == "sdpa"  # the caller's config is left as it was
    sdpa.eval()
    ids = lt.tensor(np.arange(140).reshape(2, 70) % 50)
    mask = np.ones((2, 70), dtype=np.int64)
    mask[1, 60:] = 0
    np.testing.assert_allclose(eager(ids, attention_mask=lt.tensor(mask)).logits.numpy(),
                               sdpa(ids, attention_mask=lt.tensor(mask)).logits.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(lt.LazytrainError, match="attn_implementation 'flash_attention_2' is not supported"):
        lt.AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="flash_attention_2")
    with pytest.raises(lt.LazytrainError, match="Llama's attention is 'sdpa' only"):
        lt.LlamaForCausalLM(lt.LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                           num_attention_heads=2, attn_implementation="eager"))
    with pytest.raises(ValueError, match="key attn_implementation isn't in the original config dict"):
        config.update_from_string("attn_implementation=eager")


def test_bad_configs_and_files_are_one_clear_error(tmp_path):
    with pytest.raises(lt.LazytrainError, match=r"BertForMaskedLM.*hidden size \(30\) is not a multiple"):
        lt.BertForMaskedLM(lt.BertConfig(hidden_size=30))
    with pytest.raises(FileNotFoundError, match="config.json"):
        lt.AutoModelForMaskedLM.from_pretrained(tmp_path)
    with pytest.raises(TypeError, match="autocast"):
        lt.BertModel(lt.BertConfig(num_hidden_layers=1)).to(lt.bfloat16)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(ValueError, match="unrecognized model_type 't5'"):
        lt.AutoConfig.from_pretrained(tmp_path)
    with pytest.raises(TypeError, match="takes a GPT2Config"):
        lt.GPT2LMHeadModel(lt.BertConfig())


def test_from_pretrained_kwargs_and_config_overrides_are_checked(tmp_path):
    config = lt.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    lt.BertForMaskedLM(config).save_pretrained(tmp_path)
    # A config field overrides; float32 is what a C++ model holds anyway.
    model = lt.AutoModelForMaskedLM.from_pretrained(tmp_path, hidden_dropout_prob=0.0, torch_dtype="float32")
    assert model.config.hidden_dropout_prob == 0.0
    given = lt.BertConfig.from_pretrained(tmp_path)
    assert lt.BertForMaskedLM.from_pretrained(tmp_path, config=given, hidden_dropout_prob=0.0).config.hidden_dropout_prob == 0.0
    assert given.hidden_dropout_prob == 0.1  # the caller's config is left as it was
    with pytest.raises(TypeError, match="unexpected keyword argument.*hiden_size: not fields of its BertConfig"):
        lt.AutoModelForMaskedLM.from_pretrained(tmp_path, hiden_size=32)
    with pytest.raises(ValueError, match="torch_dtype=lazytrain.bfloat16.*autocast"):
        lt.BertForMaskedLM.from_pretrained(tmp_path, torch_dtype=lt.bfloat16)
    gpt2 = lt.GPT2Config()
    with pytest.raises(ValueError, match="'n_embd=abc': n_embd is an int"):
        gpt2.update_from_string("n_embd=abc")
    with pytest.raises(ValueError, match="scale_attn_weights is a bool; expected true or false, got 'ture'"):
        gpt2.update_from_string("scale_attn_weights=ture")
