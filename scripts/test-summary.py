#!/usr/bin/env python3
"""Count test results from meson's testlog.json files.

Usage: test-summary.py [--failed-step LABEL]... BUILDDIR[=RC]...

For every BUILDDIR, reads BUILDDIR/meson-logs/testlog.json (one JSON object
per line, as meson 1.0 writes it: "name", "result", "returncode", "stdout"
and, when captured separately, "stderr") and counts:

  * a test whose output holds Criterion's synthesis line
    ("[====] Synthesis: Tested: T | Passing: P | Failing: F | Crashing: C",
    ANSI colours stripped, on stdout or stderr) counts P passed and F failed.
    Criterion's Failing already includes the crashed tests (C is a subset of
    F), so C is not added again; a Failing smaller than Tested - Passing or
    than Crashing is taken as the larger value.
  * every LeakSanitizer report in a Criterion test's output moves one test
    from passed to failed: Criterion runs each test in its own process and
    ignores that process's LeakSanitizer exit code, so meson and Criterion
    would both call a leaking test a pass.
  * if meson's result is not OK / EXPECTEDFAIL / SKIP but nothing above
    counted a failure (a timeout, a crash after the synthesis line, a leak in
    the runner), one more failure.
  * any other test (e.g. the mpirun tests) counts 1 passed or 1 failed from
    meson's result; SKIP counts neither.

BUILDDIR=RC gives the exit status of `meson test` for that folder: a
non-zero status with no failure in the log counts one failure, and a missing
log always counts one. Every --failed-step LABEL (a setup or build step that
failed before its tests could run) counts one failure.

Prints one line per folder (and one per failing test), then as the very last
line "N passed, N failed". Exits 1 if anything failed, else 0.
"""

import json
import os
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
SYNTHESIS = re.compile(
    r"Synthesis:\s*Tested:\s*(\d+)\s*\|\s*Passing:\s*(\d+)\s*\|\s*"
    r"Failing:\s*(\d+)\s*\|\s*Crashing:\s*(\d+)")
LEAK = re.compile(r"ERROR: LeakSanitizer: detected memory leaks")
GOOD = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def output_of(entry):
    parts = []
    for key in ("stdout", "stderr"):
        value = entry.get(key)
        if isinstance(value, str):
            parts.append(value)
    return ANSI.sub("", "\n".join(parts)).replace("\r", "\n")


def leak_excerpts(text, limit=40):
    """The LeakSanitizer reports in text, each cut to `limit` lines."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        if LEAK.search(line):
            block = []
            for follow in lines[i:i + limit]:
                block.append(follow)
                if follow.startswith("SUMMARY:"):
                    break
            out.append("\n".join("      " + b for b in block))
    return out


def count_entry(entry):
    """Returns (passed, failed, note) for one testlog.json entry."""
    result = str(entry.get("result", "")).split(".")[-1].upper()
    text = output_of(entry)
    matches = SYNTHESIS.findall(text)
    if matches:
        tested, passing, failing, crashing = (int(x) for x in matches[-1])
        failed = max(failing, crashing, tested - passing)
        passed = passing
        leaks = len(LEAK.findall(text))
        notes = []
        if failed:
            notes.append("Criterion: %d of %d failing (%d crashing)"
                         % (failed, tested, crashing))
        if leaks and result not in SKIP:
            moved = min(leaks, passed)
            passed -= moved
            failed += leaks
            notes.append("%d LeakSanitizer report(s)" % leaks)
        if result not in GOOD | SKIP and failed == 0:
            failed = 1
            notes.append("meson says %s (exit status %s) after Criterion "
                         "reported no failure"
                         % (result, entry.get("returncode")))
        return passed, failed, "; ".join(notes)
    if result in GOOD:
        return 1, 0, ""
    if result in SKIP:
        return 0, 0, "skipped"
    return 0, 1, "%s (exit status %s)" % (result, entry.get("returncode"))


def summarize(builddir, rc):
    path = os.path.join(builddir, "meson-logs", "testlog.json")
    name = os.path.basename(os.path.normpath(builddir)) or builddir
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as e:
        print("%s: 0 passed, 1 failed (no test ran: %s: %s)"
              % (name, path, e.strerror))
        return 0, 1
    passed = failed = skipped = tests = 0
    details = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            details.append("  unreadable line in %s" % path)
            failed += 1
            continue
        tests += 1
        p, f, note = count_entry(entry)
        passed += p
        failed += f
        if note == "skipped":
            skipped += 1
        elif f:
            details.append("  FAILED %s: %s" % (entry.get("name", "?"), note))
            if "LeakSanitizer" in note:
                details.extend(leak_excerpts(output_of(entry)))
    if rc not in (None, 0) and failed == 0:
        details.append("  meson test exited with status %d but logged no "
                       "failure" % rc)
        failed = 1
    extra = ", %d skipped" % skipped if skipped else ""
    print("%s: %d passed, %d failed (%d meson tests%s)"
          % (name, passed, failed, tests, extra))
    for d in details:
        print(d)
    return passed, failed


def main(argv):
    total_passed = total_failed = 0
    args = list(argv)
    dirs = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--failed-step":
            if i + 1 >= len(args):
                print("test-summary.py: --failed-step needs a label",
                      file=sys.stderr)
                return 2
            print("%s: FAILED" % args[i + 1])
            total_failed += 1
            i += 2
            continue
        if a.startswith("--failed-step="):
            print("%s: FAILED" % a.split("=", 1)[1])
            total_failed += 1
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            dirs.append(a)
        i += 1
    for d in dirs:
        rc = None
        if "=" in d:
            d, rc_text = d.rsplit("=", 1)
            try:
                rc = int(rc_text)
            except ValueError:
                d, rc = d + "=" + rc_text, None
        p, f = summarize(d, rc)
        total_passed += p
        total_failed += f
    print("%d passed, %d failed" % (total_passed, total_failed))
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
