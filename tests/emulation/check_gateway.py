#!/usr/bin/env python3
"""The emulation gateway end to end (docs/emulation.md, examples/hil):

- the hil line with examples/hil/controller.py in the loop over TCP, on 1
  rank and on 2 with the gateway on rank 1, then replayed from its log
  with no controller: the same checksum on 1 and 2 ranks and with both
  algorithms;
- a checkpoint of a live run, restarted with the controller reconnecting:
  the log goes on, and replaying the whole of it gives the restarted run's
  checksum; a replay checkpointed and restarted gives the replay's;
- every bad input is logged with its reason and skipped: lines that are
  not JSON or not an object, no event, unknown events and simulators, a
  simulator without a dependency, data that does not fit, a 10 MB line;
- a peer that leaves is reported, and stops the run when the model file
  asks; a controller that stops answering; no peer at all; 10^5 lines a
  second for seconds with bounded memory; a named pipe; standard input
  (and its refusal on rank 1); and the model-file and --replay errors.

Usage: check_gateway.py KAIROS MPIRUN"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LINE = ROOT / "examples" / "hil" / "line.json"
CONTROLLER = ROOT / "examples" / "hil" / "controller.py"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model(work, name, emulation, end=100, belt=None, extra_sims=()):
    """A copy of the hil line whose gateway has these settings."""
    m = json.loads(LINE.read_text())
    m["end_time"] = end
    for s in m["simulators"]:
        if s["kind"] == "gateway":
            s["emulation"] = emulation
        if s["name"] == "belt" and belt:
            s["params"].update(belt)
    m["simulators"] += list(extra_sims)
    path = Path(work) / name
    path.write_text(json.dumps(m, indent=1))
    return path


class Kairos:
    """kairos run in the background (stats to stats.json)."""

    def __init__(self, kairos, mpirun, path, args=(), ranks=1, stdin=None, name="run", env=None):
        self.stats = path.parent / f"{name}.stats.json"
        if self.stats.exists():
            self.stats.unlink()
        cmd = [kairos, "run", str(path), "--quiet", "--stats", str(self.stats), *args]
        if ranks > 1:
            cmd = [mpirun, "-np", str(ranks), "--oversubscribe", *cmd]
        self.p = subprocess.Popen(cmd, cwd=path.parent, stdin=stdin or subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)

    def wait(self, timeout=120):
        out, err = self.p.communicate(timeout=timeout)
        self.out, self.err = out, err.strip()
        st = json.loads(self.stats.read_text()) if self.p.returncode == 0 and self.stats.exists() else None
        return self.p.returncode, st


def run(kairos, mpirun, path, args=(), ranks=1, name="run"):
    k = Kairos(kairos, mpirun, path, args, ranks, name=name)
    rc, st = k.wait()
    return rc, st, k.err


def sims(st):
    return {s["name"]: s["stats"] for s in st["simulators"]}


def controller(port, *args):
    return subprocess.Popen([sys.executable, str(CONTROLLER), "--port", str(port), "--connect-timeout", "20", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def connect(port, timeout=20):
    until = time.time() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            if time.time() > until:
                raise
            time.sleep(0.05)


def records(log):
    return [json.loads(l) for l in Path(log).read_text().splitlines() if l]


def sanitized(kairos):
    """An ASan build: everything is slower, and freed memory is held."""
    return b"__asan_init" in Path(kairos).read_bytes()


def one_line_exit_2(rc, err, want, what):
    check(rc == 2 and err.count("\n") == 0 and want in err, f"{what}: exit 2, one line naming {want!r} ({rc}: {err})")


def hil_live_and_replayed(kairos, mpirun, work):
    # Fast enough for CI, slow enough that the controller answers well
    # inside the 2 s a part takes from the sensor to the diverter.
    for ranks in (1, 2):
        port = free_port()
        path = model(work, f"live{ranks}.json", {"speed": 200, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20,
                                                 "log": f"live{ranks}.log"}, end=500, belt={})
        args = ["--set", "simulators.controller.rank=1", "--set", "simulators.feeder.rank=0"] if ranks > 1 else []
        k = Kairos(kairos, mpirun, path, args, ranks, name=f"live{ranks}")
        ctl = controller(port, "--stats", str(work / f"ctl{ranks}.json"))
        rc, st = k.wait()
        ctl_err = ctl.communicate(timeout=30)[1]
        check(rc == 0 and ctl.returncode == 0, f"the hil line runs with controller.py in the loop on {ranks} rank(s), "
              f"the gateway on rank {ranks - 1} ({rc}: {k.err[-300:]}; {ctl_err[-200:]})")
        if rc != 0:
            continue
        s = sims(st)
        ctl_stats = json.loads((work / f"ctl{ranks}.json").read_text())
        sent = ctl_stats["sent"]
        check(ctl_stats["received"].get("reading") == s["belt"]["readings"] > 120,
              f"every reading reached the controller ({s['belt']['readings']} readings)")
        check(s["controller"]["lines_in"] == sum(sent.values()) and s["controller"]["skipped"] == 0,
              f"every command the controller sent was taken ({s['controller']['lines_in']} of {sum(sent.values())})")
        check(s["belt"]["diverts"] > 15 and s["belt"]["stops"] >= 1 and s["belt"]["starts"] >= 1,
              f"the belt obeyed: {s['belt']['diverts']} diverts, {s['belt']['stops']} stops, "
              f"{s['belt']['starts']} starts")
        log = work / f"live{ranks}.log"
        recs = records(log)
        check(sum("out" in r for r in recs) == s["controller"]["lines_out"] and
              sum("event" in r for r in recs) == s["controller"]["lines_in"] and
              any(r.get("peer") == "connected" for r in recs),
              "the log holds both directions and the peer's coming")
        for rr, sync in ((1, "null-message"), (2, "window")) if ranks == 1 else ((1, "window"), (2, "null-message")):
            margs = ["--replay", f"controller={log}", "--sync", sync]
            if rr > 1:
                margs += ["--set", "simulators.controller.rank=1"]
            rc2, st2, err = run(kairos, mpirun, path, margs, rr, name="replay")
            check(rc2 == 0 and st2 and st2["checksum"] == st["checksum"] and "no end record" not in err,
                  f"the {ranks}-rank live run replayed on {rr} rank(s) ({sync}) gives its checksum "
                  f"({st['checksum']}, {st2 and st2['checksum']}; {err[-200:]})")
        check(records(log) == recs, "a replay into the model file's own log leaves it as it was")
        check(recs[-1].get("end") is True and sum("end" in r for r in recs) == 1,
              f"the log of a run that reached its end ends with its end record ({recs[-1]})")
        # The log of a live run that was interrupted has no end record: its
        # replay goes on without input, and says so (it looked finished).
        cut = work / f"cut{ranks}.log"
        cut.write_text("".join(line + "\n" for line in log.read_text().splitlines()[:-1]))
        rc2, _, err = run(kairos, mpirun, path, ["--replay", f"controller={cut}"], name="cut")
        check(rc2 == 0 and err.count("the replayed log has no end record") == 1,
              f"a replay of a log without its end record warns once ({rc2}: {err[-300:]})")
        check(recs[0] == {"model": st["identity_digest"]}, f"the log begins with the model's identity ({recs[0]})")
        if ranks == 1:
            for other in (["--seed", "2"], ["--set", "simulators.belt.params.divert_time=3"]):
                rc3, _, err = run(kairos, mpirun, path, ["--replay", f"controller={log}"] + other, name="other")
                one_line_exit_2(rc3, err, "was written by another model or seed", f"a replay with {' '.join(other)}")
            # A replay log that is no regular file: a folder replayed
            # nothing and the run ended 0; a named pipe or /dev/zero hung
            # (or filled memory), deaf to SIGTERM.
            os.mkfifo(work / "replay.fifo")
            for odd in (work, work / "replay.fifo", "/dev/zero"):
                rc3, _, err = run(kairos, mpirun, path, ["--replay", f"controller={odd}"], name="odd")
                one_line_exit_2(rc3, err, "expected a regular file", f"a replay of {odd}")


def checkpoint_and_restart(kairos, mpirun, work):
    port = free_port()
    path = model(work, "ck.json", {"speed": 200, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20,
                                   "log": "ck.log"}, end=300)
    k = Kairos(kairos, mpirun, path, ["--checkpoint-at", "150", "--checkpoint-dir", str(work / "ck")], name="ck")
    ctl = controller(port)
    rc, first = k.wait()
    ctl_err = ctl.communicate(timeout=30)[1]
    check(rc == 0, f"a live run writes a checkpoint at 150 ({k.err[-200:]})")
    if rc != 0:
        return
    # The restart truncates the log to what the checkpoint saw and goes on
    # with a controller that connects again.
    k = Kairos(kairos, mpirun, path, ["--restart", str(work / "ck")], name="ck2")
    ctl = controller(port)
    rc, again = k.wait()
    ctl_err = ctl.communicate(timeout=30)[1]
    check(rc == 0 and ctl.returncode == 0, f"the restart goes on with the controller reconnecting ({k.err[-300:]})")
    if rc != 0:
        return
    recs = records(work / "ck.log")
    check(sum(r.get("peer") == "connected" for r in recs) == 2, "the continued log shows both connections")
    rc, replayed, err = run(kairos, mpirun, path, ["--replay", f"controller={work / 'ck.log'}"], name="ckr")
    check(rc == 0 and replayed["checksum"] == again["checksum"],
          f"replaying the continued log from the start gives the restarted run's checksum ({err[-200:]})")
    if rc == 0:
        a, b = sims(again)["controller"], sims(replayed)["controller"]
        check(all(a[k] == b[k] for k in ("lines_in", "lines_out", "skipped")) and a["peers"] == 2,
              f"the restarted run's counts are the whole run's, as the replay's ({a}, {b})")
    # A replay can be checkpointed and restarted like any other run.
    rargs = ["--replay", f"controller={work / 'ck.log'}"]
    rc, _, err = run(kairos, mpirun, path, rargs + ["--checkpoint-at", "100", "--checkpoint-dir", str(work / "ckr")],
                     name="ckr1")
    rc2, restarted, err2 = run(kairos, mpirun, path, rargs + ["--restart", str(work / "ckr")], ranks=2, name="ckr2")
    check(rc == 0 and rc2 == 0 and restarted["checksum"] == again["checksum"],
          f"a replay checkpointed at 100 and restarted on 2 ranks gives the same checksum ({err[-150:]} {err2[-150:]})")
    if rc == 0 and rc2 == 0:
        c = sims(restarted)["controller"]
        check(c["lines_in"] == sims(replayed)["controller"]["lines_in"], f"and the same counts ({c})")
    # A log that is not the checkpoint's is refused.
    with open(work / "ck.log", "r+") as f:
        f.write("X")
    rc, _, err = run(kairos, mpirun, path, ["--restart", str(work / "ck")], name="ck3")
    one_line_exit_2(rc, err, "is not the one the checkpoint was written with", "a restart with a changed log")


class Peer(threading.Thread):
    """A scripted external system: connects, sends `lines` (bytes), reads
    whatever comes, and closes (or stays, with `stay`)."""

    def __init__(self, port, lines, stay=0.0):
        super().__init__(daemon=True)
        self.port, self.lines, self.stay, self.received = port, lines, stay, b""

    def run(self):
        s = connect(self.port)
        s.settimeout(0.2)
        for chunk in self.lines:
            s.sendall(chunk)
        end = time.time() + self.stay
        while time.time() < end:
            try:
                d = s.recv(65536)
                if not d:
                    break
                self.received += d
            except socket.timeout:
                pass
        s.close()


def bad_input(kairos, mpirun, work):
    port = free_port()
    path = model(work, "bad.json", {"speed": 50, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20,
                                    "log": "bad.log"}, end=60)
    good = b'{"event": "divert", "to": "belt", "data": {"part": 1}}\n'

    def padded(n):
        # the good line, with spaces inside its object to n bytes (newline excluded)
        return good[:-2] + b" " * (n - len(good) + 1) + b"}\n"
    lines = [b"not json\n", b"[1, 2]\n", b'{"to": "belt"}\n', b'{"event": "explode", "to": "belt"}\n',
             b'{"event": "stop", "to": "nowhere"}\n', b'{"event": "stop", "to": "feeder"}\n',
             b'{"event": "stop"}\n', b'{"event": "divert", "to": "belt", "data": {"part": "seven"}}\n',
             b'{"event": "divert", "to": "belt", "data": {"part": -1}}\n',
             b'{"event": "divert", "to": "belt", "data": {"colour": 1}}\n',
             b'{"event": "divert", "to": "belt", "data": 5}\n',
             b'{"event": "divert", "to": "belt", "data": {"part": 1.5}}\n',
             b'{"event": "hil.make", "to": "belt"}\n',
             b'{"event": "divert", "to": "belt", "dat": {"part": 1}}\n',
             b'{"event": "reading", "to": "belt", "data": {"part": 1, "weight": 50}}\n',
             b'{"event": "' + b"x" * (10 * 1024 * 1024) + b'"}\n', good, b"\xff\xfe\x00garbage\n", good,
             padded(1 << 20), padded((1 << 20) + 1),
             # JSON that is no object; a key given twice (taken with its last value before)
             b"5\n", b"null\n", b'{"event": "stop", "event": "start", "to": "belt"}\n',
             b'{"event": "divert", "to": "belt", "data": {"part": 3, "part": 4}}\n']
    peer = Peer(port, lines, stay=0.5)
    k = Kairos(kairos, mpirun, path, name="bad")
    peer.start()
    rc, st = k.wait()
    check(rc == 0, f"bad input is never fatal ({k.err[-300:]})")
    if rc != 0:
        return
    recs = records(work / "bad.log")
    reasons = [r["skipped"] for r in recs if "skipped" in r]
    want = ["not JSON", "not a JSON object", 'no "event" name', 'unknown event "explode"',
            'unknown simulator "nowhere"', 'no dependency from "controller" to "feeder"', 'no "to"',
            '"data.part" is not a whole number >= 0', '"data.part" is not a whole number >= 0',
            'unknown field "colour"', '"data" is not an object', '"data.part" is not a whole number >= 0',
            "not a sync-event", 'the unknown key "dat" (expected event, to and data)', 'does not receive "reading"',
            "longer than 1048576 bytes", "not JSON",
            "longer than 1048576 bytes", "not a JSON object", "not a JSON object", "a key given twice",
            "a key given twice"]
    # (lines that are not even input are refused as they are read; the
    # others when their event runs, a little later)
    unmatched = list(reasons)
    for w in want:
        hit = next((r for r in unmatched if w in r), None)
        if hit is not None:
            unmatched.remove(hit)
    check(len(reasons) == len(want) and not unmatched, f"each bad line is logged with its reason ({reasons})")
    s = sims(st)["controller"]
    # (the padded line of exactly 1 MiB is taken, the one a byte longer not)
    check(s["lines_in"] == 14 and s["skipped"] == len(want) and sum("event" in r for r in recs) == 14,
          f"the good lines around them were taken: {s['lines_in']} lines in, {s['skipped']} skipped")
    check(any("peer" in r and r["peer"] == "gone" for r in recs) and "peer gone" in k.err,
          "the peer leaving is logged and reported")
    check(k.err.count("input skipped") <= 12, "warnings about skipped input are few, not one per line")
    rc, st2, err = run(kairos, mpirun, path, ["--replay", f"controller={work / 'bad.log'}"], name="badr")
    check(rc == 0 and st2["checksum"] == st["checksum"], f"the run with bad input replays to its checksum ({err})")


def disconnects(kairos, mpirun, work):
    # The model file asks for the run to stop when the peer goes.
    port = free_port()
    path = model(work, "stop.json", {"speed": 50, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20,
                                     "on_disconnect": "stop", "log": "stop.log"}, end=200)
    peer = Peer(port, [b'{"event": "stop", "to": "belt"}\n'], stay=0.6)
    k = Kairos(kairos, mpirun, path, name="stop")
    peer.start()
    rc, st = k.wait()
    gone = [r for r in records(work / "stop.log") if r.get("peer") == "gone"] if rc == 0 else []
    ended = st and st.get("stopped")
    check(rc == 0 and gone and gone[0].get("stop") and ended["by"] == "controller" and ended["time"] < 150,
          f"a peer that leaves stops the run when the model file says on_disconnect: stop ({st and st.get('stopped')}; "
          f"{k.err[-200:]})")
    if rc == 0:
        rc, st2, err = run(kairos, mpirun, path, ["--replay", f"controller={work / 'stop.log'}"], name="stopr")
        check(rc == 0 and st2["checksum"] == st["checksum"] and st2.get("stopped") == st.get("stopped"),
              f"its replay stops at the same point ({err})")
    # A controller that stops answering (and reading): the run goes on to
    # its end, and output it does not take is dropped, not held. (Past the
    # kernel's buffers and kairos' 4 MiB: 10^5 lines, too slow under ASan,
    # which checks the rest with 10^4.)
    port = free_port()
    slow = sanitized(kairos)
    path = model(work, "silent.json", {"speed": 50, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20,
                                       "log": "silent.log"}, end=100, belt={"status_every": 0.01 if slow else 0.001})
    k = Kairos(kairos, mpirun, path, name="silent")
    ctl = controller(port, "--silent-after", "5")
    t0 = time.time()
    rc, st = k.wait()
    ctl_err = ctl.communicate(timeout=30)[1]
    s = sims(st)["controller"] if st else {}
    check(rc == 0 and (slow or s.get("dropped", 0) > 0) and s["lines_out"] > (9000 if slow else 90000),
          f"a controller that stops answering: the run ends, {s.get('dropped')} of {s.get('lines_out')} lines dropped "
          f"({time.time() - t0:.1f} s; {k.err[-200:]})")
    check(ctl.returncode == 0, "the silent controller sees the end of the stream")
    # Nobody comes: the run fails in one line, and the log of an earlier
    # run there is left as it was (it was emptied before the wait).
    old_log = '{"model":"0123456789abcdef"}\n{"time":1,"after":0,"event":"stop","to":"belt","data":null}\n'
    (work / "alone.log").write_text(old_log)
    path = model(work, "alone.json", {"speed": 50, "input": {"listen": f"127.0.0.1:{free_port()}"}, "wait": 0.5,
                                      "log": "alone.log"}, end=10)
    rc, _, err = run(kairos, mpirun, path, name="alone")
    check(rc == 1 and "no peer connected" in err and err.count("\n") == 0,
          f"no peer within the wait: the run fails in one line ({rc}: {err})")
    check((work / "alone.log").read_text() == old_log, "... and the log of an earlier run is as it was")
    # The same when another gateway, before it in the file, has a log: every
    # link opens before any log is emptied, and a failed run writes no end
    # record (its log claimed the run had reached its end).
    (work / "first.log").write_text(old_log)
    late = {"name": "late", "kind": "gateway",
            "emulation": {"speed": 50, "input": {"listen": f"127.0.0.1:{free_port()}"}, "wait": 0.5}}
    path = model(work, "two-gateways.json", {"speed": 50, "log": "first.log"}, end=10, extra_sims=(late,))
    rc, _, err = run(kairos, mpirun, path, name="two-gateways")
    check(rc == 1 and "no peer connected" in err and (work / "first.log").read_text() == old_log,
          f"a second gateway that finds no peer leaves the first one's old log as it was ({rc}: {err[-200:]})")
    # A run that fails on the other rank: the gateway's log has no end
    # record (the abort reached rank 0 as a finished run, which logged one).
    faulty = os.environ.get("KAIROS_FAULTY_PLUGIN")
    if faulty:
        path = model(work, "fails.json", {"speed": 50, "log": "fails.log"}, end=60,
                     extra_sims=({"name": "f", "kind": "faulty", "rank": 1,
                                  "params": {"period": 1, "how": "meddle", "fail_at": 5}},))
        m = json.loads(path.read_text())
        m["plugins"] = [faulty]
        next(x for x in m["simulators"] if x["kind"] == "gateway")["rank"] = 0
        path.write_text(json.dumps(m))
        rc, _, err = run(kairos, mpirun, path, ranks=2, name="fails")
        recs = records(work / "fails.log") if (work / "fails.log").exists() else []
        check(rc == 1 and recs and not any("end" in r for r in recs),
              f"a run failed on the other rank: its gateway's log has no end record ({rc}, {recs[-1:]}: {err[-200:]})")
    # A very long wait waits (1e12 s overflowed and failed at once); SIGINT ends it.
    path = model(work, "patient.json", {"speed": 50, "input": {"listen": f"127.0.0.1:{free_port()}"}, "wait": 1e12},
                 end=10)
    k = Kairos(kairos, mpirun, path, name="patient")
    time.sleep(1.5)
    waiting = k.p.poll() is None
    k.p.send_signal(signal.SIGINT)
    rc, _ = k.wait(timeout=30)
    check(waiting and rc == 130, f"a wait of 1e12 s waits, until SIGINT (exit {rc}; {k.err[-200:]})")


def flood(kairos, mpirun, work):
    """Commands as fast as a socket takes them for 3 s: memory stays
    bounded (back-pressure), and at least 10^5 lines a second get in."""
    port = free_port()
    path = model(work, "flood.json", {"speed": 25, "input": {"listen": f"127.0.0.1:{port}"}, "wait": 20}, end=100)
    chunk = b'{"event": "start", "to": "belt"}\n' * 20000
    sent = [0]

    def send():
        s = connect(port)
        s.settimeout(None)  # blocked by back-pressure as long as kairos wants
        end = time.time() + 3
        try:
            while time.time() < end:
                s.sendall(chunk)
                sent[0] += 20000
        except OSError:
            pass
        s.close()

    # (ASan would hold freed memory back in its quarantine: not growth)
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1")
    k = Kairos(kairos, mpirun, path, name="flood", env=env)
    rss = []  # (seconds since the start, resident MB), sampled from /proc

    def sample():
        t0 = time.time()
        while k.p.poll() is None:
            try:
                for line in open(f"/proc/{k.p.pid}/status"):
                    if line.startswith("VmRSS:"):
                        rss.append((time.time() - t0, int(line.split()[1]) / 1024))
            except OSError:
                break
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t = threading.Thread(target=send, daemon=True)
    t.start()
    rc, st = k.wait()
    t.join()
    sampler.join()
    s = sims(st)["controller"] if st else {}
    # The rate is the plain build's to meet; sanitizers slow everything.
    check(rc == 0 and (sanitized(kairos) or s.get("lines_in", 0) >= 300000),
          f"a flood: {s.get('lines_in')} lines taken in 3 s of {sent[0]} offered ({k.err[-200:]})")
    early = max((m for t_, m in rss if t_ < 1.0), default=0)
    peak = max((m for _, m in rss), default=0)
    check(rss and peak - early < 64, f"a flood: memory stays bounded (resident {early:.0f} MB after 1 s, at most "
          f"{peak:.0f} MB in all)")


def flood_past_the_end(kairos, mpirun, work):
    """A sender that never stops, faster than the run: the run still ends at
    its end time (past it nothing more is read), in about its wall time,
    and its log does not fill with lines skipped after the end."""
    path = model(work, "endless.json", {"speed": 10, "input": "stdin", "log": "endless.log"}, end=2)
    k = Kairos(kairos, mpirun, path, stdin=subprocess.PIPE, name="endless")
    chunk = '{"event": "stop", "to": "belt"}\n' * 20000

    def send():
        try:
            while k.p.poll() is None:
                k.p.stdin.write(chunk)
        except (OSError, ValueError):
            pass

    t = threading.Thread(target=send, daemon=True)
    t0 = time.time()
    t.start()
    try:
        k.p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        k.p.kill()
        k.p.wait()
    took = time.time() - t0
    t.join(timeout=10)
    log = work / "endless.log"
    size = log.stat().st_size if log.exists() else 0
    check(k.p.returncode == 0 and took < 20 and size < 50 << 20,
          f"an endless sender: the run ends (exit {k.p.returncode} in {took:.1f} s), a log of {size >> 20} MB")


def connect_out(kairos, mpirun, work):
    """kairos connects to a system that listens: it sends a command and
    reads what comes until kairos has finished."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    got = []

    def serve():
        c, _ = server.accept()
        c.sendall(b'{"event": "stop", "to": "belt"}\n')
        data = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
        got.append(data)
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    path = model(work, "connect.json", {"speed": 50, "input": {"connect": f"127.0.0.1:{port}"}, "wait": 5}, end=30)
    rc, st, err = run(kairos, mpirun, path, name="connect")
    t.join(timeout=10)
    server.close()
    lines = got[0].decode().splitlines() if got else []
    check(rc == 0 and sims(st)["controller"]["lines_in"] == 1 and sims(st)["belt"]["stops"] == 1 and
          len(lines) == sims(st)["controller"]["lines_out"] > 0,
          f"connecting out: the command was obeyed and {len(lines)} lines came back ({err[-200:]})")
    path = model(work, "noconnect.json", {"speed": 50, "input": {"connect": f"127.0.0.1:{free_port()}"}, "wait": 0.3},
                 end=30)
    rc, _, err = run(kairos, mpirun, path, name="noconnect")
    check(rc == 1 and "cannot connect to 127.0.0.1" in err and err.count("\n") == 0,
          f"nobody to connect to: one line ({rc}: {err})")


def pipe_and_stdin(kairos, mpirun, work):
    fifo = work / "in.fifo"
    os.mkfifo(fifo)
    path = model(work, "pipe.json", {"speed": 50, "input": {"pipe": "in.fifo", "output": "out.jsonl"},
                                     "log": "pipe.log"}, end=40)
    k = Kairos(kairos, mpirun, path, name="pipe")
    time.sleep(0.3)
    for _ in range(2):  # writers come and go
        with open(fifo, "w") as f:
            f.write('{"event": "stop", "to": "belt"}\n{"event": "start", "to": "belt"}\n')
        time.sleep(0.1)
    rc, st = k.wait()
    s = sims(st)["controller"] if st else {}
    out = (work / "out.jsonl").read_text().splitlines() if (work / "out.jsonl").exists() else []
    check(rc == 0 and s.get("lines_in") == 4 and len(out) == s.get("lines_out") and json.loads(out[0])["from"] == "belt",
          f"a named pipe: 4 lines from two writers, {len(out)} lines out to the output file ({k.err[-200:]})")
    # An output that cannot be written: warned of once, its lines dropped
    # and counted (it exited 0 with dropped 0, the lines lost unsaid).
    path = model(work, "full.json", {"speed": 50, "input": {"pipe": "in.fifo", "output": "/dev/full"}}, end=40)
    rc, st, err = run(kairos, mpirun, path, name="full")
    s = sims(st)["controller"] if st else {}
    check(rc == 0 and s.get("lines_out", 0) > 0 and s.get("dropped") == s.get("lines_out")
          and err.count("the output /dev/full cannot be written (No space left on device)") == 1,
          f"an output on a full device: {s.get('dropped')} of {s.get('lines_out')} lines dropped, said once ({err[-300:]})")
    inp = work / "stdin.txt"
    inp.write_text('{"event": "stop", "to": "belt"}\n{"event": "start", "to": "belt"}\n')
    path = model(work, "stdin.json", {"speed": 50, "input": "stdin", "on_disconnect": "continue"}, end=20)
    with open(inp) as f:
        k = Kairos(kairos, mpirun, path, stdin=f, name="stdin")
        rc, st = k.wait()
    s = sims(st)["controller"] if st else {}
    check(rc == 0 and s.get("lines_in") == 2 and '"from":"belt"' in k.out,
          f"standard input: 2 lines in, output on standard output ({k.err[-200:]})")
    rc, _, err = run(kairos, mpirun, path, ["--set", "simulators.controller.rank=1"], ranks=2, name="stdin2")
    mine = [l for l in err.splitlines() if l.startswith("kairos:")]  # (mpirun adds its own words)
    check(rc == 2 and len(mine) == 1 and "simulators[2].emulation.input: expected an input other than standard input"
          in mine[0],
          f"standard input on rank 1 is refused in one line ({rc}: {err[-300:]})")
    v = subprocess.run([kairos, "validate", str(path), "--set", "simulators.controller.rank=1", "--ranks", "2"],
                       capture_output=True, text=True, timeout=60)
    check(v.returncode == 2 and v.stderr.count("\n") == 1 and "expected an input other than standard input"
          in v.stderr, f"validate --ranks 2 refuses it alike ({v.returncode}: {v.stderr[-300:]})")


def refusals(kairos, mpirun, work):
    base = {"speed": 10}
    cases = [
        ("speed", {"speed": 0}, "simulators[2].emulation.speed: expected a number > 0"),
        ("input", {"input": "keyboard"}, "simulators[2].emulation.input: expected \"stdin\""),
        ("listen", {"input": {"listen": "localhost"}}, "emulation.input.listen: expected \"HOST:PORT\""),
        ("connect", {"input": {"connect": "127.0.0.1:0"}}, "emulation.input.connect: expected \"HOST:PORT\""),
        ("sign", {"input": {"listen": "127.0.0.1:+7000"}}, "emulation.input.listen: expected \"HOST:PORT\""),
        ("space", {"input": {"connect": "127.0.0.1: 7000"}}, "emulation.input.connect: expected \"HOST:PORT\""),
        ("two", {"input": {"listen": 1, "connect": "a:1"}}, "expected one source"),
        ("wait", {"wait": 3}, "emulation.wait: expected a wait only with a listen or connect input"),
        ("disc", {"input": {"pipe": "p"}, "on_disconnect": "stop"}, "emulation.on_disconnect: expected an input that"),
        ("key", {"colour": 1}, "emulation.colour: expected one of the keys speed, input"),
        ("log", {"log": 3}, "emulation.log: expected a file name"),
    ]
    for name, extra, want in cases:
        path = model(work, f"r-{name}.json", {**base, **extra}, end=10)
        rc, _, err = run(kairos, mpirun, path, name="r")
        one_line_exit_2(rc, err, want, f"emulation settings ({name})")
    # A log, an input pipe or an output that is the model file or another's
    # file: the log overwrote the model file, two logs interleaved, an
    # output looped back into its own input.
    for name, settings, extra, want in (
            ("model", {**base, "log": "r-clash-model.json"}, (), "emulation.log: expected a file of its own, not the "
             "model file"),
            ("loop", {**base, "input": {"pipe": "loop.fifo", "output": "./loop.fifo"}}, (),
             "simulators[2].emulation.input.output: expected a file of its own (simulators[2].emulation.input.pipe "
             "names it too)"),
            ("two", {**base, "log": "same.log"},
             ({"name": "gw2", "kind": "gateway", "emulation": {"speed": 10, "log": "same.log"}},),
             "simulators[3].emulation.log: expected a file of its own (simulators[2].emulation.log names it too)"),
            ("replayed", {**base, "replay": "shared.log"},
             ({"name": "gw2", "kind": "gateway", "emulation": {"speed": 10, "log": "shared.log"}},),
             "simulators[3].emulation.log: expected a file of its own (simulators[2].emulation.replay names it too)")):
        path = model(work, f"r-clash-{name}.json", settings, end=10, extra_sims=extra)
        before = path.read_bytes()
        rc, _, err = run(kairos, mpirun, path, name="r")
        one_line_exit_2(rc, err, want, f"an emulation file that is another's ({name})")
        check(path.read_bytes() == before, f"... the model file is as it was ({name})")
    # A log on an entry with a count: refused as an input there is (every
    # replica would write it; it was refused as naming itself).
    path = model(work, "r-count.json", {**base, "log": "c.log"}, end=10)
    m = json.loads(path.read_text())
    next(x for x in m["simulators"] if x["kind"] == "gateway")["count"] = 2
    path.write_text(json.dumps(m))
    rc, _, err = run(kairos, mpirun, path, name="r")
    one_line_exit_2(rc, err, "simulators[2].emulation.log: expected no log on an entry with a count or regions",
                    "a log on an entry with a count")
    # Ranks given other emulation settings (here another speed) stop before
    # the run, as for any other difference between the ranks' models.
    path = model(work, "r-mpmd.json", base, end=10)
    cmd = [mpirun, "--oversubscribe"]
    for speed in (10, 1000):
        cmd += ["-np", "1", kairos, "run", str(path), "--quiet", "--set", f"simulators.controller.emulation.speed={speed}",
                ":"]
    p = subprocess.run(cmd[:-1], capture_output=True, text=True, timeout=120, cwd=work)
    check(p.returncode == 2 and "the model differs between ranks: simulator 'controller' emulation settings" in p.stderr,
          f"ranks given other emulation settings stop (exit {p.returncode}: {p.stderr.strip()[-300:]})")
    # Replications and sweep points would share the one input and the one
    # log (two groups wrote one log at once): refused before anything runs.
    for key, settings in (("input", {**base, "input": {"pipe": "r.fifo"}}), ("log", {**base, "log": "r.log"})):
        path = model(work, f"r-reps-{key}.json", settings, end=10)
        want = f"simulators[2].emulation.{key}: expected no emulation input or log with more than one replication"
        rc, _, err = run(kairos, mpirun, path, ["--replications", "2"], name="r")
        one_line_exit_2(rc, err, want, f"--replications 2 with an emulation {key}")
        p = subprocess.run([kairos, "sweep", str(path), "--vary", "seed=[1,2]", "-o", str(work / "r.csv")],
                           capture_output=True, text=True, timeout=60)
        one_line_exit_2(p.returncode, p.stderr.strip(), want, f"a sweep with an emulation {key}")
        check(not (work / "r.fifo").exists() and not (work / "r.log").exists() and not (work / "r.csv").exists(),
              f"... and nothing of it is made ({key})")
    # A log that cannot be written fails the run (it exited 0 with an
    # empty log, which no replay could give the run again).
    path = model(work, "r-full.json", {**base, "log": "/dev/full"}, end=10)
    rc, _, err = run(kairos, mpirun, path, name="r")
    lines = [x for x in err.splitlines() if x.startswith("kairos: ")]
    check(rc == 1 and len(lines) == 1 and "writing the log /dev/full failed: No space left on device" in lines[0],
          f"a log on a full device fails the run in one line ({rc}: {err[-300:]})")
    # Files that cannot serve are the model file's fault, found before the
    # run (exit 2): a log that is a folder and a pipe that is a regular
    # file exited 1, and a log on a named pipe nobody reads blocked for
    # ever, deaf to SIGTERM.
    (work / "a-folder").mkdir(exist_ok=True)
    (work / "regular.txt").write_text("not a pipe\n")
    for fifo in ("nobody-reads.fifo", "in.fifo"):
        if not (work / fifo).exists():
            os.mkfifo(work / fifo)
    cases = [
        # (both named the entry only once the run began: kairos validate took them)
        ("log-folder", {"log": "a-folder"}, 1,
         f"simulators[2]: emulation 'controller': the log {work / 'a-folder'} is a folder, not a file"),
        ("log-fifo", {"log": "nobody-reads.fifo"}, 1, "nobody-reads.fifo: nobody reads it (a named pipe or a socket)"),
        ("log-fifo-rank1", {"log": "nobody-reads.fifo"}, 2, "nobody reads it (a named pipe or a socket)"),
        ("pipe-regular", {"input": {"pipe": "regular.txt"}}, 1,
         "simulators[2]: emulation 'controller': " + str(work / "regular.txt") + " is not a named pipe"),
        ("output-folder", {"input": {"pipe": "in.fifo", "output": "a-folder"}}, 1,
         "a-folder is a folder, not a file or a named pipe"),
        # (a folder that does not exist exited 1 for a pipe or an output, 2 for a log)
        ("pipe-no-folder", {"input": {"pipe": "no-folder/in.fifo"}}, 1,
         "no-folder/in.fifo would be in a folder that does not exist"),
        ("output-no-folder", {"input": {"pipe": "in.fifo", "output": "no-folder/out.txt"}}, 1,
         "no-folder/out.txt would be in a folder that does not exist"),
    ]
    for name, extra, ranks, want in cases:
        path = model(work, f"r-{name}.json", {**base, **extra}, end=10)
        args = ["--set", "simulators.controller.rank=1"] if ranks == 2 else []
        k = Kairos(kairos, mpirun, path, args, ranks, name="r")
        try:
            rc, _ = k.wait(timeout=30)
        except subprocess.TimeoutExpired:
            k.p.kill()
            k.p.communicate()
            check(False, f"{name}: the run ended within 30 s")
            continue
        mine = [x for x in k.err.splitlines() if x.startswith("kairos:")]  # (mpirun adds its own words)
        check(rc == 2 and len(mine) == 1 and want in mine[0],
              f"{name} on {ranks} rank(s): exit 2 before the run, one line naming {want!r} ({rc}: {k.err[-300:]})")
    check((work / "regular.txt").read_text() == "not a pipe\n" and (work / "a-folder").is_dir(),
          "the refused paths are left as they were")
    # A run refused in its setup for something found after the log was
    # opened (a second gateway's pipe is a regular file; the event-log
    # folder is a file) leaves an old log as it was, and makes no new one:
    # the log is emptied only when the run starts (it was emptied in the
    # setup, found by review).
    (work / "old.log").write_text("an old log\n")
    g2 = {"name": "g2", "kind": "gateway", "emulation": {"speed": 10, "input": {"pipe": "regular.txt"}}}
    for log, extra, args in (("old.log", [g2], []), ("never-made.log", [g2], []),
                             ("old.log", [], ["--event-log", str(work / "regular.txt")])):
        path = model(work, f"r-keep-{log}.json", {**base, "log": log}, end=10, extra_sims=extra)
        p = subprocess.run([kairos, "run", str(path), "--quiet", *args], cwd=work,
                           capture_output=True, text=True, timeout=60)
        kept = (work / log).read_text() if (work / log).exists() else None
        check(p.returncode == 2 and kept == ("an old log\n" if log == "old.log" else None),
              f"a run refused in its setup leaves the log {log} as it was ({p.returncode}: {p.stderr[-200:]}, "
              f"{kept!r})")
    m = json.loads(LINE.read_text())
    m["simulators"][1]["emulation"] = {"speed": 2}
    p = work / "r-belt.json"
    p.write_text(json.dumps(m))
    rc, _, err = run(kairos, mpirun, p, name="r")
    one_line_exit_2(rc, err, "simulators[1].emulation: expected settings of an emulation entry only", "settings on a "
                    "discrete-event entry")
    path = model(work, "r-ok.json", base, end=10)
    for arg, want in (("nobody=x.log", "none named 'nobody'"), ("belt=x.log", "found 'belt' (discrete-event)"),
                      ("controller", "expected NAME=LOG"), ("controller=missing.log", "cannot open replay log")):
        rc, _, err = run(kairos, mpirun, path, ["--replay", arg], name="r")
        one_line_exit_2(rc, err, want, f"--replay {arg}")
    rc, _, err = run(kairos, mpirun, path, ["--replay", "controller=a.log", "--replay", "controller=b.log"], name="r")
    one_line_exit_2(rc, err, "expected one --replay for 'controller', found a second (the first: a.log)",
                    "--replay twice for one simulator")
    bad = work / "corrupt.log"
    bad.write_text('{"time": 5, "after": 0, "event": "stop", "to": "belt", "data": null}\n{"time": "x"}\n')
    rc, _, err = run(kairos, mpirun, path, ["--replay", f"controller={bad}"], name="r")
    one_line_exit_2(rc, err, "corrupt.log:2: time: expected a whole number of ticks from 0 to 2^63 - 1, found \"x\"",
                    "a corrupt replay log")
    rc, _, err = run(kairos, mpirun, path, ["--replay", f"controller={work / 'live1.log'}"], name="r")
    check(rc == 2 and "does not fit the run" in err or "never reached" in err,
          f"a log from another run is refused ({rc}: {err[-200:]})")
    # A file the run writes is none the run reads nor another it writes,
    # whichever way each is named: -o over the gateway's log wrote the
    # stats there (and the log over them), an event log over a replayed
    # log. Refused before anything is written; the files stay as they were.
    clash = model(work, "r-clash.json", {**base, "log": "clash.log"}, end=10)
    for f in ("clash.log", "belt.jsonl", "controller.jsonl"):
        (work / f).write_text("kept\n")
    for args, want in ((["-o", "clash.log"], "the stats (-o) and simulators[2].emulation.log of"),
                       (["--event-log", ".", "--set", "simulators.controller.emulation.log=belt.jsonl"],
                        "the event log of 'belt' (--event-log) and simulators[2].emulation.log of"),
                       (["--event-log", ".", "--replay", "controller=controller.jsonl"],
                        "the log of --replay controller and the event log of 'controller' (--event-log)")):
        p = subprocess.run([kairos, "run", str(clash), "--quiet", *args], cwd=work, capture_output=True, text=True,
                           timeout=60)
        one_line_exit_2(p.returncode, p.stderr.strip(), want, f"run {' '.join(args)}")
    check(all((work / f).read_text() == "kept\n" for f in ("clash.log", "belt.jsonl", "controller.jsonl")),
          "the files of a refused clash are left as they were")


def slow_speed(kairos, mpirun, work):
    # A speed that puts the end out of reach warns as the run starts (it
    # sat silent: no progress line comes while model time stands still).
    path = model(work, "slow.json", {"speed": 1e-6, "input": {"pipe": "slow.fifo"}}, end=20)
    k = Kairos(kairos, mpirun, path, name="slow")
    time.sleep(1.5)
    k.p.send_signal(signal.SIGINT)
    rc, _ = k.wait(timeout=30)
    check(rc == 130 and "at speed 1e-06 (model units a second) the end time 20 is 2e+07 s of wall time away" in k.err,
          f"a speed that puts the end months away warns ({rc}: {k.err[-300:]})")


def main():
    kairos, mpirun = str(Path(sys.argv[1]).resolve()), sys.argv[2]
    work = Path(tempfile.mkdtemp(prefix="kairos-gateway-"))
    try:
        hil_live_and_replayed(kairos, mpirun, work)
        checkpoint_and_restart(kairos, mpirun, work)
        bad_input(kairos, mpirun, work)
        disconnects(kairos, mpirun, work)
        flood(kairos, mpirun, work)
        flood_past_the_end(kairos, mpirun, work)
        connect_out(kairos, mpirun, work)
        pipe_and_stdin(kairos, mpirun, work)
        refusals(kairos, mpirun, work)
        slow_speed(kairos, mpirun, work)
    finally:
        if not failures:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"(files kept in {work})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
