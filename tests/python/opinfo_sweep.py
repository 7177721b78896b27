"""PyTorch's OpInfo samples (torch.testing._internal's op_db) run through
lazytrain's torch-named ops and compared with torch.

Which ops: every OpInfo whose name lazytrain spells the same way, found by
introspection, in up to four variants:
  fn        lt.<name> (dotted names through lt's modules: nn.functional.gelu),
  method    Tensor.<name>, where torch has the method too (and the r-dunders:
            __radd__, __getitem__, ...),
  operator  the Python operator (a + b, -a, a[i]) where lt.Tensor defines its dunder,
  alias     torch's other names of the op that lazytrain has (softmax[nn.functional.softmax],
            transpose[method swapdims]).
Which dtypes: lazytrain's (float32, bfloat16, float16, int32, int64, bool) that
the OpInfo supports on CPU. Which samples: op.sample_inputs('cpu', dtype), the
first MAX_SAMPLES of each (op, variant, dtype), made before any is run so that
a resumed worker sees the same ones.

Each sample is one of:
  match        lazytrain's output has torch's dtype, shape and values (torch.testing's
               default tolerances for the dtype; NaN equals NaN);
  mismatch     a wrong value, dtype or shape (or a different number of outputs);
  unsupported  lazytrain raised TypeError / ValueError / NotImplementedError (an
               argument or dtype it does not take);
  error        lazytrain raised another exception where torch returned;
  crash        the process died (a signal) running it;
  hang         it ran longer than HANG_SECONDS.
Not counted (reported apart): samples with an input lazytrain cannot hold
(float64, complex, uint8/int8/int16 tensors or dtype arguments: lazytrain has no
such dtypes; casting them would test another input), and samples torch itself rejects.
Random ops (dropout, rand*, ...) and empty* are compared on dtype and shape only.

How inputs are converted and outputs compared: opinfo_compare.py; counting, causes and
the expected list (opinfo_expected.json): opinfo_report.py.

The samples run in a worker subprocess that writes each sample's id before
running it; when the worker dies the parent records a crash for that sample
and starts a new worker after it. Run it alone:
    python tests/python/opinfo_sweep.py [--ops add,sum] [--max-samples N] [--jobs J] [-v]
"""
import argparse
import collections
import itertools
import json
import operator
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from opinfo_compare import DTYPE_NAMES, Skip, compare, compare_ties, field_names, stable, to_lt, to_torch
from opinfo_report import by_task, cause, per_op_table, summary, update_expected

MAX_SAMPLES = 12
HANG_SECONDS = 120

# Outputs whose values are random or undefined: dtype and shape are compared (the last
# part of the OpInfo name; and every *dropout*, and any sample with dropout_p > 0).
_VALUES_UNDEFINED = {"rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "bernoulli", "multinomial",
                     "normal", "uniform", "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                     "exponential", "cauchy", "geometric", "log_normal"}

# Where lazytrain's name differs from the OpInfo's (OpInfo full name -> lt path).
NAME_TABLE = {}

# OpInfos whose `op` is a wrapper around the torch function, not the function itself: how
# to call lazytrain's with the sample's arguments. Identity: the wrapper only seeds the RNG.
# A covered op whose wrapper is not listed here is left out (its arguments may be reordered).
_SAME_ARGS = lambda f, *a, **k: f(*a, **k)  # noqa: E731
WRAPPED = {
    "where": lambda f, self, condition, other, **k: f(condition, self, other, **k),
    "nn.functional.embedding": lambda f, weight, idx, **k: f(idx, weight, **k),
    "nn.functional.scaled_dot_product_attention": _SAME_ARGS,
    "nn.functional.dropout": _SAME_ARGS,
    "randn": _SAME_ARGS,
    "randn_like": _SAME_ARGS,
    "rand_like": _SAME_ARGS,
}

# The r-dunders: when lazytrain's returns NotImplemented (a tensor operand), Python evaluates
# the reflected expression `other op self` instead; so does the sweep.
_REFLECTED = {"__radd__": operator.add, "__rsub__": operator.sub, "__rmul__": operator.mul,
              "__rdiv__": operator.truediv, "__rtruediv__": operator.truediv, "__rfloordiv__": operator.floordiv,
              "__rmatmul__": operator.matmul, "__rmod__": operator.mod, "__rpow__": operator.pow,
              "__rand__": operator.and_, "__ror__": operator.or_, "__rxor__": operator.xor,
              "__rlshift__": operator.lshift, "__rrshift__": operator.rshift}

# Ops whose index outputs are unspecified among equal values (unless stable=True): the
# indices must select torch's values and be distinct, not equal torch's.
_TIES = {"sort", "argsort", "topk", "msort"}


# ------------------------------------------------------------------------------------------
# Which ops
# ------------------------------------------------------------------------------------------
def _resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _operator_dunder(fn):
    name = getattr(fn, "__name__", "")
    if getattr(operator, name, None) is not fn:
        return None
    name = name.rstrip("_")
    return {"div": "truediv"}.get(name, name)


def full_name(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def covered(lt, op_db, only=None):
    """[(key, opinfo, variant)] for the ops lazytrain spells as torch does."""
    import torch

    out = []
    tensor_dict = set(dir(lt.Tensor))
    for op in op_db:
        name = full_name(op)
        if only and op.name not in only and name not in only:
            continue
        dunder = op.name.startswith("__") and op.name.endswith("__")
        if dunder:
            if op.name in tensor_dict and callable(getattr(lt.Tensor, op.name)):
                out.append((f"{name}[method]", op, "method"))
            continue
        lt_name = NAME_TABLE.get(name, op.name)
        fn = _resolve(lt, lt_name)
        direct = op.op is _resolve(torch, op.name) or op.name in WRAPPED
        if callable(fn) and not isinstance(fn, type) and direct:
            out.append((f"{name}[fn]", op, "fn"))
        if op.method_variant is not None and "." not in op.name and op.name in tensor_dict:
            out.append((f"{name}[method]", op, "method"))
        dunder_name = _operator_dunder(op.operator_variant) if op.operator_variant is not None else None
        if dunder_name and _c_defines(lt, dunder_name):
            out.append((f"{name}[operator]", op, "operator"))
        # torch's other names for the op (nn.functional.softmax for softmax, Tensor.swapdims, ...).
        for alias in op.aliases:
            fn = _resolve(lt, alias.name)
            if callable(fn) and not isinstance(fn, type) and op.op is _resolve(torch, op.name):
                out.append((f"{name}[{alias.name}]", op, "alias:" + alias.name))
            if alias.method_variant is not None and "." not in alias.name and alias.name in tensor_dict:
                out.append((f"{name}[method {alias.name}]", op, "alias_method:" + alias.name))
    return out


def _alias(op, variant):
    name = variant.split(":", 1)[1]
    return next(a for a in op.aliases if a.name == name)


def _c_defines(lt, dunder_name):
    """lt.Tensor defines __name__ itself (in C++ or in Python), not through object."""
    attr = f"__{dunder_name}__"
    for klass in type.mro(lt.Tensor):
        if attr in vars(klass):
            return klass is not object
    return False


def tasks(lt, torch, op_db, only=None):
    """Every (key, dtype name) to run, in a fixed order."""
    out = []
    for key, op, variant in covered(lt, op_db, only):
        supported = op.supported_dtypes("cpu")
        for dname in DTYPE_NAMES:
            if getattr(torch, dname) in supported:
                out.append((key, op, variant, dname))
    return out


# ------------------------------------------------------------------------------------------
# The worker: runs samples, one JSON line before and after each
# ------------------------------------------------------------------------------------------
def run_sample(lt, torch, key, op, variant, sample):
    """(status, detail) of one sample; raises Skip when it is not counted."""
    x, args, kwargs = sample.input, sample.args, sample.kwargs
    try:
        if variant == "fn":
            expected = op.op(x, *args, **kwargs)
        elif variant == "method":
            expected = (op.op if op.name.startswith("__") else op.method_variant)(x, *args, **kwargs)
        elif variant.startswith("alias:"):
            expected = _alias(op, variant).op(x, *args, **kwargs)
        elif variant.startswith("alias_method:"):
            expected = _alias(op, variant).method_variant(x, *args, **kwargs)
        else:
            expected = op.operator_variant(x, *args, **kwargs)
    except Exception as e:  # torch rejects it: not a sample of the op's domain
        raise Skip(f"torch raised {type(e).__name__}")
    lx, largs, lkwargs = to_lt(lt, torch, x), to_lt(lt, torch, args), to_lt(lt, torch, kwargs)
    try:
        if variant == "fn":
            fn = _resolve(lt, NAME_TABLE.get(full_name(op), op.name))
            got = WRAPPED.get(op.name, _SAME_ARGS)(fn, lx, *largs, **lkwargs)
        elif variant == "method":
            got = getattr(lt.Tensor, op.name)(lx, *largs, **lkwargs)
            if got is NotImplemented and op.name in _REFLECTED and len(largs) == 1 and not lkwargs:
                got = _REFLECTED[op.name](largs[0], lx)
        elif variant.startswith("alias:"):
            got = _resolve(lt, _alias(op, variant).name)(lx, *largs, **lkwargs)
        elif variant.startswith("alias_method:"):
            got = getattr(lt.Tensor, _alias(op, variant).name)(lx, *largs, **lkwargs)
        else:
            got = op.operator_variant(lx, *largs, **lkwargs)
        actual = to_torch(lt, torch, got)
    except (TypeError, ValueError, NotImplementedError) as e:
        return "unsupported", f"{type(e).__name__}: {_first_line(e)}"
    except Exception as e:  # noqa: BLE001 (any other exception where torch returned)
        return "error", f"{type(e).__name__}: {_first_line(e)}"
    values = not (op.name.split(".")[-1] in _VALUES_UNDEFINED or "dropout" in op.name
                  or (kwargs.get("dropout_p") or 0) > 0)
    if op.name in _TIES and not stable(op.name, args, kwargs):
        why = compare_ties(torch, op.name, actual, expected, x, args, kwargs)
    else:
        why = compare(torch, actual, expected, values)
    if why is None and not isinstance(got, lt.Tensor):
        for field in field_names(expected):
            if not hasattr(got, field):
                why = f"out.{field}: missing (torch returns a named tuple)"
                break
    return ("match", "") if why is None else ("mismatch", why)


def _first_line(e):
    text = str(e).strip().splitlines()
    # Without the "(called from opinfo_sweep.py:N)" that lazytrain's errors add: it moves with edits.
    return re.sub(r" \(called from [^)]*\)", "", text[0] if text else "")[:200]


def describe(sample, torch):
    def d(o):
        if isinstance(o, torch.Tensor):
            return f"T{list(o.shape)}:{str(o.dtype)[6:]}"
        if isinstance(o, (list, tuple)):
            inner = ", ".join(d(i) for i in o[:6]) + (", ..." if len(o) > 6 else "")
            return f"[{inner}]" if isinstance(o, list) else f"({inner})"
        if isinstance(o, dict):
            return "{" + ", ".join(f"{k}={d(v)}" for k, v in o.items()) + "}"
        return repr(o)[:40]

    return f"{d(sample.input)} args={d(list(sample.args))} kwargs={d(sample.kwargs)}"


def _first_samples(lt, torch, op, dtype, max_samples, scan=200):
    """The first `max_samples` samples whose inputs lazytrain can hold (of the first `scan`),
    and why each one before them that it cannot hold was passed over."""
    samples, unheld = [], []
    for sample in itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False), scan):
        try:
            to_lt(lt, torch, [sample.input, sample.args, sample.kwargs], check_only=True)
        except Skip as e:
            unheld.append(str(e))
            continue
        samples.append(sample)
        if len(samples) == max_samples:
            break
    return samples, unheld


def worker(out_path, only, max_samples, shard, shards, resume_after):
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import lazytrain as lt

    torch.set_num_threads(1)
    started = resume_after is None
    with open(out_path, "a", buffering=1) as out:
        for n, (key, op, variant, dname) in enumerate(tasks(lt, torch, op_db, only)):
            if n % shards != shard:
                continue
            task_id = f"{key}:{dname}"
            if not started and not resume_after.startswith(task_id + "#"):
                continue
            torch.manual_seed(0)
            try:
                samples, unheld = _first_samples(lt, torch, op, getattr(torch, dname), max_samples)
            except Exception as e:  # noqa: BLE001 (the OpInfo cannot make samples here)
                out.write(json.dumps({"id": task_id + "#-", "status": "skip", "detail": f"sample_inputs: {e}"}) + "\n")
                continue
            for i, why in enumerate(unheld):
                out.write(json.dumps({"id": f"{task_id}#u{i}", "status": "skip", "detail": why}) + "\n")
            for i, sample in enumerate(samples):
                sample_id = f"{task_id}#{i}"
                if not started:
                    started = sample_id == resume_after
                    continue
                out.write(json.dumps({"start": sample_id, "sample": describe(sample, torch)}) + "\n")
                if sample_id == os.environ.get("LAZYTRAIN_OPINFO_TEST_CRASH"):  # the harness's own test
                    os.kill(os.getpid(), signal.SIGSEGV)
                try:
                    status, detail = run_sample(lt, torch, key, op, variant, sample)
                except Skip as e:
                    status, detail = "skip", str(e)
                except Exception as e:  # noqa: BLE001 (a bug of the harness: show it, count it)
                    status, detail = "error", "harness: " + traceback.format_exc(limit=2).replace("\n", " | ")[-300:]
                out.write(json.dumps({"id": sample_id, "status": status, "detail": detail}) + "\n")


# ------------------------------------------------------------------------------------------
# The parent: workers in subprocesses, crashes and hangs recorded
# ------------------------------------------------------------------------------------------
def _read(path):
    results, last_start = {}, None
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            rec = json.loads(line)
            if "start" in rec:
                last_start = rec
            else:
                results[rec["id"]] = rec
    return results, last_start


def _run_shard(only, max_samples, shard, shards, workdir, env):
    out_path = os.path.join(workdir, f"shard{shard}.jsonl")
    err_path = os.path.join(workdir, f"shard{shard}.stderr")
    open(out_path, "w").close()
    extra = {}  # sample id -> crash/hang record
    resume = None
    procs = []
    while True:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", out_path, "--max-samples", str(max_samples),
               "--shard", str(shard), "--shards", str(shards)]
        if only:
            cmd += ["--ops", ",".join(only)]
        if resume:
            cmd += ["--resume-after", resume]
        with open(err_path, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        procs.append(proc)
        last_size, last_change = -1, time.monotonic()
        while proc.poll() is None:
            time.sleep(0.2)
            size = os.path.getsize(out_path)
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > HANG_SECONDS:
                proc.kill()
                proc.wait()
                break
        hung = proc.returncode is not None and proc.returncode < 0 and time.monotonic() - last_change > HANG_SECONDS
        results, last_start = _read(out_path)
        if proc.returncode == 0:
            break
        if last_start is None or last_start["start"] in results:
            with open(err_path) as f:
                tail = f.read()[-2000:]
            raise RuntimeError(f"opinfo worker exited {proc.returncode} outside a sample:\n{tail}")
        with open(err_path) as f:
            tail = " | ".join(f.read().strip().splitlines()[-3:])[-300:]
        sid = last_start["start"]
        status = "hang" if hung else "crash"
        detail = (f"no result in {HANG_SECONDS} s" if hung else f"worker died (exit {proc.returncode})") + \
            f"; sample {last_start['sample']}; stderr: {tail}"
        extra[sid] = {"id": sid, "status": status, "detail": detail, "sample": last_start["sample"]}
        resume = sid
    results, _ = _read(out_path)
    # The sample descriptions, for the report of failures.
    samples = {}
    with open(out_path) as f:
        for line in f:
            rec = json.loads(line)
            if "start" in rec:
                samples[rec["start"]] = rec["sample"]
    for sid, rec in results.items():
        rec.setdefault("sample", samples.get(sid, ""))
    results.update(extra)
    return results


def backend():
    """The backend the samples run on: the interpreter (the reference every compiled backend is
    checked against) unless LAZYTRAIN_OPINFO_BACKEND names another; the cpu backend compiles a
    kernel per new graph (~0.3 s), too slow for every sample in CI."""
    return os.environ.get("LAZYTRAIN_OPINFO_BACKEND") or "interpreter"


def sweep(only=None, max_samples=MAX_SAMPLES, jobs=1):
    """{sample id: {"status", "detail", "sample"}} over every covered op."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONWARNINGS"] = "ignore"
    env["LAZYTRAIN_BACKEND"] = backend()
    with tempfile.TemporaryDirectory(prefix="opinfo-") as workdir:
        if jobs == 1:
            return _run_shard(only, max_samples, 0, 1, workdir, env)
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            parts = list(pool.map(lambda s: _run_shard(only, max_samples, s, jobs, workdir, env), range(jobs)))
        merged = {}
        for p in parts:
            merged.update(p)
        return merged


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default="", help="comma-separated OpInfo names (default: every covered op)")
    p.add_argument("--max-samples", type=int, default=MAX_SAMPLES)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("-v", "--verbose", action="store_true", help="the per-op table and every failing (op, dtype)")
    p.add_argument("--json", help="write the per-sample results here")
    p.add_argument("--update-expected", action="store_true", help="rewrite opinfo_expected.json from this run")
    p.add_argument("--causes", action="store_true", help="the failing pairs grouped by cause")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--shard", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--shards", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--resume-after", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    only = [o for o in a.ops.split(",") if o] or None
    if a.worker:
        worker(a.worker, only, a.max_samples, a.shard, a.shards, a.resume_after)
        return 0
    start = time.monotonic()
    results = sweep(only, a.max_samples, a.jobs)
    counts, first = by_task(results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    if a.verbose:
        print(per_op_table(counts))
        for task in sorted(first):
            print(f"{task}: {first[task]}")
    if a.causes:
        groups = collections.defaultdict(list)
        for task in sorted(first):
            groups[cause(first[task])].append(task)
        for c, tasks_ in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"{len(tasks_):4d}  {c}\n        " + " ".join(tasks_))
    if a.update_expected:
        if only:
            p.error("--update-expected needs the whole sweep (no --ops)")
        old, new = update_expected(counts, first)
        print(f"opinfo_expected.json: {len(new)} entries ({len(set(old) - set(new))} removed, "
              f"{len(set(new) - set(old))} added)")
    print(summary(results) + f" in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
