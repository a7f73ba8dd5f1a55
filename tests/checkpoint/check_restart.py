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

The ckpt_* cases run models of the test plug-in kind of ckpt_plugin.c
(built as libckpt.so): a zero-promise group, sender-side sync-events
carrying entities and pending at the cut, cancels and delays of kept
event keys, and runs ended by a stop inside the model after a checkpoint
or before a later one. They need its path (--plugin); without it they are
skipped.

Usage: check_restart.py KAIROS [MPIRUN] [--plugin LIBCKPT.so] [--case NAME ...]"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "golden"))
from check_golden import differences, run_cases, strip  # noqa: E402

# The restart changes the run part: algorithm, ranks, mapping.
RUN_PART = {"run_digest", "sync", "sync_requested", "mapping", "checkpoints"}

# name: (example, extra arguments, outputs (series, event logs), steps)
# A step is (ranks, sync, restart-from (index of an earlier step's
# checkpoint folder and the checkpoint's name) or None, checkpoint times[,
# more arguments of its own[, False: a step whose results are not the
# reference's (a shorter run whose checkpoint a longer one goes on from)]]).
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
    # The end time is part of the run: a checkpoint of a shorter run goes on
    # to a later end, as if the run had always been the longer one (a
    # continuous simulator's last update point moves to the new end; the
    # regions' last step changes).
    "factory_extend": ("examples/factory.json", [], (False, True), [
        (2, "null-message", None, "900", ["--end", "1800"], False),
        (1, "window", (0, "ckpt-900"), None),
    ]),
    "walkers_extend": ("examples/walkers.json", [], (True, False), [
        (1, "null-message", None, "8", ["--end", "12"], False),
        (2, "window", (0, "ckpt-8"), None),
    ]),
    # A continuous simulator integrates ahead to the next event while it
    # waits; when that is the end of the checkpointing run, a restart
    # with another end goes back to where its last event left it (its
    # state was integrated to 1001, or 999.5, which the run with the other
    # end never stops at).
    "factory_extend_from_the_end": ("examples/factory.json", [], (False, True), [
        (1, "null-message", None, "1001", ["--end", "1001"], False),
        (2, "window", (0, "ckpt-1001"), None),
        (1, "window", None, "999.3", ["--end", "999.5"], False),
        (2, "null-message", (2, "ckpt-999.3"), None),
    ]),
    # The dependencies listed in another order are the same model: a restart
    # from a checkpoint of the file's order goes on (it was refused as "a
    # promise" of another model).
    "factory_dependencies_reordered": ("examples/factory.json", [], (False, True), [
        (1, "null-message", None, "900"),
        (2, "window", (0, "ckpt-900"), None, ["--set", "dependencies=" + json.dumps([
            {"from": "TransportRobots", "to": "ChemicalBath", "promise": 2},
            {"from": "AssemblyLine", "to": "TransportRobots", "promise": 0}])]),
    ]),
    "factory_shorten": ("examples/factory.json", ["--end", "999.5"], (False, True), [
        (2, "window", None, "999.3", ["--end", "3600"], False),
        (1, "null-message", (0, "ckpt-999.3"), None),
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

# A stop and sender sides: a sync-event with a sender side at a time at or
# past its sender's stop horizon but below its target's never happens (its
# sender side never runs, its target half is withdrawn: schedulers/stop.c);
# before that fix the uninterrupted run ended in a deadlock (exit 3), which
# the cases ckpt_stop_sender_side* show. The other stop cases avoid it: a
# stop lookahead (0.5) below every distance from the stopper gives every
# other simulator the same horizon, and the stopper b itself (horizon: its
# stop time) sends no sender sides.
STOP_SAFE = ["--set", "stop_lookahead=0.5", "--set", "simulators.1.params.sender_side=0"]

# Models of the test plug-in kind (ckpt_plugin.c); its path replaces their
# "plugins" (--set), so the .so may live in any build folder.
PLUGIN_CASES = {
    # a zero-promise group {a, b, c} on one rank, among two others; two
    # cycles (7.5, then 30 from the restart), and back to one rank; on 4
    # ranks round-robin puts {a, b, c} and e on rank 0, d on rank 3 and
    # leaves ranks 1 and 2 idle (check_window_rr.py runs that case alone)
    "ckpt_group": ("tests/checkpoint/ckpt_group.json", [], (False, True), [
        (2, "null-message", None, "7.5,21"),
        (4, "window", (0, "ckpt-7.5"), "30"),
        (1, "null-message", (1, "ckpt-30"), None),
        (1, "window", (0, "ckpt-21"), None),
        (2, "window", (0, "ckpt-7.5"), None),
    ]),
    # the group's own member b stops the run at its first tick after 26:
    # inside the group the run ends right after b's event
    # (stop lookahead 0.25 below every distance out of the group, and no
    # sender sides from a and c, which have edges out of it: see STOP_SAFE)
    "ckpt_group_stop": ("tests/checkpoint/ckpt_group.json",
                        ["--set", "simulators.1.params.stop_at=26", "--set", "stop_lookahead=0.25",
                         "--set", "simulators.0.params.sender_side=0", "--set", "simulators.2.params.sender_side=0"],
                        (False, True), [
        (4, "window", None, "13,25.5"),
        (1, "null-message", (0, "ckpt-13"), None),
        (2, "null-message", (0, "ckpt-25.5"), None),
        (2, "window", (0, "ckpt-25.5"), None),
    ]),
    # mostly sender-side sync-events carrying parcels; b stops the run at
    # its first tick after 30, after the checkpoints at 12 and 24; the
    # restart from 24 asks for one at 40, which the stop comes before
    "ckpt_stop_after": ("tests/checkpoint/ckpt_ring.json", ["--set", "simulators.1.params.stop_at=30"] + STOP_SAFE,
                        (False, True), [
        (1, "null-message", None, "12,24"),
        (4, "window", (0, "ckpt-12"), None),
        (2, "null-message", (0, "ckpt-24"), "40"),
        (4, "window", (0, "ckpt-24"), None),
        (1, "window", (2, "ckpt-40"), None),      # written after the stop: it holds the stopped run
    ]),
    # b stops the run at its first tick after 15, before the later
    # checkpoint time 25 (every simulator has ended by 15.5)
    "ckpt_stop_before": ("tests/checkpoint/ckpt_ring.json", ["--set", "simulators.1.params.stop_at=15"] + STOP_SAFE,
                         (False, True), [
        (2, "window", None, "8,25"),
        (1, "null-message", (0, "ckpt-8"), None),
        (4, "null-message", (0, "ckpt-8"), None),
        (4, "window", (0, "ckpt-25"), None),      # written after the stop: it holds the stopped run
    ]),
    # sender sides past their sender's horizon (see STOP_SAFE): b stops at
    # its first tick after 30 (horizons 30.662 to 32.662), checkpoints
    # before the stop (12) and after it, while a, c and d still run (31)
    "ckpt_stop_sender_side": ("tests/checkpoint/ckpt_ring.json", ["--set", "simulators.1.params.stop_at=30"],
                              (False, True), [
        (1, "null-message", None, "12,31"),
        (2, "window", (0, "ckpt-12"), None),
        (4, "null-message", (0, "ckpt-12"), None),
        (3, "window", (0, "ckpt-31"), None),
        (2, "null-message", (0, "ckpt-31"), None),
    ]),
    # the same stopping at 15, without a stop lookahead (so the null-message
    # algorithm runs it too): the horizons are the promise distances from b
    "ckpt_stop_sender_side_15": ("tests/checkpoint/ckpt_ring_free.json", ["--set", "simulators.1.params.stop_at=15"],
                                 (False, True), [
        (2, "null-message", None, "8,16"),
        (1, "window", (0, "ckpt-8"), None),
        (4, "null-message", (0, "ckpt-16"), None),
    ]),
    # no stop: two cycles on 2 -> 4 -> 1 ranks
    # A region kind with no serialize of its own: the runtime saves its
    # region (its restarts went on from a field of zeros, exit 0).
    "ckpt_field": ("tests/checkpoint/ckpt_field.json", [], (False, False), [
        (2, "null-message", None, "7,13.5"),
        (1, "window", (0, "ckpt-7"), None),
        (4, "null-message", (0, "ckpt-13.5"), None),
    ]),
    # entities made by setup whose on_destroy counts in the declared state:
    # a restart counted them destroyed (the checksum differed)
    "ckpt_tokens": ("tests/checkpoint/ckpt_ring.json",
                    ["--set", "simulators.0.params.tokens=5", "--set", "simulators.2.params.tokens=3"],
                    (False, False), [
        (2, "null-message", None, "10.25"),
        (1, "window", (0, "ckpt-10.25"), None),
        (4, "null-message", (0, "ckpt-10.25"), None),
    ]),
    "ckpt_ring": ("tests/checkpoint/ckpt_ring.json", [], (False, True), [
        (2, "null-message", None, "10.25"),
        (4, "window", (0, "ckpt-10.25"), "27"),
        (1, "window", (1, "ckpt-27"), None),
        (2, "null-message", (1, "ckpt-27"), None),
    ]),
}


OPT_IN = set()  # cases run only when named (none now)


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


def run_case(name, kairos, mpirun, tmp, plugin):
    example, extra, (series, logs), steps = CASES[name] if name in CASES else PLUGIN_CASES[name]
    work = Path(tmp) / name
    work.mkdir()
    base = [str(ROOT / example)] + extra
    if name in PLUGIN_CASES:
        base += ["--set", "plugins=" + json.dumps([str(Path(plugin).resolve())])]
    run([kairos, "run"] + outputs(base, work, "ref", series, logs), f"{name} reference")
    problems = []
    for i, (ranks, sync, source, at, *own) in enumerate(steps):
        tag = f"step{i}"
        args = base + ["--sync", sync] + (own[0] if own else [])
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
        if len(own) > 1 and not own[1]:
            continue
        problems += [f"step {i} ({ranks} ranks, {sync}{', from ' + source[1] if source else ''}): {p}"
                     for p in compare(work, tag, "ref", series, logs)]
        got = json.loads((work / f"{tag}.json").read_text())
        if source and got["events"] and got["events_per_second"] * got["wall_seconds"] > got["events"] - 0.5:
            # (a restart's rate counts only its own events: those before the cut ran in another process)
            problems.append(f"step {i}: events_per_second x wall_seconds counts the events before the restart "
                            f"({got['events_per_second']} x {got['wall_seconds']} for {got['events']} events)")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kairos")
    ap.add_argument("mpirun", nargs="?", default="mpirun")
    ap.add_argument("--plugin", help="libckpt.so, for the ckpt_* cases")
    ap.add_argument("--case", action="append", choices=list(CASES) + list(PLUGIN_CASES))
    args = ap.parse_args()
    names = args.case or [n for n in list(CASES) + list(PLUGIN_CASES) if n not in OPT_IN]
    if not args.plugin:
        skipped = [n for n in names if n in PLUGIN_CASES]
        if skipped:
            print(f"skip {', '.join(skipped)}: no --plugin")
        names = [n for n in names if n not in PLUGIN_CASES]
    return run_cases(names, lambda name, tmp: run_case(name, args.kairos, args.mpirun, tmp, args.plugin))


if __name__ == "__main__":
    sys.exit(main())
