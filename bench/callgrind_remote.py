#!/usr/bin/env python3
"""Where a second rank's instructions go in PHOLD (issue 20; bench/README.md,
"Parallel efficiency"): callgrind on every rank of a short PHOLD run, 1 rank
(one simulator of 1024 LPs) and 2 ranks (two of 512), for the cases of
bench_parallel.py. Instruction counts repeat on a shared machine, where
wall times do not.

Prints one JSON line per case and rank count with, per rank: events run,
instructions per event in the run proper (kr__coord_run_until, without the
time spent spinning in mpi_wait, which is waiting, not work), split into
the events themselves (kr__sim_run_head: handlers, scheduling, sending)
and the coordination around them (delivering, polling, guarantees, idle
steps), the spinning itself (under callgrind a rank runs some 50 times
slower, so how long one waits for the other says little), instructions per sync-event sent to another rank (kr_schedule_sync,
inclusive) and per local schedule (kr_schedule), per message delivered
(kr__sync_deliver), and the transport's own cost per event (mpi_poll
without the deliveries).

    bench/callgrind_remote.py --kairos build/kairos [--end 50] [--only CASE ...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from kairos_run import ROOT, phold_sets, run_stats

CASES = [("base", 0.1, 0.25), ("lookahead_0.01", 0.01, 0.25), ("remote_0.5", 0.1, 0.5)]


def inclusive(out_file):
    """{function: (inclusive Ir, calls)} from callgrind_annotate --tree=caller."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller", "--threshold=100", out_file],
                          capture_output=True, text=True, check=True).stdout
    res, calls = {}, 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+([<*])\s+(\S+)", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        if m.group(2) == "<":
            c = re.search(r"\(([\d,]+)x\)", line)
            calls += int(c.group(1).replace(",", "")) if c else 0
        else:
            fn = m.group(3).split(":")[-1]
            # (inlined pieces appear again under their header's name: keep the function's own entry)
            if ir > res.get(fn, (0, 0))[0]:
                res[fn] = (ir, calls)
            calls = 0
    return res


def run(kairos, ranks, la, remote, end, tmp):
    wrapper = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(tmp, "cg.%q{OMPI_COMM_WORLD_RANK}")]
    st = run_stats(kairos, "phold.json", ranks, None, phold_sets(ranks, la, remote, end), wrapper=wrapper, quiet=True)
    per_rank = []
    for r in range(ranks):
        f = os.path.join(tmp, "cg.%d" % r)
        inc = inclusive(f)
        events = sum(s["events"] for s in st["simulators"] if s["rank"] == r)
        get = lambda fn: inc.get(fn, (0, 0))
        run_ir = get("kr__coord_run_until")[0]
        wait_ir = get("mpi_wait")[0]
        sent, sent_calls = get("kr_schedule_sync")
        local, local_calls = get("kr_schedule")
        deliv, deliv_calls = get("kr__sync_deliver")
        poll = get("mpi_poll")[0]
        per_rank.append({
            "rank": r, "events": events,
            "ir_per_event": round((run_ir - wait_ir) / max(1, events), 1),
            "event_ir_per_event": round(get("kr__sim_run_head")[0] / max(1, events), 1),
            "coordination_ir_per_event": round((run_ir - wait_ir - get("kr__sim_run_head")[0]) / max(1, events), 1),
            "spin_ir_per_event": round(wait_ir / max(1, events), 1),
            "ir_per_sync_sent": round(sent / sent_calls, 1) if sent_calls else None, "syncs_sent": sent_calls,
            "ir_per_local_schedule": round(local / local_calls, 1) if local_calls else None,
            "ir_per_message_delivered": round(deliv / deliv_calls, 1) if deliv_calls else None,
            "messages_delivered": deliv_calls,
            "transport_ir_per_event": round((poll - deliv) / max(1, events), 1),
        })
        os.unlink(f)
    return per_rank


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default=os.path.join(ROOT, "build", "kairos"))
    ap.add_argument("--end", type=float, default=50.0)
    ap.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cg-remote-") as tmp:
        for name, la, remote in CASES:
            if a.only and name not in a.only:
                continue
            for ranks in (1, 2):
                print(json.dumps({"bench": "callgrind_remote", "case": name, "ranks": ranks, "end_time": a.end,
                                  "kairos": a.kairos, "per_rank": run(a.kairos, ranks, la, remote, a.end, tmp)}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
