#!/usr/bin/env bash
# Instruction counts (callgrind) of three repeatable workloads: a short
# PHOLD run, the event queue's hold model at 10^5 pending events, and the
# ECS view pass. Counts, unlike wall times, repeat to a few parts in 10^8 on
# a shared machine: compare two builds with them (bench/README.md,
# "Layering").
#
#   bench/callgrind.sh BUILD_DIR [EXAMPLES_DIR]
#
# BUILD_DIR    a meson build dir (holds kairos, bench/bench_hold, bench/bench_ecs)
# EXAMPLES_DIR holds phold.json; default BUILD_DIR/../examples
#
# Env: CG_REPS (runs per case, default 2), CG_OUT (where callgrind.out files
# go, default a fresh mktemp dir, kept), PHOLD_END (default 500),
# EQUEUE_INIT (the queue's init function, where each queue size starts:
# kr__equeue_init; kr_equeue_init in builds before the re-cut).
#
# Prints one JSON line per case: {"case", "ir" (first run), "runs": [...],
# "spread" (max - min), "cmd"}. Ir is the "summary:" line of the callgrind
# output file (for a dump part: that part's "summary:"/"totals:").
set -euo pipefail

B=$(cd "${1:?usage: callgrind.sh BUILD_DIR [EXAMPLES_DIR]}" && pwd)
EX=$(cd "${2:-$B/../examples}" && pwd)
REPS=${CG_REPS:-2}
OUT=${CG_OUT:-$(mktemp -d /tmp/cg.XXXXXX)}
PHOLD_END=${PHOLD_END:-500}
EQUEUE_INIT=${EQUEUE_INIT:-kr__equeue_init}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

summary() { awk '/^summary:/ {print $2; exit}' "$1"; }

# run NAME FILE_SUFFIX VALGRIND_OPTS... -- CMD...
# Runs REPS times; the Ir of OUT/NAME.R.out$FILE_SUFFIX is taken.
declare -A IRS
cg() {
    local name=$1 suffix=$2; shift 2
    local vopts=()
    while [[ $1 != -- ]]; do vopts+=("$1"); shift; done
    shift
    local r
    for ((r = 1; r <= REPS; r++)); do
        rm -f "$OUT/$name.$r.out"*
        valgrind --tool=callgrind --callgrind-out-file="$OUT/$name.$r.out" "${vopts[@]}" "$@" \
            >"$OUT/$name.$r.stdout" 2>"$OUT/$name.$r.stderr" \
            || { echo "callgrind.sh: $name run $r failed (see $OUT/$name.$r.stderr)" >&2; exit 1; }
    done
    CMD="valgrind --tool=callgrind ${vopts[*]} $*"
}

emit() { # name part-suffix
    local name=$1 suffix=$2 r runs=() ir
    for ((r = 1; r <= REPS; r++)); do
        ir=$(summary "$OUT/$name.$r.out$suffix")
        [[ -n $ir ]] || { echo "callgrind.sh: no summary in $OUT/$name.$r.out$suffix" >&2; exit 1; }
        runs+=("$ir")
    done
    local min=${runs[0]} max=${runs[0]}
    for ir in "${runs[@]}"; do ((ir < min)) && min=$ir; ((ir > max)) && max=$ir; done
    local list
    list=$(IFS=,; echo "${runs[*]}")
    printf '{"case": "%s", "ir": %s, "runs": [%s], "spread": %s, "cmd": "%s"}\n' \
        "$1" "${runs[0]}" "$list" $((max - min)) "$CMD"
}

# a. PHOLD through kairos run, one process, no launcher (kairos does not start MPI then).
cg phold "" -- "$B/kairos" run "$EX/phold.json" --end "$PHOLD_END" --quiet
emit phold ""

# b. hold benchmark: it always runs N = 1e3, 1e5, 1e6 in turn (no option to pick one).
#    --dump-before="$EQUEUE_INIT" cuts the run at each N's queue init:
#    .out.1 = start-up, .out.2 = N=1e3, .out.3 = N=1e5 (init, fill 1e5,
#    1e6 warm-up holds, --holds timed holds, emit, fini), .out = N=1e6 + exit.
cg hold_1e5 "" --dump-before="$EQUEUE_INIT" -- "$B/bench/bench_hold" --queue-only --reps 1 --holds 1000000
emit hold_1e5 ".3"
# whole binary = sum of the four parts
for ((r = 1; r <= REPS; r++)); do
    t=0
    for f in "$OUT/hold_1e5.$r.out" "$OUT/hold_1e5.$r.out".[0-9]*; do t=$((t + $(summary "$f"))); done
    echo "$t" >"$OUT/hold_1e5.$r.total"
done
runs=(); for ((r = 1; r <= REPS; r++)); do runs+=("$(cat "$OUT/hold_1e5.$r.total")"); done
min=${runs[0]} max=${runs[0]}; for ir in "${runs[@]}"; do ((ir < min)) && min=$ir; ((ir > max)) && max=$ir; done
printf '{"case": "%s", "ir": %s, "runs": [%s], "spread": %s, "cmd": "%s"}\n' \
    hold_whole "${runs[0]}" "$(IFS=,; echo "${runs[*]}")" $((max - min)) "$CMD (sum of all dump parts)"

# c. ECS benchmark: no option to run the view pass alone. Whole binary, and
#    --toggle-collect=view_pass (the static function bench_ecs.c calls for every
#    view pass: 1 warm + 11 timed + 11 after churn per rep = 23 passes over 1e6 entities).
cg ecs_whole "" -- "$B/bench/bench_ecs" --reps 1
emit ecs_whole ""
cg ecs_view_pass "" --toggle-collect=view_pass -- "$B/bench/bench_ecs" --reps 1
emit ecs_view_pass ""
echo "callgrind.sh: outputs kept in $OUT" >&2
