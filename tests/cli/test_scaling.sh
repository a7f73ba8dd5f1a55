#!/usr/bin/env bash
# scripts/scaling: refusals (one line, exit status 2) and a small weak
# scaling study on 1 and 2 ranks: both algorithms, the checksum of every
# point checked against one rank, the CSVs it writes. Plots are left out
# (--no-plots) so that the test does not need matplotlib.
# Needs KAIROS_BIN and KAIROS_SOURCE_ROOT (tests/cli/meson.build sets them).
set -uo pipefail

root=$KAIROS_SOURCE_ROOT
scaling=$root/scripts/scaling
tmp=$(mktemp -d /tmp/kairos_scaling_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

refused() { # refused MESSAGE ARGS...
  local message=$1
  shift
  local err rc
  err=$("$scaling" --kairos "$KAIROS_BIN" --out "$tmp/bad" "$@" 2>&1 >/dev/null)
  rc=$?
  expect "refused: $message" "2|scaling: $message" "$rc|$err"
}
refused "/no/model.json: expected a readable model file, found nothing" /no/model.json
refused "--ranks: expected whole numbers >= 1 separated by commas, found '1,x'" "$root/examples/rows.json" --ranks 1,x
refused "--sync: expected null-message, window and/or auto, found 'fast'" "$root/examples/rows.json" --sync fast
refused "--weak: expected KEY=EXPR with EXPR arithmetic in 'ranks' (+ - * / % and parentheses, e.g. simulators.line.count=25*ranks), found 'simulators.line.count=__import__'" \
  "$root/examples/rows.json" --weak simulators.line.count=__import__
refused "--weak: expected KEY=EXPR with EXPR arithmetic in 'ranks' (+ - * / % and parentheses, e.g. simulators.line.count=25*ranks), found 'simulators.line.count=9**9**9'" \
  "$root/examples/rows.json" --weak 'simulators.line.count=9**9**9'
# checked at every rank count of the study, not only at one rank
refused "--weak: expected an arithmetic expression in 'ranks', found '4/(ranks-2)' (at ranks=2: division by zero)" \
  "$root/examples/rows.json" --ranks 1,2 --weak 'simulators.line.count=4/(ranks-2)'

# weak scaling: 3 lines per rank, 10 minutes of model time
out=$("$scaling" "$root/examples/rows.json" --kairos "$KAIROS_BIN" --ranks 1,2 --reps 2 --no-plots \
  --set end_time=600 --weak 'simulators.line.count=3*ranks' --out "$tmp/out" 2>"$tmp/err")
rc=$?
expect "study exit status" 0 "$rc"
[[ $rc == 0 ]] || cat "$tmp/err"
expect "one JSON line per point" 4 "$(grep -c '"bench": "scaling"' <<<"$out")"
check=$(python3 - "$tmp/out" <<'PY'
import csv, sys
runs = list(csv.DictReader(open(sys.argv[1] + "/rows-weak-runs.csv")))
points = list(csv.DictReader(open(sys.argv[1] + "/rows-weak.csv")))
out = []
out.append("runs=%d points=%d" % (len(runs), len(points)))
out.append("checksums ok=%s" % all(r["checksum_ok"] == "True" for r in runs))
# the model grows: 4 simulators on 1 rank, 7 on 2; same events in both algorithms
ev = {(p["sync"], p["ranks"]): int(p["events"]) for p in points}
out.append("grows=%s" % (ev[("null-message", "2")] > ev[("null-message", "1")]))
out.append("same events=%s" % (ev[("null-message", "2")] == ev[("window", "2")]))
one = [p for p in points if p["ranks"] == "1"]
out.append("1-rank speedup=%s" % sorted(set(p["speedup"] for p in one)))
two = [p for p in points if p["ranks"] == "2"]
out.append("2 ranks talk=%s" % all(float(p["messages_per_event"]) > 0 for p in two))
out.append("window rounds=%s" % all(float(p["rounds_per_model_second"]) > 0 for p in points if p["sync"] == "window"))
print(" ".join(out))
PY
)
expect "the CSVs" "runs=8 points=4 checksums ok=True grows=True same events=True 1-rank speedup=['1.0'] 2 ranks talk=True window rounds=True" "$check"

echo "$failures failed"
((failures == 0))
