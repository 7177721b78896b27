"""The OpInfo sweep's results (opinfo_sweep.py) counted and reported: per (op
variant, dtype) pair, the match figure, the causes of what does not match, and the
expected-results list (opinfo_expected.json) that tests/python/test_opinfo.py holds
the sweep to."""
import collections
import json
import os
import re

COUNTED = ("match", "mismatch", "unsupported", "error", "crash", "hang")


def by_task(results):
    """{"op[variant]:dtype": Counter of statuses}, and the first failure of each."""
    counts = collections.defaultdict(collections.Counter)
    first = {}
    for sid, rec in sorted(results.items()):
        task = sid.rsplit("#", 1)[0]
        counts[task][rec["status"]] += 1
        if rec["status"] not in ("match", "skip") and task not in first:
            first[task] = f"{rec['status']}: {rec['detail']} [{rec.get('sample', '')}]"
    return counts, first


def fails(c):
    """How many of a task's counted samples do not match."""
    return sum(c[s] for s in COUNTED if s != "match")


EXPECTED_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "opinfo_expected.json")


def load_expected(path=EXPECTED_PATH):
    """{"op[variant]:dtype": reason} of the pairs known not to match torch fully."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)["expected"]


def cause(first_failure):
    """A short cause for a failure line of by_task (how the listed reasons group)."""
    status, _, detail = first_failure.partition(": ")
    if status in ("crash", "hang"):
        return status
    if status == "unsupported":
        m = re.search(r"unexpected keyword argument '(\w+)'", detail)
        if m:
            return f"unsupported: keyword argument {m.group(1)}"
        if "incompatible function arguments" in detail:
            return "unsupported: an argument form or overload lazytrain lacks"
        return "unsupported: " + detail.split(" [")[0][:120]
    if status == "error":  # the message with its numbers (shapes, dims, ids) as N: one cause per template
        message = re.sub(r"\d+", "N", detail.split(" [T[")[0].split(" [[T[")[0])
        return "error: raises where torch returns: " + re.sub(r"\(graph \w+", "(graph", message)[:160]
    m = re.search(r"dtype (\w+), torch (\w+)", detail)
    if m:
        return f"mismatch: result dtype {m.group(1)} where torch gives {m.group(2)}"
    if ": shape " in detail:
        return "mismatch: result shape differs"
    if "values" in detail:
        low = re.search(r"\[T\[[^\]]*\]:(bfloat16|float16)", detail)
        return ("mismatch: values differ beyond torch.testing's float16/bfloat16 tolerance" if low
                else "mismatch: values differ")
    return "mismatch: " + detail.split(" [")[0][:120]


def update_expected(counts, first, path=EXPECTED_PATH):
    """Rewrites the list: drops pairs that now match, adds new failures with their cause
    and first failing sample; reasons already there (written by hand) stay."""
    old = load_expected(path)
    new = {}
    for task in sorted(counts):
        if fails(counts[task]):
            new[task] = old.get(task) or f"{cause(first[task])} (e.g. {first[task]})"[:400]
    with open(path, "w") as f:
        json.dump({"doc": "(op[variant]:dtype) pairs of the OpInfo sweep where some sample does not match torch, "
                          "with the reason: tests/python/test_opinfo.py fails when one starts matching or an "
                          "unlisted one stops. Refresh: python tests/python/opinfo_sweep.py --update-expected",
                   "expected": new}, f, indent=1, sort_keys=False)
        f.write("\n")
    return old, new


def figure(counts):
    matched = sum(c["match"] for c in counts.values())
    total = sum(sum(c[s] for s in COUNTED) for c in counts.values())
    return matched, total


def summary(results):
    counts, first = by_task(results)
    matched, total = figure(counts)
    skipped = sum(c["skip"] for c in counts.values())
    per_status = collections.Counter()
    for c in counts.values():
        per_status.update({s: c[s] for s in COUNTED})
    ops = {t.split(":")[0] for t in counts}
    pct = 100.0 * matched / total if total else 0.0
    lines = [f"opinfo: {matched}/{total} samples match torch ({pct:.1f}%) over {len(ops)} op variants, "
             f"{len(counts)} (op, dtype) pairs; " + ", ".join(f"{s} {per_status[s]}" for s in COUNTED)
             + f"; {skipped} not counted (float64/complex/small-int inputs, or torch raised)"]
    return "\n".join(lines)


def per_op_table(counts, failing_only=False):
    """One row per op variant: matched/counted samples and the other statuses."""
    per_op = collections.defaultdict(collections.Counter)
    for task, c in counts.items():
        per_op[task.rsplit(":", 1)[0]].update(c)
    rows = []
    for op in sorted(per_op):
        c = per_op[op]
        n = sum(c[s] for s in COUNTED)
        if failing_only and c["match"] == n:
            continue
        rows.append(f"  {op:45s} {c['match']:4d}/{n:<4d} " + " ".join(f"{s}={c[s]}" for s in COUNTED[1:] if c[s]))
    return "\n".join(rows)
