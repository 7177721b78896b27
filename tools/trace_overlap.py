#!/usr/bin/env python3
"""How much of each device's collective time a trace shows hidden behind its
compute (issue 34's overlap): reads a lazytrain trace (runtime/profiler.h,
Chrome trace-event JSON from --profile_dir or LAZYTRAIN_PROFILE=DIR) and prints,
per device cpu:N,

  exchange ms     time its collective thread ("device cpu:N collectives")
                  spent in collectives (category "collective": the exchanges
                  HLO's *-start queued there)
  hidden          the part of that time during which its execution thread
                  ("device cpu:N execution") ran kernels, dots or interpreter
                  instructions
  waited ms       time the execution thread spent in *-done (waiting for an
                  exchange to end)
  in place ms     time the execution thread spent in synchronous collectives
                  (LAZYTRAIN_ASYNC_COLLECTIVES=0, or the interpreter backend)

    python3 tools/trace_overlap.py TRACE.json   (or the directory holding one)

Standard library only. Exits 2 naming the file when it is not a trace.
"""
import argparse
import glob
import json
import os
import re
import sys

COMPUTE = {"kernel", "dot", "interpreter"}


def fail(message):
    print(f"trace_overlap.py: {message}", file=sys.stderr)
    sys.exit(2)


def union(intervals):
    """Sorted, merged [begin, end) intervals."""
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def length(intervals):
    return sum(e - b for b, e in intervals)


def intersection(a, b):
    """Total length of the overlap of two merged interval lists."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def analyse(doc):
    """{device: {"exchange_ms", "hidden", "waited_ms", "in_place_ms"}} from a trace document."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("expected a Chrome trace object with a 'traceEvents' list")
    names = {}
    events = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            events.append(e)
    rows = {}
    for e in events:
        m = re.fullmatch(r"device (\S+) (execution|collectives)", names.get(e["tid"], ""))
        if not m:
            continue
        device, role = m.groups()
        r = rows.setdefault(device, {"exchange": [], "compute": [], "waited": 0.0, "in_place": 0.0})
        span = (e["ts"], e["ts"] + e["dur"])
        if role == "collectives" and e["cat"] == "collective":
            r["exchange"].append(span)
        elif role == "execution" and e["cat"] in COMPUTE:
            r["compute"].append(span)
        elif role == "execution" and e["cat"] == "collective":
            # The instructions' own spans ("all-reduce.7"), not the transport's nested inside them.
            if re.fullmatch(r"(all-reduce|all-gather|reduce-scatter)-done\.\d+", e["name"]):
                r["waited"] += e["dur"]
            elif re.fullmatch(r"(all-reduce|all-gather|reduce-scatter)\.\d+", e["name"]):
                r["in_place"] += e["dur"]
    out = {}
    for device, r in sorted(rows.items()):
        exchange = union(r["exchange"])
        busy = length(exchange)
        out[device] = {
            "exchange_ms": busy / 1e3,
            "hidden": intersection(exchange, union(r["compute"])) / busy if busy else 0.0,
            "waited_ms": r["waited"] / 1e3,
            "in_place_ms": r["in_place"] / 1e3,
        }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a .trace.json file, or the directory holding one")
    args = parser.parse_args()
    if os.path.isdir(args.trace):  # the directory LAZYTRAIN_PROFILE / --profile_dir names
        traces = sorted(glob.glob(os.path.join(args.trace, "*.trace.json")))
        if len(traces) != 1:
            fail(f"{args.trace}: a directory with {len(traces)} .trace.json files; pass one of them")
        args.trace = traces[0]
    try:
        with open(args.trace) as f:
            doc = json.load(f)
        rows = analyse(doc)
    except (OSError, json.JSONDecodeError, ValueError) as e:
        fail(f"{args.trace}: not a lazytrain trace ({e})")
    if not rows:
        fail(f"{args.trace}: no 'device cpu:N execution' or 'collectives' thread (was a step traced?)")
    print("| device | exchange ms | hidden | waited ms | in place ms |")
    print("|---|---:|---:|---:|---:|")
    for device, r in rows.items():
        print(f"| {device} | {r['exchange_ms']:.1f} | {100 * r['hidden']:.0f}% | {r['waited_ms']:.1f} | {r['in_place_ms']:.1f} |")


if __name__ == "__main__":
    main()
