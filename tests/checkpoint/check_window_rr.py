#!/usr/bin/env python3
"""The window algorithm on 4 ranks with round-robin mapping never reports a
deadlock that is not there (a regression test).

ckpt_group.json mapped round-robin on 4 ranks puts the zero-promise group
{a, b, c} and e on rank 0, d on rank 3, and leaves ranks 1 and 2 idle.
A round's reduction counts, for each group, the earliest message sent to it
since the last round; a sender-side event's PAYLOAD is often delivered and
run within the same round, so that time lowers the round's minima below any
real next time and nothing runs under its bounds. The round after it then
saw "nothing changed" on every rank and reported a deadlock
("'e' (now 5.625) has an event at 5.726 held by bound 6.326 from 'd'"),
although its own minima gave higher bounds: before the fix, each run to 200
ended so almost every time (and about one run in three to the model's 40).

Each run must exit 0 with the events and checksum of the one-process
reference run (null-message algorithm).

Usage: check_window_rr.py KAIROS MPIRUN --plugin LIBCKPT.so [--runs N] [--end T]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
MODEL = ROOT / "tests" / "checkpoint" / "ckpt_group.json"
# Open MPI's settings of tests/mpi/meson.build, unless the caller set them
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def run(cmd, out):
    proc = subprocess.run(cmd + ["--quiet", "-o", str(out)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if l.startswith("kairos")]
        return f"exit {proc.returncode}: {(lines[0] if lines else proc.stderr.strip())[:600]}"
    d = json.loads(out.read_text())
    return (d["events"], d["checksum"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kairos")
    ap.add_argument("mpirun")
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--end", default="200")
    a = ap.parse_args()
    for k, v in MPI_ENV.items():
        os.environ.setdefault(k, v)
    base = [str(MODEL), "--set", f'plugins=["{a.plugin}"]', "--end", a.end]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ref = run([a.kairos, "run"] + base + ["--sync", "null-message"], work / "ref.json")
        if not isinstance(ref, tuple):
            print(f"FAIL: the one-process reference run: {ref}")
            return 1
        failed = 0
        for i in range(a.runs):
            got = run([a.mpirun, "-np", "4", a.kairos, "run"] + base +
                      ["--sync", "window", "--set", "mapping=round-robin"], work / f"run{i}.json")
            if got != ref:
                failed += 1
                print(f"FAIL: window run {i + 1} on 4 ranks (round-robin): {got}, expected {ref}")
        print(f"{a.runs - failed} of {a.runs} window runs on 4 ranks gave the reference's {ref[0]} events, "
              f"checksum {ref[1]}")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
