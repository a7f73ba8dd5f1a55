#!/usr/bin/env python3
"""PHOLD benchmark (issue 6): runs `kairos run examples/phold.json` through
the general runtime and prints one JSON line per case (bench/README.md).

Every case keeps 1024 LPs in total (lps = 1024 / simulators), 16 start
events per LP, mean 1.0, end time 2000, and varies ranks (1, or 2 under
mpirun), simulators (1 or 2), the synchronization algorithm, and the
lookahead / remote fraction (base: 0.1 / 0.25; variants 0.01 and 0.5). The
figures come from the stats file of each run: events per second, null
messages per event (guarantees and guarantee requests), blocked seconds per
rank; the median over --reps runs.

    bench/bench_phold.py [--kairos build/kairos] [--reps 3] [--end 2000]
                         [--only SUBSTRING ...]
"""
import argparse
import json
import os
import statistics
import sys

from kairos_run import ROOT, phold_sets, run_stats

TOTAL_LPS = 1024

VARIANTS = [  # (name, lookahead, remote)
    ("base", 0.1, 0.25),
    ("lookahead_0.01", 0.01, 0.25),
    ("remote_0.5", 0.1, 0.5),
]
LAYOUTS = [  # (ranks, simulators)
    (1, 1),
    (1, 2),
    (2, 2),
]
SYNCS = ["null-message", "window"]


def run_once(kairos, ranks, sims, sync, lookahead, remote, end):
    sets = phold_sets(sims, lookahead, remote, end, TOTAL_LPS)
    return run_stats(kairos, "phold.json", ranks, sync, sets)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build", "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--end", type=float, default=2000.0)
    ap.add_argument("--only", nargs="*", default=[], help="run only cases whose name contains one of these")
    a = ap.parse_args()
    for vname, lookahead, remote in VARIANTS:
        for ranks, sims in LAYOUTS:
            for sync in SYNCS:
                case = "%s_r%d_s%d_%s" % (vname, ranks, sims, sync)
                if a.only and not any(o in case for o in a.only):
                    continue
                runs = [run_once(a.kairos, ranks, sims, sync, lookahead, remote, a.end) for _ in range(a.reps)]
                eps = [r["events_per_second"] for r in runs]
                npe = [r["null_messages_per_event"] for r in runs]  # guarantees and requests
                blocked = []  # seconds, summed over the rank's simulators
                for rank in range(ranks):
                    blocked.append(statistics.median(
                        sum((float(s["blocked_seconds"]) for s in r["simulators"] if s["rank"] == rank), 0.0)
                        for r in runs))
                print(json.dumps({
                    "bench": "phold", "case": case, "value": statistics.median(eps), "unit": "events/s",
                    "ranks": ranks, "sims": sims, "sync": sync, "lookahead": lookahead, "remote": remote,
                    "end_time": a.end, "events": runs[0]["events"],
                    "null_messages_per_event": statistics.median(npe),
                    "blocked_seconds_per_rank": blocked,
                    "runs": eps,
                }), flush=True)


if __name__ == "__main__":
    sys.exit(main())
