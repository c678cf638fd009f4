#!/usr/bin/env python3
"""Summarises a `numagc bench --plan split,shared` JSON into the Markdown
table of docs/results/plans.md: per benchmark and vproc count, each plan's
median wall time, speedup, GC share, p99.9 and max pause and median peak
heap, and the shared/split wall-time ratio.

Usage: scripts/plans-table.py docs/results/plans/suite.json
"""
import json
import sys

d = json.load(open(sys.argv[1]))
by = {}
order = []
for s in d["summaries"]:
    key = (s["benchmark"], s["vprocs"])
    if key not in by:
        order.append(key)
    by.setdefault(key, {})[s["plan"]] = s

def cell(s):
    sp = s["speedup"]
    return (
        f"{s['wall_median_s']:.3f}",
        "-" if sp is None else f"{sp:.2f}",
        f"{100 * s['gc_share_median']:.0f}",
        f"{s.get('pause_p999_ms', 0):.1f}",
        f"{s['pause_max_ms']:.1f}",
        f"{s.get('peak_heap_median_bytes', 0) / 2**20:.0f}",
    )

print("| benchmark | vprocs | split s | shared s | shared / split | speedup split / shared | GC % split / shared | p99.9 ms split / shared | max ms split / shared | peak MiB split / shared |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key in order:
    p = by[key]
    if "split" not in p or "shared" not in p:
        continue
    a, b = cell(p["split"]), cell(p["shared"])
    ratio = p["shared"]["wall_median_s"] / p["split"]["wall_median_s"]
    ok = "" if p["split"]["all_correct"] and p["shared"]["all_correct"] else " (wrong answer!)"
    print(f"| {key[0]}{ok} | {key[1]} | {a[0]} | {b[0]} | {ratio:.2f} | {a[1]} / {b[1]} | {a[2]} / {b[2]} | {a[3]} / {b[3]} | {a[4]} / {b[4]} | {a[5]} / {b[5]} |")
