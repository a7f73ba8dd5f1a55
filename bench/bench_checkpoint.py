#!/usr/bin/env python3
"""Checkpoint benchmark (issue 18): write and restart times and sizes, and
what checkpoints cost a running model. One JSON line per figure
(bench/README.md), the median over --reps runs.

Cases:
  walkers: examples/walkers-large.json (1,000,000 walkers, 1000 x 1000
    cells) cut in two regions on 2 ranks, one checkpoint at step 10: the
    checkpoint's write time (from the cut to every rank's agreement that it
    is complete: cut, save, compress, write, fsync, manifest, rename), its
    size per agent, and the restart's read time (reading, decompressing and
    loading every simulator, after setup).
  phold: examples/phold.json with 2^18 LPs (4 simulators x 65,536) x 16
    start events, end time 50, on 2 ranks: the run's wall time with 10
    checkpoints (at 4.5, 9, ..., 45) against without, as a ratio of
    medians; the write time and size of one checkpoint.
The figures come from the stats file's "checkpoints" object (docs/stats.md)
and wall_seconds.

    bench/bench_checkpoint.py [--kairos build-rel/kairos] [--reps 3] [--only walkers|phold]
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile

from kairos_run import ROOT, run_stats


def emit(case, value, unit, runs):
    print(json.dumps({"bench": "checkpoint", "case": case, "value": round(value, 4), "unit": unit,
                      "runs": [round(r, 4) for r in runs]}), flush=True)


def walkers(kairos, reps, tmp):
    sets = ["simulators.walkers.regions=[2,1]"]
    write, size, read = [], [], []
    for _ in range(reps):
        ck = os.path.join(tmp, "wck")
        shutil.rmtree(ck, ignore_errors=True)
        s = run_stats(kairos, "walkers-large.json", 2, "null-message", sets, ["--checkpoint-at", "10", "--checkpoint-dir", ck])
        write.append(s["checkpoints"]["write_seconds"])
        size.append(s["checkpoints"]["bytes"] / 1e6)
        r = run_stats(kairos, "walkers-large.json", 2, "null-message", sets, ["--restart", os.path.join(ck, "ckpt-10")])
        read.append(r["checkpoints"]["restore_seconds"])
        assert r["checksum"] == s["checksum"], "the restart's checksum differs"
    emit("walkers_1e6_r2_write", statistics.median(write), "s", write)
    emit("walkers_1e6_r2_size", statistics.median(size), "bytes/agent", size)
    emit("walkers_1e6_r2_restart_read", statistics.median(read), "s", read)


def phold(kairos, reps, tmp):
    sets = ["end_time=50", "simulators.phold.params.lps=65536"]
    cuts = ",".join("%g" % (4.5 * k) for k in range(1, 11))
    plain, with_ck, write, size = [], [], [], []
    for _ in range(reps):
        plain.append(run_stats(kairos, "phold.json", 2, "null-message", sets)["wall_seconds"])
        ck = os.path.join(tmp, "pck")
        shutil.rmtree(ck, ignore_errors=True)
        s = run_stats(kairos, "phold.json", 2, "null-message", sets,
                      ["--checkpoint-at", cuts, "--checkpoint-dir", ck, "--checkpoint-keep", "2"])
        with_ck.append(s["wall_seconds"])
        write.append(s["checkpoints"]["write_seconds"] / s["checkpoints"]["written"])
        size.append(s["checkpoints"]["bytes"] / s["checkpoints"]["written"] / 1e6)
    emit("phold_2e18_r2_plain_wall", statistics.median(plain), "s", plain)
    emit("phold_2e18_r2_10ckpt_wall", statistics.median(with_ck), "s", with_ck)
    emit("phold_2e18_r2_10ckpt_slowdown", statistics.median(with_ck) / statistics.median(plain) - 1, "ratio", [])
    emit("phold_2e18_r2_write_each", statistics.median(write), "s", write)
    emit("phold_2e18_r2_size_each", statistics.median(size), "MB", size)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build", "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", choices=["walkers", "phold"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kairos-bench-ck-") as tmp:
        if args.only in (None, "walkers"):
            walkers(args.kairos, args.reps, tmp)
        if args.only in (None, "phold"):
            phold(args.kairos, args.reps, tmp)


if __name__ == "__main__":
    main()
