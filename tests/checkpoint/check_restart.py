#!/usr/bin/env python3
"""A run restarted from a checkpoint gives exactly the uninterrupted run's
results (docs/checkpoint.md): checksum, state digest, event counts, every
statistic, the series CSV and every event log, byte for byte.

Each case runs the uninterrupted reference on one rank, then a run that
writes checkpoints (on N ranks, one algorithm), then restarts from them (on
M != N ranks, the other algorithm too), and compares the stats as
tests/golden/check_golden.py does (timing and transport figures dropped,
and the run digest, which names the algorithm and mapping), the series and
the event logs. A case may chain restarts: each restart writes checkpoints
of its own, and the next restarts from those.

Usage: check_restart.py KAIROS [MPIRUN] [--case NAME ...]"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "golden"))
from check_golden import differences, strip  # noqa: E402

# The restart changes the run part: algorithm, ranks, mapping.
RUN_PART = {"run_digest", "sync", "mapping", "checkpoints"}

# name: (example, extra arguments, outputs (series, event logs), steps)
# A step is (ranks, sync, restart-from (index of an earlier step's
# checkpoint folder and the checkpoint's name) or None, checkpoint times).
CASES = {
    "phold": ("examples/phold.json", ["--end", "30"], (False, True), [
        (2, "null-message", None, "5,12.5,20"),
        (4, "window", (0, "ckpt-5"), None),
        (1, "null-message", (0, "ckpt-20"), None),
        (3, "window", (0, "ckpt-12.5"), "22"),       # two cycles: 12.5, then 22
        (2, "null-message", (3, "ckpt-22"), None),
    ]),
    "phold_window": ("examples/phold.json", ["--end", "20"], (False, False), [
        (2, "window", None, "7"),
        (1, "null-message", (0, "ckpt-7"), None),
    ]),
    "sqss": ("examples/sqss.json", [], (False, True), [
        (1, "null-message", None, "1000"),
        (2, "window", (0, "ckpt-1000"), None),
    ]),
    "mm1": ("examples/mm1.json", ["--end", "20000"], (False, True), [
        (2, "null-message", None, "3000,9000"),
        (1, "window", (0, "ckpt-3000"), None),
        (4, "null-message", (0, "ckpt-9000"), None),
    ]),
    "rows": ("examples/rows.json", ["--end", "5000"], (False, False), [
        (2, "window", None, "1200"),
        (4, "null-message", (0, "ckpt-1200"), None),
    ]),
    "factory": ("examples/factory.json", [], (False, True), [
        (1, "null-message", None, "900"),
        (2, "window", (0, "ckpt-900"), None),
    ]),
    "walkers": ("examples/walkers.json", [], (True, False), [
        (2, "null-message", None, "15"),
        (1, "window", (0, "ckpt-15"), None),
    ]),
    "ecology": ("examples/ecology.json", [], (True, False), [
        (2, "window", None, "40"),
        (4, "null-message", (0, "ckpt-40"), None),
    ]),
}


def run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{what}: {' '.join(map(str, cmd))} exited {proc.returncode}: {proc.stderr.strip()[:600]}")


def outputs(args, work, tag, series, logs):
    out = ["--quiet", "-o", str(work / f"{tag}.json")]
    if series:
        out += ["--series", str(work / f"{tag}.csv")]
    if logs:
        out += ["--event-log", str(work / f"{tag}.logs")]
    return args + out


def compare(work, tag, ref, series, logs):
    want = strip(json.loads((work / f"{ref}.json").read_text()), True)
    got = strip(json.loads((work / f"{tag}.json").read_text()), True)
    for d in (want, got):
        for k in RUN_PART:
            d.pop(k, None)
    problems = differences(want, got)
    if series and (work / f"{ref}.csv").read_bytes() != (work / f"{tag}.csv").read_bytes():
        problems.append("the series CSV differs")
    if logs:
        a, b = work / f"{ref}.logs", work / f"{tag}.logs"
        names = sorted(p.name for p in a.iterdir())
        if names != sorted(p.name for p in b.iterdir()):
            problems.append(f"event logs: {names} against {sorted(p.name for p in b.iterdir())}")
        for n in names:
            if (b / n).exists() and (a / n).read_bytes() != (b / n).read_bytes():
                problems.append(f"event log {n} differs")
    return problems


def run_case(name, kairos, mpirun, tmp):
    example, extra, (series, logs), steps = CASES[name]
    work = Path(tmp) / name
    work.mkdir()
    base = [str(ROOT / example)] + extra
    run([kairos, "run"] + outputs(base, work, "ref", series, logs), f"{name} reference")
    problems = []
    for i, (ranks, sync, source, at) in enumerate(steps):
        tag = f"step{i}"
        args = base + ["--sync", sync]
        if at:
            args += ["--checkpoint-at", at, "--checkpoint-dir", str(work / f"ck{i}"), "--checkpoint-keep", "0"]
        if source:
            args += ["--restart", str(work / f"ck{source[0]}" / source[1])]
            if logs:
                # the restart goes on with the event logs as they were at its checkpoint
                shutil.copytree(work / f"step{source[0]}.logs", work / f"{tag}.logs")
        cmd = [kairos, "run"] + outputs(args, work, tag, series, logs)
        if ranks > 1:
            cmd = [mpirun, "-np", str(ranks), "--oversubscribe"] + cmd
        run(cmd, f"{name} step {i}")
        problems += [f"step {i} ({ranks} ranks, {sync}{', from ' + source[1] if source else ''}): {p}"
                     for p in compare(work, tag, "ref", series, logs)]
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kairos")
    ap.add_argument("mpirun", nargs="?", default="mpirun")
    ap.add_argument("--case", action="append")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.case or list(CASES):
            try:
                problems = run_case(name, args.kairos, args.mpirun, tmp)
            except Exception as e:  # noqa: BLE001 - one line per failed case
                problems = [str(e)]
            if problems:
                failed += 1
                print(f"FAIL {name}: {len(problems)} differences")
                for p in problems[:20]:
                    print("   ", p)
            else:
                print(f"ok   {name}")
    print(f"{len(args.case or CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
