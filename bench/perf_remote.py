#!/usr/bin/env python3
"""Where a second rank's wall time goes in PHOLD (issue 20; bench/README.md,
"Parallel efficiency"), by sampling: `perf record -e cpu-clock` on every
rank of a PHOLD run on 1 rank (one simulator of 1024 LPs) and on 2 (two of
512), then nanoseconds per event per function on each rank.

callgrind_remote.py counts instructions, which repeat exactly but weigh a
cache miss or an instruction inside MPI like any other; this weighs them
by time. Functions are grouped into what a second rank adds:

    events      the model and the engine around an event (handlers,
                queue, records, random numbers): what 1 rank runs too
    sync        kairos's own sending and delivering of sync-events
                (encoding, batching, decoding, the transport's calls)
    mpi         inside Open MPI and the kernel (matching, progress,
                shared-memory copies, system calls)
    copy        memcpy/memmove, wherever called (batches into and out of
                MPI's shared memory, payloads into records)
    wait        reading the clock while a blocked rank spins (and the
                polls it makes then are in mpi)

Start-up and shut-down (MPI_Init alone is some 0.3 s of samples) are
taken out: each configuration also runs to an end time of 0.001, and its
samples are subtracted function by function. A line per configuration:
{"case", "ranks", "events_per_second", "per_rank": [{rank, events,
ns_per_event, groups: {...}, top: [[function, ns/event], ...]}]}.
Sampling needs `perf` (no hardware counters: cpu-clock works in a VM).

    bench/perf_remote.py --kairos build-rel/kairos [--end 2000] [--only base ...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from kairos_run import ROOT, phold_sets, plain_env, run_stats

CASES = [("ceiling", 0.1, 0.0), ("base", 0.1, 0.25), ("lookahead_0.01", 0.01, 0.25), ("remote_0.5", 0.1, 0.5)]
HZ = 4999

SYNC = re.compile(r"sync|deliver|batch|transmit|begin|put_payload|mpi_send|mpi_poll|mpi_held|flush_|receive_all|"
                  r"reap_sends|complete_|add_target|kr__edge|mpi_wait|mpi_settle|keep_as_spare|kr_buf_")
COPY = re.compile(r"mem(cpy|move)")


def group_of(dso, sym):
    if COPY.search(sym):
        return "copy"
    if "clock_gettime" in sym:
        return "wait"
    if dso.startswith("[kernel") or dso.startswith("mca_") or dso.startswith("libmpi") or \
            dso.startswith("libopen-") or dso.startswith("libevent") or dso.startswith("libhwloc"):
        return "mpi"
    if SYNC.search(sym):
        return "sync"
    return "events"


def profile(data):
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol", "-q", "-n",
                          "-g", "none"], capture_output=True, text=True, check=True).stdout
    samples = {}
    for line in out.splitlines():
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[.\]\s+(\S+)", line)
        if m:
            key = (m.group(2), m.group(3))
            samples[key] = samples.get(key, 0) + int(m.group(1))
    return samples


def record(kairos, ranks, la, remote, end, tmp):
    """Samples per (dso, symbol) on each rank, and the run's stats."""
    wrap = os.path.join(tmp, "wrap.sh")
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\nexec perf record -e cpu-clock -F %d -q -o "%s/perf.$OMPI_COMM_WORLD_RANK" "$@"\n'
                % (HZ, tmp))
    os.chmod(wrap, 0o755)
    st = run_stats(kairos, "phold.json", ranks, "null-message", phold_sets(ranks, la, remote, end), wrapper=[wrap],
                   quiet=True)
    samples = []
    for r in range(ranks):
        samples.append(profile(os.path.join(tmp, "perf.%d" % r)))
        os.unlink(os.path.join(tmp, "perf.%d" % r))
    return st, samples


def run(kairos, ranks, la, remote, end, tmp):
    st, samples = record(kairos, ranks, la, remote, end, tmp)
    _, startup = record(kairos, ranks, la, remote, 0.001, tmp)
    per_rank = []
    for r in range(ranks):
        events = sum(s["events"] for s in st["simulators"] if s["rank"] == r)
        ns = {k: max(0, v - startup[r].get(k, 0)) / HZ * 1e9 / max(1, events) for k, v in samples[r].items()}
        groups = {}
        for (dso, sym), v in ns.items():
            g = group_of(dso, sym)
            groups[g] = groups.get(g, 0.0) + v
        top = sorted(ns.items(), key=lambda kv: -kv[1])[:12]
        per_rank.append({"rank": r, "events": events, "ns_per_event": round(sum(ns.values()), 1),
                         "groups": {g: round(v, 1) for g, v in sorted(groups.items())},
                         "blocked_seconds": round(sum(float(s["blocked_seconds"]) for s in st["simulators"]
                                                      if s["rank"] == r), 3),
                         "top": [[sym, round(v, 2)] for (dso, sym), v in top]})
    return st["events_per_second"], per_rank


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build-rel", "kairos"))
    ap.add_argument("--end", type=float, default=2000.0)
    ap.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args()
    plain_env()  # as bench_parallel.py
    with tempfile.TemporaryDirectory(prefix="perf-remote-") as tmp:
        for name, la, remote in CASES:
            if a.only and name not in a.only:
                continue
            for ranks in (1, 2):
                eps, per_rank = run(a.kairos, ranks, la, remote, a.end, tmp)
                print(json.dumps({"bench": "perf_remote", "case": name, "ranks": ranks, "end_time": a.end,
                                  "kairos": a.kairos, "events_per_second": round(eps), "per_rank": per_rank}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
