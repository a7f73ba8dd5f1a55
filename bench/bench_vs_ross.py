#!/usr/bin/env python3
"""PHOLD on 1 and 2 ranks, kairos and ROSS side by side (issue 20: "parallel
efficiency at least ROSS's"; bench/README.md). Runs of both engines, every
case and both rank counts alternate, --reps rounds of them; a line per
engine, case and rank count gives the median events/s and, for 2 ranks, the
speed-up over the same engine's 1-rank median.

The workload is the same in both: 1024 LPs in total, 16 start events per
LP, a delay of lookahead + Exp(mean - lookahead) with mean 1, a fraction
`remote` of events sent to an LP drawn from all 1024 (so about half of
them cross ranks on 2), end time 2000. kairos runs examples/phold.json
(one simulator per rank, the null-message algorithm and the window, the
better one reported); ROSS runs its models/phold, sequential (--synch=1)
on 1 rank and conservative (--synch=2, --cons-lookahead equal to the
lookahead) on 2. Its event rate is ROSS's own: net events over its
reported running time.

ROSS is not part of kairos: build it outside the tree, e.g.

    git clone https://github.com/ROSS-org/ROSS /tmp/ross-src
    mkdir /tmp/ross-build && cd /tmp/ross-build
    CC=mpicc cmake /tmp/ross-src -DCMAKE_BUILD_TYPE=Release \\
        -DCMAKE_C_FLAGS_RELEASE="-O3 -DNDEBUG" -DROSS_BUILD_MODELS=ON
    make -j2 phold

    bench/bench_vs_ross.py --kairos build-rel/kairos \\
        --ross-phold /tmp/ross-build/models/phold/phold [--reps 3] [--end 2000]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from kairos_run import ROOT, phold_sets, plain_env, run_stats

CASES = [("base", 0.1, 0.25), ("lookahead_0.01", 0.01, 0.25), ("remote_0.5", 0.1, 0.5)]
TOTAL_LPS = 1024


def ross_run(binary, ranks, lookahead, remote, end):
    """(events, events/s) of one ROSS PHOLD run, from its own statistics."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), binary, "--synch=%d" % (1 if ranks == 1 else 2),
           "--nlp=%d" % (TOTAL_LPS // ranks), "--start-events=16", "--mean=1", "--lookahead=%r" % lookahead,
           "--cons-lookahead=%r" % lookahead, "--remote=%r" % remote, "--end=%r" % end]
    with tempfile.TemporaryDirectory(prefix="ross-") as work:  # ROSS appends to ./ross.csv
        out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    events = re.findall(r"^\s*Net Events Processed\s+(\d+)", out, re.M)
    secs = re.findall(r": Running Time = ([\d.]+) seconds", out)
    lps = re.findall(r"^\s*Total LPs\s+(\d+)", out, re.M)
    if not events or not secs or not lps or int(lps[-1]) != TOTAL_LPS:
        raise SystemExit("bench_vs_ross: could not read ROSS's statistics:\n" + out[-2000:])
    return int(events[-1]), int(events[-1]) / float(secs[-1])


def kairos_run(binary, ranks, sync, lookahead, remote, end):
    s = run_stats(binary, "phold.json", ranks, sync, phold_sets(ranks, lookahead, remote, end, TOTAL_LPS))
    return s["events"], s["events_per_second"], s.get("checksum")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build-rel", "kairos"))
    ap.add_argument("--ross-phold", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--end", type=float, default=2000.0)
    ap.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args()
    plain_env()
    cases = [c for c in CASES if not a.only or c[0] in a.only]
    runs = {}
    for _ in range(a.reps):
        for name, la, remote in cases:
            for ranks in (1, 2):
                for sync in (["null-message"] if ranks == 1 else ["null-message", "window"]):
                    ev, eps, ck = kairos_run(a.kairos, ranks, sync, la, remote, a.end)
                    runs.setdefault(("kairos", name, ranks, sync), []).append((ev, eps, ck))
                ev, eps = ross_run(a.ross_phold, ranks, la, remote, a.end)
                runs.setdefault(("ross", name, ranks, "conservative" if ranks > 1 else "sequential"), []).append(
                    (ev, eps, None))
    for name, la, remote in cases:
        for engine in ("kairos", "ross"):
            one = [v for k, v in runs.items() if k[:3] == (engine, name, 1)][0]
            base = statistics.median(r[1] for r in one)
            for (e, n, ranks, sync), rs in sorted(runs.items()):
                if (e, n) != (engine, name):
                    continue
                med = statistics.median(r[1] for r in rs)
                line = {"bench": "vs_ross", "engine": engine, "case": name, "lookahead": la, "remote": remote,
                        "ranks": ranks, "sync": sync, "end_time": a.end, "events": rs[0][0],
                        "value": med, "unit": "events/s", "runs": [round(r[1] / 1e6, 3) for r in rs]}
                if ranks > 1:
                    line["speedup"] = round(med / base, 3)
                if engine == "kairos":
                    line["same_checksum"] = len({r[2] for r in rs}) == 1
                print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
