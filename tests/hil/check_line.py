#!/usr/bin/env python3
"""The hardware-in-the-loop line with its in-model controller
(examples/hil/line-simulated.json, models/hil/line.c): the belt's books
balance, parts freeze while the belt is stopped, the controller stops and
restarts it, diverts that come too late are counted as such, and the
checksum is the same on 1, 2 and 3 ranks, with both algorithms, and after
a restart from a checkpoint taken while the belt stood still.

Usage: check_line.py KAIROS MPIRUN"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LINE = str(ROOT / "examples" / "hil" / "line-simulated.json")
# Heavier spread: about a third of the parts are rejected, so three in a
# row happen and the belt stops a few times in 600 s.
WIDE = ["--set", "simulators.feeder.params.weight_sd=8"]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(kairos, mpirun, ranks, args, cwd):
    """Runs kairos; returns (exit status, stats or None, stderr)."""
    stats = Path(cwd) / "stats.json"
    if stats.exists():
        stats.unlink()
    cmd = [kairos, "run", LINE, "--quiet", "--stats", str(stats), *args]
    if ranks > 1:
        cmd = [mpirun, "-np", str(ranks), "--oversubscribe", *cmd]
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    return r.returncode, json.loads(stats.read_text()) if r.returncode == 0 else None, r.stderr.strip()


def sims(stats):
    return {s["name"]: s["stats"] for s in stats["simulators"]}


def events(log_dir, sim, kind):
    """Times (ticks) of the events of type `kind` that ran in `sim`."""
    lines = (Path(log_dir) / f"{sim}.jsonl").read_text().splitlines()
    return [e["time"] for e in map(json.loads, lines) if e["type"] == kind]


def main():
    kairos, mpirun = str(Path(sys.argv[1]).resolve()), sys.argv[2]
    work = Path(tempfile.mkdtemp(prefix="kairos-hil-"))
    try:
        rc, base, err = run(kairos, mpirun, 1, [], work)
        check(rc == 0, f"the simulated line runs ({err})")
        if rc != 0:
            return 1
        s = sims(base)
        feeder, belt, ctl = s["feeder"], s["belt"], s["controller"]
        check(feeder["made"] == 193 and belt["parts_in"] == 192, "193 parts made, 192 on the belt by 600 s")
        check((belt["good"], belt["rejected"]) == (176, 15), f"176 good, 15 rejected ({belt['good']}, {belt['rejected']})")
        check(belt["rejected"] == belt["diverts"] and belt["late_diverts"] == 0,
              "every divert arrives before its part reaches the diverter")
        check(belt["readings"] == ctl["readings"] and ctl["diverts"] == belt["diverts"],
              "the controller saw every reading and diverted the parts out of band")
        check(ctl["stops"] == 0 and belt["stops"] == 0, "weight_sd 4: never three rejects in a row")

        rc, wide, err = run(kairos, mpirun, 1, WIDE + ["--event-log", "ev"], work)
        check(rc == 0, f"weight_sd 8 runs ({err})")
        w = sims(wide)
        wb, wc = w["belt"], w["controller"]
        check(wc["stops"] >= 2 and wb["stops"] == wc["stops"] and wb["starts"] == wc["starts"],
              f"the controller stops and restarts the belt ({wc['stops']} stops, {wc['starts']} starts)")
        check(wb["good"] + wb["rejected"] <= wb["parts_in"] <= wb["good"] + wb["rejected"] + 20,
              "parts in = good + rejected + the few still on the belt")
        # Frozen parts: nothing reaches the sensor while the belt stands
        # (a reading arrives 0.1 s after the sensor; precision 1000).
        stops, starts = events(work / "ev", "belt", "stop"), events(work / "ev", "belt", "start")
        readings = events(work / "ev", "controller", "reading")
        frozen = all(not any(a + 100 < r <= b for r in readings) for a, b in zip(stops, starts))
        check(len(stops) == len(starts) and frozen, "no reading while the belt is stopped")
        check(all(b - a >= 20000 for a, b in zip(stops, starts)), "a restart comes restart_after (20 s) or more after the stop")
        moved = events(work / "ev", "belt", "hil.move")
        check(all(r - 100 in moved for r in readings), "every reading left the sensor at a move of the belt")

        # A diverter closer to the sensor than the controller can answer
        # (0.1 s there, 0.5 s back): every divert is late, nothing rejected.
        rc, late, err = run(kairos, mpirun, 1, WIDE + ["--set", "simulators.belt.params.divert_time=0.3"], work)
        lb, lc = sims(late)["belt"] if late else {}, sims(late)["controller"] if late else {}
        check(rc == 0 and lb["rejected"] == 0 and lb["diverts"] == 0 and lb["late_diverts"] > 0
              and lb["late_diverts"] <= lc["diverts"], "diverts after the part left are counted late")

        want = wide["checksum"]
        for ranks, args, what in ((2, [], "2 ranks"), (3, [], "3 ranks"), (2, ["--sync", "window"], "2 ranks, window"),
                                  (1, ["--sync", "window"], "1 rank, window"),
                                  (3, ["--sync", "null-message"], "3 ranks, null messages")):
            rc, st, err = run(kairos, mpirun, ranks, WIDE + args, work)
            check(rc == 0 and st["checksum"] == want, f"{what}: the same checksum ({err})")
        rc, st, err = run(kairos, mpirun, 2, [], work)
        check(rc == 0 and st["checksum"] == base["checksum"], "weight_sd 4 on 2 ranks: the same checksum")

        # Checkpoints while the belt runs and while it stands (the first stop
        # is before 100 s), then restarts on other rank counts.
        first_stop = stops[0] / 1000
        at = [first_stop + 1, 300]
        rc, st, err = run(kairos, mpirun, 2, WIDE + ["--checkpoint-at", ",".join(f"{t:g}" for t in at),
                                                     "--checkpoint-keep", "0"], work)
        check(rc == 0 and st["checksum"] == want, f"checkpoints change nothing ({err})")
        dirs = sorted(p for p in (work / "checkpoints").iterdir() if p.is_dir())
        check(len(dirs) == 2, f"two checkpoints written ({[d.name for d in dirs]})")
        for d, ranks in zip(dirs, (1, 3)):
            rc, st, err = run(kairos, mpirun, ranks, WIDE + ["--restart", str(d)], work)
            check(rc == 0 and st["checksum"] == want, f"restart from {d.name} on {ranks} rank(s): the same checksum ({err})")

        rc, _, err = run(kairos, mpirun, 1, ["--set", "simulators.belt.params.sensor_time=0"], work)
        check(rc == 2 and "simulators[1].params.sensor_time: expected" in err, f"a zero sensor_time is refused ({err})")
        rc, _, err = run(kairos, mpirun, 1, ["--set", "simulators.controller.params.belt=feeder"], work)
        check(rc == 2 and "params.belt" in err, "the controller's belt must be a simulator it depends on")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
