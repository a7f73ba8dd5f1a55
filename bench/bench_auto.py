#!/usr/bin/env python3
"""What `--sync auto` chooses, against both algorithms (bench/README.md, "The
algorithm chosen by auto"): prints one JSON line per model, rank count and
algorithm.

PHOLD (examples/phold.json) split into S simulators that share 1024 LPs,
every simulator depending on every other (S - 1 in-edges each), remote
0.25, at lookahead (and promise) 0.1 and 0.01; S from --sims. Each model
runs on 1 and 2 ranks with null-message, window and auto, the runs of every
model, rank count and algorithm alternating, --reps rounds of them, each
run after the machine is idle (both CPUs 90 % idle). A line gives the
median events/s, the algorithm that ran (for auto: what it chose) and the
checksum, which must be one per model.

    bench/bench_auto.py --kairos build-rel/kairos [--reps 5] [--sims 2,4,8,16,32]
"""
import argparse
import json
import os
import statistics
import sys

from kairos_run import ROOT, phold_sets, run_stats, wait_idle

SYNCS = ("null-message", "window", "auto")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build-rel", "kairos"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sims", default="2,4,8,10,12,16,32")
    a = ap.parse_args()
    models = []
    for sims in (int(x) for x in a.sims.split(",")):
        for lookahead, end in ((0.1, 100.0), (0.01, 50.0)):
            models.append((sims, lookahead, phold_sets(sims, lookahead, 0.25, end)))
    runs = {}
    for _ in range(a.reps):
        for sims, lookahead, sets in models:
            for ranks in (1, 2):
                for sync in SYNCS:
                    wait_idle(5)
                    st = run_stats(a.kairos, "phold.json", ranks, sync, sets)
                    runs.setdefault((sims, lookahead, ranks, sync), []).append(st)
    failed = False
    for sims, lookahead, sets in models:
        checksums = {st["checksum"] for k, v in runs.items() if k[:2] == (sims, lookahead) for st in v}
        failed |= len(checksums) != 1
        for ranks in (1, 2):
            for sync in SYNCS:
                v = runs[(sims, lookahead, ranks, sync)]
                print(json.dumps({"bench": "auto", "simulators": sims, "in_edges": sims - 1, "lookahead": lookahead,
                                  "ranks": ranks, "sync": sync, "ran": sorted({st["sync"] for st in v}),
                                  "events_per_second": statistics.median(st["events_per_second"] for st in v),
                                  "runs": [round(st["events_per_second"]) for st in v], "events": v[0]["events"],
                                  "checksums": sorted(checksums)}), flush=True)
    if failed:
        print("bench_auto: a model gave more than one checksum", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
