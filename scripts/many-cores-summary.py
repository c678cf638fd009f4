#!/usr/bin/env python3
"""Summarises a run of scripts/many-cores.sh: Markdown tables on stdout, and (--json FILE) the
runs reduced to the figures the tables use, a few KB instead of the harness's MBs of pauses.

  scripts/many-cores-summary.py OUTDIR [--json compact.json] [--svg table2.svg]
  scripts/many-cores-summary.py --from compact.json      (the tables again, from the kept file)

Tables:
  - Table 2 of gumsmp-shared-distributed-heaps.txt: each benchmark's median wall time at each
    PEs x vprocs configuration of the same total, per plan, and each against 1 PE (the ratio);
  - the per-PE message figures of each configuration (summed over the PEs, medians over runs);
  - scaling, 1 vproc against all: medians and speedups per plan.
Every run's answer must have been checked correct; a wrong one is shown as such.
"""
import argparse
import glob
import json
import os
import statistics
import sys

PE_FIGURES = ["messages_sent", "bytes_sent", "pack_ms", "unpack_ms", "remote_wait_ms",
              "tasks_exported", "gc_ms", "git_entries", "imports"]


def compact(run):
    out = {k: run.get(k) for k in ["benchmark", "plan", "pes", "vprocs", "wall_s", "correct",
                                   "gc_share", "pause_max_ms", "bytes_promoted", "error"]}
    stats = run.get("pe_stats") or []
    if stats:
        out["pe_totals"] = {f: round(sum(s.get(f, 0) for s in stats), 3) for f in PE_FIGURES}
    return out


def load_dir(d):
    runs = []
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        kind = os.path.basename(f).split("-")[0]
        for r in json.load(open(f))["runs"]:
            c = compact(r)
            c["experiment"] = kind
            runs.append(c)
    machine = open(os.path.join(d, "machine.txt")).read() if os.path.exists(
        os.path.join(d, "machine.txt")) else ""
    return {"machine": machine, "runs": runs}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_range(xs):
    return f"{median(xs):.3f} [{min(xs):.3f}–{max(xs):.3f}]"


def group(runs, *keys):
    g = {}
    for r in runs:
        g.setdefault(tuple(r[k] for k in keys), []).append(r)
    return g


def base_plan(label):
    return label.split("/")[0]


def hybrid_tables(runs):
    runs = [r for r in runs if r["experiment"] == "hybrid"]
    if not runs:
        return
    configs = sorted({(r["pes"], r["vprocs"]) for r in runs})
    print("| benchmark | plan | " + " | ".join(f"{p} × {v}" for p, v in configs)
          + " | best |")
    print("|---|---|" + "---|" * (len(configs) + 1))
    by = group(runs, "benchmark", "plan")
    benches = list(dict.fromkeys(r["benchmark"] for r in runs))
    for b in benches:
        for plan in ["split", "shared"]:
            cells, medians = [], {}
            for p, v in configs:
                rs = by.get((b, f"{plan}/{p}pe"), [])
                rs = [r for r in rs if r["vprocs"] == v]
                if not rs:
                    cells.append("–")
                    continue
                walls = [r["wall_s"] for r in rs]
                medians[(p, v)] = median(walls)
                bad = "" if all(r["correct"] for r in rs) else " WRONG"
                cells.append(f"{median(walls):.3f} [{min(walls):.3f}–{max(walls):.3f}]{bad}")
            if not medians:
                continue
            one = medians.get(configs[0])
            if one:
                cells = [c if c == "–" else f"{c} ({medians[cfg] / one:.2f})"
                         for c, cfg in zip(cells, configs)]
            best = min(medians, key=medians.get)
            print(f"| {b} | {plan} | " + " | ".join(cells) + f" | {best[0]} × {best[1]} |")
    print()
    print("Per-PE figures, summed over the PEs of a run, medians over the runs:")
    print()
    print("| benchmark | plan | PEs × vprocs | messages | MB sent | pack+unpack ms | "
          "tasks exported | GC ms | GC share |")
    print("|---|---|---|---|---|---|---|---|---|")
    for b in benches:
        for plan in ["split", "shared"]:
            for p, v in configs:
                rs = [r for r in by.get((b, f"{plan}/{p}pe"), []) if r["vprocs"] == v]
                if not rs or "pe_totals" not in rs[0]:
                    continue
                t = lambda f: median([r["pe_totals"][f] for r in rs])
                print(f"| {b} | {plan} | {p} × {v} | {t('messages_sent'):.0f} | "
                      f"{t('bytes_sent') / 1e6:.2f} | {t('pack_ms') + t('unpack_ms'):.1f} | "
                      f"{t('tasks_exported'):.0f} | "
                      f"{t('gc_ms'):.1f} | {median([r['gc_share'] for r in rs]) * 100:.1f} % |")
    print()


def hybrid_svg(runs, path):
    """One line per benchmark and plan: median wall time at each configuration over that at
    1 PE (below 1: the split machine is faster), as the paper's Fig. 2 plots its curves."""
    runs = [r for r in runs if r["experiment"] == "hybrid"]
    configs = sorted({(r["pes"], r["vprocs"]) for r in runs})
    lines = []
    by = {}
    for r in runs:
        by.setdefault((r["benchmark"], base_plan(r["plan"])), []).append(r)
    for (b, plan), rs in by.items():
        m = {c: median([r["wall_s"] for r in rs if (r["pes"], r["vprocs"]) == c]) for c in configs}
        lines.append((f"{b} ({plan})", [m[c] / m[configs[0]] for c in configs], plan == "shared"))
    w, h, left, top, right, bottom = 760, 420, 60, 30, 200, 50
    ys = [y for _, v, _ in lines for y in v]
    lo, hi = min(0.9, min(ys)), max(ys) * 1.05
    x = lambda i: left + i * (w - left - right) / max(1, len(configs) - 1)
    y = lambda v: top + (hi - v) * (h - top - bottom) / (hi - lo)
    colours = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">Run time over 1 PE, total vprocs '
           f'{configs[0][0] * configs[0][1]} (solid: split, dashed: shared)</text>']
    tick = 0.1 if hi - lo < 1 else 0.2
    v = -(-lo // tick) * tick
    while v <= hi:
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 8}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.1f}</text>')
        v += tick
    for i, (p, n) in enumerate(configs):
        out.append(f'<text x="{x(i):.1f}" y="{h - bottom + 18}" text-anchor="middle">'
                   f'{p} × {n}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
               'PEs × vprocs per PE</text>')
    names = list(dict.fromkeys(n.split(" ")[0] for n, _, _ in lines))
    for n, vals, dashed in lines:
        c = colours[names.index(n.split(" ")[0]) % len(colours)]
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vals))
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.6"{dash}/>')
    for k, n in enumerate(names):
        c = colours[k % len(colours)]
        out.append(f'<line x1="{w - right + 15}" x2="{w - right + 35}" y1="{top + 16 * k + 10}" '
                   f'y2="{top + 16 * k + 10}" stroke="{c}" stroke-width="2"/>'
                   f'<text x="{w - right + 40}" y="{top + 16 * k + 14}">{n}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def scaling_table(runs):
    runs = [r for r in runs if r["experiment"] == "scaling"]
    if not runs:
        return
    counts = sorted({r["vprocs"] for r in runs})
    print("| benchmark | plan | " + " | ".join(f"{v} vprocs s" for v in counts)
          + f" | speedup {counts[0]} → {counts[-1]} | GC share at {counts[-1]} | "
          f"pause max ms at {counts[-1]} |")
    print("|---|---|" + "---|" * (len(counts) + 3))
    by = group(runs, "benchmark", "plan", "vprocs")
    for (b, plan) in dict.fromkeys((r["benchmark"], r["plan"]) for r in runs):
        walls = {v: median([r["wall_s"] for r in by.get((b, plan, v), [])]) for v in counts}
        ok = all(r["correct"] for v in counts for r in by.get((b, plan, v), []))
        top = by.get((b, plan, counts[-1]), [])
        gc = median([r["gc_share"] for r in top]) * 100 if top else float("nan")
        pause = max((r["pause_max_ms"] for r in top), default=float("nan"))
        print(f"| {b} | {plan} | " + " | ".join(f"{walls[v]:.3f}" for v in counts)
              + f" | {walls[counts[0]] / walls[counts[-1]]:.2f}{'' if ok else ' WRONG'}"
              f" | {gc:.1f} % | {pause:.1f} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--json", help="write the compact runs here")
    ap.add_argument("--svg", help="write the Table 2 curves as an SVG plot here")
    ap.add_argument("--from", dest="source", help="read a compact file instead of OUTDIR")
    a = ap.parse_args()
    if a.source:
        data = json.load(open(a.source))
    elif a.outdir:
        data = load_dir(a.outdir)
    else:
        sys.exit("give OUTDIR or --from FILE")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
    if a.svg:
        hybrid_svg(data["runs"], a.svg)
    hybrid_tables(data["runs"])
    scaling_table(data["runs"])


if __name__ == "__main__":
    main()
