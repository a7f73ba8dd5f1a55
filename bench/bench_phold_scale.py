#!/usr/bin/env python3
"""PHOLD as the model grows (issue 20, "Cost as the model grows"): kairos on
1 and 2 ranks against the bare sequential PHOLD of bench/phold_bare.c (its
calendar queue and its 4-ary heap), for 2^10, 2^12, ..., 2^20 LPs in total,
16 start events per LP (pending events: 16 x LPs), remote 0.25, lookahead
0.1, mean 1 (examples/phold.json).

kairos runs `kairos run examples/phold.json -o STATS --quiet` with `--set`:
one simulator holding every LP on 1 rank (`count=1`, `dependencies=[]`),
two simulators of LPs/2 each on 2 ranks (`count=2`, the example's
`phold[*] -> phold[*]` promise 0.1), under mpirun with the test suite's Open
MPI settings. Its figures come from the stats file: `events` over
`wall_seconds` (the slowest rank's run, setup excluded), and memory as the
sum over ranks of `rank_info[].peak_memory_bytes` (peak resident), over
the pending events. The bare floor times its event loop alone and reports
its own peak resident memory (VmHWM). Every command runs as the child of a
shell (see timed()).

The end time falls as the model grows so that each run has about
--events events (end = max(--min-end, events / (16 LPs))): 2^10 LPs run to
1024, 2^20 to 2. The four cases alternate run by run within each size
(kairos 1 rank, kairos 2 ranks, calendar, heap, then again), --reps runs
each (--reps-large for 2^18 and 2^20); before each run the script waits
(at most --idle-wait s) until the CPUs are at least 90 % idle, and records
each run's CPU share: the CPU time of its processes over ranks x its wall
time (about 1 when each rank had a core; waiting ranks spin).

One JSON line per case and size (medians; the runs in "runs"), then one
"summary" line per size; --plot FILE.png draws events/s and bytes per
pending event against LPs (matplotlib).

    bench/bench_phold_scale.py --kairos build-rel/kairos --bare build-rel/bench/phold_bare
        [--reps 5] [--reps-large 3] [--sizes 10 12 14 16 18 20] [--plot bench/phold_scale.png]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from kairos_run import ROOT, wait_idle
START_EVENTS = 16
CASES = ["kairos_r1", "kairos_r2", "calendar", "heap4"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")


def load_average():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def timed(cmd, ranks):
    """Runs cmd; returns (its stdout, its CPU share). It runs as a child of
    a shell, not of this script: Python starts its children with vfork, and
    a process so started counts Python's resident pages in its ru_maxrss
    (kairos's peak_memory_bytes), about 16 MB; the shell's are about 1 MB."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(["/bin/sh", "-c", '"$@"; exit $?', "sh"] + cmd, check=True, env=ENV,
                       stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return p.stdout, cpu / (ranks * wall)


def run_kairos(kairos, ranks, lps, end, tmp):
    out = os.path.join(tmp, "stats.json")
    if os.path.exists(out):
        os.unlink(out)
    sets = ["simulators.phold.count=%d" % ranks, "simulators.phold.params.lps=%d" % (lps // ranks),
            "simulators.phold.params.start_events=%d" % START_EVENTS, "end_time=%r" % end]
    if ranks == 1:
        sets.append("dependencies=[]")  # (a wildcard over one replica names no pair anyway: said outright)
    cmd = [kairos, "run", os.path.join(ROOT, "examples", "phold.json"), "-o", out, "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks)] + cmd
    _, share = timed(cmd, ranks)
    with open(out) as f:
        s = json.load(f)
    peak = sum(int(r["peak_memory_bytes"]) for r in s["rank_info"])
    return {"events": int(s["events"]), "events_per_second": s["events"] / s["wall_seconds"],
            "seconds": s["wall_seconds"], "peak_memory_bytes": peak,
            "peak_memory_bytes_per_rank": [int(r["peak_memory_bytes"]) for r in s["rank_info"]],
            "checksum": s["checksum"], "cpu_share": share}


def run_bare(bare, queue, lps, end):
    stdout, share = timed([bare, "--queue", queue, "--lps", str(lps), "--start", str(START_EVENTS),
                           "--end", repr(end)], 1)
    d = json.loads(stdout)
    return {"events": d["events"], "events_per_second": d["events_per_second"], "seconds": d["seconds"],
            "peak_memory_bytes": d["peak_rss_bytes"], "cpu_share": share}


def median(xs):
    return statistics.median(xs)


def plot(points, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_phold_scale: matplotlib is not installed; no plot", file=sys.stderr)
        return
    label = {"kairos_r1": "kairos, 1 rank", "kairos_r2": "kairos, 2 ranks",
             "calendar": "bare PHOLD, calendar queue", "heap4": "bare PHOLD, 4-ary heap"}
    style = {"kairos_r1": "o-", "kairos_r2": "s-", "calendar": "^--", "heap4": "v--"}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for case in CASES:
        pts = sorted((p["lps"], p) for p in points if p["case"] == case)
        xs = [x for x, _ in pts]
        a1.plot(xs, [p["events_per_second"] / 1e6 for _, p in pts], style[case], label=label[case])
        a2.plot(xs, [p["bytes_per_pending_event"] for _, p in pts], style[case], label=label[case])
    a1.set_ylabel("M events/s (median)")
    a2.set_ylabel("bytes per pending event (peak RSS / 16 LPs)")
    a2.set_yscale("log")
    for a in (a1, a2):
        a.set_xscale("log", base=2)
        a.set_xlabel("LPs in total (16 pending events each)")
        a.grid(True, which="both", alpha=0.3)
    a1.axhline(2.5, color="grey", lw=0.8, ls=":")
    a1.legend(fontsize=8)
    fig.suptitle("PHOLD as the model grows (remote 0.25, lookahead 0.1, mean 1)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build", "kairos"))
    ap.add_argument("--bare", default=os.path.join(ROOT, "build", "bench", "phold_bare"))
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 12, 14, 16, 18, 20], help="log2 of the LPs")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--reps-large", type=int, default=3, help="runs per case for 2^18 LPs and more")
    ap.add_argument("--events", type=float, default=2 ** 24, help="about this many events a run")
    ap.add_argument("--min-end", type=float, default=2.0)
    ap.add_argument("--idle-wait", type=float, default=20, help="before each run, wait at most this long for idle CPUs")
    ap.add_argument("--cases", nargs="*", default=CASES)
    ap.add_argument("--plot", help="write a plot to this PNG file")
    a = ap.parse_args()
    print(json.dumps({"bench": "phold_scale", "case": "machine", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "cpus": os.cpu_count(), "load_average": load_average(), "kairos": a.kairos, "bare": a.bare}),
          flush=True)
    points = []
    with tempfile.TemporaryDirectory(prefix="kairos-scale-") as tmp:
        for k in a.sizes:
            lps = 2 ** k
            end = max(a.min_end, float(int(a.events / (START_EVENTS * lps))))
            reps = a.reps if k < 18 else a.reps_large
            runs = {c: [] for c in a.cases}
            waited, not_idle, loads = 0.0, 0, []
            for _ in range(reps):
                for case in a.cases:
                    if a.idle_wait > 0:
                        w = wait_idle(a.idle_wait)
                        waited += w
                        not_idle += w >= a.idle_wait
                    loads.append(load_average()[0])
                    if case.startswith("kairos"):
                        runs[case].append(run_kairos(a.kairos, int(case[-1]), lps, end, tmp))
                    else:
                        runs[case].append(run_bare(a.bare, case, lps, end))
            cal = median([r["events_per_second"] for r in runs["calendar"]]) if "calendar" in runs else None
            size_points = {}
            for case in a.cases:
                rs = runs[case]
                eps = median([r["events_per_second"] for r in rs])
                peak = median([r["peak_memory_bytes"] for r in rs])
                p = {"bench": "phold_scale", "case": case, "lps": lps, "start_events": START_EVENTS,
                     "pending_events": START_EVENTS * lps, "end_time": end, "events": rs[0]["events"],
                     "events_per_second": eps, "bytes_per_pending_event": peak / (START_EVENTS * lps),
                     "peak_memory_bytes": peak, "ratio_to_calendar": eps / cal if cal else None,
                     "seconds": median([r["seconds"] for r in rs]),
                     "runs": [round(r["events_per_second"]) for r in rs],
                     "cpu_share": [round(r["cpu_share"], 2) for r in rs]}
                if case.startswith("kairos"):
                    p["checksums"] = sorted(set(r["checksum"] for r in rs))
                    p["peak_memory_bytes_per_rank"] = rs[0]["peak_memory_bytes_per_rank"]
                points.append(p)
                size_points[case] = p
                print(json.dumps(p), flush=True)
            print(json.dumps({"bench": "phold_scale", "case": "summary", "lps": lps, "end_time": end, "reps": reps,
                              "events_per_second": {c: round(q["events_per_second"]) for c, q in size_points.items()},
                              "bytes_per_pending_event": {c: round(q["bytes_per_pending_event"], 1)
                                                          for c, q in size_points.items()},
                              "idle_waited_s": round(waited, 1), "runs_started_not_idle": not_idle,
                              "load_average_1min": [min(loads), max(loads)]}), flush=True)
    if a.plot:
        plot(points, a.plot)


if __name__ == "__main__":
    sys.exit(main())
