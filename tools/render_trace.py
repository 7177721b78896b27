#!/usr/bin/env python3
"""Renders one training step of a lazytrain trace (runtime/profiler.h: Chrome
trace-event JSON, as LAZYTRAIN_PROFILE=DIR or --profile_dir write it) to a PNG:
one row per thread, a box per event (nested events one level lower, coloured
by category), the longest kernels and dots numbered and listed with their HLO
name, shapes and what ran them; below, the step's first --zoom milliseconds
enlarged (the host's tracing, mark_step and the first kernels).

The step shown is the host's tracing of mark_step number --step (default: the
last one; from the end of the host's last wait before it, e.g. the previous
step's loss read), that mark_step, and the device execution it launched, up to
that execution's end.

    python3 -m venv /work/venv-render
    /work/venv-render/bin/pip install matplotlib==3.11.2
    /work/venv-render/bin/python tools/render_trace.py TRACE.json docs/bert_base_step.png

Exits 2 naming the file when it is not a trace with a mark_step.
"""
import argparse
import json
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches as mpatches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {
    "trace": "#8da0cb",
    "compile": "#e78ac3",
    "execute": "#d9d9d9",
    "kernel": "#66c2a5",
    "dot": "#fc8d62",
    "interpreter": "#e5c494",
    "transfer": "#a6d854",
    "collective": "#ffd92f",
    "wait": "#b3b3b3",
    "loader": "#80b1d3",
    "governor": "#bc80bd",
    "python": "#fb8072",
}


def fail(message):
    print(f"render_trace.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: not a readable JSON file ({e})")
    if not isinstance(doc, dict) or "traceEvents" not in doc:
        fail(f"{path}: expected a Chrome trace object with 'traceEvents'")
    names, order, events = {}, {}, []
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[e["tid"]] = e["args"]["sort_index"]
        elif e.get("ph") == "X":
            events.append(e)
    return names, order, events


def step_window(events, step):
    """[begin, end) in microseconds of mark_step number `step` (1-based; 0: the last)."""
    marks = sorted((e for e in events if e["cat"] == "trace" and e["name"] == "mark_step"), key=lambda e: e["ts"])
    if not marks:
        fail("the trace has no mark_step event (was a training step traced?)")
    if step > len(marks):
        fail(f"--step {step}: the trace has {len(marks)} mark_steps")
    mark = marks[step - 1 if step > 0 else -1]
    number = marks.index(mark) + 1
    begin = mark["ts"]
    for e in events:  # the host's tracing that built this step's graph
        if e["cat"] == "trace" and e["name"] == f"trace (step {number})" and e["tid"] == mark["tid"]:
            begin = e["ts"]
    # ... from the end of its last wait (the previous step's loss read) on.
    for e in events:
        if e["cat"] == "wait" and e["tid"] == mark["tid"] and begin <= e["ts"] and e["ts"] + e["dur"] <= mark["ts"]:
            begin = max(begin, e["ts"] + e["dur"])
    later = [e for e in events if e["cat"] == "execute" and e["ts"] >= mark["ts"]]
    end = min(later, key=lambda e: e["ts"]) if later else mark
    return number, begin, end["ts"] + end["dur"]


def depths(events):
    """Each event's nesting depth within its thread (events sorted by ts, enclosing first)."""
    out, stack = [], []
    for e in events:
        while stack and e["ts"] >= stack[-1] - 1e-3:
            stack.pop()
        out.append(len(stack))
        stack.append(e["ts"] + e["dur"])
    return out


def draw_rows(ax, rows, heights, lane, begin, span_ms, number_of, name_width):
    """Boxes for `rows` from `begin` over `span_ms` milliseconds; events in
    `number_of` get their number above them, others wider than `name_width`
    (ms) their name inside."""
    y = 0.0
    ticks, tick_labels = [], []
    for (label, items, levels), h in zip(rows, heights):
        top = y
        for e, depth in items:
            x0 = (max(e["ts"], begin) - begin) / 1e3
            x1 = (e["ts"] + e["dur"] - begin) / 1e3
            if x0 >= span_ms:
                continue
            x1 = min(x1, span_ms)
            yy = top + 0.5 + depth * lane
            ax.add_patch(mpatches.Rectangle((x0, yy), max(x1 - x0, span_ms * 4e-4), lane * 0.9, facecolor=COLOURS.get(e["cat"], "#cccccc"),
                                            edgecolor="#555555" if x1 - x0 > span_ms * 5e-3 else "none", linewidth=0.3))
            if id(e) in number_of:  # a number above the box, the name in the list below
                ax.annotate(str(number_of[id(e)]), xy=((x0 + x1) / 2, yy), xytext=((x0 + x1) / 2, top + 0.25), ha="center", va="center",
                            fontsize=7, arrowprops=dict(arrowstyle="-", linewidth=0.4, color="#333333"))
            elif x1 - x0 > name_width:
                ax.text(x0 + span_ms * 0.003, yy + lane * 0.45, e["name"], ha="left", va="center", fontsize=7, clip_on=True)
        ticks.append(top + h / 2 + 0.2)
        tick_labels.append(label)
        y += h
    ax.set_xlim(0, span_ms)
    ax.set_ylim(y, 0)
    ax.set_yticks(ticks, tick_labels, fontsize=8)
    ax.tick_params(axis="x", labelsize=8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a .trace.json file")
    parser.add_argument("png", help="the picture to write")
    parser.add_argument("--step", type=int, default=0, help="which mark_step, counted from 1 (default: the last)")
    parser.add_argument("--labels", type=int, default=10, help="label the N longest kernels and dots (default 10)")
    parser.add_argument("--title", default="", help="a title above the rows")
    parser.add_argument("--zoom", type=float, default=250, help="a second panel of the step's first N ms (default 250; 0: none)")
    args = parser.parse_args()

    names, order, events = load(args.trace)
    number, begin, end = step_window(events, args.step)
    shown = [e for e in events if e["ts"] + e["dur"] > begin and e["ts"] < end]
    tids = sorted({e["tid"] for e in shown}, key=lambda t: (order.get(t, 99), names.get(t, str(t))))

    rows = []  # (label, [(event, depth)], levels)
    for tid in tids:
        mine = sorted((e for e in shown if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"]))
        d = depths(mine)
        rows.append((names.get(tid, f"thread {tid}"), list(zip(mine, d)), max(d) + 1))

    lane = 0.8
    heights = [levels * lane + 0.7 for _, _, levels in rows]
    labelled = sorted((e for e in shown if e["cat"] in ("kernel", "dot")), key=lambda e: -e["dur"])[: args.labels]
    number_of = {id(e): k + 1 for k, e in enumerate(labelled)}
    list_lines = (len(labelled) + 1) // 2
    panel_h = 0.42 * sum(heights)
    panels = 2 if args.zoom > 0 else 1
    fig_h = 0.75 + panels * (panel_h + 0.55) + 0.17 * list_lines
    fig = plt.figure(figsize=(14, fig_h), dpi=90)
    list_h = (0.35 + 0.17 * list_lines) / fig_h
    span_ms = (end - begin) / 1e3
    tops = [1 - (0.35 + panel_h) / fig_h, 1 - (0.35 + 2 * panel_h + 0.55) / fig_h]
    ax = fig.add_axes([0.1, tops[0], 0.88, panel_h / fig_h])
    draw_rows(ax, rows, heights, lane, begin, span_ms, number_of, span_ms * 0.08)
    ax.set_xlabel(f"milliseconds since the step's tracing began (mark_step {number})", fontsize=8)
    if args.title:
        ax.set_title(args.title, fontsize=9, loc="left")
    used = [c for c in COLOURS if any(e["cat"] == c for e in shown)]
    ax.legend(handles=[mpatches.Patch(color=COLOURS[c], label=c) for c in used], fontsize=7, ncol=len(used), loc="lower right",
              bbox_to_anchor=(1.0, 1.0), frameon=False)
    if args.zoom > 0:
        zoom = fig.add_axes([0.1, tops[1], 0.88, panel_h / fig_h])
        draw_rows(zoom, rows, heights, lane, begin, min(args.zoom, span_ms), {}, min(args.zoom, span_ms) * 0.06)
        zoom.set_xlabel(f"the first {min(args.zoom, span_ms):g} ms of the same step, enlarged", fontsize=8)
    for k, e in enumerate(labelled):
        a = e.get("args", {})
        shape = f"{a['lhs']} x {a['rhs']}" if e["cat"] == "dot" else a.get("shape", "")
        shape = re.sub(r"\{[0-9,]*\}", "", shape)  # layouts: all row-major here
        what = a.get("ops", "") if e["cat"] == "kernel" else a.get("onednn", "")
        text = f"{k + 1:>2}  {e['dur'] / 1e3:7.1f} ms  {e['cat']} {e['name']}  {shape}  ({what[:48]})"
        column, line = divmod(k, list_lines)
        fig.text(0.02 + 0.49 * column, list_h - (line + 0.5) * 0.17 / fig_h, text, fontsize=7, family="monospace", va="top")
    fig.savefig(args.png, dpi=90)
    print(f"{args.png}: mark_step {number}, {span_ms:.1f} ms, {len(shown)} events on {len(rows)} rows")


if __name__ == "__main__":
    main()
