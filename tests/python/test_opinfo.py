"""PyTorch's own operator samples (op_db, as PyTorch/XLA tests itself) over every op
lazytrain spells as torch does: no sample may crash the process, what does not
match torch is listed with its reason in opinfo_expected.json, and at least 95% of
the samples match. How the ops, dtypes and samples are chosen, and what counts as
a match: tests/python/opinfo_sweep.py. The sweep runs once, in worker subprocesses
(LAZYTRAIN_OPINFO_JOBS of them, default 1), for the three tests.

Re-run alone, with the per-op table and every failing (op, dtype):
    python tests/python/opinfo_sweep.py -v
After fixing ops, refresh the list (keeps the reasons written by hand):
    python tests/python/opinfo_sweep.py --update-expected
"""
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest", reason="torch.testing._internal (op_db) needs expecttest")

import opinfo_report  # noqa: E402 (tests/python is on sys.path: pytest's rootdir-relative import)
import opinfo_sweep  # noqa: E402

MIN_MATCH = 0.95


@pytest.fixture(scope="module")
def sweep():
    results = opinfo_sweep.sweep(jobs=int(os.environ.get("LAZYTRAIN_OPINFO_JOBS", "1")))
    counts, first = opinfo_report.by_task(results)
    return results, counts, first


def test_no_sample_crashes(sweep):
    results, _, _ = sweep
    dead = [f"{sid}: {rec['status']}: {rec['detail']}" for sid, rec in sorted(results.items())
            if rec["status"] in ("crash", "hang")]
    assert not dead, f"{len(dead)} OpInfo samples killed or hung the process:\n" + "\n".join(dead)


def test_mismatches_are_the_listed_ones(sweep):
    _, counts, first = sweep
    expected = opinfo_report.load_expected()
    now_pass, new_fail, stale = [], [], []
    for task, c in sorted(counts.items()):
        fails = opinfo_report.fails(c)
        if task in expected and not fails:
            now_pass.append(f"{task}: now passes, remove from the list (was: {expected[task]})")
        elif task not in expected and fails:
            new_fail.append(f"{task}: {fails} of {sum(c.values())} samples fail, not listed: {first[task]}")
    stale = [f"{task}: listed but not swept (renamed or removed?)" for task in sorted(set(expected) - set(counts))]
    problems = new_fail + now_pass + stale
    assert not problems, ("opinfo_expected.json is out of date (python tests/python/opinfo_sweep.py --update-expected "
                          "refreshes it; give new entries their reason):\n" + "\n".join(problems))


def test_match_figure(sweep, capsys):
    results, counts, _ = sweep
    matched, total = opinfo_report.figure(counts)
    with capsys.disabled():
        print("\n" + opinfo_report.summary(results))
        print("op variants with samples that do not match (matched/counted):")
        print(opinfo_report.per_op_table(counts, failing_only=True))
    assert total > 0
    pct = 100.0 * matched / total
    assert matched >= MIN_MATCH * total, (
        f"{matched}/{total} = {pct:.1f}% of the OpInfo samples match torch (needs {100 * MIN_MATCH:.0f}%)")


def test_a_crashing_sample_is_reported_and_the_sweep_goes_on(monkeypatch):
    # The worker kills itself (SIGSEGV) on one sample: that sample is a crash naming it, and a
    # new worker runs the ones after it.
    monkeypatch.setenv("LAZYTRAIN_OPINFO_TEST_CRASH", "sum[fn]:float32#1")
    results = opinfo_sweep.sweep(only=["sum"], max_samples=3)
    crashed = results["sum[fn]:float32#1"]
    assert crashed["status"] == "crash" and "T[" in crashed["detail"], crashed
    assert results["sum[fn]:float32#2"]["status"] == "match"
    assert results["sum[method]:float32#0"]["status"] == "match"
