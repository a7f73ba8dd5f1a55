"""One `kairos run` of an example model file, on one rank or under mpirun,
returning its stats (the benchmarks' only way to run kairos: the general
runtime, no special path)."""
import json
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plain_env():
    """Drops every OMPI_MCA_* setting from this process's environment, so
    that multi-rank runs see Open MPI's defaults (bench/README.md, "Machine":
    the tests' settings slow large messages)."""
    for k in list(os.environ):
        if k.startswith("OMPI_MCA_"):
            del os.environ[k]


def run_stats(kairos, example, ranks, sync, sets, args=(), wrapper=(), quiet=False):
    """`wrapper`: a command each rank's kairos runs under (a profiler), which
    sees the rank in OMPI_COMM_WORLD_RANK (0 on one rank, without mpirun);
    `quiet` also drops stderr. `sync` None: the model file's own."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    fd, out = tempfile.mkstemp(prefix="kairos-bench-", suffix=".json")
    os.close(fd)
    os.unlink(out)
    cmd = list(wrapper) + [kairos, "run", os.path.join(ROOT, "examples", example), "-o", out, "--quiet"]
    if sync:
        cmd += ["--sync", sync]
    for s in sets:
        cmd += ["--set", s]
    cmd += list(args)
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"] + cmd
    elif wrapper:
        env["OMPI_COMM_WORLD_RANK"] = "0"
    try:
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL if quiet else None)
        with open(out) as f:
            return json.load(f)
    finally:
        if os.path.exists(out):
            os.unlink(out)


def phold_sets(sims, lookahead, remote, end, total_lps=1024):
    """The --set list for examples/phold.json with `sims` simulators sharing
    total_lps LPs. One simulator, or remote 0, declares no dependency (a
    wildcard over one replica names no pair anyway; with remote 0 the
    simulators never talk)."""
    return [
        "simulators.phold.count=%d" % sims,
        "simulators.phold.params.lps=%d" % (total_lps // sims),
        "simulators.phold.params.lookahead=%r" % lookahead,
        "simulators.phold.params.remote=%r" % remote,
        "end_time=%r" % end,
        "dependencies=[]" if sims == 1 or remote == 0 else "dependencies.0.promise=%r" % lookahead,
    ]


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)  # idle + iowait, all


def wait_idle(limit):
    """Waits (at most limit seconds) until the machine's CPUs are at least 90 %
    idle over half a second: another user's run would otherwise share the 2
    cores with ours. Returns the seconds waited (limit or more: not idle)."""
    t0 = time.monotonic()
    while True:
        i0, a0 = cpu_times()
        time.sleep(0.5)
        i1, a1 = cpu_times()
        if a1 > a0 and (i1 - i0) / (a1 - a0) >= 0.9:
            return time.monotonic() - t0
        if time.monotonic() - t0 >= limit:
            return time.monotonic() - t0
        time.sleep(2)
