#!/usr/bin/env python3
"""Frames benchmark (issue 21): what recording costs. Runs
examples/ecology-large.json (240 x 240 cells cut 2 x 1, 100 steps) without
frames and with a frame at every step (`--frames DIR --frame-every 1`),
alternately, on 1 and 2 ranks, and prints one JSON line per case: the
medians of the run's wall time (stats wall_seconds: the run itself, frames
taken inside it) and of the whole command's, the slowdown with frames, and
the recording's size. The checksum must be the same with and without.

    bench/bench_frames.py [--kairos build-rel/kairos] [--reps 5]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from kairos_run import ROOT, run_stats


def timed(kairos, ranks, args):
    t0 = time.monotonic()
    stats = run_stats(kairos, "ecology-large.json", ranks, "null-message", [], args)
    return stats, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build-rel", "kairos"))
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    load = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="kairos-bench-frames-")
    try:
        for ranks in (1, 2):
            plain, framed, plain_cmd, framed_cmd, size = [], [], [], [], 0
            for rep in range(a.reps):
                s0, w0 = timed(a.kairos, ranks, [])
                d = os.path.join(work, f"r{ranks}-{rep}")
                s1, w1 = timed(a.kairos, ranks, ["--frames", d, "--frame-every", "1"])
                if s0["checksum"] != s1["checksum"]:
                    sys.exit("bench_frames: the checksum changed with frames")
                plain.append(s0["wall_seconds"])
                framed.append(s1["wall_seconds"])
                plain_cmd.append(w0)
                framed_cmd.append(w1)
                size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
                frames = len(json.load(open(os.path.join(d, "manifest.json")))["times"])
                shutil.rmtree(d)
            ratios = [f / p for f, p in zip(framed, plain)]
            print(json.dumps({"bench": "frames", "case": f"ecology_large_r{ranks}_every_step", "ranks": ranks,
                              "frames": frames, "run_s_without": statistics.median(plain),
                              "run_s_with": statistics.median(framed), "slowdown": statistics.median(ratios) - 1,
                              "command_s_without": statistics.median(plain_cmd),
                              "command_s_with": statistics.median(framed_cmd), "recording_bytes": size,
                              "bytes_per_frame": size / frames, "ratios": ratios, "load_before": load}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
