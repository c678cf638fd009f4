#!/usr/bin/env python3
"""The tables of docs/results/compiled.md's first section, from the JSON of
`numagc compare --api compiled,compiled-calls,safe` (scripts/bench-compiled.sh
writes docs/results/compiled/compare-{split,shared}.json).

Usage: scripts/compiled-table.py docs/results/compiled/compare-split.json

"Best peer" is the fastest peer of the run (GHC with -A32m and with its
default allocation area, OCaml 4 and 5, Java ParallelGC and G1); the
issue's targets name GHC, OCaml 5 and Java, so one column leaves OCaml 4
out. C with bump arenas and numagc's C programs are never the best peer.
Ratios are of the medians of the run's alternated repetitions.
"""
import json
import sys

NUMAGC = {"numagc", "numagc-compiled", "numagc-compiled-calls", "numagc-c"}
NOT_PEERS = NUMAGC | {"c-arena"}
NOT_NAMED = {"ocaml"}  # OCaml 4: a peer, not one the targets name
NAMES = {
    "haskell": "GHC",
    "haskell-default": "GHC (default -A)",
    "ocaml": "OCaml 4",
    "ocaml5": "OCaml 5",
    "java-parallelgc": "Java ParallelGC",
    "java-g1": "Java G1",
}
SIZES = {"binarytrees": "binarytrees 21", "parfib": "parfib 38/20", "coins": "coins 1100"}


def main(path):
    d = json.load(open(path))
    med = {}
    rng = {}
    for s in d["summaries"]:
        if s["status"] == "ran" and s["answers_ok"]:
            key = (s["benchmark"], s["vprocs"], s["runtime"])
            med[key] = s["wall_median_s"]
            rng[key] = (s["wall_min_s"], s["wall_max_s"])
    rows = sorted({(b, k) for (b, k, _) in med}, key=lambda x: (list(SIZES).index(x[0]) if x[0] in SIZES else 9, x[0], x[1]))
    print("| benchmark | K | numagc-compiled s | compiled-calls s | numagc safe s | best peer, s "
          "| compiled / best | compiled-calls / best | compiled / best of GHC, OCaml 5, Java | safe / compiled |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    arena = []
    for b, k in rows:
        get = lambda r: med.get((b, k, r))
        comp, calls, safe = get("numagc-compiled"), get("numagc-compiled-calls"), get("numagc")
        peers = {r: t for (bb, kk, r), t in med.items() if bb == b and kk == k and r not in NOT_PEERS}
        if comp is None or not peers:
            continue
        best = min(peers, key=peers.get)
        named = {r: t for r, t in peers.items() if r not in NOT_NAMED}
        best_named = min(named, key=named.get) if named else None
        lo, hi = rng[(b, k, "numagc-compiled")]
        ratio = lambda x: f"**{x:.2f}**" if x <= 1.0 else f"{x:.2f}"
        cells = [
            SIZES.get(b, b),
            str(k),
            f"{comp:.3f} [{lo:.3f}, {hi:.3f}]",
            f"{calls:.3f}" if calls else "",
            f"{safe:.3f}" if safe else "",
            f"{NAMES.get(best, best)} {peers[best]:.3f}",
            ratio(comp / peers[best]),
            f"{calls / peers[best]:.2f}" if calls else "",
            f"{ratio(comp / named[best_named])} ({NAMES.get(best_named, best_named)})" if best_named else "",
            f"{safe / comp:.2f}" if safe else "",
        ]
        print("| " + " | ".join(cells) + " |")
        if get("c-arena"):
            arena.append((k, get("c-arena"), comp / get("c-arena")))
    if arena:
        ts = " and ".join(f"{t:.3f} s" for _, t, _ in arena)
        rs = " and ".join(f"{r:.2f}" for _, _, r in arena)
        print(f"\nbinarytrees 21 against C with bump arenas, same run: {ts}; compiled / C {rs}.")


if __name__ == "__main__":
    main(sys.argv[1])
