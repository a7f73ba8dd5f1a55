#!/usr/bin/env python3
"""Emulation gateway benchmark (issue 22): how fast the door is.

- flood: a local client writes short commands ({"event": "start", "to":
  "belt"}) to a listening gateway as fast as the socket takes them for 3 s;
  the figure is the lines the gateway took per second of the flood, with
  the gateway's peak resident memory (sampled from /proc);
- round trip: the hil line (examples/hil/line.json) with
  examples/hil/controller.py in the loop at `--speed`; from the log, the
  wall time from a reading leaving kairos to the controller's divert being
  taken (both are stamped with the gateway's clock), median and 99th
  percentile.

One JSON line per case, medians of --reps runs.

    bench/bench_gateway.py [--kairos build-rel/kairos] [--reps 3] [--speed 20]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def line_model(work, port, speed, end, log=None):
    m = json.loads((ROOT / "examples" / "hil" / "line.json").read_text())
    m["end_time"] = end
    gw = next(s for s in m["simulators"] if s["kind"] == "gateway")
    gw["emulation"] = {"speed": speed, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20}
    if log:
        gw["emulation"]["log"] = log
    path = Path(work) / "model.json"
    path.write_text(json.dumps(m))
    return path


def connect(port):
    for _ in range(400):
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("no gateway")


def flood(kairos, work):
    port = free_port()
    path = line_model(work, port, 25, 100)
    stats = Path(work) / "stats.json"
    p = subprocess.Popen([kairos, "run", str(path), "--quiet", "--stats", str(stats)], stderr=subprocess.DEVNULL)
    peak = [0.0]

    def sample():
        while p.poll() is None:
            try:
                for line in open(f"/proc/{p.pid}/status"):
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]) / 1024)
            except OSError:
                break
            time.sleep(0.05)

    threading.Thread(target=sample, daemon=True).start()
    chunk = b'{"event": "start", "to": "belt"}\n' * 20000
    s = connect(port)
    end = time.time() + 3
    while time.time() < end:
        s.sendall(chunk)
    s.close()
    p.wait()
    st = json.loads(stats.read_text())
    gw = next(x for x in st["simulators"] if x["name"] == "controller")["stats"]
    return gw["lines_in"] / 3.0, peak[0]


def round_trip(kairos, work, speed):
    port = free_port()
    log = Path(work) / "rt.log"
    path = line_model(work, port, speed, 600, log=str(log))
    p = subprocess.Popen([kairos, "run", str(path), "--quiet"], stderr=subprocess.DEVNULL)
    ctl = subprocess.Popen([sys.executable, str(ROOT / "examples" / "hil" / "controller.py"), "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p.wait()
    ctl.wait()
    sent, waits = {}, []
    precision = 1000
    for r in map(json.loads, log.read_text().splitlines()):
        out = r.get("out")
        if out and out["event"] == "reading":
            sent[out["data"]["part"]] = r["time"]
        elif r.get("event") == "divert" and r["data"]["part"] in sent:
            # both stamped by the gateway's clock: model ticks to wall ms
            waits.append((r["time"] - sent[r["data"]["part"]]) / precision / speed * 1000)
    waits.sort()
    return statistics.median(waits), waits[int(0.99 * (len(waits) - 1))], len(waits)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default=str(ROOT / "build-rel" / "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--speed", type=float, default=20)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        rates, peaks = zip(*(flood(a.kairos, work) for _ in range(a.reps)))
        print(json.dumps({"case": "flood", "lines_per_s": round(statistics.median(rates)),
                          "peak_rss_mb": round(statistics.median(peaks), 1), "reps": a.reps}), flush=True)
        rts = [round_trip(a.kairos, work, a.speed) for _ in range(a.reps)]
        print(json.dumps({"case": "round_trip", "speed": a.speed,
                          "median_ms": round(statistics.median(r[0] for r in rts), 2),
                          "p99_ms": round(statistics.median(r[1] for r in rts), 2),
                          "diverts": rts[0][2], "reps": a.reps}), flush=True)


if __name__ == "__main__":
    main()
