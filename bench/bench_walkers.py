#!/usr/bin/env python3
"""Random walkers benchmark (issue 7): runs `kairos run
examples/walkers-large.json` (1,000,000 walkers on 1000 x 1000 cells)
through the general runtime and prints one JSON line per figure
(bench/README.md), the median over --reps runs.

Cases: 1 rank with the world uncut (1x1) and cut in two (2x1, both regions
on the one rank), 2 ranks with 2x1 (one region each), and a
migration-heavy small world cut in 40 columns on 2 ranks. Figures from the
stats file: agent updates per second (walker steps over the run's wall
time, which excludes building the model), per rank (updates / ranks), the
migrations per second and the bytes per migrated walker. The wall time
covers the whole run, halo exchange and synchronization included.

    bench/bench_walkers.py [--kairos build/kairos] [--reps 3] [--end 20] [--only SUBSTRING ...]
"""
import argparse
import json
import os
import statistics
import sys

from kairos_run import ROOT, run_stats

CASES = [  # (name, ranks, regions, extra --set)
    ("r1_1x1", 1, "[1,1]", []),
    ("r1_2x1", 1, "[2,1]", []),
    ("r2_2x1", 2, "[2,1]", []),
    # Migration-heavy: 200,000 walkers on 200 x 200 cells in 40 columns of
    # 5 cells, so that about 15 % of the walkers migrate every step.
    ("r2_40x1_small", 2, "[40,1]", ["simulators.walkers.params.width=200", "simulators.walkers.params.height=200",
                                    "simulators.walkers.params.agents=200000"]),
]


def run_once(kairos, ranks, regions, extra, sync, end):
    sets = ["simulators.walkers.regions=" + regions, "end_time=%r" % end] + extra
    return run_stats(kairos, "walkers-large.json", ranks, sync, sets)


def total(run, key):
    return sum(s["stats"][key] for s in run["simulators"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build", "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--end", type=float, default=20.0)
    ap.add_argument("--sync", default="null-message")
    ap.add_argument("--only", nargs="*", default=[], help="run only cases whose name contains one of these")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    for name, ranks, regions, extra in CASES:
        if a.only and not any(o in name for o in a.only):
            continue
        runs = [run_once(a.kairos, ranks, regions, extra, a.sync, a.end) for _ in range(a.reps)]
        ups = [total(r, "updates") / r["wall_seconds"] for r in runs]
        migs = [total(r, "migrants_sent") / r["wall_seconds"] for r in runs]
        sent = total(runs[0], "migrants_sent")
        common = {"ranks": ranks, "regions": regions, "sync": a.sync, "end_time": a.end,
                  "updates": total(runs[0], "updates"), "state_digest": runs[0].get("state_digest"),
                  "load_before": load}
        def emit(case, value, unit, runs_):
            print(json.dumps(dict({"bench": "walkers", "case": case, "value": value, "unit": unit,
                                   "runs": runs_}, **common)), flush=True)
        emit(name + "_updates", statistics.median(ups), "updates/s", ups)
        emit(name + "_updates_per_rank", statistics.median(ups) / ranks, "updates/s/rank", [u / ranks for u in ups])
        if sent:
            emit(name + "_migrations", statistics.median(migs), "migrations/s", migs)
            emit(name + "_bytes_per_migrant", total(runs[0], "migrant_bytes") / sent, "bytes/migrant", None)


if __name__ == "__main__":
    sys.exit(main())
