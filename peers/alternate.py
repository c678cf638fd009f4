#!/usr/bin/env python3
"""Times commands alternated: ROUNDS rounds, each running every command once
in the order given (so a drift of the machine's speed spreads over all of
them), one at a time. Wall time is spawn to exit (start-up included); CPU
time is the child's user + system (wait4). Prints, per label, the median
wall time with min and max, the median CPU time and peak resident memory
(wait4's ru_maxrss: the largest of the child's processes), whether every run of the
label exited 0 and printed the same output (and, with --expect FILE,
exactly that file's text), and how many runs were disturbed.

Usage: peers/alternate.py [--rounds N] [--json OUT] [--expect FILE]
                          [--quiet S] [--max-wait S] [--retries N] [--pause S]
                          LABEL=COMMAND [LABEL=COMMAND ...]
COMMAND is split like a shell word list (shlex), run without a shell. A
label starting with '!' is exempt from the output checks (e.g. numagc
bench, which prints its own table with timings).

Other load: before each run it waits until the machine has been idle for
--quiet seconds (default 0.5; at most --max-wait seconds, default 120). A
run during which other processes used more than 0.05 s + 5 % of its wall
time of CPU, and the CPUs were short (the run's CPU time plus the others'
above 85 % of the CPUs' capacity over its wall time), is DISTURBED: it is
rerun after --pause seconds (default 10), up to --retries times (default
3), and the summary counts the runs still disturbed.
"""
import argparse, json, os, shlex, statistics, subprocess, sys, time


TICK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count()


def busy_s():
    """CPU time all CPUs have spent busy since boot (/proc/stat), seconds."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / TICK


def wait_quiet(window, max_wait):
    """Waits until the machine was idle (under 10 % of one CPU busy) for
    `window` seconds, or `max_wait` seconds have passed."""
    start = time.perf_counter()
    while True:
        b0 = busy_s()
        time.sleep(window)
        if busy_s() - b0 < 0.1 * window or time.perf_counter() - start > max_wait:
            return
        time.sleep(2.0)


def run(argv):
    b0 = busy_s()
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    cpu = ru.ru_utime + ru.ru_stime
    # CPU time used meanwhile by other processes (the machine's busy time
    # minus the child's): more than a small share of the wall time means
    # someone else ran alongside (clock-tick resolution, so a few ticks).
    foreign = max(0.0, busy_s() - b0 - cpu)
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, cpu, foreign, p.returncode, out.decode(errors="replace"), ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--expect")
    ap.add_argument("--retries", type=int, default=3,
                    help="reruns of a run during which other processes used CPU (default 3)")
    ap.add_argument("--pause", type=float, default=10.0, help="seconds to wait before such a rerun")
    ap.add_argument("--quiet", type=float, default=0.5,
                    help="before each run, wait for this many seconds of an idle machine (0: do not wait)")
    ap.add_argument("--max-wait", type=float, default=120.0, help="longest wait for an idle machine, seconds")
    ap.add_argument("cmds", nargs="+")
    a = ap.parse_args()
    expect = open(a.expect).read() if a.expect else None
    cmds = []
    for c in a.cmds:
        label, _, cmd = c.partition("=")
        exempt = label.startswith("!")
        cmds.append((label.lstrip("!"), shlex.split(cmd), exempt))
    runs = {label: [] for label, _, _ in cmds}
    exempt_of = {label: exempt for label, _, exempt in cmds}
    for r in range(a.rounds):
        for label, argv, exempt in cmds:
            for attempt in range(a.retries + 1):
                if a.quiet > 0:
                    wait_quiet(a.quiet, a.max_wait)
                wall, cpu, foreign, rc, out, rss_kib = run(argv)
                # Disturbed: others ran, and the CPUs were short (the run's
                # own CPU plus the others' over its wall time near the CPU
                # count): a one-thread run beside one other busy thread on
                # two CPUs is not disturbed, a two-thread run is.
                disturbed = foreign > 0.05 + 0.05 * wall and (cpu + foreign) > 0.85 * NCPU * wall
                ok = rc == 0 and (expect is None or exempt or out == expect)
                print(f"round {r + 1} {label}: {wall:.3f} s wall, {cpu:.3f} s CPU, {foreign:.2f} s others' CPU"
                      f"{' DISTURBED' if disturbed else ''}{'' if ok else ' FAILED'}", file=sys.stderr, flush=True)
                if not disturbed or attempt == a.retries:
                    break
                time.sleep(a.pause)
            runs[label].append({"round": r + 1, "wall_s": wall, "cpu_s": cpu, "others_cpu_s": foreign,
                                "disturbed": disturbed, "attempts": attempt + 1, "rc": rc, "ok": ok,
                                "max_rss_kib": rss_kib,
                                "output": out})
    summary = []
    for label, argv, _ in cmds:
        rs = runs[label]
        walls = [x["wall_s"] for x in rs]
        # An exempt label's output (e.g. numagc bench's table, with its
        # timings) is not compared between runs either.
        same = exempt_of[label] or len({x["output"] for x in rs}) == 1
        summary.append({
            "label": label, "command": shlex.join(argv), "runs": len(rs),
            "wall_median_s": statistics.median(walls), "wall_min_s": min(walls), "wall_max_s": max(walls),
            "cpu_median_s": statistics.median(x["cpu_s"] for x in rs),
            "max_rss_median_mib": statistics.median(x["max_rss_kib"] for x in rs) / 1024,
            "disturbed_runs": sum(x["disturbed"] for x in rs),
            "ok": all(x["ok"] for x in rs) and same,
        })
    w = max(len(s["label"]) for s in summary)
    print(f"{'label':<{w}}  median s  [min, max]          CPU s  max RSS MiB   ok   disturbed")
    for s in summary:
        print(f"{s['label']:<{w}}  {s['wall_median_s']:8.3f}  [{s['wall_min_s']:.3f}, {s['wall_max_s']:.3f}]"
              f"  {s['cpu_median_s']:7.3f}  {s['max_rss_median_mib']:11.1f}   {'yes' if s['ok'] else 'NO '}  {s['disturbed_runs']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": a.rounds, "summary": summary, "runs": runs}, f, indent=1)
    sys.exit(0 if all(s["ok"] for s in summary) else 1)


if __name__ == "__main__":
    main()
