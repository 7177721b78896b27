#!/usr/bin/env python3
"""Parity sweep of `torch.compile(model, backend="lazytrain")` over the op census's architectures (issue 54, item 3).

Every architecture of tools/torch_op_census.py (the same tiny random configs, seed, inputs and
workarounds: its `build()`) is run in each mode it supports

  train/sdpa, train/eager   model.train(), labels: the loss and every parameter's gradient
                            after loss.backward(), compiled vs eager
  eval/sdpa,  eval/eager    model.eval(), torch.no_grad(), no labels: the logits, compiled vs eager

through `torch.compile(model, backend="lazytrain", fullgraph=True, dynamic=False,
options={"fallback": "error"})` (an op without a lowering raises instead of running in torch).
The compiled model is a deep copy of the eager one. A mode passes when every compared tensor
satisfies torch.allclose(actual, expected, rtol=1e-4, atol=1e-4) (f32) and every parameter that
has a gradient in eager has one compiled (and vice versa). Recorded per architecture x mode: pass,
the max abs error of the loss / the gradients (and the parameter where it is largest) / the
logits, the error's first line (the innermost exception: the LoweringError, not Dynamo's wrapper),
seconds.

  /tmp/ltpy tools/torch_compile_parity.py                 writes tests/python/data/torch_compile_parity.json
  /tmp/ltpy tools/torch_compile_parity.py --only t5,bart  re-runs a subset and merges it into the file
  /tmp/ltpy tools/torch_compile_parity.py --modes train/sdpa,eval/sdpa   a subset of the modes
  /tmp/ltpy tools/torch_compile_parity.py --markdown      prints the docs table (census columns +
                                                          "Passes under lazytrain") from the two files
  /tmp/ltpy tools/torch_compile_parity.py --markdown --write-docs   also rewrites the table in
                                                          docs/torch_compile_architectures.md

The pytest counterpart (train with the default attention, eval logits) is
tests/python/test_torch_compile_architectures.py.
"""
import argparse
import copy
import importlib.util
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(ROOT, "tests", "python", "data", "torch_compile_parity.json")
CENSUS_JSON = os.path.join(ROOT, "tests", "python", "data", "torch_op_census.json")
DOCS = os.path.join(ROOT, "docs", "torch_compile_architectures.md")
if __name__ == "__main__":  # run as a script from a source tree: its package (imported by a test, the test's)
    sys.path.insert(0, os.path.join(ROOT, "python"))

RTOL = ATOL = 1e-4


def census_tool():
    """tools/torch_op_census.py as a module (tools/ is not a package)."""
    name = "torch_op_census"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "torch_op_census.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _innermost(exc):
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        nxt = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if nxt is None:
            break
        exc = nxt
    return exc


def error_line(exc):
    """'LoweringError: aten.foo.default: ...' — the innermost exception's type and first line."""
    inner = _innermost(exc)
    lines = census_tool()._clean(inner).splitlines()
    if len(lines) > 1 and lines[0].startswith("backend=") and lines[0].endswith("raised:"):
        lines = lines[1:]  # Dynamo's BackendCompilerFailed without a cause: the backend's error is line 2
    first = lines[0] if lines else ""
    return f"{type(inner).__name__}: {first}"


def _compile(model):
    import torch
    import lazytrain.torch_backend  # noqa: F401  (registers backend "lazytrain")

    return torch.compile(model, backend="lazytrain", fullgraph=True, dynamic=False, options={"fallback": "error"})


def _max_abs(actual, expected):
    return float((actual.detach().double() - expected.detach().double()).abs().max()) if expected.numel() else 0.0


def _close(actual, expected):
    import torch

    return actual.shape == expected.shape and bool(torch.allclose(actual.detach(), expected.detach(),
                                                                  rtol=RTOL, atol=ATOL))


def run_train(spec, attn):
    """(eager, compiled) for one train step: {"loss": (actual, expected), "grads": {name: (actual, expected)}}."""
    import torch

    torch._dynamo.reset()
    eager, inputs = census_tool().build(spec, f"train/{attn}")
    model = copy.deepcopy(eager)
    loss = eager(**inputs).loss
    loss.backward()
    cmodel = _compile(model)
    closs = cmodel(**inputs).loss
    closs.backward()
    grads = {}
    for (n, p), (n2, q) in zip(eager.named_parameters(), model.named_parameters()):
        assert n == n2
        grads[n] = (q.grad, p.grad)
    return {"loss": (closs.detach(), loss.detach()), "grads": grads}


def run_eval(spec, attn):
    """(actual, expected) logits of one no_grad eval call."""
    import torch

    torch._dynamo.reset()
    eager, inputs = census_tool().build(spec, f"eval/{attn}")
    model = copy.deepcopy(eager)
    cmodel = _compile(model)
    with torch.no_grad():
        expected = eager(**inputs).logits
        actual = cmodel(**inputs).logits
    return actual, expected


def compare_train(r):
    """The train entry's numbers and failures from run_train's result."""
    actual, expected = r["loss"]
    entry = {"loss_err": _max_abs(actual, expected), "grad_err": 0.0, "grad_worst": None, "grads": 0}
    problems = [] if _close(actual, expected) else [f"loss {actual.item():.6g} vs eager {expected.item():.6g}"]
    bad = []
    for name, (a, e) in r["grads"].items():
        if (a is None) != (e is None):
            problems.append(f"grad of {name}: {'missing' if a is None else 'present'} under lazytrain, "
                            f"{'present' if e is not None else 'missing'} in eager")
            continue
        if e is None:
            continue
        entry["grads"] += 1
        err = _max_abs(a, e) if a.shape == e.shape else float("inf")
        if err >= entry["grad_err"]:
            entry["grad_err"], entry["grad_worst"] = err, name
        if not _close(a, e):
            bad.append(name)
    if bad:
        problems.append(f"{len(bad)} of {entry['grads']} grads off (first: {bad[0]})")
    return entry, problems


def compare_eval(actual, expected):
    entry = {"logits_err": _max_abs(actual, expected) if actual.shape == expected.shape else float("inf")}
    problems = [] if _close(actual, expected) else [f"logits off by {entry['logits_err']:.3g}"]
    return entry, problems


def parity_mode(spec, mode):
    import transformers

    tool = census_tool()
    phase, attn = mode.split("/")
    if not tool._supports(getattr(transformers, spec[2]), attn):
        return {"supported": False}
    t0 = time.time()
    try:
        if phase == "train":
            entry, problems = compare_train(run_train(spec, attn))
        else:
            entry, problems = compare_eval(*run_eval(spec, attn))
        entry = dict(supported=True, passed=not problems, **entry)
        if problems:
            entry["error"] = "; ".join(problems)
    except Exception as e:
        entry = {"supported": True, "passed": False, "error": error_line(e)}
    entry["seconds"] = round(time.time() - t0, 1)
    return entry


def run(names=None, modes=None, log=sys.stderr):
    import logging

    import torch

    torch.set_num_threads(1)
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    tool = census_tool()
    modes = modes or tool.MODES
    specs = [s for s in tool.ARCHITECTURES if names is None or s[0] in names]
    unknown = set(names or ()) - {s[0] for s in specs}
    if unknown:
        raise SystemExit(f"unknown architectures: {sorted(unknown)}")
    out = {}
    for spec in specs:
        t0 = time.time()
        out[spec[0]] = {m: parity_mode(spec, m) for m in modes}
        print(f"{spec[0]:12s} {time.time() - t0:5.1f}s  " + ", ".join(
            f"{m}:{summary(e)}" for m, e in out[spec[0]].items()), file=log, flush=True)
        for m, e in out[spec[0]].items():
            if e.get("error"):
                print(f"    {m}: {e['error']}", file=log, flush=True)
    return out


def _g(x):
    return f"{x:.1e}" if x else "0"


def summary(e):
    """Short text of one mode's entry: 'pass 3.1e-06', 'FAIL (...)', '-'."""
    if not e["supported"]:
        return "-"
    errs = [e[k] for k in ("loss_err", "grad_err", "logits_err") if e.get(k) is not None]
    worst = max(errs) if errs else None
    if e["passed"]:
        return f"pass {_g(worst)}"
    return "FAIL" + (f" {_g(worst)}" if worst is not None else "")


def passes_column(modes):
    """The docs' "Passes under lazytrain" cell of one architecture: per phase (train: loss and
    gradients, eval: logits) yes with the largest max abs error over its attention variants, or no
    with the first failure's message."""
    parts = []
    for phase in ("train", "eval"):
        entries = {m: e for m, e in modes.items() if m.startswith(phase + "/") and e["supported"]}
        if not entries:
            continue
        failed = {m: e for m, e in entries.items() if not e["passed"]}
        if not failed:
            errs = [e[k] for e in entries.values() for k in ("loss_err", "grad_err", "logits_err")
                    if e.get(k) is not None]
            parts.append(f"{phase}: yes ({_g(max(errs))})")
        else:
            which = "" if len(failed) == len(entries) else " (" + ", ".join(m.split("/")[1] for m in failed) + ")"
            error = next(iter(failed.values())).get("error", "")
            error = error if len(error) <= 90 else error[:87] + "..."
            parts.append(f"{phase}: **no**{which}: `{error}`")
    return "; ".join(parts) or "-"


def markdown(parity, census):
    """The census's docs table with the "Passes under lazytrain" column filled from `parity`."""
    table = census_tool().markdown(census)
    rows = table.splitlines()
    out = rows[:2]
    for row in rows[2:]:
        name = row.split("|")[1].strip()
        cell = passes_column(parity["architectures"][name]["modes"]) if name in parity["architectures"] else ""
        assert row.endswith("|  |"), row
        out.append(row[:-len("|  |")] + f"| {cell} |")
    return "\n".join(out) + "\n"


def write_docs(table, path=DOCS):
    with open(path) as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| Architecture |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    text = "".join(lines[:start]) + table + "".join(lines[end:])
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="comma-separated architecture names (default: all); merged into --out")
    p.add_argument("--modes", help="comma-separated modes (default: all four)")
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--markdown", action="store_true", help="print the docs table from --out and the census (runs nothing)")
    p.add_argument("--write-docs", action="store_true", help="with --markdown: rewrite the table in " + DOCS)
    args = p.parse_args(argv)
    if args.markdown:
        with open(args.out) as f:
            parity = json.load(f)
        with open(CENSUS_JSON) as f:
            census = json.load(f)
        table = markdown(parity, census)
        sys.stdout.write(table)
        if args.write_docs:
            write_docs(table)
            print(f"wrote {DOCS}", file=sys.stderr)
        return 0
    import torch
    import transformers

    names = args.only.split(",") if args.only else None
    modes = args.modes.split(",") if args.modes else None
    t0 = time.time()
    archs = run(names, modes)
    total = time.time() - t0
    result = {
        "about": "torch.compile(model, backend='lazytrain', fullgraph=True, dynamic=False, "
                 "options={'fallback': 'error'}) vs eager on the census's architectures; train: loss and every "
                 "gradient, eval: logits; pass = torch.allclose(rtol=1e-4, atol=1e-4) f32; errors are max abs; "
                 "written by tools/torch_compile_parity.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "architectures": {},
    }
    if os.path.exists(args.out) and (names or modes):  # merge a subset into the file
        with open(args.out) as f:
            result["architectures"] = json.load(f)["architectures"]
    for name, modes_ in archs.items():
        result["architectures"].setdefault(name, {"modes": {}})["modes"].update(modes_)
    order = [s[0] for s in census_tool().ARCHITECTURES]
    result["architectures"] = {n: result["architectures"][n] for n in order if n in result["architectures"]}
    for a in result["architectures"].values():
        a["modes"] = {m: a["modes"][m] for m in census_tool().MODES if m in a["modes"]}
        a["passed"] = all(e["passed"] for e in a["modes"].values() if e["supported"])
    ran = [e for a in archs.values() for e in a.values() if e["supported"]]
    print(f"{len(archs)} architectures, {sum(e['passed'] for e in ran)}/{len(ran)} modes pass, {total:.0f}s",
          file=sys.stderr)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
