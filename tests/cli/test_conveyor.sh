#!/usr/bin/env bash
# The tutorial's plug-in (examples/conveyor, docs/tutorial.md) as a user
# builds and runs it: copied out of the tree, built by its Makefile against
# pkg-config's uninstalled kairos, run on 1 and 2 ranks with both
# algorithms. The ERS tutorial's figures: 719 products reach the conveyor
# and the 717 that reach its end took 12 s each; the same checksum on every
# rank count, another one when the speed changes; `stop_after` ends the run
# from inside the model; broken params answer in one line with exit 2.
# Usage: test_conveyor.sh BUILD_DIR (tests/cli/meson.build); needs
# KAIROS_BIN, KAIROS_SOURCE_ROOT and MPIRUN.
set -uo pipefail

build=$1
root=$KAIROS_SOURCE_ROOT
tmp=$(mktemp -d /tmp/kairos_conveyor_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

cp "$root/examples/conveyor/conveyor.c" "$root/examples/conveyor/Makefile" "$root/examples/conveyor/conveyor.json" "$tmp/"
if ! PKG_CONFIG_PATH="$build/meson-uninstalled" make -s -C "$tmp" CFLAGS="-O2 -Werror" >"$tmp/make.log" 2>&1; then
  echo "FAIL: make"; cat "$tmp/make.log"; exit 1
fi

# run NAME [KAIROS ARGS...]: runs on one rank; `mpirun_run NAME NP ...` on NP.
run() {
  local name=$1
  shift
  "$KAIROS_BIN" run "$tmp/conveyor.json" --quiet --stats "$tmp/$name.json" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $?
}
mpirun_run() {
  local name=$1 np=$2
  shift 2
  "$MPIRUN" -np "$np" --oversubscribe "$KAIROS_BIN" run "$tmp/conveyor.json" --quiet --stats "$tmp/$name.json" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $?
}
# get NAME PYTHON-EXPRESSION over the stats s and the conveyor's stats c
get() {
  python3 - "$tmp/$1.json" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
sims = {x["name"]: x for x in s.get("simulators", [])}
c = sims["conveyor"]["stats"] if sims else None
v = eval(sys.argv[2])
print(format(v, "g") if isinstance(v, float) else v)
EOF
}

expect "one rank runs" 0 "$(run np1)"
expect "arrived" 719 "$(get np1 'c["arrived"]')"
expect "lead_time count" 717 "$(get np1 'c["lead_time_count"]')"
expect "lead_time mean" 12 "$(get np1 'c["lead_time_mean"]')"
expect "no report or digest needed: the stats keep the declared statistics only" \
  "arrived lead_time_count lead_time_max lead_time_mean lead_time_min lead_time_sd" "$(get np1 '" ".join(sorted(c))')"
sum=$(get np1 's["checksum"]')
expect "two ranks run" 0 "$(mpirun_run np2 2)"
expect "two ranks: the same checksum" "$sum" "$(get np2 's["checksum"]')"
expect "two ranks: the same products" 719 "$(get np2 'c["arrived"]')"
expect "two ranks, window algorithm" 0 "$(mpirun_run np2w 2 --sync window)"
expect "window: the same checksum" "$sum" "$(get np2w 's["checksum"]')"
expect "another speed runs" 0 "$(run fast --set simulators.conveyor.params.speed=2)"
expect "another speed: lead time" 7 "$(get fast 'c["lead_time_mean"]')"
if [[ $(get fast 's["checksum"]') == "$sum" ]]; then
  echo "FAIL: the checksum did not change with the speed"; failures=$((failures + 1))
else
  echo "ok: another speed, another checksum"
fi

# Replications pool the declared statistics with no code of the kind's.
expect "replications run" 0 "$(run reps --replications 3)"
expect "pooled lead time" "12 3" "$(get reps '" ".join(format(x, "g") for x in (s["pooled"][1]["stats"]["lead_time_mean"]["mean"], s["pooled"][1]["stats"]["lead_time_mean"]["n"]))')"
expect "pooled arrivals" 719 "$(get reps 'format(s["pooled"][1]["stats"]["arrived"]["mean"], "g")')"

# Ending the run from inside the model: after the 100th product at the end
# (t = 5 * 100 + 2 + 10 = 512). The source, one promise of 2 s upstream
# and with no path back from the conveyor, runs to the end time.
for np in 1 2; do
  if [[ $np == 1 ]]; then rc=$(run stop$np --set simulators.conveyor.params.stop_after=100)
  else rc=$(mpirun_run stop$np 2 --set simulators.conveyor.params.stop_after=100); fi
  expect "stop_after on $np rank(s): exit 0" 0 "$rc"
  expect "stop_after on $np rank(s): 100 at the end" 100 "$(get stop$np 'c["lead_time_count"]')"
  expect "stop_after on $np rank(s): who and when" "conveyor 512" "$(get stop$np 's["stopped"]["by"] + " " + format(s["stopped"]["time"], "g")')"
  expect "stop_after on $np rank(s): the conveyor's final time" 512 "$(get stop$np 'sims["conveyor"]["final_time"]')"
  expect "stop_after on $np rank(s): the source runs on" 3600 "$(get stop$np 'sims["source"]["final_time"]')"
done
expect "stop_after: the same checksum on 1 and 2 ranks" "$(get stop1 's["checksum"]')" "$(get stop2 's["checksum"]')"
expect "stop_after in replications" 0 "$(run stopreps --replications 2 --set simulators.conveyor.params.stop_after=10)"
expect "each replication says who stopped it and when" "conveyor 62 conveyor 62" \
  "$(get stopreps '" ".join(r["stopped"]["by"] + " " + format(r["stopped"]["time"], "g") for r in s["replications"])')"

# Broken params: one line, exit 2.
expect "a negative speed is refused" 2 "$(run bad --set simulators.conveyor.params.speed=-1)"
expect "the line names file, path, expected, found" \
  "kairos: $tmp/conveyor.json: simulators[1].params.speed: expected a number > 0, found -1" "$(cat "$tmp/bad.err")"
expect "an unknown param is refused" 2 "$(run typo --set simulators.conveyor.params.sped=2)"
expect "another formalism is refused" 2 "$(run formalism --set simulators.conveyor.formalism=continuous)"
expect "... naming the entry's formalism" \
  "kairos: $tmp/conveyor.json: simulators[1].formalism: expected a formalism of kind 'conveyor' (agent-based), found \"continuous\"" \
  "$(cat "$tmp/formalism.err")"
expect "a target without a dependency is refused" 2 "$(run target --set simulators.source.params.target=source)"

echo "$failures failed"
[[ $failures == 0 ]]
