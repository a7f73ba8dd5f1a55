#!/usr/bin/env python3
"""Long jobs (docs/cluster.md): a run stopped by --stop-before-wall, by
SIGUSR1, or by SIGTERM with --checkpoint-on-term checkpoints at a safe
point and exits 4 on every rank; restarted from its folder, on another
number of ranks and with the other algorithm, it gives the uninterrupted
run's results (compared as tests/checkpoint/check_restart.py does). The
same for replications and a sweep, whose checkpoint keeps the finished
replications. And the progress line a batch log gets: written when
stderr is not a terminal, at the period --progress sets, none with 0. A
SIGUSR1 whose checkpoint cannot be written is said and the run goes on.

Signals are sent once the run has written its first progress line (so it
is running, past its start-up); each rank's own exit status is recorded
by tests/cli/rank_status.sh.

Usage: check_long_jobs.py KAIROS MPIRUN [--case NAME ...]"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "golden"))
from check_golden import differences, run_cases, strip  # noqa: E402

RANK_STATUS = ROOT / "tests" / "cli" / "rank_status.sh"
RUN_PART = {"run_digest", "sync", "sync_requested", "mapping", "checkpoints"}
# stats of replications that name the ranks, groups or time
REPLICATION_RUN_PART = {"ranks", "groups", "group_ranks", "wall_seconds", "sync", "sync_requested"}

# name: (model, (ranks, sync) stopped, how, (ranks, sync) restarted)
# The models run for some seconds of wall time whatever the build's speed
# (model_args): a sanitizer build, where this test is run by hand only
# (tests/meson.build), runs them some ten times slower than -O2, and at
# fixed end times the test took some 8 minutes there.
# (The SIGTERM cases run longer: mpirun passes SIGTERM on TERM_DELAY s
# late, and a run must still be going then. Each model's uninterrupted
# reference runs once, on 2 ranks: the results are those of 1 rank,
# tests/golden checks it.)
CASES = {
    "phold_stop_before_wall": ("phold", (2, "null-message"), "wall", (3, "window")),
    "phold_usr1": ("phold", (2, "window"), "usr1", (1, "null-message")),
    "phold_term": ("phold_long", (2, "null-message"), "term", (4, "window")),
    "ecology_stop_before_wall": ("ecology", (2, "window"), "wall", (1, "null-message")),
    "ecology_usr1": ("ecology", (1, "null-message"), "usr1", (2, "window")),
    "ecology_term": ("ecology_long", (2, "null-message"), "term", (4, "window")),
}
# model: (file, seconds of a run on 2 ranks, end time at least, at most).
# (replica: one of the replications or a sweep's runs, 6 of them in a run,
# two at a time; the first pair must be done before the signal, the last
# not.)
MODELS = {
    "phold": ("examples/phold.json", 4, 100, 5000),
    "phold_long": ("examples/phold.json", 12, 200, 10000),
    "replica": ("examples/phold.json", 1.5, 20, 200),
    "ecology": ("examples/ecology-large.json", 4, 20, 1000),
    "ecology_long": ("examples/ecology-large.json", 12, 40, 2000),
}
# (the calibration's end time for each file)
PROBE = {"examples/phold.json": 50, "examples/ecology-large.json": 10}
# Open MPI 4's mpirun, given SIGTERM, waits this long, signals the ranks
# (here the shell of rank_status.sh, which passes it on), and kills them as
# long after that (docs/cluster.md). A rank of a sanitizer build, on a
# loaded machine, took more than 2 s to write its checkpoint and exit.
TERM_DELAY = 4
RATES = {}
REFERENCES = {}
OTHER = ["checkpoint_wall", "replications", "sweep", "progress", "far_end", "usr1_unwritable"]


def launch(kairos, mpirun, ranks, args, work, tag, extra_mpirun=()):
    """Starts kairos under mpirun (every rank's status to work/tag.ranks)."""
    rank_dir = work / f"{tag}.ranks"
    rank_dir.mkdir()
    env = dict(os.environ, KAIROS_BIN=str(kairos), KAIROS_RANK_DIR=str(rank_dir), KAIROS_RANK_FORWARD_TERM="1")
    cmd = [mpirun, "-np", str(ranks), "--oversubscribe", *extra_mpirun, "bash", str(RANK_STATUS), *args]
    err = open(work / f"{tag}.err", "w")
    return subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err), rank_dir


def wait_for_progress(proc, work, tag, what):
    """Until the run's stderr has a progress line; False if it ended first."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if "kairos: progress:" in (work / f"{tag}.err").read_text():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.02)
    raise RuntimeError(f"{what}: no progress line in 60 s")


def statuses(rank_dir, ranks):
    return [(rank_dir / f"status.{r}").read_text().strip() if (rank_dir / f"status.{r}").exists() else "none"
            for r in range(ranks)]


def stop(kairos, mpirun, ranks, args, work, tag, how):
    """Runs and stops by `how`; the problems found (exit status, output)."""
    args = list(args) + ["--checkpoint-dir", str(work / "ck")]
    extra_mpirun = ()
    if how == "wall":
        # measured from the start of each rank: the first safe point after
        # 0.2 s, as the next stretch (1 s) and a first checkpoint (guessed
        # at 1 s) would not fit
        args += ["--stop-before-wall", "2.2"]
    else:
        args += ["--progress", "0.05"]
    if how == "term":
        args += ["--checkpoint-on-term"]
        extra_mpirun = ("--mca", "odls_base_sigkill_timeout", str(TERM_DELAY))
    proc, rank_dir = launch(kairos, mpirun, ranks, args, work, tag, extra_mpirun)
    if how != "wall":
        if not wait_for_progress(proc, work, tag, tag):
            return [f"the run ended before it could be signalled: {(work / f'{tag}.err').read_text()[-300:]}"]
        proc.send_signal(signal.SIGUSR1 if how == "usr1" else signal.SIGTERM)
    proc.wait(timeout=300)
    err = (work / f"{tag}.err").read_text()
    problems = []
    got = statuses(rank_dir, ranks)
    if got != ["4"] * ranks:
        problems.append(f"exit statuses {got}, expected 4 on every rank: {err.strip()[-400:]}")
    said = [line for line in err.splitlines() if line.startswith("kairos: ") and "checkpointed" in line]
    if len(said) != 1 or "not finished; go on with --restart" not in said[0]:
        problems.append(f"expected one line saying checkpointed, not finished, found: {said or err[-300:]}")
    if (work / f"{tag}.json").exists() or (work / f"{tag}.json.partial").exists():
        problems.append("a stopped run left a stats file")
    return problems


def run_ok(cmd, work, what):
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{what}: {' '.join(map(str, cmd))} exited {proc.returncode}: {proc.stderr.strip()[:600]}")
    return proc


# Waiting ranks sleep instead of spinning (the CI machine has 2 cores).
os.environ["KAIROS_WAIT"] = "sleep"


def mpi(mpirun, ranks, cmd):
    return [mpirun, "-np", str(ranks), "--oversubscribe"] + cmd if ranks > 1 else cmd


def compare(want_path, got_path, run_part):
    want = strip(json.loads(want_path.read_text()), True)
    got = strip(json.loads(got_path.read_text()), True)
    for d in (want, got):
        for k in run_part:
            d.pop(k, None)
    return differences(want, got)


def model_args(name, kairos, mpirun, tmp):
    """A model's file and --end: as far as 2 ranks of this build get in the
    model's seconds (from a short run's model time per second of wall time,
    measured once), within the model's bounds."""
    path, seconds, least, most = MODELS[name]
    probe = PROBE[path]
    if path not in RATES:
        work = Path(tmp) / "calibration"
        work.mkdir(exist_ok=True)
        out = work / (Path(path).stem + ".json")
        run_ok(mpi(mpirun, 2, [kairos, "run", str(ROOT / path), "--end", str(probe), "--quiet", "-o", str(out)]),
               work, f"calibration of {path}")
        RATES[path] = probe / max(1e-3, json.loads(out.read_text())["wall_seconds"])
        print(f"     {path}: {RATES[path]:.4g} model time a second on 2 ranks")
    end = int(min(most, max(least, RATES[path] * seconds)))
    return [str(ROOT / path), "--end", str(end)]


def run_case(name, kairos, mpirun, tmp):
    model, (ranks, sync), how, (again, sync2) = CASES[name]
    work = Path(tmp) / name
    work.mkdir()
    base = model_args(model, kairos, mpirun, tmp)
    ref = REFERENCES.get(tuple(base))
    if not ref:
        ref = REFERENCES[tuple(base)] = work / "ref.json"
        run_ok(mpi(mpirun, 2, [kairos, "run", *base, "--quiet", "-o", str(ref)]), work, f"{name} reference")
    problems = stop(kairos, mpirun, ranks, ["run", *base, "--sync", sync, "-o", str(work / "stopped.json")],
                    work, "stopped", how)
    if problems:
        return problems
    run_ok(mpi(mpirun, again, [kairos, "run", *base, "--sync", sync2, "--quiet", "-o", str(work / "restart.json"),
                               "--restart", str(work / "ck")]), work, f"{name} restart")
    return [f"restarted on {again} ranks ({sync2}): {p}" for p in compare(ref, work / "restart.json", RUN_PART)]


def run_replications(kairos, mpirun, tmp, sweep):
    name = "sweep" if sweep else "replications"
    work = Path(tmp) / name
    work.mkdir()
    model = model_args("replica", kairos, mpirun, tmp)
    if sweep:
        cmd = ["sweep", *model, "--vary", "simulators.phold.params.remote=[0.1,0.25,0.5]", "--replications", "2"]
        out = lambda tag: ["-o", str(work / f"{tag}.csv")]  # noqa: E731
    else:
        cmd = ["run", *model, "--replications", "6"]
        out = lambda tag: ["-o", str(work / f"{tag}.json")]  # noqa: E731
    run_ok([kairos, *cmd, "--quiet", *out("ref")], work, f"{name} reference")
    # signalled once the first round is done (its progress line)
    problems = stop(kairos, mpirun, 2, [*cmd, *out("stopped")], work, "stopped", "usr1")
    if (work / "stopped.csv").exists():
        problems.append("a stopped sweep left its CSV")
    if problems:
        return problems
    saved = json.loads((work / "ck" / "replications.json").read_text())
    if not 1 <= len(saved["done"]) < 6:
        problems.append(f"the checkpoint keeps {len(saved['done'])} replications, expected some of 6, not all")
    run_ok(mpi(mpirun, 3, [kairos, *cmd, "--quiet", *out("restart"), "--restart", str(work / "ck")]), work,
           f"{name} restart")
    if sweep:
        if (work / "ref.csv").read_text() != (work / "restart.csv").read_text():
            problems.append("the restarted sweep's CSV differs from the uninterrupted one's")
    else:
        problems += compare(work / "ref.json", work / "restart.json", REPLICATION_RUN_PART)
        problems += replications_refusals(kairos, cmd, work)
    return problems


def replications_refusals(kairos, cmd, work):
    """A damaged or foreign replications checkpoint: exit 2, one line naming
    the file (or --restart) and what is wrong, no stats file."""
    good = (work / "ck" / "replications.json").read_text()
    saved = json.loads(good)
    cases = [
        ("truncated", good[: len(good) // 2], [], "expected JSON"),
        ("another format", json.dumps(dict(saved, format="other")), [], "format: expected"),
        ("another version", json.dumps(dict(saved, version=3)), [], "version: expected 1 or 2"),
        ("another plan", good, ["--replications", "7"], "plan: the checkpoint is of other replications"),
        ("another seed", good, ["--seed", "5"], "plan: the checkpoint is of other replications"),
        # records changed by hand were pooled as if computed (a CSV or stats file that looked right, exit 0):
        # the digest of the records written with them refuses them
        ("an item out of range", json.dumps(dict(saved, done=[dict(saved["done"][0], _item=99)])), [],
         "digest: expected"),
        ("an item moved", json.dumps(dict(saved, done=[dict(saved["done"][0], _item=5)])), [], "digest: expected"),
        ("a simulator renamed", json.dumps(dict(saved, done=[dict(saved["done"][0], simulators=[
            dict(saved["done"][0]["simulators"][0], name="zzz")])] + saved["done"][1:])), [],
         "the records were changed after they were written"),
        ("no simulators", json.dumps(dict(saved, done=[dict(saved["done"][0], simulators=[])])), [],
         "the records were changed after they were written"),
        ("no digest", json.dumps({k: v for k, v in saved.items() if k != "digest"}), [], "digest: expected"),
        # version 1 (before the digest) is still read, and its records checked one by one
        ("an item out of range in version 1", json.dumps(dict({k: v for k, v in saved.items() if k != "digest"},
                                                              version=1, done=[dict(saved["done"][0], _item=99)])),
         [], "expected a record with an _item from 0 to 5"),
        ("items twice in version 1", json.dumps(dict({k: v for k, v in saved.items() if k != "digest"}, version=1,
                                                     done=[saved["done"][0], saved["done"][0]])),
         [], "expected a record with an _item from"),
    ]
    problems = []
    for what, text, extra, says in cases:
        bad = work / "bad"
        bad.mkdir(exist_ok=True)
        (bad / "replications.json").write_text(text)
        stats = work / "refused.json"
        proc = subprocess.run([kairos, *cmd, *extra, "--quiet", "-o", str(stats), "--restart", str(bad)], cwd=work,
                              capture_output=True, text=True)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        if proc.returncode != 2 or len(lines) != 1 or says not in lines[0] or "replications.json" not in lines[0]:
            problems.append(f"{what}: expected exit 2 and one line saying '{says}', found {proc.returncode}: {lines}")
        if stats.exists() or Path(str(stats) + ".partial").exists():
            problems.append(f"{what}: a refused restart left a stats file")
    # A run (not a restart) whose checkpoint would replace other replications'
    # is refused before it starts (it replaced them); the file stays.
    other = work / "other"
    other.mkdir(exist_ok=True)
    (other / "replications.json").write_text(good)
    proc = subprocess.run([kairos, *cmd, "--replications", "7", "--quiet", "--checkpoint-dir", str(other)], cwd=work,
                          capture_output=True, text=True)
    if proc.returncode != 2 or "expected no checkpoint or one of these replications" not in proc.stderr:
        problems.append(f"a folder of other replications: expected exit 2, found {proc.returncode}: "
                        f"{proc.stderr.strip()[-300:]}")
    if (other / "replications.json").read_text() != good:
        problems.append("a folder of other replications: their checkpoint was changed")
    # A stop before any replication finished says so: its restarts would
    # make no progress either (it said only "after 0 of 6").
    proc = subprocess.run([kairos, *cmd, "--quiet", "--checkpoint-dir", str(work / "short"), "--stop-before-wall",
                           "1"], cwd=work, capture_output=True, text=True)
    if proc.returncode != 4 or "none finished in this run" not in proc.stderr:
        problems.append(f"a stop before any replication finished: expected exit 4 and a line saying so, found "
                        f"{proc.returncode}: {proc.stderr.strip()[-300:]}")
    none = subprocess.run([kairos, *cmd, "--quiet", "--restart", str(work / "nothing")], cwd=work,
                          capture_output=True, text=True)
    if none.returncode != 2 or "found no such file" not in none.stderr:
        problems.append(f"no checkpoint: expected exit 2, found {none.returncode}: {none.stderr.strip()}")
    return problems


def run_checkpoint_wall(kairos, mpirun, tmp):
    """--checkpoint-wall: checkpoints as the run goes, which ends as usual
    (exit 0, the same results); a restart from the first of them too."""
    work = Path(tmp) / "checkpoint_wall"
    work.mkdir()
    model = model_args("phold", kairos, mpirun, tmp)
    run_ok([kairos, "run", *model, "--quiet", "-o", str(work / "ref.json")], work, "reference")
    run_ok(mpi(mpirun, 2, [kairos, "run", *model, "--quiet", "-o", str(work / "wall.json"), "--checkpoint-wall",
                           "0.3", "--checkpoint-keep", "0", "--checkpoint-dir", str(work / "ck")]), work,
           "with --checkpoint-wall")
    problems = [f"with --checkpoint-wall: {p}" for p in compare(work / "ref.json", work / "wall.json", RUN_PART)]
    written = sorted((work / "ck").glob("ckpt-*"), key=lambda p: float(p.name[5:]))
    if not written or any(p.name.endswith(".partial") for p in written):
        return problems + [f"expected complete checkpoints every 0.3 s of a run of seconds, found {written}"]
    run_ok([kairos, "run", *model, "--quiet", "-o", str(work / "restart.json"), "--restart", str(written[0])], work,
           "restart")
    return problems + [f"restarted from {written[0].name}: {p}"
                       for p in compare(work / "ref.json", work / "restart.json", RUN_PART)]


def run_progress(kairos, tmp):
    """The batch log's line: every --progress seconds, whole lines; and in
    the same run --checkpoint-wall: a checkpoint at the safe point nearest
    each period's end, which the progress line at that safe point names."""
    work = Path(tmp) / "progress"
    work.mkdir()
    # Safe points are about a second apart (runtime/safe_point.c): a period
    # of two tells a line at the safe point nearest the period's end from a
    # line at every safe point.
    period = 2.0
    # (an end time it never reaches, and --stop-before-wall: a run of about
    # six seconds whatever the machine's speed; it ends checkpointed, 4)
    base = [kairos, "run", str(ROOT / "examples/phold.json")]
    cmd = base + ["--end", "1e12", "--stop-before-wall", "8", "--checkpoint-dir", "ck", "--progress", str(period),
                  "--checkpoint-wall", "1", "--checkpoint-keep", "0"]
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stamps, lines = [], []
    for line in proc.stderr:
        stamps.append(time.time() - start)
        lines.append(line.rstrip("\n"))
    proc.wait()
    wall = time.time() - start
    problems = []
    progress = [(t, ln) for t, ln in zip(stamps, lines) if ln.startswith("kairos: progress: ")]
    if proc.returncode != 4:
        problems.append(f"exit status {proc.returncode}, expected 4 (--stop-before-wall): {lines[-1:]}")
    if len(progress) < max(2, int(wall / (period + 1)) - 1):
        problems.append(f"{len(progress)} progress lines in {wall:.1f} s at a period of {period} s: {lines[:3]}")
    # A line falls at the safe point nearest the period's end
    # (docs/cli.md): never more than half a safe point's spacing (half a
    # second, runtime/safe_point.c) before it, at most a spacing after it,
    # plus the noise of a shared machine (0.1 s on reading a line, 1.5 s
    # late). On a loaded machine safe points come unevenly: at a period of
    # a second, lines 0.73 s apart were seen, which the rule allows.
    for (a, _), (b, _) in zip(progress, progress[1:]):
        if b - a < period - 0.5 - 0.1 or b - a > period + 2.5:
            problems.append(f"progress lines {b - a:.2f} s apart, expected about {period} s "
                            f"(at least {period - 0.5:.1f} by the rule)")
            break
    for _, ln in progress[:1]:
        if not ("model time" in ln and " of 1e+12 (" in ln and "events/s" in ln and "left" in ln):
            problems.append(f"a progress line without model time, percent, events/s and time left: {ln}")
    if any("\r" in ln for ln in lines):
        problems.append("a carriage return in a batch log")
    # --checkpoint-wall 1: a checkpoint at about every safe point. Counted
    # from when the last one was complete, at the next safe point, they came
    # about two seconds apart. The lines' model times per second of wall
    # time turn the checkpoints' model times into seconds.
    ckpts = sorted(float(p.name[5:]) for p in (work / "ck").glob("ckpt-*") if not p.name.endswith(".partial"))
    times = [float(re.search(r"model time (\S+) of", ln).group(1)) for _, ln in progress]
    if len(ckpts) < 4 or len(progress) < 2:
        problems.append(f"--checkpoint-wall 1: {len(ckpts)} checkpoints, {len(progress)} progress lines")
    else:
        per_second = (times[-1] - times[0]) / (progress[-1][0] - progress[0][0])
        gaps = sorted((b - a) / per_second for a, b in zip(ckpts, ckpts[1:]))
        if gaps[len(gaps) // 2] > 1.5:
            problems.append(f"--checkpoint-wall 1: checkpoints a median {gaps[len(gaps) // 2]:.2f} s apart, expected "
                            f"about 1 (gaps {[round(g, 2) for g in gaps]} s)")
    # A progress line at a checkpoint's safe point names that checkpoint.
    for t, (_, ln) in zip(times, progress):
        here = [c for c in ckpts if abs(c - t) <= 1e-5 * max(1.0, abs(t))]
        named = re.search(r"last checkpoint ckpt-(\S+) \(", ln)
        if here and (not named or abs(float(named.group(1)) - here[0]) > 1e-9 * max(1.0, here[0])):
            problems.append(f"a progress line at the safe point of ckpt-{here[0]:g} names another: {ln}")
            break
    # (long enough for a line at a period of 0.05 s)
    quiet = subprocess.run(base + ["--end", "300", "--progress", "0"], cwd=work, capture_output=True, text=True)
    if "progress" not in subprocess.run(base + ["--end", "300", "--progress", "0.05"], cwd=work,
                                        capture_output=True, text=True).stderr:
        problems.append("no progress line at a period of 0.05 s")
    if "progress" in quiet.stderr:
        problems.append(f"--progress 0 still wrote: {quiet.stderr[:200]}")
    default = subprocess.run(base + ["--end", "100"], cwd=work, capture_output=True, text=True)
    if "progress" in default.stderr:
        problems.append(f"a short run wrote a progress line at the default period (60 s): {default.stderr[:200]}")
    return problems


def run_far_end(kairos, tmp):
    """An end time far beyond what the job reaches: safe points still come
    about every second from the start, so --stop-before-wall stops it and
    progress lines come (the first safe point came after 1/4096 of the
    model time: never, for this run)."""
    work = Path(tmp) / "far_end"
    work.mkdir()
    cmd = [kairos, "run", str(ROOT / "examples/phold.json"), "--end", "1e12", "--stop-before-wall", "3",
           "--progress", "0.5", "--checkpoint-dir", str(work / "ck"), "-o", str(work / "far.json")]
    try:
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return ["a run with end time 1e12 and --stop-before-wall 3 was still going after 60 s"]
    problems = []
    if proc.returncode != 4:
        problems.append(f"exit status {proc.returncode}, expected 4: {proc.stderr.strip()[-300:]}")
    if "kairos: progress: " not in proc.stderr:
        problems.append(f"no progress line: {proc.stderr.strip()[-300:]}")
    if not list((work / "ck").glob("ckpt-*")):
        problems.append("no checkpoint written")
    return problems


def run_usr1_unwritable(kairos, mpirun, tmp):
    """SIGUSR1 to a run that names no checkpoint folder, where `checkpoints`
    is a file: no checkpoint can be written, which the run says once, and
    it goes on to the uninterrupted run's results on every rank (it failed
    there, exit 1, the run lost). A second SIGUSR1 asks again."""
    work = Path(tmp) / "usr1_unwritable"
    work.mkdir()
    (work / "checkpoints").write_text("")
    base = model_args("phold", kairos, mpirun, tmp)
    ref = REFERENCES.get(tuple(base))
    if not ref:
        ref = REFERENCES[tuple(base)] = work / "ref.json"
        run_ok(mpi(mpirun, 2, [kairos, "run", *base, "--quiet", "-o", str(ref)]), work, "usr1_unwritable reference")
    proc, rank_dir = launch(kairos, mpirun, 2, ["run", *base, "--progress", "0.05", "-o", str(work / "out.json")],
                            work, "run")
    if not wait_for_progress(proc, work, "run", "usr1_unwritable"):
        return [f"the run ended before it could be signalled: {(work / 'run.err').read_text()[-300:]}"]
    proc.send_signal(signal.SIGUSR1)
    proc.wait(timeout=300)
    err = (work / "run.err").read_text()
    problems = []
    if statuses(rank_dir, 2) != ["0", "0"]:
        problems.append(f"exit statuses {statuses(rank_dir, 2)}, expected 0 on every rank: {err.strip()[-400:]}")
    want = ("kairos: warning: SIGUSR1: no checkpoint written (checkpoints: expected a directory, found a file of "
            "that name); the run goes on")
    said = [line for line in err.splitlines() if "SIGUSR1" in line]
    if said != [want]:
        problems.append(f"expected the one line {want!r}, found: {said or err[-300:]}")
    if (work / "checkpoints").is_dir() or list(work.glob("checkpoints*.partial")):
        problems.append("a checkpoint folder appeared")
    if not (work / "out.json").exists():
        return problems + ["no stats file"]
    return problems + [f"after the signal: {p}" for p in compare(ref, work / "out.json", RUN_PART)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kairos")
    ap.add_argument("mpirun")
    ap.add_argument("--case", action="append", choices=list(CASES) + OTHER)
    args = ap.parse_args()
    kairos = str(Path(args.kairos).resolve())
    names = args.case or list(CASES) + OTHER
    def run_one(name, tmp):
        if name in CASES:
            return run_case(name, kairos, args.mpirun, tmp)
        if name == "progress":
            return run_progress(kairos, tmp)
        if name == "far_end":
            return run_far_end(kairos, tmp)
        if name == "usr1_unwritable":
            return run_usr1_unwritable(kairos, args.mpirun, tmp)
        if name == "checkpoint_wall":
            return run_checkpoint_wall(kairos, args.mpirun, tmp)
        return run_replications(kairos, args.mpirun, tmp, name == "sweep")

    return run_cases(names, run_one)


if __name__ == "__main__":
    sys.exit(main())
