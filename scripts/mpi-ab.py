#!/usr/bin/env python3
"""Before against after over MPI: two numagc binaries (built with
`--features mpi`), each running BENCH... as 2 ranks x 1 vproc on each plan,
alternated round by round; run times from the harness's JSON (`wall_s`:
the run itself, without start-up). Prints each binary's median and range
and the ratio after / before, per benchmark and plan; every answer is
checked by the harness.

Usage: scripts/mpi-ab.py --before BIN --after BIN [--rounds N] BENCH [BENCH ...]
(build one binary, copy it aside, build the other: e.g.
 cp target/release/numagc /tmp/numagc-before)
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

p = argparse.ArgumentParser()
p.add_argument("--before", required=True)
p.add_argument("--after", required=True)
p.add_argument("--rounds", type=int, default=5)
p.add_argument("benches", nargs="+")
a = p.parse_args()
bins = {"before": a.before, "after": a.after}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"]
t = {}
out = os.path.join(tempfile.mkdtemp(), "run.json")
for r in range(a.rounds):
    for plan in ["split", "shared"]:
        for name, b in bins.items():
            c = MPIRUN + [b, "bench", "--transport", "mpi", "--vprocs", "1", "--plan", plan,
                          "--quiet", "--json", out] + a.benches
            res = subprocess.run(c, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"failed: {' '.join(c)}\n{res.stderr}")
            for run in json.load(open(out))["runs"]:
                if not run["correct"]:
                    sys.exit(f"wrong answer: {run}")
                t.setdefault((run["benchmark"], plan, name), []).append(run["wall_s"])
for b in a.benches:
    for plan in ["split", "shared"]:
        x, y = t[(b, plan, "before")], t[(b, plan, "after")]
        mx, my = statistics.median(x), statistics.median(y)
        print(f"{b:<12} {plan:<7} before {mx:.3f} ({min(x):.3f}..{max(x):.3f})  "
              f"after {my:.3f} ({min(y):.3f}..{max(y):.3f})  after/before {my / mx:.3f}")
