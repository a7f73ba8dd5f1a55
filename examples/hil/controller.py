#!/usr/bin/env python3
"""The line's controller outside the model, on kairos' emulation gateway.

kairos sends one JSON object per line for every event the belt sends the
controller:

    {"time": 12.5, "from": "belt", "event": "reading", "data": {"part": 3, "weight": 97.3}}
    {"time": 20, "from": "belt", "event": "status", "data": {"running": true, "on_belt": 2, ...}}

and reads back commands, one per line:

    {"event": "divert", "to": "belt", "data": {"part": 3}}
    {"event": "stop", "to": "belt"}
    {"event": "start", "to": "belt"}

The policy is the in-model controller's (models/hil/line.c): divert a part
whose weight is outside [low, high]; after `stop_after` rejects in a row
stop the belt; restart it at the first status that finds it stopped at
least `restart_after` model seconds after the stop. Replace `Policy` with
a real PLC or test bench adapter (examples/hil/README.md). Exits 0 when
kairos closes the connection. Python 3 standard library only."""
import argparse
import collections
import json
import select
import socket
import sys
import time


class Policy:
    def __init__(self, args):
        self.low, self.high = args.low, args.high
        self.stop_after, self.restart_after = args.stop_after, args.restart_after
        self.in_a_row = 0
        self.stop_sent = None  # model time of the stop not yet followed by a start

    def on_reading(self, t, data):
        """The commands (event, data) a reading calls for."""
        if self.low <= data["weight"] <= self.high:
            self.in_a_row = 0
            return []
        out = [("divert", {"part": data["part"]})]
        self.in_a_row += 1
        if self.in_a_row >= self.stop_after:
            out.append(("stop", None))
            self.in_a_row = 0
            self.stop_sent = t
        return out

    def on_status(self, t, data):
        if data["running"] or self.stop_sent is None or t - self.stop_sent < self.restart_after:
            return []
        self.stop_sent = None
        return [("start", None)]


def connect(host, port, timeout):
    """Connects, retrying until `timeout` seconds have passed: kairos may
    open its port a little after this script starts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError as e:
            if time.monotonic() >= deadline:
                sys.exit(f"controller.py: cannot connect to {host}:{port}: {e}")
            time.sleep(0.1)


def wait_for_close(sock):
    """Neither reads nor writes, and returns once the peer has closed."""
    hangup = getattr(select, "POLLRDHUP", 0) | select.POLLHUP | select.POLLERR
    poller = select.poll()
    poller.register(sock, hangup)
    while not poller.poll(1000):
        pass


def serve(sock, lines, policy, args, received, sent):
    """Answers every line until kairos closes the connection."""
    for line in lines:
        try:
            msg = json.loads(line)
            event, t, data = msg["event"], msg["time"], msg.get("data") or {}
        except (ValueError, KeyError, TypeError) as e:
            print(f"controller.py: skipping a malformed line ({e}): {line[:200]!r}", file=sys.stderr)
            received["malformed"] += 1
            continue
        handler = {"reading": policy.on_reading, "status": policy.on_status}.get(event)
        try:
            commands = handler(t, data) if handler else []
        except (KeyError, TypeError) as e:
            print(f"controller.py: skipping a {event} without {e}: {line[:200]!r}", file=sys.stderr)
            received["malformed"] += 1
            continue
        received[event] += 1
        for name, payload in commands:
            cmd = {"event": name, "to": args.belt}
            if payload is not None:
                cmd["data"] = payload
            sock.sendall((json.dumps(cmd) + "\n").encode())
            sent[name] += 1
        if args.silent_after is not None and received["reading"] >= args.silent_after:
            wait_for_close(sock)
            break


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7341)
    p.add_argument("--connect-timeout", type=float, default=10, help="seconds to keep retrying the connection")
    p.add_argument("--belt", default="belt", help="the simulator commands go to")
    p.add_argument("--low", type=float, default=92)
    p.add_argument("--high", type=float, default=108)
    p.add_argument("--stop-after", type=int, default=3, help="rejects in a row that stop the belt")
    p.add_argument("--restart-after", type=float, default=20, help="model seconds before restarting a stopped belt")
    p.add_argument("--silent-after", type=int, default=None,
                   help="after N readings, go silent (no commands, no reads) until kairos closes")
    p.add_argument("--stats", help="write a JSON summary of the lines received and commands sent here")
    args = p.parse_args()

    policy = Policy(args)
    received, sent = collections.Counter(), collections.Counter()
    sock = connect(args.host, args.port, args.connect_timeout)
    sock.settimeout(None)
    with sock, sock.makefile("rb") as lines:
        try:
            serve(sock, lines, policy, args, received, sent)
        except (BrokenPipeError, ConnectionResetError):
            pass  # kairos went away while we wrote or read: the same as closing
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"received": received, "sent": sent}, f, indent=2, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
