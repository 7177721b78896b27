"""Training-side behaviour against transformers / torch in the test itself:
tokenizer truncation_side, the LM collator's padding side and token_type_ids,
BERT token types, and lt.load of safetensors files lazytrain did not write."""
import os
import tempfile
import warnings

import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
BERT_DIR = os.path.join(DATA, "bert-base-uncased")
GPT2_DIR = os.path.join(DATA, "gpt2")
needs_data = pytest.mark.skipif(not (os.path.isdir(BERT_DIR) and os.path.isdir(GPT2_DIR)), reason="tokenizer data missing")


@needs_data
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("max_length", [2, 4, 7, 50])
def test_truncation_side_matches_transformers(side, max_length):
    ours = lt.BertTokenizer.from_pretrained(BERT_DIR)
    theirs = transformers.BertTokenizerFast.from_pretrained(BERT_DIR)
    ours.truncation_side = theirs.truncation_side = side
    texts = ["one two three four five six", "a", "unaffable tokenization of words"]
    for kwargs in (dict(), dict(add_special_tokens=False), dict(padding="max_length")):
        a = ours(texts, truncation=True, max_length=max_length, **kwargs)["input_ids"]
        b = theirs(texts, truncation=True, max_length=max_length, **kwargs)["input_ids"]
        assert a == b, (kwargs, a, b)


@needs_data
def test_truncation_side_from_the_constructor_and_checked():
    assert lt.BertTokenizer.from_pretrained(BERT_DIR, truncation_side="left").truncation_side == "left"
    with pytest.raises(ValueError, match="truncation_side"):
        lt.BertTokenizer.from_pretrained(BERT_DIR, truncation_side="middle")


@needs_data
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("mlm", [False, True])
def test_lm_collator_pads_on_the_tokenizers_side_and_keeps_token_type_ids(side, mlm):
    directory, cls = (BERT_DIR, "BertTokenizer") if mlm else (GPT2_DIR, "GPT2Tokenizer")
    ours = getattr(lt, cls).from_pretrained(directory)
    theirs = getattr(transformers, cls + "Fast").from_pretrained(directory)
    for t in (ours, theirs):
        if t.pad_token is None:
            t.pad_token = t.eos_token
        t.padding_side = side
    examples = [{"input_ids": [10, 11, 12], "token_type_ids": [0, 0, 1]}, {"input_ids": [20], "token_type_ids": [1]}]
    a = lt.DataCollatorForLanguageModeling(ours, mlm=mlm, mlm_probability=0.0 if mlm else 0.15)(examples)
    b = transformers.DataCollatorForLanguageModeling(theirs, mlm=mlm, mlm_probability=0.0 if mlm else 0.15,
                                                     return_tensors="np")(examples)
    for key in ("input_ids", "attention_mask", "token_type_ids", "labels"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_collators_are_exported_at_the_top_level_as_transformers():
    assert lt.DataCollatorForLanguageModeling is lt.data.DataCollatorForLanguageModeling
    assert lt.DataCollatorWithPadding is lt.data.DataCollatorWithPadding
    assert callable(transformers.DataCollatorForLanguageModeling) and callable(lt.default_data_collator)


def test_bert_token_type_ids_select_their_row_as_transformers():
    warnings.simplefilter("ignore")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    d = tempfile.mkdtemp()
    config = transformers.BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32, type_vocab_size=3)
    hm = transformers.BertForMaskedLM(config).eval()
    hm.save_pretrained(d)
    m = lt.BertForMaskedLM.from_pretrained(d)
    m.eval()
    ids = np.array([[101, 7, 50, 102, 9, 102], [101, 8, 102, 3, 4, 102]])
    tt = np.array([[0, 0, 0, 0, 1, 1], [0, 2, 2, 1, 1, 0]])
    labels = np.array([[-100, 7, -100, -100, 9, -100], [-100, -100, -100, 3, -100, -100]])
    ours = m(lt.tensor(ids), token_type_ids=lt.tensor(tt), labels=lt.tensor(labels))
    base = m.base_model(lt.tensor(ids), token_type_ids=lt.tensor(tt)).last_hidden_state
    with torch.no_grad():
        theirs = hm(torch.tensor(ids), token_type_ids=torch.tensor(tt), labels=torch.tensor(labels))
        hidden = hm.bert(torch.tensor(ids), token_type_ids=torch.tensor(tt)).last_hidden_state
    np.testing.assert_allclose(ours.logits.numpy(), theirs.logits.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.loss.item(), theirs.loss.item(), rtol=1e-5)
    np.testing.assert_allclose(base.numpy(), hidden.numpy(), rtol=1e-4, atol=1e-4)
    # None is type 0 everywhere, as transformers; the next call does not keep the previous types.
    zero = m(lt.tensor(ids)).logits.numpy()
    with torch.no_grad():
        np.testing.assert_allclose(zero, hm(torch.tensor(ids)).logits.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(lt.LazytrainError, match="token_type_ids"):
        m(lt.tensor(ids), token_type_ids=lt.tensor(tt[:, :3]))


def test_load_reads_float64_and_small_ints_of_a_torch_file():
    from safetensors.torch import save_file
    d = tempfile.mkdtemp()
    path = os.path.join(d, "t.safetensors")
    tensors = {"w": torch.randn(2, 3), "stats": torch.tensor([1.5, 2**-30], dtype=torch.float64),
               "u8": torch.tensor([0, 255], dtype=torch.uint8), "i16": torch.tensor([-3, 300], dtype=torch.int16),
               "h": torch.randn(2).to(torch.bfloat16)}
    save_file(tensors, path)
    with pytest.warns(UserWarning, match=r"float64 tensors \['stats'\] were loaded as float32"):
        loaded = lt.load(path)
    assert sorted(loaded) == sorted(tensors)
    assert loaded["stats"].dtype == lt.float32 and loaded["u8"].dtype == lt.int32 and loaded["i16"].dtype == lt.int32
    assert loaded["h"].dtype == lt.bfloat16
    for k, v in tensors.items():
        np.testing.assert_array_equal(loaded[k].float().numpy() if k == "h" else loaded[k].numpy(),
                                      v.float().numpy() if k == "h" else v.numpy().astype(loaded[k].numpy().dtype))


def test_load_of_a_missing_file_is_file_not_found_as_torch():
    missing = os.path.join(tempfile.mkdtemp(), "missing.safetensors")
    with pytest.raises(FileNotFoundError):
        torch.load(missing)
    with pytest.raises(FileNotFoundError, match="missing.safetensors"):
        lt.load(missing)


def test_module_hooks_on_a_part_of_a_cpp_model_are_refused_not_ignored():
    from lazytrain.models.modeling_utils import _NativeSubmodule
    model = lt.BertForMaskedLM(lt.BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                             intermediate_size=16, max_position_embeddings=8))
    part = next(m for m in model.modules() if isinstance(m, _NativeSubmodule))
    with pytest.raises(NotImplementedError, match="would never be called"):
        part.register_forward_hook(lambda *a: None)
    calls = []
    model.register_forward_hook(lambda mod, args, out: calls.append(type(out).__name__))
    model(lt.tensor(np.array([[1, 2, 3]])))
    assert calls == ["MaskedLMOutput"]
