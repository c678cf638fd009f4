#!/usr/bin/env python3
"""Where each vproc's time went, from a `numagc bench --trace FILE` timeline.

For every run (a process of the trace) and vproc (a thread), the exclusive
time of each span kind: a collection inside a job counts as collection, not
job; a stolen task inside a wait counts as stolen task. Time outside every
span (idle spinning, the harness between jobs) is "untracked". Usage:
scripts/trace-summary.py TRACE.json [RUN-NAME-SUBSTRING]
"""
import json
import sys
from collections import defaultdict

def main():
    trace = json.load(open(sys.argv[1]))
    want = sys.argv[2] if len(sys.argv) > 2 else ""
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    spans = defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            spans[e["pid"], e["tid"]].append((e["ts"], e["dur"], e["name"]))
    kinds = ["job", "stolen task", "thread", "minor GC", "major GC", "promotion", "global GC", "wait", "sleep"]
    print(f"{'run':<34} {'vproc':>5} {'span ms':>9} " + " ".join(f"{k:>11}" for k in kinds))
    for (pid, tid), ss in sorted(spans.items()):
        if want not in names.get(pid, ""):
            continue
        ss.sort(key=lambda s: (s[0], -s[1]))
        excl = defaultdict(float)
        stack = []  # (end, kind)
        for ts, dur, kind in ss:
            while stack and stack[-1][0] <= ts:
                stack.pop()
            if stack:
                excl[stack[-1][1]] -= dur
            excl[kind] += dur
            stack.append((ts + dur, kind))
        first = min(s[0] for s in ss)
        last = max(s[0] + s[1] for s in ss)
        total = last - first
        row = " ".join(f"{100 * excl[k] / total:10.1f}%" for k in kinds)
        print(f"{names.get(pid, pid):<34} {tid:>5} {total / 1e3:9.1f} {row}")

main()
