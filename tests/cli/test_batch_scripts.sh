#!/usr/bin/env bash
# The cluster batch scripts (scripts/slurm/kairos.sbatch, scripts/pbs/kairos.pbs)
# without a scheduler: the launch line their dry run prints for Slurm and PBS
# allocations, one clear line and exit status 2 for bad settings, and with
# --job (suite mpi) a whole job run under mpirun as if Slurm had started it:
# its folder holds the model file used, the command and the stats.
# Needs KAIROS_BIN and KAIROS_SOURCE_ROOT (tests/cli/meson.build sets them).
set -uo pipefail

root=$KAIROS_SOURCE_ROOT
bin=$KAIROS_BIN
sbatch=$root/scripts/slurm/kairos.sbatch
pbs=$root/scripts/pbs/kairos.pbs
model=$root/examples/rows.json
tmp=$(mktemp -d /tmp/kairos_batch_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

# Runs a batch script with a clean scheduler environment plus the given
# VAR=VALUE settings; stdout, stderr and status go to $out, $err, $rc.
run() {
  local script=$1
  shift
  out=$(cd "$tmp" && env -u SLURM_JOB_ID -u SLURM_NTASKS -u SLURM_JOB_NUM_NODES -u SLURM_SUBMIT_DIR \
    -u PBS_JOBID -u PBS_NODEFILE -u PBS_O_WORKDIR -u DRY_RUN KAIROS_BIN="$bin" KAIROS_OUT="$tmp/runs" "$@" \
    "$script" ${args[@]+"${args[@]}"} 2>"$tmp/err")
  rc=$?
  err=$(cat "$tmp/err")
}

expect() { # expect WHAT EXPECTED FOUND
  if [[ $2 != "$3" ]]; then
    echo "FAIL: $1"
    echo "  expected: $2"
    echo "  found:    $3"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}

if [[ ${1:-} != --job ]]; then
  args=(--dry-run)
  run "$sbatch" KAIROS_NODES=2 KAIROS_RANKS=64 KAIROS_SYNC=window "KAIROS_SETS=end_time=3600 seed=2"
  expect "slurm dry run, settings" 0 "$rc"
  expect "slurm dry run, launch line" "srun --nodes=2 --ntasks=64 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $model --stats $tmp/runs/kairos-dry-run-rows/stats.json --sync window --set end_time=3600 --set seed=2" "$out"

  # inside an allocation: nodes, tasks and the job id from Slurm
  run "$sbatch" SLURM_JOB_ID=4711 SLURM_JOB_NUM_NODES=4 SLURM_NTASKS=128 "KAIROS_MODEL=$root/examples/phold.json"
  expect "slurm allocation, launch line" "srun --nodes=4 --ntasks=128 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $root/examples/phold.json --stats $tmp/runs/kairos-4711-phold/stats.json --sync null-message" "$out"
  run "$sbatch" SLURM_JOB_ID=4711 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=8 KAIROS_LAUNCHER=mpirun KAIROS_BIND=none
  expect "slurm with mpirun, unbound" "mpirun -np 8 --map-by core --bind-to none $bin run $model --stats $tmp/runs/kairos-4711-rows/stats.json --sync null-message" "$out"
  args=()
  run "$sbatch" DRY_RUN=1 KAIROS_RANKS=3
  expect "DRY_RUN=1 as --dry-run" "srun --nodes=1 --ntasks=3 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $model --stats $tmp/runs/kairos-dry-run-rows/stats.json --sync null-message" "$out"
  args=(--dry-run)

  # PBS: ranks and nodes from the node file, which mpirun gets
  printf 'n1\nn1\nn2\nn2\nn2\nn2\n' >"$tmp/nodefile"
  run "$pbs" PBS_JOBID=93.pbs-server "PBS_NODEFILE=$tmp/nodefile" KAIROS_SYNC=window
  expect "pbs allocation, launch line" "mpirun -np 6 --map-by core --bind-to core --hostfile $tmp/nodefile $bin run $model --stats $tmp/runs/kairos-93-rows/stats.json --sync window" "$out"
  run "$pbs" KAIROS_RANKS=16 KAIROS_NODES=2 "KAIROS_SETS=end_time=60"
  expect "pbs dry run, settings" "mpirun -np 16 --map-by core --bind-to core $bin run $model --stats $tmp/runs/kairos-dry-run-rows/stats.json --sync null-message --set end_time=60" "$out"

  # bad settings: one line, exit status 2, nothing printed on stdout
  bad() { # bad SCRIPT MESSAGE SETTINGS...
    local script=$1 message=$2
    shift 2
    run "$script" "$@"
    expect "refused ($message)" "2|kairos job: $message|" "$rc|$err|$out"
  }
  bad "$sbatch" "KAIROS_MODEL: expected a readable model file, found '/no/such.json'" KAIROS_MODEL=/no/such.json
  bad "$pbs" "KAIROS_MODEL: expected a readable model file, found '/no/such.json'" KAIROS_MODEL=/no/such.json
  bad "$sbatch" "KAIROS_SYNC: expected null-message or window, found 'fast'" KAIROS_SYNC=fast
  bad "$sbatch" "KAIROS_RANKS: expected a whole number >= 1, found '0'" KAIROS_RANKS=0
  bad "$sbatch" "KAIROS_RANKS: expected at least one rank per node (4 nodes), found '2'" KAIROS_NODES=4 KAIROS_RANKS=2
  bad "$pbs" "KAIROS_LAUNCHER: expected mpirun under PBS, found 'srun'" KAIROS_LAUNCHER=srun
  bad "$sbatch" "KAIROS_BIN: expected the kairos executable (meson compile -C build), found '$tmp/none'" "KAIROS_BIN=$tmp/none"
  bad "$sbatch" "KAIROS_SETS: expected KEY=VALUE words separated by spaces, found 'end_time'" KAIROS_SETS=end_time
  args=()
  bad "$sbatch" "SLURM_JOB_ID: expected a Slurm job (submit with sbatch, or use --dry-run), found nothing"
  bad "$pbs" "PBS_JOBID: expected a PBS job (submit with qsub, or use --dry-run), found nothing"
  args=(--now)
  bad "$sbatch" "--now: expected --dry-run or nothing"
else
  # A job as Slurm would start it, launched with mpirun on this machine.
  args=()
  run "$sbatch" SLURM_JOB_ID=local7 KAIROS_LAUNCHER=mpirun KAIROS_RANKS=2 KAIROS_BIND=none "KAIROS_SETS=end_time=600"
  job=$tmp/runs/kairos-local7-rows
  expect "job exit status" 0 "$rc"
  [[ $rc == 0 ]] || echo "$err"
  expect "job folder: the model file used" same "$(cmp -s "$model" "$job/model.json" && echo same)"
  expect "job folder: the command" "mpirun -np 2 --map-by core --bind-to none $bin run $model --stats $job/stats.json --sync null-message --set end_time=600" "$(cat "$job/command.txt" 2>&1)"
  expect "job folder: stats of 2 ranks" "2 600.0" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["ranks"], s["end_time"])' "$job/stats.json" 2>&1)"
  expect "job folder: the summary" yes "$(grep -q 'on 2 ranks' "$job/summary.txt" && echo yes)"
  expect "job folder: the status" "kairos job local7: exit status 0" "$(cat "$job/status.txt" 2>&1)"
  # a run that fails: its status, and no stats file that looks finished
  run "$sbatch" SLURM_JOB_ID=local8 KAIROS_LAUNCHER=mpirun KAIROS_RANKS=2 KAIROS_BIND=none "KAIROS_SETS=end_time=-1"
  expect "failed job: kairos's exit status" 2 "$rc"
  expect "failed job: status file" "kairos job local8: exit status 2" "$(cat "$tmp/runs/kairos-local8-rows/status.txt" 2>&1)"
  expect "failed job: no stats" no "$([[ -e $tmp/runs/kairos-local8-rows/stats.json ]] && echo yes || echo no)"
  # the same job id again: refused, the first run left alone
  run "$sbatch" SLURM_JOB_ID=local7 KAIROS_LAUNCHER=mpirun KAIROS_RANKS=2
  expect "a second run into one job folder is refused" "2|kairos job: KAIROS_OUT: expected a folder without a run of job local7, found '$job'" "$rc|$err"
fi

echo "$failures failed"
((failures == 0))
