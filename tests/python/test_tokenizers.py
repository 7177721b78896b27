"""lazytrain.tokenizers: Hugging Face's tokenizer API over the C++ tokenizers.

Ids against Hugging Face's: the shared goldens (tokenizer-golden/, encode
without special tokens) and tests/golden/tokenizer_call_golden.json (made by
tools/make_golden_tokenizer_call.py with transformers 4.57.6: __call__ with each
padding/truncation setting, decode, tokenize, the special tokens). Then
tensors, save/load round trips, AutoTokenizer's choice, SentencePiece training
from Python, batch encoding on several threads without the GIL, and errors."""
import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

import lazytrain as lt

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
BERT_DIR = os.path.join(DATA, "bert-base-uncased")
GPT2_DIR = os.path.join(DATA, "gpt2")
WIKITEXT = os.path.join(DATA, "wikitext-2", "valid.txt")
with open(os.path.join(ROOT, "tests", "golden", "tokenizer_call_golden.json"), encoding="utf-8") as _f:
    CALL_GOLDEN = json.load(_f)["models"]

pytestmark = pytest.mark.filterwarnings("ignore:.*max_length.*:UserWarning")


def load(name, **kwargs):
    return {"bert": lt.BertTokenizer, "gpt2": lt.GPT2Tokenizer}[name].from_pretrained(
        BERT_DIR if name == "bert" else GPT2_DIR, **kwargs)


_LOADED = {}


def configured(name, settings):
    """One loaded tokenizer per model (loading GPT-2's files takes a while),
    with a case's settings: model_max_length and pad_token as transformers'
    from_pretrained(model_max_length=...) and `tok.pad_token = ...` set them."""
    tok = _LOADED.setdefault(name, load(name))
    tok.model_max_length = settings.get("model_max_length", int(1e30))
    tok.pad_token = settings.get("pad_token", "[PAD]" if name == "bert" else None)
    return tok


@pytest.fixture(scope="module")
def bert():
    return load("bert")


@pytest.fixture(scope="module")
def gpt2():
    return load("gpt2")


@pytest.fixture(scope="module")
def wikitext_lines():
    with open(WIKITEXT, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


@pytest.fixture(scope="module")
def spm_dir(tmp_path_factory, wikitext_lines):
    """A Unigram model trained from Python on WikiText-2's valid split."""
    out = tmp_path_factory.mktemp("spm") / "model"
    lt.train_tokenizer(WIKITEXT, out, vocab_size=600)
    return str(out)


# ---- ids against Hugging Face ----
@pytest.mark.parametrize("name,golden", [("bert", "bert-base-uncased_llamacpp_golden.json"),
                                         ("gpt2", "gpt2_llamacpp_golden.json")])
def test_ids_match_hugging_face_goldens(name, golden):
    with open(os.path.join(DATA, "tokenizer-golden", golden), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    tok = configured(name, {})
    batch = tok([c["text"] for c in cases], add_special_tokens=False)["input_ids"]
    for case, ids in zip(cases, batch):
        assert ids == case["ids"], repr(case["text"])
        assert tok.encode(case["text"], add_special_tokens=False) == case["ids"]
        assert tok.convert_ids_to_tokens(ids) == case["tokens"]


CALL_CASES = [(model, case["name"]) for model, spec in CALL_GOLDEN.items() for case in spec["cases"]]


@pytest.mark.parametrize("model,case_name", CALL_CASES)
def test_call_matches_transformers(model, case_name):
    spec = CALL_GOLDEN[model]
    case = next(c for c in spec["cases"] if c["name"] == case_name)
    tok = configured(model, case["settings"])
    for text, expected in ((spec["texts"][0], case["single"]), (spec["texts"], case["batch"])):
        if "error" in expected:
            with pytest.raises(ValueError):
                tok(text, **case["kwargs"])
            continue
        out = tok(text, **case["kwargs"])
        assert isinstance(out, lt.BatchEncoding)
        assert list(out.keys()) == list(expected.keys())
        assert dict(out) == expected
        assert out.input_ids == expected["input_ids"]


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_decode_tokenize_and_special_tokens_match_transformers(model):
    spec = CALL_GOLDEN[model]
    tok = configured(model, {})
    for t in spec["per_text"]:
        assert tok.tokenize(t["text"]) == t["tokens"]
        assert tok(t["text"])["input_ids"] == t["ids"]
        assert tok.decode(t["ids"]) == t["decode"]
        assert tok.decode(t["ids"], skip_special_tokens=True) == t["decode_skip_special_tokens"]
        assert tok.convert_ids_to_tokens(t["ids"]) == t["convert_ids_to_tokens"]
    info = spec["info"]
    assert tok.all_special_tokens == info["all_special_tokens"]
    assert tok.all_special_ids == info["all_special_ids"]
    assert tok.vocab_size == info["vocab_size"] and len(tok) == info["len"]
    assert tok.model_input_names == info["model_input_names"]
    for name, token in info["special_tokens"].items():
        assert getattr(tok, name) == token, name
    for name, token_id in info["special_token_ids"].items():
        assert getattr(tok, name) == token_id, name
    assert tok.model_max_length == int(1e30)  # no tokenizer_config.json limit, as transformers reads these files


def test_warns_where_transformers_warns(bert):
    with pytest.warns(UserWarning, match="Truncation was not explicitly activated"):
        assert bert("a b c d", max_length=4).input_ids == [101, 1037, 1038, 102]
    with pytest.warns(UserWarning, match="`max_length` is ignored when `padding`=`True`"):
        bert(["a", "a b c d"], padding=True, max_length=4)
    with pytest.warns(UserWarning, match="no predefined maximum length. Default to no padding"):
        bert("a", padding="max_length")


# ---- tensors ----
@pytest.mark.parametrize("return_tensors", ["np", "lt"])
def test_return_tensors_are_int64_batches(bert, return_tensors):
    texts = CALL_GOLDEN["bert"]["texts"]
    lists = bert(texts, padding=True, return_special_tokens_mask=True)
    out = bert(texts, padding=True, return_special_tokens_mask=True, return_tensors=return_tensors)
    for key in lists:
        value = out[key]
        array = value.numpy() if return_tensors == "lt" else value
        assert isinstance(value, lt.Tensor if return_tensors == "lt" else np.ndarray)
        assert array.dtype == np.int64 and array.shape == (5, 12)
        np.testing.assert_array_equal(array, np.array(lists[key]))
    single = bert(texts[1], return_tensors=return_tensors).input_ids  # one text: a batch of 1
    assert tuple(single.shape) == (1, 12)
    length = bert(texts, return_length=True, return_tensors="np", padding=True)["length"]
    np.testing.assert_array_equal(length, [6, 12, 11, 6, 2])


def test_ragged_batch_tensors(bert):
    texts = ["a b", "a b c d"]
    # numpy: an object array of int64 rows, as transformers 4.57 returns for a ragged batch.
    rows = bert(texts, return_tensors="np").input_ids
    assert rows.dtype == object
    assert [r.tolist() for r in rows] == [[101, 1037, 1038, 102], [101, 1037, 1038, 1039, 1040, 102]]
    assert all(r.dtype == np.int64 for r in rows)
    with pytest.raises(ValueError, match="padding=True"):
        bert(texts, return_tensors="lt")


def test_left_padding_and_pad_token_from_eos(gpt2):
    tok = load("gpt2")
    with pytest.raises(ValueError, match="pad_token"):
        tok(["a", "b c"], padding=True)
    tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    out = tok(["Hello", "Hello world"], padding=True)
    assert out.input_ids == [[50256, 15496], [15496, 995]] and out.attention_mask == [[0, 1], [1, 1]]
    assert tok.pad_token_id == 50256
    with pytest.raises(ValueError, match="not in GPT2Tokenizer's vocabulary"):
        tok.pad_token = "[PAD]"
    with pytest.raises(ValueError, match="adds eos_token"):
        tok.eos_token = "Hello"


# ---- decode and conversions ----
def test_decode_round_trips_and_inputs(gpt2, bert, wikitext_lines):
    lines = wikitext_lines[:200]
    ids = gpt2(lines)["input_ids"]
    assert gpt2.batch_decode(ids) == lines  # byte-level BPE round-trips any text
    assert [gpt2.decode(i) for i in ids[:5]] == lines[:5]
    enc = bert(["Hello, world!", "Don't stop."], padding=True, return_tensors="np")
    for rows in (enc.input_ids, lt.tensor(enc.input_ids)):
        assert bert.batch_decode(rows, skip_special_tokens=True) == ["hello, world!", "don't stop."]
    assert bert.decode(lt.tensor([7592, 1010, 2088])) == "hello, world"
    assert bert.decode(7592) == "hello" and bert.convert_ids_to_tokens(7592) == "hello"
    assert bert.convert_ids_to_tokens([101, 7592, 102], skip_special_tokens=True) == ["hello"]
    assert bert.convert_tokens_to_ids("hello") == 7592
    assert bert.convert_tokens_to_ids(["hello", "no-such-token"]) == [7592, 100]  # unknown -> [UNK]
    assert bert.decode([7592, 1005, 1055], clean_up_tokenization_spaces=False) == "hello ' s"
    assert bert.decode([7592, 1005, 1055]) == "hello's"
    assert gpt2.decode([37, 9116]) == "F\u00fc" and gpt2.decode([9116][:1]) == "\u00fc"
    assert gpt2.decode([171]) == "\ufffd"  # a lone byte that is not UTF-8: replaced, as errors="replace"
    assert bert.get_vocab()["[MASK]"] == 103 and len(bert.get_vocab()) == 30522
    assert bert.build_inputs_with_special_tokens([7592]) == [101, 7592, 102]
    assert bert.get_special_tokens_mask([7592, 2088]) == [1, 0, 0, 1]
    assert bert.get_special_tokens_mask([101, 7592, 102], already_has_special_tokens=True) == [1, 0, 1]
    assert bert.num_special_tokens_to_add() == 2 and gpt2.num_special_tokens_to_add() == 0


# ---- save / load ----
@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_save_pretrained_round_trip(model, tmp_path):
    tok = load(model, model_max_length=64)
    if model == "gpt2":
        tok.pad_token = tok.eos_token
    files = tok.save_pretrained(tmp_path)
    assert sorted(os.path.basename(f) for f in files) == sorted(
        ["tokenizer_config.json", "special_tokens_map.json"] + list(tok.vocab_files_names.values()))
    assert all(os.path.isfile(f) for f in files)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == type(tok).__name__ and config["model_max_length"] == 64
    for token_id, added in config["added_tokens_decoder"].items():
        assert tok.convert_ids_to_tokens(int(token_id)) == added["content"] and added["special"]
    src = os.path.join(BERT_DIR if model == "bert" else GPT2_DIR, tok.vocab_files_names["vocab_file"])
    if model == "bert":  # the vocabulary written back is the one read
        assert (tmp_path / "vocab.txt").read_bytes() == open(src, "rb").read()
    again = lt.AutoTokenizer.from_pretrained(tmp_path)
    assert type(again) is type(tok) and again.model_max_length == 64 and again.pad_token == tok.pad_token
    texts = CALL_GOLDEN[model]["texts"]
    assert dict(again(texts, padding=True, truncation=True)) == dict(tok(texts, padding=True, truncation=True))


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_transformers_reads_saved_directory(model, tmp_path, wikitext_lines):
    transformers = pytest.importorskip("transformers")
    tok = load(model)
    tok.save_pretrained(tmp_path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path), use_fast=False)
    assert type(theirs).__name__ == type(tok).__name__
    texts = CALL_GOLDEN[model]["texts"] + wikitext_lines[:500]
    assert theirs(texts)["input_ids"] == tok(texts)["input_ids"]
    assert theirs.all_special_ids == tok.all_special_ids


def test_auto_tokenizer_chooses_as_transformers(tmp_path):
    assert type(lt.AutoTokenizer.from_pretrained(BERT_DIR)) is lt.BertTokenizer  # config.json model_type
    assert type(lt.AutoTokenizer.from_pretrained(GPT2_DIR)) is lt.GPT2Tokenizer
    shutil.copy(os.path.join(BERT_DIR, "vocab.txt"), tmp_path)
    assert type(lt.AutoTokenizer.from_pretrained(tmp_path)) is lt.BertTokenizer  # by the files
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizerFast",
                                                                "do_lower_case": False}))
    cased = lt.AutoTokenizer.from_pretrained(tmp_path)
    assert type(cased) is lt.BertTokenizer and cased.tokenize("Hello") != ["hello"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    with pytest.raises(ValueError, match="tokenizer_class 'LlamaTokenizer'"):
        lt.AutoTokenizer.from_pretrained(tmp_path)
    with pytest.raises(OSError, match="from_pretrained"):
        lt.AutoTokenizer()


# ---- SentencePiece: training from Python ----
def test_train_tokenizer_then_encode(spm_dir):
    assert sorted(os.listdir(spm_dir)) == ["special_tokens_map.json", "spm.model", "spm.vocab"]  # as the CLI writes
    tok = lt.AutoTokenizer.from_pretrained(spm_dir)
    assert type(tok) is lt.XLMRobertaTokenizer and len(tok) == 600
    assert tok.all_special_tokens == ["<s>", "</s>", "<unk>", "<pad>", "<mask>"]
    assert tok.all_special_ids == [0, 2, 3, 1, 4]
    assert (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id) == (0, 2, 1, 4)
    out = tok(["the <mask> of the", "the"], padding=True, return_special_tokens_mask=True)
    ids = out.input_ids[0]
    assert ids[0] == 0 and ids[-1] == 2 and ids[2] == 4  # <s> ▁the <mask> ▁of ▁the </s>
    assert tok.convert_ids_to_tokens(ids) == ["<s>", "\u2581the", "<mask>", "\u2581of", "\u2581the", "</s>"]
    assert out.input_ids[1] == [0, ids[1], 2, 1, 1, 1] and out.attention_mask[1] == [1, 1, 1, 0, 0, 0]
    assert out.special_tokens_mask[1] == [1, 0, 1, 1, 1, 1]
    text = "Fa\u00e7ade of the \u65e5\u672c museum"  # characters outside the corpus: byte pieces, not <unk>
    assert tok.decode(tok.encode(text), skip_special_tokens=True) == text
    assert tok.unk_token_id not in tok.encode(text)


def test_train_new_from_iterator_and_save(spm_dir, wikitext_lines, tmp_path):
    base = lt.XLMRobertaTokenizer.from_pretrained(spm_dir, model_max_length=32)
    batches = (wikitext_lines[i:i + 100] for i in range(0, 1000, 100))
    new = base.train_new_from_iterator(batches, vocab_size=400, model_type="bpe")
    assert type(new) is lt.XLMRobertaTokenizer and len(new) == 400 and new.model_max_length == 32
    assert new.tokenize("the") == ["\u2581the"]
    new.save_pretrained(tmp_path)
    assert {"spm.model", "spm.vocab", "special_tokens_map.json", "tokenizer_config.json"} <= set(os.listdir(tmp_path))
    again = lt.AutoTokenizer.from_pretrained(tmp_path)
    assert again(wikitext_lines[:20])["input_ids"] == new(wikitext_lines[:20])["input_ids"]
    with pytest.raises(NotImplementedError, match="SentencePiece"):
        configured("bert", {}).train_new_from_iterator(["a"], 300)


def test_train_tokenizer_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such.txt"):
        lt.train_tokenizer(tmp_path / "no-such.txt", tmp_path / "out")
    with pytest.raises(ValueError, match="vocab_size"):
        lt.train_tokenizer(WIKITEXT, tmp_path / "out", vocab_size=100)
    with pytest.raises(ValueError, match="model_type"):
        lt.train_tokenizer(WIKITEXT, tmp_path / "out", model_type="wordpiece")
    with pytest.raises(ValueError, match="character_coverage"):
        lt.train_tokenizer(WIKITEXT, tmp_path / "out", character_coverage=0.5)
    small = tmp_path / "small.txt"
    small.write_text("a tiny corpus\n")
    with pytest.raises(lt.LazytrainError, match="vocab_size 5000 does not fit"):
        lt.train_tokenizer(small, tmp_path / "out", vocab_size=5000)
    assert not (tmp_path / "out" / "spm.model").exists()


# ---- batch encoding: threads, GIL ----
def test_batch_encoding_is_parallel_and_equal_to_sequential(bert, gpt2, wikitext_lines):
    for tok in (bert, gpt2):
        native = tok._native
        one_thread = native.encode_batch(wikitext_lines, True, None, 1)
        assert native.encode_batch(wikitext_lines, True, None, 4) == one_thread
        plain = native.encode_batch(wikitext_lines, False, None, 1)
        room = 16 - tok.num_special_tokens_to_add()  # truncation keeps room for the special tokens
        assert native.encode_batch(wikitext_lines, True, 16, 3) == [
            tok.build_inputs_with_special_tokens(ids[:room]) for ids in plain]
        assert tok(wikitext_lines)["input_ids"] == one_thread
        assert [tok.encode(line) for line in wikitext_lines[:300]] == one_thread[:300]


def test_batch_encoding_releases_the_gil(bert, wikitext_lines):
    texts = wikitext_lines * 4  # ~10k texts: about a second of encoding
    ticks, done = [], threading.Event()

    def other_thread():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=other_thread)
    t.start()
    try:
        time.sleep(0.05)
        start = time.perf_counter()
        out = bert._native.encode_batch(texts, True, None, 0)
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    during = [x for x in ticks if start < x < end]
    # Holding the GIL for the whole call would leave the other thread at most a
    # tick or two (at the switch interval around the call); it ran throughout.
    assert end - start > 0.1 and len(during) >= 20, (end - start, len(during))
    assert len(out) == len(texts) and out[:len(wikitext_lines)] == out[len(wikitext_lines):2 * len(wikitext_lines)]


# ---- errors ----
def test_errors_name_the_file_or_argument(bert, tmp_path):
    with pytest.raises(OSError, match="no-such-dir"):
        lt.BertTokenizer.from_pretrained(tmp_path / "no-such-dir")
    with pytest.raises(OSError, match="vocab.txt is missing"):
        lt.BertTokenizer.from_pretrained(tmp_path)
    with pytest.raises(OSError, match="merges.txt is missing"):
        shutil.copy(os.path.join(GPT2_DIR, "vocab.json"), tmp_path)
        lt.GPT2Tokenizer.from_pretrained(tmp_path)
    with pytest.raises(OSError, match="holds no tokenizer|Can't load tokenizer"):
        lt.AutoTokenizer.from_pretrained(tmp_path / "no-such-dir")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "vocab.txt").write_text("hello\nworld\n")
    with pytest.raises(lt.LazytrainError, match=r"vocab.txt.*\[UNK\]|\[UNK\].*vocab.txt"):
        lt.BertTokenizer.from_pretrained(bad)
    shutil.copy(os.path.join(BERT_DIR, "vocab.txt"), bad)
    (bad / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ValueError, match="tokenizer_config.json: not valid JSON"):
        lt.BertTokenizer.from_pretrained(bad)
    (bad / "tokenizer_config.json").write_text(json.dumps({"do_basic_tokenize": False}))
    with pytest.raises(ValueError, match=f"Can't load tokenizer from '{bad}': do_basic_tokenize=False"):
        lt.BertTokenizer.from_pretrained(bad)
    with pytest.raises(ValueError, match="padding must be"):
        bert("a", padding="maximum")
    with pytest.raises(ValueError, match="truncation must be"):
        bert("a", truncation="sometimes")
    with pytest.raises(ValueError, match="return_tensors must be"):
        bert("a", return_tensors="pt")
    with pytest.raises(ValueError, match="max_length=1 leaves no room for the 2 special tokens"):
        bert("a b c", max_length=1, truncation=True)
    with pytest.raises(NotImplementedError, match="text_pair"):
        bert("a", "b")
    with pytest.raises(ValueError, match="str or a list of str, got int"):
        bert(["a", 3])
    with pytest.raises(TypeError, match="is_split_into_words"):
        bert("a", is_split_into_words=True)
    with pytest.raises(lt.LazytrainError, match="40000"):
        bert.decode([101, 40000])
    with pytest.raises(TypeError, match="batch_decode"):
        bert.decode([[101, 102]])
    with pytest.raises(NotADirectoryError, match="is a file"):
        bert.save_pretrained(os.path.join(BERT_DIR, "vocab.txt"))
