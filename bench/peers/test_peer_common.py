"""Checks of what the peers share with lazytrain's bench programs (numpy only; no lazytrain).

  ~/.cache/lazytrain/venv-peers/bin/python -m pytest bench/peers/test_peer_common.py -q
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402


def test_mt19937_64_matches_the_cpp_standard():
    # C++11 [rand.predef]: the 10000th consecutive invocation of a default-constructed
    # std::mt19937_64 (seed 5489) produces 9981545732273789042.
    rng = peer_common.Mt19937_64(5489)
    for _ in range(9999):
        rng()
    assert rng() == 9981545732273789042


def test_uniform_int_stays_in_range_and_covers_it():
    rng = peer_common.Mt19937_64(42)
    draws = [rng.uniform_int(1000, 1009) for _ in range(2000)]
    assert min(draws) == 1000 and max(draws) == 1009
    assert len(set(draws)) == 10


def test_labelled_capacity_is_lazytrains():
    # bench/README.md: 224 of 1024 rows at batch 8 x seq 128 (src/data/labelled_positions.cpp).
    assert peer_common.labelled_capacity(1024, 150) == 224
    assert peer_common.labelled_capacity(1024, 1024) == 1024  # never more than the tokens
    assert peer_common.labelled_capacity(512, 70) % 8 == 0  # a multiple of ceil(512 / 64)


def test_bert_batches_label_position_zero_and_about_15_percent():
    batches = peer_common.bert_batches(42, 8, 128, 30522, count=2)
    for ids, labels in batches:
        assert ids.shape == (8, 128) and ids.min() >= 1000 and ids.max() < 30522
        assert labels[0, 0] == ids[0, 0]
        labelled = labels != peer_common.IGNORE_INDEX
        np.testing.assert_array_equal(labels[labelled], ids[labelled])
        assert 0.10 < labelled.mean() < 0.20


def test_training_flops_per_token_match_bench_readme():
    # bench/README.md's model table (head on every token): bert-tiny 26.3 M, bert-base 668 M.
    assert round(peer_common.bert_train_flops_per_token(peer_common.bert_config("bert-tiny"), 128, 1.0) / 1e5) == 263
    assert round(peer_common.bert_train_flops_per_token(peer_common.bert_config("bert-base"), 128, 1.0) / 1e6) == 668
