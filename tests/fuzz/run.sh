#!/usr/bin/env bash
# Runs one fuzz target for a bounded time under its sanitizers and prints
# one line: executions, speed, corpus, new inputs, crashes. Exits non-zero
# on any crash, leak or hang (an input slower than 10 s) or memory use
# above 2 GiB; the input that did it is left in WORK/artifacts/ and the
# fuzzer's output in WORK/log.
#
# Usage: run.sh FUZZER SEED_DIR WORK_DIR [SECONDS]
#   SECONDS defaults to $KAIROS_FUZZ_SECONDS, else 20. New inputs go to
#   WORK_DIR/corpus (kept between runs); SEED_DIR is only read.
set -uo pipefail
exe=$1
seeds=$2
work=$3
secs=${4:-${KAIROS_FUZZ_SECONDS:-20}}
name=$(basename "$exe")
target=${name#fuzz_}
dict=$(dirname "$0")/$target.dict
mkdir -p "$work/corpus" "$work/artifacts"
rm -f "$work/artifacts/"*

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$work/artifacts/")
[[ -f $dict ]] && opts+=(-dict="$dict")

"$exe" "${opts[@]}" "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?

stat() { awk -v k="stat::$1:" '$1 == k { print $2 }' "$work/log" | tail -1; }
execs=$(stat number_of_executed_units)
speed=$(stat average_exec_per_sec)
added=$(stat new_units_added)
corpus=$(find "$work/corpus" -type f | wc -l)
crashes=$(find "$work/artifacts" -type f | wc -l)
printf '%-16s %4ss  %10s execs  %7s exec/s  corpus %5s (+%s new)  crashes %s\n' \
  "$name" "$secs" "${execs:-?}" "${speed:-?}" "$corpus" "${added:-?}" "$crashes"
if ((rc != 0 || crashes != 0)); then
  echo "$name: FAILED (exit $rc); log: $work/log" >&2
  grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|ALARM|.*Test unit written)' "$work/log" | head -20 >&2
  exit 1
fi
exit 0
