#!/usr/bin/env python3
"""Safe-point benchmark (issue 19): what the safe points of fa54bde cost a
run without checkpoints. Since fa54bde every rank stops together about
once a second of wall time (runtime/safe_point.c: a cut, then two
MPI_Allreduce), where before a run without checkpoints ran straight to its
end. Two kairos binaries, one built before the safe points (--old) and one
after (--new), run the same cases interleaved (old, new, new, old, ...,
--reps times each); one JSON line per case (bench/README.md): the medians
of the stats file's wall_seconds (the run proper, building the model
excluded) and of the whole process's wall time (mpirun included), their
ratios new/old, and the runs. The checksums of old and new must agree
(the script stops otherwise).

The machine is shared: before each run the script waits (at most
--idle-wait seconds) until the CPUs are idle, and records each run's cpu
share (CPU time of its processes over ranks x wall time: about 1 when each
rank had a core to itself, since waiting ranks spin; lower when another
program took a core during the run).

Cases: examples/phold.json (end 2000) on 1 rank, and on 2 ranks with
--sync null-message and --sync window; examples/ecology-large.json on 2
ranks (null-message). Multi-rank runs use mpirun with btl self,vader and
no single-copy (the environment below).

safe_points: kairos counts none, so one extra, untimed run of --new per
case under gdb counts the calls of kr__run_safe_point (rank 0; every rank
stops at the same ones). The spacing follows the wall clock (the first at
1/4096 of the model time, then up to 4 times the last stretch until one
is about a second), so the count moves a little from run to run; skipped
without gdb or with --no-count.

callgrind: both binaries on examples/phold.json --end 200, 1 rank, the
total Ir of each (the "summary:"/"totals:" line) and the ratio new/old,
and the calls of kr__run_safe_point in the new one (more than in a native
run: callgrind is about 50 times slower, and the spacing is wall time);
skipped with --no-callgrind.

    bench/bench_safe_points.py --old OLD/kairos --new NEW/kairos [--reps 5] [--only SUBSTRING ...]
        [--no-count] [--no-callgrind] [--callgrind-end 200]
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

from kairos_run import ROOT, wait_idle

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
           OMPI_MCA_btl_vader_single_copy_mechanism="none")

# (case, example, ranks, sync)
CASES = [("phold_r1", "phold.json", 1, "null-message"),
         ("phold_r2_null_message", "phold.json", 2, "null-message"),
         ("phold_r2_window", "phold.json", 2, "window"),
         ("ecology_large_r2", "ecology-large.json", 2, "null-message")]

GDB_COUNT = """set pagination off
set confirm off
break kr__run_safe_point
commands 1
silent
continue
end
run
info breakpoints
"""


def command(kairos, example, ranks, sync, out, extra=()):
    cmd = [kairos, "run", os.path.join(ROOT, "examples", example), "-o", out, "--quiet", "--sync", sync] + list(extra)
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks)] + cmd
    return cmd


def run_once(kairos, example, ranks, sync, tmp):
    """One run: (stats wall_seconds, process wall seconds, checksum, cpu
    share). The cpu share is the CPU time of the run's processes over ranks x
    its wall time: about 1 when every rank had a core to itself (waiting
    ranks spin, docs/cli.md KAIROS_WAIT), less when something else ran."""
    out = os.path.join(tmp, "stats.json")
    if os.path.exists(out):
        os.unlink(out)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(command(kairos, example, ranks, sync, out), check=True, env=ENV, stdout=subprocess.DEVNULL)
    proc = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    with open(out) as f:
        s = json.load(f)
    return s["wall_seconds"], proc, s["checksum"], cpu / (ranks * proc)


def count_safe_points(kairos, example, ranks, sync, tmp):
    """Calls of kr__run_safe_point on rank 0 in one run under gdb, or None."""
    if not shutil.which("gdb"):
        return None
    script = os.path.join(tmp, "count.gdb")
    with open(script, "w") as f:
        f.write(GDB_COUNT)
    gdb = ["gdb", "-q", "-batch", "-x", script, "--args"]
    cmd = command(kairos, example, ranks, sync, os.path.join(tmp, "count.json"))
    cmd = cmd[:3] + gdb + cmd[3:] if ranks > 1 else gdb + cmd
    r = subprocess.run(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hits = [int(n) for n in re.findall(r"breakpoint already hit (\d+) time", r.stdout)]
    return max(hits) if hits else 0


def median_ratio(new, old):
    return statistics.median(new) / statistics.median(old)


def case(name, example, ranks, sync, a, tmp, load):
    runs = {"old": [], "new": []}
    procs = {"old": [], "new": []}
    shares = {"old": [], "new": []}
    waited, not_idle = 0.0, 0
    checksum = None
    for rep in range(a.reps):
        order = ("old", "new") if rep % 2 == 0 else ("new", "old")
        for which in order:
            if a.idle_wait > 0:
                w = wait_idle(a.idle_wait)
                waited += w
                not_idle += w >= a.idle_wait
            wall, proc, ck, share = run_once(getattr(a, which), example, ranks, sync, tmp)
            if checksum is None:
                checksum = ck
            assert ck == checksum, "%s: %s run %d has checksum %s, not %s" % (name, which, rep, ck, checksum)
            runs[which].append(wall)
            procs[which].append(proc)
            shares[which].append(share)
    sp = None if a.no_count else count_safe_points(a.new, example, ranks, sync, tmp)
    paired = [n / o for n, o in zip(runs["new"], runs["old"])]
    r4 = lambda xs: [round(x, 4) for x in xs]
    print(json.dumps({
        "bench": "safe_points", "case": name, "value": round(median_ratio(runs["new"], runs["old"]), 4),
        "unit": "new/old wall_seconds", "example": example, "ranks": ranks, "sync": sync,
        "old": round(statistics.median(runs["old"]), 4), "new": round(statistics.median(runs["new"]), 4),
        "paired_ratio_median": round(statistics.median(paired), 4),
        "process_old": round(statistics.median(procs["old"]), 4),
        "process_new": round(statistics.median(procs["new"]), 4),
        "process_ratio": round(median_ratio(procs["new"], procs["old"]), 4),
        "safe_points": sp, "checksum": checksum, "checksums_agree": True, "reps": a.reps,
        "old_runs": r4(runs["old"]), "new_runs": r4(runs["new"]),
        "old_cpu_share": [round(x, 2) for x in shares["old"]], "new_cpu_share": [round(x, 2) for x in shares["new"]],
        "idle_waited_s": round(waited, 1), "runs_started_not_idle": not_idle,
        "load_before": round(load, 2)}), flush=True)


def callgrind_out(path):
    """(total Ir, calls of kr__run_safe_point) of one callgrind output file."""
    total, calls, names, target = None, 0, {}, False
    with open(path) as f:
        for line in f:
            m = re.match(r"(summary|totals): (\d+)", line)
            if m:
                total = int(m.group(2)) if total is None or m.group(1) == "summary" else total
                continue
            m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2).strip()
                target = names.get(m.group(1)) == "kr__run_safe_point"
                continue
            m = re.match(r"fn=\((\d+)\)(?: (.*))?", line)
            if m and m.group(2):
                names[m.group(1)] = m.group(2).strip()
            if line.startswith("calls=") and target:
                calls += int(line.split("=")[1].split()[0])
                target = False
    return total, calls


def callgrind(name, a, tmp):
    ir, cks, sp = {}, {}, None
    cmd = None
    for which in ("old", "new"):
        out, stats = os.path.join(tmp, "cg.%s.out" % which), os.path.join(tmp, "cg.%s.json" % which)
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, getattr(a, which), "run",
               os.path.join(ROOT, "examples", "phold.json"), "--end", str(a.callgrind_end), "--quiet", "-o", stats]
        subprocess.run(cmd, check=True, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ir[which], calls = callgrind_out(out)
        with open(stats) as f:
            cks[which] = json.load(f)["checksum"]
        if which == "new":
            sp = calls
    assert cks["old"] == cks["new"], "callgrind: checksums differ: %s" % cks
    print(json.dumps({
        "bench": "safe_points", "case": name,
        "value": round(ir["new"] / ir["old"], 6), "unit": "new/old Ir", "old_ir": ir["old"], "new_ir": ir["new"],
        "safe_points": sp, "checksum": cks["new"], "checksums_agree": True,
        "cmd": "valgrind --tool=callgrind KAIROS run examples/phold.json --end %g --quiet -o FILE" % a.callgrind_end}),
        flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="kairos built before the safe points (6be5e1e)")
    ap.add_argument("--new", required=True, help="kairos built with them (fa54bde or later)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=[], help="run only cases whose name contains one of these")
    ap.add_argument("--no-count", action="store_true", help="no gdb run to count the safe points")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--callgrind-end", type=float, default=200)
    ap.add_argument("--idle-wait", type=float, default=300,
                    help="before each run, wait at most this many seconds for idle CPUs (0: do not wait)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kairos-bench-sp-") as tmp:
        for name, example, ranks, sync in CASES:
            if a.only and not any(o in name for o in a.only):
                continue
            case(name, example, ranks, sync, a, tmp, os.getloadavg()[0])
        cg_name = "phold_r1_end%g_callgrind" % a.callgrind_end
        if not a.no_callgrind and (not a.only or any(o in cg_name for o in a.only)):
            callgrind(cg_name, a, tmp)


if __name__ == "__main__":
    main()
