"""One `kairos run` of an example model file, on one rank or under mpirun,
returning its stats (the benchmarks' only way to run kairos: the general
runtime, no special path)."""
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_stats(kairos, example, ranks, sync, sets, args=()):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    fd, out = tempfile.mkstemp(prefix="kairos-bench-", suffix=".json")
    os.close(fd)
    os.unlink(out)
    cmd = [kairos, "run", os.path.join(ROOT, "examples", example), "-o", out, "--quiet", "--sync", sync]
    for s in sets:
        cmd += ["--set", s]
    cmd += list(args)
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"] + cmd
    try:
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)
    finally:
        if os.path.exists(out):
            os.unlink(out)
