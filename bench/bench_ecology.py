#!/usr/bin/env python3
"""Ecology benchmark (issue 7): runs `kairos run examples/ecology-large.json`
(plants and herbivore swarms on 240 x 240 cells cut into 2 x 1 regions,
100 steps) through the general runtime and prints one JSON line per figure
(bench/README.md), the median over --reps runs.

Cases: 1 rank (both regions on it) and 2 ranks (one region each). Figures
from the stats file: steps per second (steps over the run's wall time,
which excludes building the model but includes halo exchange and
synchronization) and agent updates per second.

    bench/bench_ecology.py [--kairos build-rel/kairos] [--reps 3] [--only SUBSTRING ...]
"""
import argparse
import json
import os
import statistics
import sys

from kairos_run import ROOT, run_stats

CASES = [("r1_2x1", 1), ("r2_2x1", 2)]  # (name, ranks)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build", "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sync", default="null-message")
    ap.add_argument("--only", nargs="*", default=[], help="run only cases whose name contains one of these")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    for name, ranks in CASES:
        if a.only and not any(o in name for o in a.only):
            continue
        runs = [run_stats(a.kairos, "ecology-large.json", ranks, a.sync, []) for _ in range(a.reps)]
        steps = runs[0]["end_time"]  # time_step 1
        sps = [steps / r["wall_seconds"] for r in runs]
        ups = [sum(s["stats"]["updates"] for s in r["simulators"]) / r["wall_seconds"] for r in runs]
        common = {"ranks": ranks, "regions": "[2,1]", "sync": a.sync, "steps": steps,
                  "state_digest": runs[0].get("state_digest"), "totals": runs[0].get("totals"), "load_before": load}
        for case, vals, unit in ((name + "_steps", sps, "steps/s"), (name + "_updates", ups, "updates/s")):
            print(json.dumps(dict({"bench": "ecology", "case": case, "value": statistics.median(vals), "unit": unit,
                                   "runs": vals}, **common)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
