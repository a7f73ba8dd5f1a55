#!/usr/bin/env python3
"""Parallel efficiency of PHOLD on 2 ranks (issue 20): prints one JSON line
per case and binary (bench/README.md, "Parallel efficiency").

Every case is examples/phold.json with 1024 LPs in total and 16 start
events per LP, end time 2000 (32.8 M events): on 1 rank one simulator of
1024 LPs, on 2 ranks two simulators of 512, one per rank, under
`mpirun -np 2` in a plain environment (no OMPI_MCA_* settings; each rank
has a CPU of its own, so it spins while it waits, docs/cli.md). Cases:

    ceiling         remote 0: two simulators that never talk (the
                    machine's own limit for 2 ranks over 1)
    base            remote 0.25, lookahead 0.1
    lookahead_0.01  remote 0.25, lookahead 0.01 (promise 0.01)
    remote_0.5      remote 0.5, lookahead 0.1

Each run waits until the machine is idle (both CPUs 90 % idle) and records
its CPU share; runs of every case, algorithm and binary alternate, --reps
rounds of them. A line gives the median events/s over the runs, the
2-rank speed-up over the same binary's 1-rank median, that speed-up as a
fraction of the ceiling's, and the breakdown the stats file gives: blocked
seconds, blocked episodes and the mean wait per rank, null messages,
messages and batches per event, rounds.

With several binaries, each line of a binary after the first also gives
`paired_ratio`: the median over the rounds of its run's events/s over
the first binary's run of the same round, case, ranks and algorithm.
Runs of one round follow each other within seconds, so the ratio
cancels most of the drift of a shared machine, which moves whole sets
of medians by 10 % or more (bench/README.md, "Batches through shared
memory"). To compare settings of one binary, give a wrapper script that
sets the environment and runs it as another binary.

    bench/bench_parallel.py --kairos build-rel/kairos [--kairos OTHER ...]
                            [--reps 5] [--end 2000] [--only CASE ...]
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

from kairos_run import ROOT, phold_sets, plain_env, run_stats, wait_idle

CASES = [  # (name, lookahead, remote)
    ("ceiling", 0.1, 0.0),
    ("base", 0.1, 0.25),
    ("lookahead_0.01", 0.01, 0.25),
    ("remote_0.5", 0.1, 0.5),
]
TOTAL_LPS = 1024


def run_once(kairos, ranks, sync, lookahead, remote, end):
    sets = phold_sets(ranks, lookahead, remote, end, TOTAL_LPS)
    # CPU share: the CPU time of its processes over ranks x wall time (start-up
    # included); well below 1 means another process had the CPUs
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    s = run_stats(kairos, "phold.json", ranks, sync, sets)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    s["_cpu_share"] = cpu / (ranks * wall)
    return s


def summary(runs, ranks):
    eps = [r["events_per_second"] for r in runs]
    blocked, episodes, mean_wait = [], [], []
    for rank in range(ranks):
        per_run = lambda key, r: sum((float(s.get(key, 0)) for s in r["simulators"] if s["rank"] == rank), 0.0)
        blocked.append(round(statistics.median(per_run("blocked_seconds", r) for r in runs), 3))
        episodes.append(statistics.median(per_run("blocked_episodes", r) for r in runs))
        mean_wait.append(round(statistics.median(per_run("blocked_seconds", r) / max(1.0, per_run("blocked_episodes", r))
                                                 for r in runs) * 1e6, 1))
    med = lambda k: statistics.median(float(r.get(k, 0) or 0) for r in runs)
    return {
        "value": statistics.median(eps), "unit": "events/s", "runs": [round(x / 1e6, 3) for x in eps],
        "cpu_share": [round(r["_cpu_share"], 2) for r in runs],
        "blocked_seconds_per_rank": blocked,
        "blocked_episodes_per_rank": episodes,
        "mean_wait_us_per_rank": mean_wait,
        "wall_seconds": round(med("wall_seconds"), 3),
        "null_messages_per_event": round(med("null_messages_per_event"), 5),
        "messages_per_event": round(med("messages_per_event"), 5),
        "batches_per_event": round(med("batches_per_event"), 5),
        "rounds": med("rounds"),
        "events": runs[0]["events"], "checksum": runs[0].get("checksum"),
        "same_checksum": len({r.get("checksum") for r in runs}) == 1,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", action="append", default=[])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--end", type=float, default=2000.0)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--syncs", nargs="*", default=["null-message", "window"])
    ap.add_argument("--idle-wait", type=float, default=120.0, help="seconds to wait for an idle machine per run")
    a = ap.parse_args()
    kairos = a.kairos or [os.path.join(ROOT, "build-rel", "kairos")]
    plain_env()
    cases = [c for c in CASES if not a.only or c[0] in a.only]
    if a.only and not any(c[0] == "ceiling" for c in cases):
        cases.insert(0, CASES[0])
    runs = {}
    for _ in range(a.reps):
        for name, la, remote in cases:
            for k in kairos:
                layouts = [(1, "null-message")] + [(2, s) for s in a.syncs]
                for ranks, sync in layouts:
                    wait_idle(a.idle_wait)
                    runs.setdefault((name, k, ranks, sync), []).append(run_once(k, ranks, sync, la, remote, a.end))
    one = {}
    for name, la, remote in cases:
        for k in kairos:
            for ranks, sync in [(1, "null-message")] + [(2, s) for s in a.syncs]:
                s = summary(runs[(name, k, ranks, sync)], ranks)
                if ranks == 1:
                    one[(name, k)] = s["value"]
                s.update({"bench": "parallel", "case": name, "kairos": k, "ranks": ranks, "sync": sync,
                          "lookahead": la, "remote": remote, "end_time": a.end})
                if k != kairos[0]:
                    mine, first = runs[(name, k, ranks, sync)], runs[(name, kairos[0], ranks, sync)]
                    s["paired_ratio"] = round(statistics.median(
                        x["events_per_second"] / y["events_per_second"] for x, y in zip(mine, first)), 3)
                if ranks == 2:
                    s["speedup"] = round(s["value"] / one[(name, k)], 3)
                    ceil = runs[("ceiling", k, 2, sync)]
                    ceil_speedup = statistics.median(r["events_per_second"] for r in ceil) / one[("ceiling", k)]
                    s["ceiling_speedup"] = round(ceil_speedup, 3)
                    s["fraction_of_ceiling"] = round(s["speedup"] / ceil_speedup, 3)
                print(json.dumps(s), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
