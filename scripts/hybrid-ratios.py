#!/usr/bin/env python3
"""The hybrid's same-run ratios (issue 19, docs/results/hybrid.md): PE
configurations of `numagc bench` timed alternately, round after round, and
each benchmark's run time read from the harness's JSON (`wall_s`: the run
itself, without process or `mpirun` start-up).

Configurations, per plan, on 2 cores:
  1pe x2  one runtime of 2 vprocs in a PE group of one (--pes 1 --vprocs 2)
  2pe x1  two PEs of 1 vproc in this process (--pes 2 --vprocs 1)
  mpi x1  two PEs of 1 vproc, one per MPI rank (mpirun -n 2 ... --transport mpi)

Usage: scripts/hybrid-ratios.py [--rounds N] [--plans split,shared]
                                [--bin target/release/numagc] [--json OUT]
                                BENCH [BENCH ...]
Prints, per benchmark and plan, each configuration's median run time with
its range, and the ratios 2pe x1 / 1pe x2 and mpi x1 / 1pe x2 (medians).
Every answer is checked by the harness; a failed run stops the script.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--plans", default="split,shared")
p.add_argument("--bin", default="target/release/numagc")
p.add_argument("--json")
p.add_argument("benches", nargs="+")
a = p.parse_args()

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"]
configs = {
    "1pe x2": lambda: [a.bin, "bench", "--pes", "1", "--vprocs", "2"],
    "2pe x1": lambda: [a.bin, "bench", "--pes", "2", "--vprocs", "1"],
    "mpi x1": lambda: MPIRUN + [a.bin, "bench", "--transport", "mpi", "--vprocs", "1"],
}
times = {}  # (bench, plan, config) -> [s]
tmp = tempfile.mkdtemp()
for r in range(a.rounds):
    for plan in a.plans.split(","):
        for name, cmd in configs.items():
            out = os.path.join(tmp, "run.json")
            c = cmd() + a.benches + ["--plan", plan, "--quiet", "--json", out]
            res = subprocess.run(c, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"failed: {' '.join(c)}\n{res.stdout}\n{res.stderr}")
            with open(out) as f:
                for run in json.load(f)["runs"]:
                    if not run["correct"]:
                        sys.exit(f"wrong answer: {run}")
                    times.setdefault((run["benchmark"], plan, name), []).append(run["wall_s"])
    print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

rows = []
print(f"{'benchmark':<12} {'plan':<7} " + " ".join(f"{n + ' s (range)':>24}" for n in configs)
      + "  2pe/1pe  mpi/1pe")
for b in a.benches:
    for plan in a.plans.split(","):
        med = {n: statistics.median(times[(b, plan, n)]) for n in configs}
        cells = " ".join(
            f"{med[n]:>8.3f} ({min(times[(b, plan, n)]):.3f}..{max(times[(b, plan, n)]):.3f})"
            for n in configs)
        r2, rm = med["2pe x1"] / med["1pe x2"], med["mpi x1"] / med["1pe x2"]
        print(f"{b:<12} {plan:<7} {cells}  {r2:7.2f}  {rm:7.2f}")
        rows.append({"benchmark": b, "plan": plan, "rounds": a.rounds,
                     "wall_s": {n: times[(b, plan, n)] for n in configs},
                     "ratio_2pe_over_1pe": r2, "ratio_mpi_over_1pe": rm})
if a.json:
    with open(a.json, "w") as f:
        json.dump({"command": " ".join(sys.argv), "rows": rows}, f, indent=1)
    print(f"wrote {a.json}")
