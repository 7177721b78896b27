#!/usr/bin/env python3
"""Draws the plots and writes the tables of docs/performance.md from the benchmark
results kept in docs/data/benchmarks/, so that the page's figures and tables come
from the same numbers and cannot disagree.

The data (see docs/performance.md, "The data behind this page"):

    machines.json        the machine kinds: name, CPU, ISA, cores
    training_step.csv    lazytrain's training step against each peer: one row per table,
                         run, model, dtype, thread count and peer (tokens/s of both, their
                         ratio, compile times, peak RSS, CPU time, the roofline bound)
    training_step.json   each of those tables: machine kind, date (once), and per run its
                         time, lazytrain's commit, the load and the command that reproduces it
    scaling.json         the inputs of the multi-host step-time model
    *.json (others)      free-form tables ({"tables": [...]}), each with machine, date,
                         command, columns and rows (or a printed output)

It writes, under --out (default docs/_generated):

    plots/<machine kind>.png   per machine kind, lazytrain's step speed over PyTorch eager
                               (its best allocator), torch.compile (Inductor), JAX and
                               PyTorch/XLA per model, one panel per dtype and thread count,
                               with a line at 1.0
    tables/<table id>.md.inc   the Markdown of each table, with its machine, date and
                               command (docs/performance.md includes them)

Output is deterministic: the same data gives the same bytes (the Agg backend, fixed
sizes and fonts, no timestamps). Tables need only the standard library; plots need
matplotlib (pinned in docs/requirements.txt); --no-plots skips them.

    python3 tools/plot_benchmarks.py                  # docs/_generated/{plots,tables}
    python3 tools/plot_benchmarks.py --check          # validate the data only

The documentation build runs it (docs/_ext/lazytrain_benchmark_plots.py). Exits 1
naming every problem when the data is inconsistent.
"""
import argparse
import csv
import json
import os
import re
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "docs", "data", "benchmarks")
OUT = os.path.join(REPO, "docs", "_generated")

PEERS = {  # id: (column name in tables, plot group)
    "torch-eager-glibc": ("PyTorch 2.13 eager (glibc)", "eager"),
    "torch-eager-jemalloc": ("PyTorch 2.13 eager (jemalloc)", "eager"),
    "torch-eager-tcmalloc": ("PyTorch 2.13 eager (tcmalloc)", "eager"),
    "torch-compile": ("torch.compile (Inductor)", "compile"),
    "jax": ("JAX jit (XLA:CPU)", "jax"),
    "torch-xla": ("PyTorch/XLA 2.9 (CPU)", "xla"),
}
GROUPS = [  # plot groups in order: id, legend, colour
    ("eager", "PyTorch 2.13 eager (best allocator)", "#4c72b0"),
    ("compile", "torch.compile (Inductor)", "#dd8452"),
    ("jax", "JAX jit (XLA:CPU)", "#55a868"),
    ("xla", "PyTorch/XLA 2.9 (CPU)", "#8172b3"),
]
MODEL_ORDER = ["bert-tiny", "bert-mini", "bert-base", "bert-large", "gpt2", "llama"]
DTYPES = ["f32", "bf16"]
NUMERIC = ["lazytrain_tok_s", "peer_tok_s", "ratio", "lazytrain_compile_s", "peer_compile_s", "lazytrain_rss_mib",
           "peer_rss_mib", "lazytrain_cpu_s", "peer_cpu_s", "bound_s", "lazytrain_median_over_bound", "peer_best_over_bound"]
REQUIRED = ["table", "run", "machine", "date", "model", "batch", "seq", "steps", "dtype", "threads", "peer", "ratio"]
SKIP_MARKER = "<!-- docs-test: skip a benchmark run (minutes to hours on 2 cores); its output is the table below -->"


# ---------------------------------------------------------------------------- data

def load(data_dir=DATA):
    """Everything in data_dir: {"machines", "step_tables", "step_rows", "tables", "scaling"}."""
    def read_json(name):
        with open(os.path.join(data_dir, name), encoding="utf-8") as f:
            return json.load(f)

    with open(os.path.join(data_dir, "training_step.csv"), encoding="utf-8", newline="") as f:
        step_rows = list(csv.DictReader(f))
    tables = []
    for name in sorted(os.listdir(data_dir)):
        if name.endswith(".json") and name not in ("machines.json", "training_step.json", "scaling.json"):
            for table in read_json(name)["tables"]:
                tables.append(dict(table, source=name))
    return {
        "machines": {k: v for k, v in read_json("machines.json").items() if not k.startswith("_")},
        "step_tables": {k: v for k, v in read_json("training_step.json").items() if not k.startswith("_")},
        "step_rows": step_rows,
        "tables": tables,
        "scaling": read_json("scaling.json"),
    }


def header_problems(where, table, keys, machines):
    """A table's own fields: each of `keys` present, a known machine, an ISO date."""
    problems = [f"{where} has no {key}" for key in keys if not table.get(key)]
    if table.get("machine") not in machines:
        problems.append(f"{where}: unknown machine {table.get('machine')!r}")
    if not re.match(r"^\d{4}-\d{2}-\d{2}$", table.get("date", "")):
        problems.append(f"{where}: date {table.get('date')!r} is not YYYY-MM-DD")
    return problems


def number(text):
    return float(text) if text not in ("", None) else None


def check(data):
    """The problems of the data, as a list of strings (empty: consistent)."""
    problems = []
    machines, step_tables = data["machines"], data["step_tables"]
    for tid, meta in step_tables.items():
        problems += header_problems(f"training_step.json: table {tid}", meta, ("title", "machine", "date", "runs"), machines)
        for run, spec in meta.get("runs", {}).items():
            if not spec.get("command") or not all(c.strip() for c in spec["command"]):
                problems.append(f"training_step.json: table {tid}, run {run} has no command")
    seen = set()
    for i, row in enumerate(data["step_rows"], start=2):
        where = f"training_step.csv:{i}"
        for key in REQUIRED:
            if not row.get(key):
                problems.append(f"{where}: no {key}")
        meta = step_tables.get(row["table"])
        if meta is None:
            problems.append(f"{where}: unknown table {row['table']!r}")
            continue
        if row["machine"] != meta["machine"]:
            problems.append(f"{where}: machine {row['machine']!r}, its table says {meta['machine']!r}")
        if row["date"] != meta["date"]:
            problems.append(f"{where}: date {row['date']!r}, its table says {meta['date']!r}")
        if row["run"] not in meta["runs"]:
            problems.append(f"{where}: run {row['run']!r} is not one of table {row['table']}'s runs")
        if row["peer"] not in PEERS:
            problems.append(f"{where}: unknown peer {row['peer']!r}")
        if row["dtype"] not in DTYPES:
            problems.append(f"{where}: unknown dtype {row['dtype']!r}")
        if row["model"] not in MODEL_ORDER:
            problems.append(f"{where}: unknown model {row['model']!r}")
        try:
            values = {k: number(row[k]) for k in NUMERIC}
            int(row["threads"]), int(row["batch"]), int(row["seq"])
        except ValueError as e:
            problems.append(f"{where}: {e}")
            continue
        lt, peer, ratio = values["lazytrain_tok_s"], values["peer_tok_s"], values["ratio"]
        if lt is not None and peer is not None and ratio is not None and abs(lt / peer - ratio) > 0.0051:
            problems.append(f"{where}: ratio {ratio} but {lt} / {peer} = {lt / peer:.3f}")
        key = (row["table"], row["model"], row["seq"], row["dtype"], row["threads"], row["peer"])
        if key in seen:
            problems.append(f"{where}: a second row for {key}")
        seen.add(key)
    ids = set()
    for t in data["tables"]:
        where = f"{t['source']}: table {t.get('id')!r}"
        if t.get("id") in ids or t.get("id") in step_tables:
            problems.append(f"{where}: the id is used twice")
        ids.add(t.get("id"))
        problems += header_problems(where, t, ("id", "title", "machine", "date", "command"), machines)
        if "rows" in t:
            columns = t.get("columns", [])
            if len(t.get("align", "l" * len(columns))) != len(columns):
                problems.append(f"{where}: align has {len(t['align'])} letters for {len(columns)} columns")
            for j, r in enumerate(t["rows"]):
                if len(r) != len(columns):
                    problems.append(f"{where}: row {j + 1} has {len(r)} cells for {len(columns)} columns")
        elif "output" not in t:
            problems.append(f"{where} has neither rows nor output")
    return problems


# ---------------------------------------------------------------------------- tables

def cell(text):
    return str(text).replace("|", "\\|")


def markdown_table(columns, rows, align=None):
    align = align or "l" * len(columns)
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def shell_block(commands):
    return SKIP_MARKER + "\n```sh\n" + "\n".join(commands) + "\n```"


def machine_line(machine, note=""):
    text = f"**Machine**: {machine['name']}: {machine['cpu']}; {machine['isa']}; {machine['cores']}"
    return text + (f"; {note}." if note else ".")


def model_key(row):
    return (MODEL_ORDER.index(row["model"]), int(row["seq"]))


def model_label(row, steps=True):
    if row["model"] == "gpt2":
        name = f"GPT-2 124M seq {row['seq']}"
    elif row["model"] == "llama":
        name = f"Llama (SmolLM2-135M shape) seq {row['seq']}"
    else:
        name = row["model"]
    return f"{name} (b{row['batch']}, {row['steps']})" if steps else name


def fmt(value, digits=None):
    if value in ("", None):
        return ""
    return value if digits is None else f"{float(value):.{digits}f}"


def grouped(rows):
    """{(model key, dtype, threads): [rows]} in the tables' order."""
    groups = {}
    for r in sorted(rows, key=lambda r: (model_key(r), DTYPES.index(r["dtype"]), int(r["threads"]))):
        groups.setdefault((model_key(r), r["dtype"], int(r["threads"])), []).append(r)
    return groups


def render_step_table(tid, data):
    meta = data["step_tables"][tid]
    machine = data["machines"][meta["machine"]]
    rows = [r for r in data["step_rows"] if r["table"] == tid]
    runs = meta["runs"]
    out = [machine_line(machine), "",
           f"**Date**: {meta['date']}. **Versions**: {meta['versions']}.", ""]
    for run, spec in runs.items():
        label = f"Run {run}" if len(runs) > 1 else "Run"
        commit = f"; lazytrain at commit {spec['commit']}" if spec.get("commit") else ""
        out += [f"{label}, {spec['time']}{commit}; {spec['load']}:", "", shell_block(spec["command"]), ""]
    groups = grouped(rows)
    ratio_only = all(not r["lazytrain_tok_s"] for r in rows)
    if ratio_only:
        body = [[model_label(g[0]), g[0]["dtype"], g[0]["threads"], PEERS[r["peer"]][0], fmt(r["ratio"], 2)]
                for g in groups.values() for r in g]
        out += [markdown_table(["model (batch, warm-up + timed steps)", "dtype", "lazytrain threads", "peer",
                                "lazytrain / peer (tokens/s)"], body, "llrlr"), ""]
    else:
        peers = [p for p in PEERS if any(r["peer"] == p for r in rows)]
        multi = len(runs) > 1
        columns = ["model (batch, warm-up + timed steps)", "dtype", "threads", "lazytrain tok/s"]
        columns += [PEERS[p][0] for p in peers] + ["best peer", "lazytrain / best peer", "peak RSS MiB lazytrain / best peer"]
        columns += ["run"] if multi else []
        body = []
        for g in groups.values():
            by_peer = {r["peer"]: r for r in g}
            best = max(g, key=lambda r: float(r["peer_tok_s"]))
            line = [model_label(g[0]), g[0]["dtype"], g[0]["threads"], g[0]["lazytrain_tok_s"]]
            for p in peers:
                r = by_peer.get(p)
                text = r["peer_tok_s"] if r else ""
                if r and r["peer_compile_s"]:
                    text += f" (compile {r['peer_compile_s']} s)"
                line.append(text)
            rss = f"{best['lazytrain_rss_mib']} / {best['peer_rss_mib']}" if best["peer_rss_mib"] else ""
            line += [PEERS[best["peer"]][0], fmt(best["ratio"], 2), rss] + ([g[0]["run"]] if multi else [])
            body.append(line)
        out += [markdown_table(columns, body, "llr" + "r" * (len(peers) + 1) + "lrr" + ("l" if multi else "")), ""]
        bound = [g for g in groups.values() if g[0]["bound_s"]]
        if bound:
            body = []
            for g in bound:
                peer_bound = next((r["peer_best_over_bound"] for r in g if r["peer_best_over_bound"]), "")
                body.append([model_label(g[0], steps=False), g[0]["dtype"], g[0]["threads"], g[0]["bound_s"],
                             g[0]["lazytrain_median_over_bound"] + "x",
                             (peer_bound + "x") if peer_bound else ""])
            out += ["The same runs against the roofline bound of lazytrain's step (below, \"The roofline bound of a step\"):", "",
                    markdown_table(["model", "dtype", "threads", "bound s", "lazytrain median step / bound",
                                    "best peer's best step / bound"], body, "llrrrr"), ""]
        timing = [g for g in groups.values() if g[0]["lazytrain_cpu_s"] or g[0]["lazytrain_compile_s"]]
        if timing:
            cpu_peers = [p for p in peers if any(r["peer_cpu_s"] for g in timing for r in g if r["peer"] == p)]
            body = []
            for g in timing:
                by_peer = {r["peer"]: r for r in g}
                body.append([model_label(g[0], steps=False), g[0]["dtype"], g[0]["threads"], g[0]["lazytrain_compile_s"],
                             g[0]["lazytrain_cpu_s"]] + [by_peer[p]["peer_cpu_s"] if p in by_peer else "" for p in cpu_peers])
            out += ["lazytrain's first-step (cold) compile, and the process CPU time per timed step (user + system, all "
                    "threads, spin-waits included; at 1 thread it is about the step's time on an uncontended core, so "
                    "other load moves it little):", "",
                    markdown_table(["model", "dtype", "threads", "lazytrain compile s", "CPU s/step: lazytrain"]
                                   + [PEERS[p][0] for p in cpu_peers], body, "llrrr" + "r" * len(cpu_peers)), ""]
    out += [n + "\n" for n in meta.get("notes", [])]
    return "\n".join(out).rstrip() + "\n"


def render_table(t, data):
    machine = data["machines"][t["machine"]]
    when = t["date"] + (f" ({t['date_note']})" if t.get("date_note") else "")
    extra = ", " + t["time"] if t.get("time") else ""
    commit = f"; lazytrain at commit {t['commit']}" if t.get("commit") else ""
    out = [f"**{t['title']}**", "", machine_line(machine, t.get("machine_note", "")), "",
           f"**Date**: {when}{extra}{commit}.", "", shell_block(t["command"]), ""]
    if "rows" in t:
        out += [markdown_table(t["columns"], t["rows"], t.get("align")), ""]
    else:
        out += ["```text", t["output"], "```", ""]
    out += [n + "\n" for n in t.get("notes", [])]
    return "\n".join(out).rstrip() + "\n"


def render_scaling(data):
    s = data["scaling"]

    def lazytrain_tok_s(spec, dtype):
        for r in data["step_rows"]:
            if (r["table"], r["model"], int(r["seq"]), r["dtype"], int(r["threads"])) == \
                    (spec["table"], spec["model"], spec["seq"], dtype, spec["threads"]) and r["lazytrain_tok_s"]:
                return float(r["lazytrain_tok_s"]), int(r["batch"]) * int(r["seq"])
        raise KeyError(f"scaling.json: no {spec['model']} {dtype} row at {spec['threads']} threads in table {spec['table']}")

    def exchange(n, params, gbps):
        return 2 * (n - 1) / n * s["gradient_bytes_per_parameter"] * params / (gbps * 1e9 / 8)

    h = s["hosts_model"]
    meta = data["step_tables"][h["table"]]
    machine = data["machines"][meta["machine"]]
    tok_s, tokens = lazytrain_tok_s(h, h["dtype"])
    step = tokens / tok_s
    grad_gb = s["gradient_bytes_per_parameter"] * h["parameters"] / 1e9
    rows = []
    for gbps in s["links_gbps"]:
        ex = [exchange(n, h["parameters"], gbps) for n in s["hosts"]]
        eff = [step / (step + e) for e in ex]
        rows.append([f"{gbps} Gb/s"] + [f"{e:.3g} s" for e in ex] + [" / ".join(f"{e:.0%}" for e in eff),
                                                                      f"{s['hosts'][-1] * eff[-1]:.1f}x"])
    ns = s["hosts"]
    out = [f"Computed from the {h['model']} {h['dtype']} row at {h['threads']} threads of the {machine['name']} table "
           f"({meta['date']}): {tok_s:g} tokens/s, a step of {tokens} tokens in {step:.2f} s per host; gradients "
           f"{s['gradient_bytes_per_parameter']} bytes x {h['parameters']:,} parameters = {grad_gb:.3g} GB.", "",
           markdown_table(["link"] + [f"exchange, N = {n}" for n in ns]
                          + [f"efficiency N = {' / '.join(str(n) for n in ns)}", f"speed-up at N = {ns[-1]}"],
                          rows, "l" + "r" * (len(ns) + 2)), ""]
    p = s["projection"]
    tokens_total = p["words"] * p["tokens_per_word"] * p["epochs"]
    per_dtype = {}
    for dtype in DTYPES:
        tok_s_p, tokens_p = lazytrain_tok_s(p, dtype)
        per_dtype[dtype] = (tok_s_p, tokens_p / tok_s_p, tokens_total / tok_s_p / 86400)
    rows = []
    for gbps in s["links_gbps"]:
        line = [f"{gbps} Gb/s"]
        for dtype in DTYPES:
            _, step_p, days = per_dtype[dtype]
            for n in ns:
                eff = step_p / (step_p + exchange(n, p["parameters"], gbps))
                line.append(f"{eff:.0%} / {days / (n * eff):.1f}")
        rows.append(line)
    one = "; ".join(f"{d} {per_dtype[d][0]:g} tokens/s, **{per_dtype[d][2]:.1f} days**" for d in DTYPES)
    out += [f"Projection: {p['model']} on {p['corpus']}, about {tokens_total / 1e6:.0f} M tokens. One host "
            f"({p['threads']} threads, the same table's best steps, so the days are a lower bound): {one}. "
            f"On N hosts (efficiency / days):", "",
            markdown_table(["link"] + [f"{d}: N = {n}" for d in DTYPES for n in ns], rows, "l" + "r" * (2 * len(ns))), ""]
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------------------- plots

def plot_machine(machine_id, data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.family": "DejaVu Sans", "font.size": 8, "svg.hashsalt": "lazytrain"})
    machine = data["machines"][machine_id]
    rows = [r for r in data["step_rows"] if r["machine"] == machine_id]
    scripts = {t: ("bench/run_gpt2.sh" if any("run_gpt2.sh" in c for run in m["runs"].values() for c in run["command"])
                   else "bench/run_all.sh") for t, m in data["step_tables"].items()}
    starred = {model_key(r) for r in rows if scripts[r["table"]] == "bench/run_gpt2.sh"}
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in rows)]
    threads = sorted({int(r["threads"]) for r in rows})
    groups = [g for g in GROUPS if any(PEERS[r["peer"]][1] == g[0] for r in rows)]
    models = sorted({(model_key(r), model_label(r, steps=False)) for r in rows})
    ncols, nrows = len(threads), len(dtypes)
    width = max(8.0, ncols * (1.2 + 0.95 * len(models)))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, 1.3 + 2.8 * nrows), squeeze=False, sharey="row")
    bar = 0.8 / len(groups)
    for i, dtype in enumerate(dtypes):
        top = max([float(r["ratio"]) for r in rows if r["dtype"] == dtype] + [1.0])
        for j, t in enumerate(threads):
            ax = axes[i][j]
            panel = [r for r in rows if r["dtype"] == dtype and int(r["threads"]) == t]
            shown = [(key, label) for key, label in models if any(model_key(r) == key for r in panel)]
            for k, (gid, legend, colour) in enumerate(groups):
                xs, ys = [], []
                for x, (key, _) in enumerate(shown):
                    ratios = [float(r["ratio"]) for r in panel if model_key(r) == key and PEERS[r["peer"]][1] == gid]
                    if ratios:
                        xs.append(x - 0.4 + bar * (k + 0.5))
                        ys.append(min(ratios))  # the peer's best configuration: the smallest ratio
                ax.bar(xs, ys, bar * 0.92, color=colour, label=legend if (i, j) == (0, 0) else None)
                for x, y in zip(xs, ys):
                    ax.text(x, y + top * 0.02, f"{y:.2f}", ha="center", va="bottom", rotation=90, fontsize=6.5)
            ax.axhline(1.0, color="black", linestyle="--", linewidth=0.9)
            ax.set_title(f"{dtype}, {t} thread{'s' if t > 1 else ''}", fontsize=9)
            ax.set_xticks(range(len(shown)))
            ax.set_xticklabels([label.replace(" seq ", "\nseq ").replace(" (SmolLM2-135M shape)", "")
                                + ("*" if key in starred else "") for key, label in shown], fontsize=7)
            ax.set_xlim(-0.6, max(len(shown), 1) - 0.4)
            ax.set_ylim(0, top * 1.25)
            ax.grid(axis="y", linewidth=0.4, alpha=0.5)
            ax.set_axisbelow(True)
            if not panel:
                ax.text(0.5, 0.5, "no current measurement", ha="center", va="center", transform=ax.transAxes, color="grey")
                ax.set_xticks([])
            if j == 0:
                ax.set_ylabel("lazytrain / peer, tokens/s")
    fig.suptitle(f"{machine['name']}: lazytrain's training step over each peer's best configuration\n"
                 f"{machine['isa']}", fontsize=10)
    fig.legend(loc="lower center", ncol=len(groups), fontsize=8, frameon=False, bbox_to_anchor=(0.5, 0.035))
    dates = sorted({(r["date"], scripts[r["table"]]) for r in rows})
    footer = "measured " + "; ".join(f"{d} ({s})" for d, s in dates) + ". Above 1: lazytrain is faster."
    if starred:
        footer += " *: bench/run_gpt2.sh, PyTorch eager at its better thread count."
    fig.text(0.5, 0.008, footer, ha="center", va="bottom", fontsize=7, color="#444444")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    fig.savefig(path, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)


# ---------------------------------------------------------------------------- main

def replace_if_changed(path, content, make=None):
    """Puts content (bytes) at path unless the file already holds it, so that a rebuild of the
    docs re-reads the page only when its tables changed. Written to a temporary file of its
    own first and renamed: two builds of the same tree at once (several people share one
    checkout) never see each other's half-written file. make(scratch) writes the content
    itself when content is None (a plot)."""
    fd, scratch = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            if content is not None:
                f.write(content)
        if make is not None:
            make(scratch)
        with open(scratch, "rb") as f:
            content = f.read()
        try:
            with open(path, "rb") as f:
                if f.read() == content:
                    return
        except FileNotFoundError:
            pass
        os.chmod(scratch, 0o644)
        os.replace(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.remove(scratch)


def write(path, text):
    replace_if_changed(path, text.encode("utf-8"))


def generate(data_dir=DATA, out_dir=OUT, plots=True):
    """Writes the tables (and plots) of data_dir under out_dir; returns the paths written."""
    data = load(data_dir)
    problems = check(data)
    if problems:
        raise ValueError("inconsistent benchmark data:\n  " + "\n  ".join(problems))
    written = []
    os.makedirs(os.path.join(out_dir, "tables"), exist_ok=True)
    for tid in data["step_tables"]:
        written.append(os.path.join(out_dir, "tables", f"{tid}.md.inc"))
        write(written[-1], render_step_table(tid, data))
    for t in data["tables"]:
        written.append(os.path.join(out_dir, "tables", f"{t['id']}.md.inc"))
        write(written[-1], render_table(t, data))
    written.append(os.path.join(out_dir, "tables", "scaling.md.inc"))
    write(written[-1], render_scaling(data))
    if plots:
        os.makedirs(os.path.join(out_dir, "plots"), exist_ok=True)
        for machine_id in sorted({r["machine"] for r in data["step_rows"]}):
            written.append(os.path.join(out_dir, "plots", f"{machine_id}.png"))
            replace_if_changed(written[-1], None, make=lambda scratch, m=machine_id: plot_machine(m, data, scratch))
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DATA, help="the results directory (default docs/data/benchmarks)")
    parser.add_argument("--out", default=OUT, help="where plots/ and tables/ go (default docs/_generated)")
    parser.add_argument("--no-plots", action="store_true", help="write the tables only (no matplotlib needed)")
    parser.add_argument("--check", action="store_true", help="validate the data and write nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(load(args.data))
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    try:
        for path in generate(args.data, args.out, plots=not args.no_plots):
            print(os.path.relpath(path))
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
