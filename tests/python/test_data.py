"""lazytrain.data and lazytrain.distributed.parallel_loader: the collator's
draws, the DataLoader's order and samplers, load_dataset/map/group_texts, the
TFRecord stream and the device loader, each against an independent reference
(tests/python/data_reference.py), the C++ text pipeline or the CLI's files.

The shared data (WikiText-2, the BERT vocab, GPT-2's BPE files) is found
through LAZYTRAIN_DATA_DIR (scripts/test_python.sh sets it), else
../shared/data beside the repository. Some tests compare with the real
packages where they are installed and skip otherwise: datasets==5.2.0 (a
datasets.Dataset through the DataLoader; with transformers, run_mlm.py's
steps in datasets and transformers give the C++ blocks), torch==2.13.0
(DataLoader batches and DistributedSampler shares equal torch's) and
transformers==5.23.0 (the collators pad and label as transformers' with its
own BERT tokenizer)."""
import gc
import itertools
import json
import os
import re
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest

import lazytrain as lt
import lazytrain.debug.metrics as met
import lazytrain.nn as nn
from lazytrain.data import (BatchSampler, DataCollatorForLanguageModeling, DataCollatorWithPadding, DataLoader, Dataset,
                            DistributedSampler, RandomSampler, TFRecordDataset, default_collate, default_data_collator,
                            get_worker_info, group_texts, load_dataset)
from lazytrain.distributed.parallel_loader import MpDeviceLoader, ParallelLoader

import data_reference as ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))
BERT_VOCAB = os.path.join(DATA, "bert-base-uncased", "vocab.txt")
WIKITEXT_VALID = os.path.join(DATA, "wikitext-2", "valid.txt")
PAD, UNK, CLS, SEP, MASK, VOCAB = 0, 100, 101, 102, 103, 30522


def need(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing (set LAZYTRAIN_DATA_DIR to the shared data)")
    return path


class BertIds:
    """A tokenizer as the collator sees one (transformers' attribute names), BERT uncased's ids."""
    mask_token_id, pad_token_id, all_special_ids = MASK, PAD, [UNK, SEP, PAD, CLS, MASK]

    def __len__(self):
        return VOCAB


def examples(n, low, high, seed):
    """[CLS] words [SEP] rows with attention and special-token masks, lengths in [low, high]."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.integers(low, high + 1))
        ids = [CLS] + rng.integers(1000, 29000, length - 2).tolist() + [SEP]
        out.append({"input_ids": ids, "attention_mask": [1] * length,
                    "special_tokens_mask": [1] + [0] * (length - 2) + [1]})
    return out


def assert_batch_equal(actual, expected):
    assert set(actual) == {"input_ids", "attention_mask", "labels"}
    for key in ("input_ids", "attention_mask", "labels"):
        assert actual[key].dtype == np.int64, key
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)


# ---------------------------------------------------------------- collator
def test_the_reference_generator_is_the_standards_mt19937_64():
    rng = ref.MT19937_64()
    for _ in range(9999):
        rng()
    assert rng() == 9981545732273789042  # C++ [rand.predef]


def test_collator_draws_as_hugging_faces_rule_with_the_cpp_generator():
    batch1, batch2 = examples(6, 20, 90, 1), examples(5, 30, 60, 2)
    collator = DataCollatorForLanguageModeling(BertIds(), mlm_probability=0.15, seed=1234)
    rng = ref.MT19937_64(1234)  # __call__ draws from one generator that advances across calls
    assert_batch_equal(collator(batch1), ref.mask_tokens(batch1, VOCAB, MASK, PAD, [], 0.15, rng))
    assert_batch_equal(collator(batch2), ref.mask_tokens(batch2, VOCAB, MASK, PAD, [], 0.15, rng))


def test_collate_by_batch_number_is_the_cpp_trainers_stream_on_any_thread():
    batch = examples(8, 40, 128, 3)
    collator = DataCollatorForLanguageModeling(BertIds(), seed=42, pad_to_multiple_of=64)
    collator(batch)  # the collator's own generator does not affect numbered batches
    expected = {n: ref.mask_tokens(batch, VOCAB, MASK, PAD, [], 0.15, ref.MT19937_64(ref.stream_seed(42, n)), 64)
                for n in (0, 7, 12345)}
    assert expected[0]["input_ids"].shape == (8, 128)
    results = {}

    def work(n):
        results[n] = collator.collate(batch, n)

    threads = [threading.Thread(target=work, args=(n,)) for n in expected]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, want in expected.items():
        assert_batch_equal(results[n], want)
    assert not np.array_equal(results[0]["labels"], results[7]["labels"])


def test_masking_rates_are_hugging_faces():
    batch = examples(64, 300, 512, 7)
    out = DataCollatorForLanguageModeling(BertIds(), seed=5).collate(batch, 0)
    original = ref.mask_tokens(batch, VOCAB, MASK, PAD, [], 0.0, ref.MT19937_64())["input_ids"]
    eligible = (out["attention_mask"] == 1) & (original != CLS) & (original != SEP)
    chosen = out["labels"] != -100
    assert not (chosen & ~eligible).any()
    np.testing.assert_array_equal(out["labels"][chosen], original[chosen])
    np.testing.assert_array_equal(out["input_ids"][~chosen], original[~chosen])
    assert abs(chosen.sum() / eligible.sum() - 0.15) < 0.01
    masked = (out["input_ids"] == MASK) & chosen
    kept = (out["input_ids"] == original) & chosen
    assert abs(masked.sum() / chosen.sum() - 0.8) < 0.03
    assert abs(kept.sum() / chosen.sum() - 0.1) < 0.025


def test_collator_pads_takes_arrays_and_special_ids_and_returns_lazytrain_tensors():
    rows = [{"input_ids": np.array([CLS, 2000, 2001, SEP], dtype=np.int32)}, [CLS, 2002, SEP]]
    collator = DataCollatorForLanguageModeling(BertIds(), mlm_probability=1.0, return_tensors="lt", seed=9)
    out = collator(rows)
    assert isinstance(out["input_ids"], lt.Tensor) and out["input_ids"].dtype == lt.int64
    np.testing.assert_array_equal(out["attention_mask"].numpy(), [[1, 1, 1, 1], [1, 1, 1, 0]])
    # Every word is chosen (p = 1); [CLS], [SEP] (all_special_ids) and the padding never.
    np.testing.assert_array_equal(out["labels"].numpy(), [[-100, 2000, 2001, -100], [-100, 2002, -100, -100]])
    assert out["input_ids"].numpy()[1, 3] == PAD


def test_collator_causal_labels_copy_the_ids_without_padding():
    out = DataCollatorForLanguageModeling(BertIds(), mlm=False)([[7, 8, 9], [10]])
    np.testing.assert_array_equal(out["input_ids"], [[7, 8, 9], [10, PAD, PAD]])
    np.testing.assert_array_equal(out["labels"], [[7, 8, 9], [10, -100, -100]])


def test_collator_errors_name_the_problem():
    class NoMask(BertIds):
        mask_token_id = None

    with pytest.raises(ValueError, match="does not have a mask token"):
        DataCollatorForLanguageModeling(NoMask())
    with pytest.raises(ValueError, match="mlm_probability"):
        DataCollatorForLanguageModeling(BertIds(), mlm_probability=1.5)
    collator = DataCollatorForLanguageModeling(BertIds())
    with pytest.raises(KeyError, match="example 1 has no 'input_ids'"):
        collator([{"input_ids": [1, 2]}, {"ids": [3]}])
    with pytest.raises(TypeError, match="example 0 'input_ids'"):
        collator([{"input_ids": "hello"}])
    with pytest.raises(lt.LazytrainError, match="example 0 has 3 input_ids but 2 attention_mask"):
        collator([{"input_ids": [1, 2, 3], "attention_mask": [1, 1]}])


def test_default_data_collator_and_padding_collator():
    features = [{"input_ids": [1, 2, 3], "label": 0, "text": "a"}, {"input_ids": [4, 5, 6], "label": 1, "text": "b"}]
    out = default_data_collator(features)
    assert set(out) == {"labels", "input_ids"}
    np.testing.assert_array_equal(out["labels"], np.array([0, 1], dtype=np.int64))
    np.testing.assert_array_equal(out["input_ids"], [[1, 2, 3], [4, 5, 6]])
    padded = DataCollatorWithPadding(BertIds(), pad_to_multiple_of=4)([{"input_ids": [1, 2, 3]}, {"input_ids": [4]}])
    np.testing.assert_array_equal(padded["input_ids"], [[1, 2, 3, PAD], [4, PAD, PAD, PAD]])
    np.testing.assert_array_equal(padded["attention_mask"], [[1, 1, 1, 0], [1, 0, 0, 0]])
    with pytest.raises(ValueError, match="rows of lengths"):
        default_data_collator([{"input_ids": [1, 2]}, {"input_ids": [3]}])


def test_collators_pad_and_label_as_transformers_with_its_own_tokenizer():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed in this venv")
    tokenizer = transformers.AutoTokenizer.from_pretrained(os.path.dirname(need(BERT_VOCAB)))
    assert len(tokenizer) == VOCAB
    texts = ["Hello world!", "A longer sentence, with punctuation and numbers 1 2 3.", "x"]
    rows = [tokenizer(t, return_special_tokens_mask=True) for t in texts]  # BatchEncodings, not dicts
    for mlm, p in ((False, 0.15), (True, 0.0), (True, 1.0)):
        theirs = transformers.DataCollatorForLanguageModeling(tokenizer, mlm=mlm, mlm_probability=p, pad_to_multiple_of=8,
                                                              return_tensors="np")([dict(r) for r in rows])
        ours = DataCollatorForLanguageModeling(tokenizer, mlm=mlm, mlm_probability=p, pad_to_multiple_of=8)(rows)
        assert ours["input_ids"].shape == theirs["input_ids"].shape == (3, 16)
        for key in ("attention_mask", "labels"):  # with p in {0, 1} the choice of positions is not random
            np.testing.assert_array_equal(ours[key], theirs[key], err_msg=f"{key} mlm={mlm} p={p}")
        unchosen = ours["labels"] == -100
        np.testing.assert_array_equal(ours["input_ids"][unchosen], theirs["input_ids"][unchosen])
    features = [{"input_ids": r["input_ids"], "label": i} for i, r in enumerate(rows)]
    theirs = transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=4, return_tensors="np")(features)
    ours = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=4)(features)
    assert set(ours) == set(theirs) == {"input_ids", "attention_mask", "labels"}
    for key in ours:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    same = [{"input_ids": [1, 2, 3], "label_ids": [0, 1, 0]}, {"input_ids": [4, 5, 6], "label_ids": [1, 1, 0]}]
    theirs = transformers.default_data_collator(same, return_tensors="np")
    ours = default_data_collator(same)
    assert set(ours) == set(theirs) and all(np.array_equal(ours[k], theirs[k]) for k in ours)


# ---------------------------------------------------------------- DataLoader
class ImitatedHFDataset:
    """What the DataLoader relies on in a datasets.Dataset: len, __getitem__(int) -> dict, __getitems__."""

    def __init__(self, rows):
        self.rows = rows
        self.getitems_calls = 0

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        if not isinstance(i, int):
            raise TypeError(f"index {i!r} is not an int")
        return dict(self.rows[i])

    def __getitems__(self, keys):
        self.getitems_calls += 1
        return [self[k] for k in keys]


def test_shuffle_order_is_the_cpp_dataloaders_epoch_order():
    rows = [{"x": i} for i in range(23)]
    loader = DataLoader(rows, batch_size=5, shuffle=True, generator=42)
    assert len(loader) == 5
    first = [b["x"].tolist() for b in loader]
    second = [b["x"].tolist() for b in loader]  # every pass advances the epoch
    order0, order1 = ref.epoch_order(23, True, 42, 0), ref.epoch_order(23, True, 42, 1)
    assert first == [order0[i:i + 5] for i in range(0, 23, 5)]
    assert sum(second, []) == order1 != order0
    loader.set_epoch(0)
    assert sum((b["x"].tolist() for b in loader), []) == order0
    dropped = DataLoader(rows, batch_size=5, shuffle=True, drop_last=True, generator=42)
    assert len(dropped) == 4 and [len(b["x"]) for b in dropped] == [5, 5, 5, 5]
    assert [b["x"].tolist() for b in DataLoader(rows, batch_size=10)] == [list(range(10)), list(range(10, 20)),
                                                                       [20, 21, 22]]
    sampler = RandomSampler(rows, generator=7)
    assert list(sampler) == ref.epoch_order(23, True, 7, 0) and list(sampler) == ref.epoch_order(23, True, 7, 1)
    with pytest.raises(NotImplementedError, match="replacement"):
        RandomSampler(rows, replacement=True)


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_batches_equal_the_cpp_trainers_for_any_number_of_workers(num_workers):
    rows = examples(37, 8, 40, 11)
    dataset = ImitatedHFDataset(rows)
    collator = DataCollatorForLanguageModeling(BertIds(), seed=42)
    loader = DataLoader(dataset, batch_size=8, shuffle=True, collate_fn=collator, generator=42, num_workers=num_workers)
    for epoch in (0, 1):
        loader.set_epoch(epoch)
        order = ref.epoch_order(37, True, 42, epoch)
        batches = list(loader)
        assert len(batches) == len(loader) == 5
        for k, batch in enumerate(batches):
            picked = [rows[i] for i in order[8 * k:8 * k + 8]]
            # The C++ Trainer's batch number: epoch * batches per epoch + index.
            rng = ref.MT19937_64(ref.stream_seed(42, epoch * 5 + k))
            assert_batch_equal(batch, ref.mask_tokens(picked, VOCAB, MASK, PAD, [], 0.15, rng))
    assert dataset.getitems_calls == 10


def test_dataloader_over_the_real_datasets_package():
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is not installed in this venv")
    rows = examples(10, 5, 12, 4)
    hf = datasets.Dataset.from_list(rows)
    ours = list(DataLoader(hf, batch_size=4, collate_fn=DataCollatorForLanguageModeling(BertIds())))
    plain = list(DataLoader(rows, batch_size=4, collate_fn=DataCollatorForLanguageModeling(BertIds())))
    for a, b in zip(ours, plain):
        assert_batch_equal(a, b)


def test_default_collate_stacks_rows_and_collates_tuples_per_position():
    batch = default_collate([{"ids": [1, 2], "y": 0.5, "name": "a", "v": np.ones(3, np.float32)},
                             {"ids": [3, 4], "y": 1.5, "name": "b", "v": np.zeros(3, np.float32)}])
    np.testing.assert_array_equal(batch["ids"], [[1, 2], [3, 4]])
    assert batch["ids"].dtype == np.int64 and batch["y"].dtype == np.float64 and batch["name"] == ["a", "b"]
    assert batch["v"].shape == (2, 3) and batch["v"].dtype == np.float32
    xs, ys = default_collate([(np.ones(2), 0), (np.zeros(2), 1)])
    assert xs.shape == (2, 2) and ys.tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"shapes \[\(1,\), \(2,\)\]"):
        default_collate([{"ids": [1]}, {"ids": [1, 2]}])


def test_sequential_batches_equal_torchs_dataloader():
    torch_data = pytest.importorskip("torch.utils.data", reason="torch is not installed in this venv")
    rows = [{"x": np.arange(3, dtype=np.float32) + i, "y": i, "pair": (i, float(i))} for i in range(10)]
    for batch_size, drop_last in ((3, False), (3, True), (5, False)):
        ours = list(DataLoader(rows, batch_size=batch_size, drop_last=drop_last, num_workers=2))
        theirs = list(torch_data.DataLoader(rows, batch_size=batch_size, drop_last=drop_last))
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a["x"], b["x"].numpy())
            np.testing.assert_array_equal(a["y"], b["y"].numpy())
            assert a["y"].dtype == np.int64 and str(b["y"].dtype) == "torch.int64"
            for ours_pos, theirs_pos in zip(a["pair"], b["pair"]):
                np.testing.assert_array_equal(ours_pos, theirs_pos.numpy())


def test_workers_run_init_fn_raise_at_the_failing_batch_and_stop_early():
    seen = []

    def collate(batch):
        info = get_worker_info()
        seen.append(info.id)
        if batch[0] == 30:
            raise ValueError("bad example 30")
        time.sleep(0.01)
        return batch

    inits = []
    loader = DataLoader(list(range(50)), batch_size=10, num_workers=2, collate_fn=collate, worker_init_fn=inits.append)
    got = []
    with pytest.raises(ValueError, match="bad example 30"):
        for batch in loader:
            got.append(batch[0])
    assert got == [0, 10, 20]
    assert sorted(inits) == [0, 1] and set(seen) <= {0, 1}
    assert get_worker_info() is None
    made = []
    early = DataLoader(list(range(1000)), batch_size=1, num_workers=2, prefetch_factor=2,
                       collate_fn=lambda b: made.append(b[0]) or b)
    for i, _ in enumerate(early):
        if i == 2:
            break
    time.sleep(0.2)
    assert len(made) <= 3 + 2 * 2 + 2  # what was taken, the window ahead, one in flight per worker


def test_dataloader_argument_checks_are_torchs():
    rows = [{"x": 1}] * 4
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(rows, sampler=range(4), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(rows, batch_sampler=[[0, 1]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(rows, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(rows, prefetch_factor=4)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(rows, batch_size=0)
    with pytest.raises(TypeError, match="expected a map-style dataset"):
        DataLoader(42)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(iter(rows), shuffle=True)
    assert [b["x"].tolist() for b in DataLoader(rows, batch_sampler=BatchSampler(range(4), 3, False))] == [[1, 1, 1], [1]]


def test_distributed_sampler_gives_each_replica_the_cpp_trainers_share():
    data = list(range(11))
    for drop_last in (False, True):
        shares = []
        for rank in range(3):
            s = DistributedSampler(data, num_replicas=3, rank=rank, seed=7, drop_last=drop_last)
            s.set_epoch(2)
            shares.append(list(s))
            assert shares[-1] == ref.distributed_share(11, 3, rank, True, 7, drop_last, 2)
            assert len(s) == (3 if drop_last else 4)
        flat = sum(shares, [])
        assert len(set(flat)) == (9 if drop_last else 11)
    default = DistributedSampler(data)
    assert (default.num_replicas, default.rank) == (1, 0)
    assert list(default) == ref.epoch_order(11, True, 0, 0)
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(data, num_replicas=3, rank=3)


def test_distributed_sampler_without_shuffling_equals_torchs():
    torch_distributed = pytest.importorskip("torch.utils.data.distributed", reason="torch is not installed in this venv")
    for n, replicas, drop_last in ((11, 3, False), (11, 3, True), (2, 5, False), (12, 4, True), (7, 1, False)):
        for rank in range(replicas):
            theirs = torch_distributed.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs), (n, replicas, rank, drop_last)


def test_dataloader_with_a_distributed_sampler_numbers_batches_as_the_trainer():
    class Numbers:
        def collate(self, examples, batch_number):
            return batch_number

        def __call__(self, examples):
            raise AssertionError("a collator with collate() is called through it")

    sampler = DistributedSampler(list(range(20)), num_replicas=4, rank=1, seed=3)
    loader = DataLoader(list(range(20)), batch_size=2, sampler=sampler, collate_fn=Numbers())
    loader.set_epoch(3)
    assert sampler.epoch == 3
    # batch n of replica r is the collator's batch n * W + r, n counting from epoch * len(loader)
    assert list(loader) == [(3 * 3 + k) * 4 + 1 for k in range(3)]


# ---------------------------------------------------------------- text and group_texts
def test_load_dataset_reads_lines_as_the_text_builder(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes("first\r\nsecond\rthird\n\n  \nlast é".encode())
    ds = load_dataset("text", data_files={"train": str(path)})
    assert ds.column_names == {"train": ["text"]}
    assert ds["train"]["text"] == ["first", "second", "third", "", "  ", "last é"]
    kept = load_dataset("text", data_files=str(path), split="train", keep_linebreaks=True)
    assert kept["text"] == ["first\n", "second\n", "third\n", "\n", "  \n", "last é"]
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_dataset("text", data_files={"validation": str(tmp_path / "missing.txt")})
    with pytest.raises(ValueError, match='Unknown split "test"'):
        load_dataset("text", data_files=str(path), split="test")
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(lt.LazytrainError, match=r"bad.txt' has invalid UTF-8 on line 2 \(byte offset 3\)"):
        load_dataset("text", data_files=str(tmp_path / "bad.txt"))


def test_group_texts_concatenates_drops_the_remainder_and_cuts_blocks():
    batch = {"input_ids": [[1, 2, 3], [4, 5], [6, 7, 8, 9]], "special_tokens_mask": [[1, 0, 1], [0, 0], [1, 0, 0, 1]]}
    out = group_texts(batch, 4)
    np.testing.assert_array_equal(out["input_ids"], [[1, 2, 3, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(out["special_tokens_mask"], [[1, 0, 1, 0], [0, 1, 0, 0]])
    clm = group_texts({"input_ids": [np.arange(5), np.arange(5, 7)]}, 3, add_labels=True)
    np.testing.assert_array_equal(clm["labels"], [[0, 1, 2], [3, 4, 5]])
    assert not np.shares_memory(clm["labels"], clm["input_ids"])
    # Through map: each batch of rows drops its own remainder, as datasets' batches of 1000 do.
    ds = Dataset.from_dict(batch).map(lambda b: group_texts(b, 2), batched=True, batch_size=2)
    np.testing.assert_array_equal(ds["input_ids"], [[1, 2], [3, 4], [6, 7], [8, 9]])
    with pytest.raises(ValueError, match="row 1 of 'special_tokens_mask'"):
        group_texts({"input_ids": [[1], [2, 3]], "special_tokens_mask": [[1], [0]]}, 2)
    with pytest.raises(TypeError, match="column 'text' does not hold token id sequences"):
        group_texts({"text": ["a b", "c"]}, 2)
    with pytest.raises(ValueError, match="block_size"):
        group_texts(batch, 0)


class CppTokenizeFunction:
    """run_mlm.py's tokenize_function through the C++ tokenizer of `path` (every
    line with its special tokens, special_tokens_mask returned): the tokenizer
    is not what this test is about; reading, map's batches and grouping are."""

    def __init__(self, path):
        self.path = path

    def __call__(self, texts):
        ids, attention, special, lengths = lt._C._text_dataset_tokenize_lines(self.path, list(texts))
        cuts = np.cumsum(lengths)[:-1]
        return {"input_ids": [r.tolist() for r in np.split(ids, cuts)],
                "attention_mask": [r.tolist() for r in np.split(attention, cuts)],
                "special_tokens_mask": [r.tolist() for r in np.split(special, cuts)]}


def grouped_blocks(path, tokenize, block_size, keep_linebreaks=False, add_labels=False):
    raw = load_dataset("text", data_files={"validation": path}, keep_linebreaks=keep_linebreaks)
    tokenized = raw.map(lambda b: tokenize(b["text"]), batched=True, remove_columns=["text"])
    return tokenized.map(lambda b: group_texts(b, block_size, add_labels=add_labels), batched=True)["validation"]


@pytest.mark.parametrize("block_size", [128, 512])
def test_map_and_group_texts_give_the_blocks_of_lazytrain_run_mlm(block_size):
    path, vocab = need(WIKITEXT_VALID), need(BERT_VOCAB)
    blocks = grouped_blocks(path, CppTokenizeFunction(vocab), block_size)
    ids, attention, special, lengths = lt._C._text_dataset_group_texts(path, vocab, block_size)
    assert len(blocks) == len(lengths) > 400 and set(lengths.tolist()) == {block_size}
    assert blocks.column_names == ["input_ids", "attention_mask", "special_tokens_mask"]
    np.testing.assert_array_equal(blocks["input_ids"], ids.reshape(-1, block_size))
    np.testing.assert_array_equal(blocks["attention_mask"], attention.reshape(-1, block_size))
    np.testing.assert_array_equal(blocks["special_tokens_mask"], special.reshape(-1, block_size))


def test_keeping_line_breaks_gives_the_blocks_of_lazytrain_run_clm():
    path, gpt2 = need(WIKITEXT_VALID), need(os.path.join(DATA, "gpt2"))
    blocks = grouped_blocks(path, CppTokenizeFunction(gpt2), 256, keep_linebreaks=True, add_labels=True)
    ids, _, special, lengths = lt._C._text_dataset_group_texts(path, gpt2, 256, keep_linebreaks=True)
    assert len(blocks) == len(lengths) > 400 and not special.any()  # GPT-2 adds no special tokens
    assert blocks.column_names == ["input_ids", "attention_mask", "special_tokens_mask", "labels"]
    np.testing.assert_array_equal(blocks["input_ids"], ids.reshape(-1, 256))
    np.testing.assert_array_equal(blocks["labels"], blocks["input_ids"])
    newline = 198  # GPT-2's "\n": the line breaks are in the blocks
    assert (blocks["input_ids"] == newline).sum() > 1000


def test_hugging_faces_own_pipeline_gives_the_same_blocks(tmp_path):
    """run_mlm.py's steps with the real datasets and transformers: their blocks,
    ours with their tokenizer and the C++ CLI's are one and the same."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed in this venv")
    datasets = pytest.importorskip("datasets", reason="datasets is not installed in this venv")
    path, vocab = need(WIKITEXT_VALID), need(BERT_VOCAB)
    tokenizer = transformers.AutoTokenizer.from_pretrained(os.path.dirname(vocab))

    def tokenize(texts):
        return tokenizer(texts, return_special_tokens_mask=True)

    def their_group_texts(batch):  # run_mlm.py's: concatenate, drop the remainder, cut
        joined = {k: list(itertools.chain.from_iterable(v)) for k, v in batch.items()}
        total = len(joined["input_ids"]) // 128 * 128
        return {k: [v[i:i + 128] for i in range(0, total, 128)] for k, v in joined.items()}

    raw = datasets.load_dataset("text", data_files={"validation": path}, cache_dir=str(tmp_path))
    theirs = raw.map(lambda b: tokenize(b["text"]), batched=True, remove_columns=["text"]).map(their_group_texts, batched=True)
    ours = grouped_blocks(path, tokenize, 128)
    ids, _, special, _ = lt._C._text_dataset_group_texts(path, vocab, 128)
    assert raw["validation"]["text"] == load_dataset("text", data_files=path, split="train")["text"]
    np.testing.assert_array_equal(np.array(theirs["validation"]["input_ids"]), ids.reshape(-1, 128))
    np.testing.assert_array_equal(ours["input_ids"], ids.reshape(-1, 128))
    np.testing.assert_array_equal(ours["special_tokens_mask"], special.reshape(-1, 128))


def test_run_mlm_pipeline_with_lazytrains_python_tokenizer():
    if not hasattr(lt, "AutoTokenizer"):
        pytest.skip("lazytrain.AutoTokenizer (the tokenizers binding) is not in this build")
    path, vocab = need(WIKITEXT_VALID), need(BERT_VOCAB)
    tokenizer = lt.AutoTokenizer.from_pretrained(os.path.dirname(vocab))
    blocks = grouped_blocks(path, lambda texts: tokenizer(texts, return_special_tokens_mask=True), 128)
    ids, _, special, _ = lt._C._text_dataset_group_texts(path, vocab, 128)
    np.testing.assert_array_equal(blocks["input_ids"], ids.reshape(-1, 128))
    np.testing.assert_array_equal(blocks["special_tokens_mask"], special.reshape(-1, 128))


def test_group_texts_of_wikitext_2_train_size_takes_well_under_a_second():
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 140, 36718)  # WikiText-2 train's lines, about 2.5M tokens
    rows = [rng.integers(0, 30000, n).tolist() for n in lengths]
    ds = Dataset.from_dict({"input_ids": rows, "attention_mask": [[1] * n for n in lengths],
                            "special_tokens_mask": [[0] * n for n in lengths]})
    start = time.perf_counter()
    blocks = ds.map(lambda b: group_texts(b, 512), batched=True)
    elapsed = time.perf_counter() - start
    assert blocks["input_ids"].shape[1] == 512 and blocks["input_ids"].size > 2_400_000
    assert elapsed < 1.0, f"{lengths.sum():,} tokens grouped in {elapsed:.2f} s"


def test_dataset_subset_of_the_datasets_api():
    ds = Dataset.from_dict({"a": [1, 2, 3, 4], "b": ["w", "x", "y", "z"]})
    assert len(ds) == 4 and ds[1] == {"a": 2, "b": "x"} and ds["b"] == ["w", "x", "y", "z"]
    assert ds[1:3] == {"a": [2, 3], "b": ["x", "y"]}
    assert ds.select([3, 0])["a"] == [4, 1]
    doubled = ds.map(lambda row, i: {"c": row["a"] * 2 + i}, with_indices=True, remove_columns="b")
    assert doubled.column_names == ["a", "c"] and doubled["c"] == [2, 5, 8, 11]
    assert ds.filter(lambda row: row["a"] % 2 == 0)["b"] == ["x", "z"]
    with pytest.raises(ValueError, match=r"Column to remove \['q'\] not in the dataset"):
        ds.map(lambda r: r, remove_columns=["q"])
    with pytest.raises(ValueError, match="columns of different lengths"):
        ds.map(lambda b: {"c": b["a"][:1]}, batched=True)
    with pytest.raises(IndexError, match="Invalid key: 4 is out of bounds for size 4"):
        ds[4]


# ---------------------------------------------------------------- TFRecord
def cli_binary():
    for candidate in (os.path.join(os.path.dirname(lt.__file__), "bin", "lazytrain"), os.path.join(ROOT, "build", "lazytrain")):
        if os.path.exists(candidate):
            return candidate
    pytest.skip("the lazytrain command line is not built (bash scripts/build.sh --target lazytrain)")


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    gpt2 = need(os.path.join(DATA, "gpt2"))
    out = tmp_path_factory.mktemp("tfrecords")
    with open(need(WIKITEXT_VALID), encoding="utf-8") as f:
        text = "".join(f.readlines()[:400])
    (out / "valid_head.txt").write_text(text, encoding="utf-8")
    r = subprocess.run([cli_binary(), "make_tfrecords", "--tokenizer", gpt2, "--input", str(out / "valid_head.txt"),
                        "--max_seq_length", "64", "--shard_size", "100", "--output_dir", str(out), "--prefix", "valid"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def test_tfrecord_dataset_reads_what_make_tfrecords_wrote(shards):
    meta = json.loads((shards / "valid.json").read_text())
    files = sorted(str(p) for p in shards.glob("valid-*.tfrecord"))
    assert len(files) == meta["num_shards"] >= 3
    expected = [ref.parse_int64_example(payload) for f in files for _, payload in ref.read_records(f)]
    assert len(expected) == meta["num_examples"]
    got = list(TFRecordDataset(str(shards / "valid-*.tfrecord"), cycle_length=1))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g["input_ids"].dtype == np.int64 and g["input_ids"].shape == (64,)
        assert g["input_ids"].tolist() == e["input_ids"] and g["attention_mask"].tolist() == e["attention_mask"]
    # Shuffled and split between replicas: each replica's files, a permutation of their examples.
    per_file = [len(ref.read_records(f)) for f in files]
    mine = TFRecordDataset(files, shuffle_buffer_size=100, seed=5, num_replicas=2, rank=1)
    assert len(mine) == sum(per_file[1::2])
    shuffled = [ex["input_ids"].tolist() for ex in mine]
    in_order = [e["input_ids"] for f in files[1::2] for e in map(ref.parse_int64_example, (p for _, p in ref.read_records(f)))]
    assert shuffled != in_order and sorted(shuffled) == sorted(in_order)
    loader = DataLoader(TFRecordDataset(files, cycle_length=1), batch_size=32)
    first = next(iter(loader))
    assert first["input_ids"].shape == (32, 64) and first["input_ids"][5].tolist() == expected[5]["input_ids"]


def test_a_corrupt_record_names_the_file_and_its_byte_offset(shards, tmp_path):
    source = sorted(shards.glob("valid-*.tfrecord"))[0]
    bad = tmp_path / "bad.tfrecord"
    shutil.copy(source, bad)
    offset = ref.read_records(str(bad))[3][0]
    data = bytearray(bad.read_bytes())
    data[offset + 12 + 5] ^= 0x20  # a data byte of record 3
    bad.write_bytes(bytes(data))
    with pytest.raises(lt.LazytrainError, match=re.escape(f"'{bad}': record 3 (byte offset {offset}): data CRC mismatch")):
        list(TFRecordDataset(str(bad)))
    skipping = TFRecordDataset(str(bad), skip_corrupt=True)
    assert len(list(skipping)) == len(ref.read_records(str(source))) - 1 and skipping.skipped == 1
    with pytest.raises(lt.LazytrainError, match="no file matches"):
        TFRecordDataset(str(tmp_path / "none-*.tfrecord"))


# ---------------------------------------------------------------- MpDeviceLoader
def numpy_batches(n, sleep=0.0, fail_at=None, log=None):
    for i in range(n):
        if sleep:
            time.sleep(sleep)
        if i == fail_at:
            raise KeyError(f"batch {i} is broken")
        if log is not None:
            log.append(i)
        yield {"x": np.full((2, 3), i, dtype=np.float64), "ids": np.arange(4, dtype=np.int32) + i,
               "pair": (np.array([i], dtype=np.uint8), [lt.tensor([float(i)])]), "name": f"b{i}"}


def test_device_loader_gives_device_tensors_in_order():
    device = lt.device()
    loader = MpDeviceLoader(list(numpy_batches(5)), device)
    assert len(loader) == 5
    before = met.counter_value("MarkStep") or 0
    out = list(loader)
    assert (met.counter_value("MarkStep") or 0) - before == 6  # one per next(), the last one included
    assert [b["name"] for b in out] == [f"b{i}" for i in range(5)]
    for i, b in enumerate(out):
        assert isinstance(b["x"], lt.Tensor) and b["x"].dtype == lt.float32 and b["x"].device == device
        np.testing.assert_array_equal(b["x"].numpy(), np.full((2, 3), i))
        assert b["ids"].dtype == lt.int32 and b["ids"].numpy().tolist() == [i, i + 1, i + 2, i + 3]
        small, (t,) = b["pair"]
        assert small.dtype == lt.int64 and small.numpy().tolist() == [i] and t.numpy().tolist() == [float(i)]


def test_device_loader_overlaps_a_slow_loader_with_the_step():
    n, pause = 10, 0.05
    start = time.perf_counter()
    for _ in MpDeviceLoader(numpy_batches(n, sleep=pause), lt.device()):
        time.sleep(pause)  # the "step"
    elapsed = time.perf_counter() - start
    assert elapsed < 0.8 * 2 * n * pause, f"{elapsed:.2f} s: loading did not overlap the steps"


def test_device_loader_raises_at_the_failing_batch_and_stops_when_left():
    got = []
    with pytest.raises(KeyError, match="batch 3 is broken"):
        for b in MpDeviceLoader(numpy_batches(6, fail_at=3), lt.device()):
            got.append(b["name"])
    assert got == ["b0", "b1", "b2"]
    pulled, closed = [], []

    def endless():
        try:
            yield from numpy_batches(10_000, log=pulled)
        finally:
            closed.append(True)

    for i, _ in enumerate(MpDeviceLoader(endless(), lt.device(), loader_prefetch_size=2, device_prefetch_size=1)):
        if i == 3:
            break
    gc.collect()
    time.sleep(0.2)
    assert closed == [True] and len(pulled) <= 4 + 2 + 1 + 2


def test_parallel_loader_sends_batches_round_robin():
    devices = [lt.device(0), lt.device(1)]
    loader = ParallelLoader(list(numpy_batches(5)), devices)
    assert loader.per_device_samples() == 2
    second = [(b["name"], str(b["x"].device)) for b in loader.per_device_loader("cpu:1")]
    first = [b["name"] for b in loader.per_device_loader(devices[0])]
    assert first == ["b0", "b2"] and second == [("b1", "cpu:1"), ("b3", "cpu:1")]  # b4: an incomplete round


def test_a_training_loop_over_the_device_loader_compiles_once():
    rows = [{"x": np.random.default_rng(i).normal(size=8).astype(np.float32), "y": i % 3} for i in range(64)]
    model = nn.Linear(8, 3)
    opt = lt.optim.AdamW(model.parameters(), lr=0.01)
    compiles = []
    for batch in MpDeviceLoader(DataLoader(rows, batch_size=8, shuffle=True, num_workers=2), lt.device()):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(batch["x"]), batch["y"])
        loss.backward()
        opt.step()
        compiles.append(met.counter_value("UncachedCompile") or 0)
    lt.sync(wait=True)
    assert len(compiles) == 8 and compiles[-1] == compiles[2], compiles
    assert np.isfinite(loss.item())
