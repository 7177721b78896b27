"""Real clients read what lazytrain writes: a model saved by lazytrain's
save_pretrained (BertForMaskedLM, RobertaForMaskedLM, GPT2LMHeadModel,
LlamaForCausalLM; tiny configs) loads in transformers' AutoModelForMaskedLM /
AutoModelForCausalLM.from_pretrained and gives the same logits in eval mode;
and a Llama saved by transformers (its own config.json form, rope_parameters)
loads in lazytrain with the same logits.

Needs torch and transformers (python/requirements-interop.txt: torch 2.13.0,
transformers 5.23.0); skipped with the reason where they are not installed."""
import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch", reason="needs torch (pip install -r python/requirements-interop.txt)")
transformers = pytest.importorskip("transformers", reason="needs transformers (pip install -r python/requirements-interop.txt)")

TINY_BERT = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                 max_position_embeddings=64, initializer_range=0.2)
CASES = {
    "bert": (lambda: lt.BertForMaskedLM(lt.BertConfig(**TINY_BERT)), transformers.AutoModelForMaskedLM),
    "roberta": (lambda: lt.RobertaForMaskedLM(lt.RobertaConfig(**dict(TINY_BERT, max_position_embeddings=20, type_vocab_size=1,
                                                                        pad_token_id=1, bos_token_id=0, eos_token_id=2))),
                transformers.AutoModelForMaskedLM),
    "gpt2": (lambda: lt.GPT2LMHeadModel(lt.GPT2Config(vocab_size=99, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                                       initializer_range=0.2)),
             transformers.AutoModelForCausalLM),
    "llama": (lambda: lt.LlamaForCausalLM(lt.LlamaConfig(vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                                          initializer_range=0.2, tie_word_embeddings=False)),
              transformers.AutoModelForCausalLM),
    "llama_tied": (lambda: lt.LlamaForCausalLM(lt.LlamaConfig(vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                                               num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=64,
                                                               initializer_range=0.2, tie_word_embeddings=True, attention_bias=True,
                                                               rope_theta=500.0)),
                   transformers.AutoModelForCausalLM),
}


def inputs():
    """Two rows of 10 ids in [3, 99) (no special id); row 1 ends in 3 padded positions (mask 0)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(3, 99, (2, 10)).astype(np.int64)
    mask = np.ones((2, 10), np.int64)
    mask[1, -3:] = 0
    ids[1, -3:] = 1  # RoBERTa's pad id (any id does for the others: masked)
    return ids, mask


def perturb(model):
    """Every parameter moved by N(0, 0.05), so that unit norms and zero biases hide nothing."""
    rng = np.random.default_rng(1)
    for _, p in model.named_parameters():
        p.data = lt.tensor(p.numpy() + rng.normal(0, 0.05, p.shape).astype(np.float32))


@pytest.mark.parametrize("case", list(CASES))
def test_transformers_loads_what_lazytrain_saves(case, tmp_path):
    make, auto_class = CASES[case]
    lt.manual_seed(0)
    model = make()
    perturb(model)
    model.eval()
    model.save_pretrained(tmp_path)
    ids, mask = inputs()
    ours = model(lt.tensor(ids), attention_mask=lt.tensor(mask)).logits.numpy()
    theirs_model = auto_class.from_pretrained(tmp_path)
    assert type(theirs_model).__name__ == type(model).__name__
    theirs_model.eval()
    with torch.no_grad():
        theirs = theirs_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.float().numpy()
    real = mask.astype(bool)  # padded positions' logits are not defined alike (RoBERTa's positions skip them)
    np.testing.assert_allclose(ours[real], theirs[real], rtol=1e-4, atol=1e-5)
    assert np.abs(theirs[real]).max() > 0.1  # not a degenerate model


def test_lazytrain_loads_a_llama_transformers_saves(tmp_path):
    config = transformers.LlamaConfig(vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64, initializer_range=0.2, rope_theta=2000.0,
                                      tie_word_embeddings=True)
    torch.manual_seed(0)
    theirs_model = transformers.LlamaForCausalLM(config).eval()
    theirs_model.save_pretrained(tmp_path)
    model = lt.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert type(model) is lt.LlamaForCausalLM and model.config.rope_theta == 2000.0  # read from rope_parameters or rope_theta
    ids, mask = inputs()
    with torch.no_grad():
        theirs = theirs_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    ours = model(lt.tensor(ids), attention_mask=lt.tensor(mask)).logits.numpy()
    real = mask.astype(bool)
    np.testing.assert_allclose(ours[real], theirs[real], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("case", ["gpt2", "bert"])
def test_attn_implementation_matches_transformers_in_loss_and_gradients(case, attn_implementation, tmp_path):
    """The same checkpoint, both sides told the same attn_implementation: the
    loss and every parameter's gradient agree (dropout off: eval mode)."""
    make, auto_class = CASES[case]
    lt.manual_seed(0)
    made = make()
    perturb(made)
    made.save_pretrained(tmp_path)
    lt_auto = lt.AutoModelForCausalLM if case == "gpt2" else lt.AutoModelForMaskedLM
    model = lt_auto.from_pretrained(tmp_path, attn_implementation=attn_implementation)
    theirs_model = auto_class.from_pretrained(tmp_path, attn_implementation=attn_implementation)
    assert model.config._attn_implementation == theirs_model.config._attn_implementation == attn_implementation
    ids, mask = inputs()
    labels = np.where(mask.astype(bool), ids, -100)
    out = model(lt.tensor(ids), attention_mask=lt.tensor(mask), labels=lt.tensor(labels))
    out.loss.backward()
    theirs = theirs_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(labels))
    theirs.loss.backward()
    np.testing.assert_allclose(out.loss.numpy(), theirs.loss.detach().numpy(), rtol=1e-5)
    grads = dict(theirs_model.named_parameters())
    assert sum(name in grads for name, _ in model.named_parameters()) >= len(grads) - 1  # all but at most a tied one
    for name, p in model.named_parameters():
        if name not in grads:  # a tied weight transformers lists under its other name
            continue
        expected = grads[name].grad.numpy()
        np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-4, atol=1e-6 * max(1.0, np.abs(expected).max()), err_msg=name)
