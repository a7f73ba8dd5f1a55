#!/usr/bin/env bash
# The cluster batch scripts (scripts/slurm/kairos.sbatch, scripts/pbs/kairos.pbs)
# without a scheduler: the launch line their dry run prints for Slurm and PBS
# allocations (checkpoints into the job folder, --restart only when a complete
# checkpoint is there, --stop-before-wall from a setting or the job's time
# left), one clear line and exit status 2 for bad settings; with stand-ins
# for srun, mpirun, scontrol, squeue, qsub and qstat on PATH, whole jobs: a
# run that checkpoints and stops (exit status 4) is requeued and the next
# attempt goes on from its checkpoint in the same folder, a failed or
# interrupted run is not, KAIROS_MAX_ATTEMPTS bounds the attempts, and
# SIGUSR1 to the batch shell reaches the launcher (SIGTERM does not). With
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
log=$tmp/log # what the stand-ins were asked to do, a line each

# Stand-ins for the scheduler's and the launcher's commands. The launcher
# logs its arguments and exits with STUB_STATUS (4: after making a complete
# checkpoint in --checkpoint-dir, as kairos would); with STUB_WAIT=1 it first
# writes its pid to STUB_READY and waits for SIGUSR1 (then exits 4) or
# SIGTERM (then exits STUB_TERM_STATUS, after a checkpoint with
# STUB_TERM_CHECKPOINT=1).
make_stubs() {
  mkdir -p "$tmp/bin"
  cat >"$tmp/bin/srun" <<'STUB'
#!/usr/bin/env bash
echo "${0##*/} $*" >>"$STUB_LOG"
dir=
while (($#)); do
  [[ $1 == --checkpoint-dir ]] && dir=$2
  shift
done
status=${STUB_STATUS:-0}
if [[ ${STUB_WAIT:-0} == 1 ]]; then
  got=
  trap 'got=USR1' USR1
  trap 'got=TERM' TERM
  echo $$ >"$STUB_READY"
  while [[ -z $got ]]; do sleep 0.05; done
  echo "launcher got SIG$got" >>"$STUB_LOG"
  status=4
  [[ $got == TERM ]] && status=${STUB_TERM_STATUS:-143}
fi
# (STUB_TERM_CHECKPOINT=1: the ranks checkpointed after SIGTERM, though the
# launcher's own status says otherwise, as mpirun's 1 does)
if [[ $status == 4 || ${STUB_TERM_CHECKPOINT:-0} == 1 ]]; then
  mkdir -p "$dir/ckpt-10"
  echo '{}' >"$dir/ckpt-10/manifest.json"
fi
echo "the summary"
exit "$status"
STUB
  cp "$tmp/bin/srun" "$tmp/bin/mpirun"
  cat >"$tmp/bin/scontrol" <<'STUB'
#!/usr/bin/env bash
echo "scontrol $*" >>"$STUB_LOG"
exit "${STUB_SCONTROL_STATUS:-0}"
STUB
  cat >"$tmp/bin/squeue" <<'STUB'
#!/usr/bin/env bash
echo "squeue $*" >>"$STUB_LOG"
echo "${STUB_TIME_LEFT:-1:00:00}"
STUB
  cat >"$tmp/bin/qsub" <<'STUB'
#!/usr/bin/env bash
echo "qsub $* (KAIROS_JOB_DIR=$KAIROS_JOB_DIR)" >>"$STUB_LOG"
echo "95.pbs-server"
STUB
  cat >"$tmp/bin/qstat" <<'STUB'
#!/usr/bin/env bash
echo "qstat $*" >>"$STUB_LOG"
printf 'Job Id: %s\n    Job_Name = kairos\n' "$2"
printf '    resources_used.walltime = %s\n' "${STUB_USED:-00:00:00}"
printf '    Resource_List.walltime = %s\n' "${STUB_WALLTIME:-01:00:00}"
STUB
  chmod +x "$tmp/bin/"*
}

# Runs a batch script with a clean scheduler environment plus the given
# VAR=VALUE settings; stdout, stderr and status go to $out, $err, $rc.
run() {
  local script=$1
  shift
  : >"$log"
  out=$(cd "$tmp" && clean_env "$@" "$script" ${args[@]+"${args[@]}"} 2>"$tmp/err")
  rc=$?
  err=$(cat "$tmp/err")
}

# env with the scheduler's variables and the job settings cleared, the
# stand-ins first on PATH, then the given VAR=VALUE settings and command. It
# takes the place of the (sub)shell it runs in, so that a signal to that
# shell's pid reaches the job script.
clean_env() {
  # every KAIROS_* variable of the caller (meson's test environment has
  # some of its own), since the PBS script passes them all on to the next job
  local -a unset=() v
  for v in $(compgen -e | grep '^KAIROS_'); do unset+=(-u "$v"); done
  exec env -u SLURM_JOB_ID -u SLURM_NTASKS -u SLURM_JOB_NUM_NODES -u SLURM_SUBMIT_DIR -u SLURM_JOB_END_TIME \
    -u PBS_JOBID -u PBS_NODEFILE -u PBS_O_WORKDIR -u DRY_RUN "${unset[@]}" \
    PATH="$tmp/bin:$PATH" STUB_LOG="$log" KAIROS_BIN="$bin" KAIROS_OUT="$tmp/runs" "$@"
}

# The stand-ins' log as one line, entries separated by " | ".
logged() { sed ':a;N;$!ba;s/\n/ | /g' "$log"; }
# The same, each entry cut to its command (the launcher's signals whole).
steps() { sed '/^launcher /!s/ .*//' "$log" | sed ':a;N;$!ba;s/\n/ | /g'; }

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
  make_stubs
  args=(--dry-run)
  ck=$tmp/runs/kairos-dry-run-rows/checkpoints
  run "$sbatch" KAIROS_NODES=2 KAIROS_RANKS=64 KAIROS_SYNC=window "KAIROS_SETS=end_time=3600 seed=2"
  expect "slurm dry run, settings" 0 "$rc"
  expect "slurm dry run, launch line" "srun --nodes=2 --ntasks=64 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $model --stats $tmp/runs/kairos-dry-run-rows/stats.json --sync window --set end_time=3600 --set seed=2 --checkpoint-dir $ck" "$out"

  # inside an allocation: nodes, tasks and the job id from Slurm
  run "$sbatch" SLURM_JOB_ID=4711 SLURM_JOB_NUM_NODES=4 SLURM_NTASKS=128 "KAIROS_MODEL=$root/examples/phold.json"
  expect "slurm allocation, launch line" "srun --nodes=4 --ntasks=128 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $root/examples/phold.json --stats $tmp/runs/kairos-4711-phold/stats.json --sync auto --checkpoint-dir $tmp/runs/kairos-4711-phold/checkpoints" "$out"
  run "$sbatch" SLURM_JOB_ID=4711 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=8 KAIROS_LAUNCHER=mpirun KAIROS_BIND=none
  expect "slurm with mpirun, unbound" "mpirun -np 8 --map-by core --bind-to none $bin run $model --stats $tmp/runs/kairos-4711-rows/stats.json --sync auto --checkpoint-dir $tmp/runs/kairos-4711-rows/checkpoints" "$out"
  args=()
  run "$sbatch" DRY_RUN=1 KAIROS_RANKS=3
  expect "DRY_RUN=1 as --dry-run" "srun --nodes=1 --ntasks=3 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $model --stats $tmp/runs/kairos-dry-run-rows/stats.json --sync auto --checkpoint-dir $ck" "$out"
  args=(--dry-run)

  # PBS: ranks and nodes from the node file, which mpirun gets; by default
  # the run stops 300 s before the walltime qstat -f reports
  printf 'n1\nn1\nn2\nn2\nn2\nn2\n' >"$tmp/nodefile"
  run "$pbs" PBS_JOBID=93.pbs-server "PBS_NODEFILE=$tmp/nodefile" KAIROS_SYNC=window STUB_WALLTIME=02:00:00 STUB_USED=00:00:30
  expect "pbs allocation, launch line" "mpirun -np 6 --map-by core --bind-to core --hostfile $tmp/nodefile $bin run $model --stats $tmp/runs/kairos-93-rows/stats.json --sync window --checkpoint-dir $tmp/runs/kairos-93-rows/checkpoints --stop-before-wall 6870" "$out"
  expect "pbs allocation, the walltime from qstat" "qstat -f 93.pbs-server" "$(logged)"
  run "$pbs" KAIROS_RANKS=16 KAIROS_NODES=2 "KAIROS_SETS=end_time=60"
  expect "pbs dry run, settings" "mpirun -np 16 --map-by core --bind-to core $bin run $model --stats $tmp/runs/kairos-dry-run-rows/stats.json --sync auto --set end_time=60 --checkpoint-dir $ck" "$out"
  expect "pbs dry run outside a job: no walltime, said on stderr" "kairos job: KAIROS_STOP_BEFORE=auto: the job's time limit is unknown here; no --stop-before-wall, the run stops early only on SIGUSR1" "$err"

  # --restart only when the job folder holds a complete checkpoint
  job=$tmp/runs/kairos-4711-rows
  line="srun --nodes=1 --ntasks=2 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $model --stats $job/stats.json --sync auto --checkpoint-dir $job/checkpoints"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2
  expect "first start: no --restart" "$line" "$out"
  mkdir -p "$job/checkpoints/ckpt-5.partial" "$job/checkpoints/ckpt-7"
  echo '{}' >"$job/checkpoints/ckpt-5.partial/manifest.json"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2
  expect "a checkpoint being written (ckpt-5.partial) and one without manifest: no --restart" "$line" "$out"
  mkdir -p "$job/checkpoints/ckpt-5"
  echo '{}' >"$job/checkpoints/ckpt-5/manifest.json"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2
  expect "a complete checkpoint (ckpt-5/manifest.json): --restart" "$line --restart $job/checkpoints" "$out"
  run "$pbs" "KAIROS_JOB_DIR=$job" KAIROS_RANKS=2 KAIROS_STOP_BEFORE=signal
  expect "pbs, a job going on in another job's folder: --restart" "mpirun -np 2 --map-by core --bind-to core $bin run $model --stats $job/stats.json --sync auto --checkpoint-dir $job/checkpoints --restart $job/checkpoints" "$out"
  rm -rf "$job"

  # stopping in time
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2 KAIROS_STOP_BEFORE=7000 KAIROS_CHECKPOINT_WALL=1800
  expect "KAIROS_STOP_BEFORE=SECONDS, KAIROS_CHECKPOINT_WALL" "$line --stop-before-wall 7000 --checkpoint-wall 1800" "$out"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2 KAIROS_STOP_BEFORE=auto STUB_TIME_LEFT=1-02:00:00
  expect "KAIROS_STOP_BEFORE=auto: squeue's time left less 300 s" "$line --stop-before-wall 93300|squeue -h -j 4711 -o %L" "$out|$(logged)"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2 KAIROS_STOP_BEFORE=auto KAIROS_STOP_MARGIN=600 "SLURM_JOB_END_TIME=$(($(date +%s) + 3600))"
  stop=$(sed -n 's/.*--stop-before-wall \([0-9]*\)$/\1/p' <<<"$out")
  expect "KAIROS_STOP_BEFORE=auto: SLURM_JOB_END_TIME less the margin, squeue not asked" "3000 or a little less|" \
    "$( ((stop > 2990 && stop <= 3000)) && echo "3000 or a little less" || echo "$out")|$(logged)"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2 KAIROS_STOP_BEFORE=auto STUB_TIME_LEFT=UNLIMITED
  expect "KAIROS_STOP_BEFORE=auto without a time limit: no --stop-before-wall" "0|$line" "$rc|$out"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2 KAIROS_LAUNCHER=mpirun KAIROS_CHECKPOINT_ON_TERM=1
  expect "KAIROS_CHECKPOINT_ON_TERM=1: mpirun gives the ranks time, 2 x 14 s within Slurm's KillWait" "mpirun -np 2 --map-by core --bind-to core --mca odls_base_sigkill_timeout 14 $bin run $model --stats $job/stats.json --sync auto --checkpoint-dir $job/checkpoints --checkpoint-on-term" "$out"
  run "$sbatch" SLURM_JOB_ID=4711 KAIROS_RANKS=2 KAIROS_LAUNCHER=mpirun KAIROS_CHECKPOINT_ON_TERM=1 KAIROS_TERM_WAIT=50
  expect "KAIROS_TERM_WAIT: mpirun's wait" "--mca odls_base_sigkill_timeout 50 " "$(grep -o -- '--mca odls_base_sigkill_timeout [0-9]* ' <<<"$out")"
  run "$pbs" KAIROS_RANKS=2 KAIROS_CHECKPOINT_ON_TERM=1
  expect "PBS: 2 x 4 s within kill_delay" "--mca odls_base_sigkill_timeout 4 " "$(grep -o -- '--mca odls_base_sigkill_timeout [0-9]* ' <<<"$out")"

  # bad settings: one line, exit status 2, nothing printed on stdout
  bad() { # bad SCRIPT MESSAGE SETTINGS...
    local script=$1 message=$2
    shift 2
    run "$script" "$@"
    expect "refused ($message)" "2|kairos job: $message|" "$rc|$err|$out"
  }
  bad "$sbatch" "KAIROS_MODEL: expected a readable model file, found '/no/such.json'" KAIROS_MODEL=/no/such.json
  bad "$pbs" "KAIROS_MODEL: expected a readable model file, found '/no/such.json'" KAIROS_MODEL=/no/such.json
  bad "$sbatch" "KAIROS_SYNC: expected auto, null-message or window, found 'fast'" KAIROS_SYNC=fast
  bad "$sbatch" "KAIROS_RANKS: expected a whole number >= 1, found '0'" KAIROS_RANKS=0
  bad "$sbatch" "KAIROS_RANKS: expected at least one rank per node (4 nodes), found '2'" KAIROS_NODES=4 KAIROS_RANKS=2
  bad "$pbs" "KAIROS_LAUNCHER: expected mpirun under PBS, found 'srun'" KAIROS_LAUNCHER=srun
  bad "$sbatch" "KAIROS_BIN: expected the kairos executable (meson compile -C build), found '$tmp/none'" "KAIROS_BIN=$tmp/none"
  bad "$sbatch" "KAIROS_SETS: expected KEY=VALUE words separated by spaces, found 'end_time'" KAIROS_SETS=end_time
  bad "$sbatch" "KAIROS_STOP_BEFORE: expected signal, auto or a whole number of seconds, found 'soon'" KAIROS_STOP_BEFORE=soon
  bad "$pbs" "KAIROS_STOP_MARGIN: expected a whole number of seconds, found '5m'" KAIROS_STOP_MARGIN=5m
  bad "$sbatch" "KAIROS_STOP_MARGIN: expected fewer seconds than the job has left (240), found '300'" \
    SLURM_JOB_ID=4711 KAIROS_STOP_BEFORE=auto STUB_TIME_LEFT=04:00
  bad "$sbatch" "KAIROS_CHECKPOINT_WALL: expected a whole number of seconds, found '0'" KAIROS_CHECKPOINT_WALL=0
  bad "$sbatch" "KAIROS_CHECKPOINT_ON_TERM: expected 0 or 1, found 'yes'" KAIROS_CHECKPOINT_ON_TERM=yes
  bad "$sbatch" "KAIROS_TERM_WAIT: expected a whole number of seconds >= 1, found '0'" KAIROS_TERM_WAIT=0
  bad "$pbs" "KAIROS_MAX_ATTEMPTS: expected a whole number >= 1, found '0'" KAIROS_MAX_ATTEMPTS=0
  args=()
  bad "$sbatch" "SLURM_JOB_ID: expected a Slurm job (submit with sbatch, or use --dry-run), found nothing"
  bad "$pbs" "PBS_JOBID: expected a PBS job (submit with qsub, or use --dry-run), found nothing"
  args=(--now)
  bad "$sbatch" "--now: expected --dry-run or nothing"

  # Whole jobs, with the stand-ins for srun, mpirun and the scheduler.
  args=()
  status_of() { cat "$1/status.txt" 2>&1; }
  # Slurm: a run that checkpoints and stops is requeued (scontrol requeue),
  # and the requeued job (same id, same folder) goes on from the checkpoint.
  job=$tmp/runs/kairos-5001-rows
  line="srun --nodes=1 --ntasks=2 --cpu-bind=cores --kill-on-bad-exit=1 $bin run $model --stats $job/stats.json --sync auto --checkpoint-dir $job/checkpoints"
  run "$sbatch" SLURM_JOB_ID=5001 KAIROS_RANKS=2 STUB_STATUS=4
  expect "slurm, exit status 4: the job's status" 4 "$rc"
  expect "slurm, exit status 4: a first start, then scontrol requeue" "$line | scontrol requeue 5001" "$(logged)"
  expect "slurm, exit status 4: status.txt" "kairos job 5001, attempt 1: exit status 4 (checkpointed, not finished), requeued for attempt 2 of 10" "$(status_of "$job")"
  run "$sbatch" SLURM_JOB_ID=5001 KAIROS_RANKS=2 STUB_STATUS=0
  expect "slurm, requeued job: goes on from the checkpoint, finishes, no requeue" "0|$line --restart $job/checkpoints" "$rc|$(logged)"
  expect "slurm, requeued job: a status line per attempt" "kairos job 5001, attempt 1: exit status 4 (checkpointed, not finished), requeued for attempt 2 of 10
kairos job 5001, attempt 2: exit status 0 (done)" "$(status_of "$job")"
  expect "slurm, requeued job: attempts, a launch line per attempt, the last summary" "2|2|the summary" \
    "$(cat "$job/attempts.txt")|$(grep -c . "$job/command.txt")|$(cat "$job/summary.txt")"
  expect "slurm, requeued job: the job log" yes \
    "$(grep -q "^kairos job 5001: attempt 2 of 10: 2 ranks on 1 nodes" <<<"$out" && grep -q "^kairos job 5001: going on from the newest complete checkpoint in $job/checkpoints" <<<"$out" && echo yes)"
  run "$sbatch" SLURM_JOB_ID=5001 KAIROS_RANKS=2
  expect "slurm, a finished run's folder is refused, nothing launched" "2|kairos job: KAIROS_OUT: expected a folder without a finished run, found '$job' (status.txt: exit status 0)|" "$rc|$err|$(logged)"

  # a run that fails or is interrupted: not requeued, its status is the job's
  for status in 1 143; do
    run "$sbatch" SLURM_JOB_ID=fail$status KAIROS_RANKS=2 STUB_STATUS=$status
    expect "slurm, exit status $status: not requeued" "$status|srun" "$rc|$(steps)"
  done
  expect "slurm, exit status 1: status.txt" "kairos job fail1, attempt 1: exit status 1 (the run failed)" "$(status_of "$tmp/runs/kairos-fail1-rows")"
  expect "slurm, exit status 143: status.txt" "kairos job fail143, attempt 1: exit status 143 (interrupted by SIGTERM)" "$(status_of "$tmp/runs/kairos-fail143-rows")"
  run "$sbatch" SLURM_JOB_ID=fail1 KAIROS_RANKS=2 STUB_STATUS=0
  expect "slurm, a failed run's job started again: attempt 2 in its folder" "0|2" "$rc|$(cat "$tmp/runs/kairos-fail1-rows/attempts.txt")"

  # KAIROS_MAX_ATTEMPTS bounds the attempts
  job=$tmp/runs/kairos-5002-rows
  run "$sbatch" SLURM_JOB_ID=5002 KAIROS_MAX_ATTEMPTS=2 STUB_STATUS=4
  run "$sbatch" SLURM_JOB_ID=5002 KAIROS_MAX_ATTEMPTS=2 STUB_STATUS=4
  expect "attempt limit: the last attempt is not requeued" "4|srun" "$rc|$(steps)"
  expect "attempt limit: status.txt" "kairos job 5002, attempt 1: exit status 4 (checkpointed, not finished), requeued for attempt 2 of 2
kairos job 5002, attempt 2: exit status 4 (checkpointed, not finished), not requeued: KAIROS_MAX_ATTEMPTS=2 reached; to go on, submit again with KAIROS_JOB_DIR=$job and a larger KAIROS_MAX_ATTEMPTS" "$(status_of "$job")"
  run "$sbatch" SLURM_JOB_ID=5002 KAIROS_MAX_ATTEMPTS=2
  expect "attempt limit: a further start is refused" "2|kairos job: KAIROS_MAX_ATTEMPTS: expected more than the 2 attempts made in '$job', found '2'|" "$rc|$err|$(logged)"
  run "$sbatch" SLURM_JOB_ID=5003 "KAIROS_JOB_DIR=$job" KAIROS_MAX_ATTEMPTS=3 STUB_STATUS=0
  expect "attempt limit raised, a chained job in the folder: attempt 3 from the checkpoint" "0|3|--restart $job/checkpoints" "$rc|$(cat "$job/attempts.txt")|$(logged | grep -o -- '--restart [^ ]*')"
  run "$sbatch" SLURM_JOB_ID=5004 KAIROS_STOP_BEFORE=signal STUB_STATUS=4 STUB_SCONTROL_STATUS=1
  expect "a requeue that fails: said in status.txt" "4|kairos job 5004, attempt 1: the requeue failed (status 1); to go on, submit again with KAIROS_JOB_DIR=$tmp/runs/kairos-5004-rows" \
    "$rc|$(tail -n 1 "$tmp/runs/kairos-5004-rows/status.txt")"

  # folders that are not an unfinished run of this model
  bad "$sbatch" "KAIROS_JOB_DIR: expected the folder of an unfinished kairos job to go on with, found none at '$tmp/runs/kairos-4711-rwos'" \
    SLURM_JOB_ID=5005 "KAIROS_JOB_DIR=$tmp/runs/kairos-4711-rwos"
  mkdir -p "$tmp/runs/kairos-5005-rows"
  bad "$sbatch" "KAIROS_OUT: expected a kairos job folder to go on with, or none, found '$tmp/runs/kairos-5005-rows'" SLURM_JOB_ID=5005
  bad "$sbatch" "KAIROS_MODEL: expected the model file of the run in '$tmp/runs/kairos-fail143-rows' (its model.json), found a different '$root/examples/phold.json'" \
    SLURM_JOB_ID=5006 "KAIROS_JOB_DIR=$tmp/runs/kairos-fail143-rows" "KAIROS_MODEL=$root/examples/phold.json"

  # PBS: a run that checkpoints and stops submits the next job of the same
  # script, after this one, to go on in the same folder
  job=$tmp/runs/kairos-93-rows
  run "$pbs" PBS_JOBID=93.pbs-server "PBS_NODEFILE=$tmp/nodefile" KAIROS_SYNC=window "KAIROS_QSUB_ARGS=-q long -l walltime=12:00:00" STUB_STATUS=4
  expect "pbs, exit status 4: walltime, launch, the next job" "4|qstat -f 93.pbs-server | mpirun -np 6 --map-by core --bind-to core --hostfile $tmp/nodefile $bin run $model --stats $job/stats.json --sync window --checkpoint-dir $job/checkpoints --stop-before-wall 3300 | qsub -W depend=afterany:93.pbs-server -v KAIROS_JOB_DIR,KAIROS_ROOT,KAIROS_BIN,KAIROS_OUT,KAIROS_QSUB_ARGS,KAIROS_SYNC -q long -l walltime=12:00:00 $pbs (KAIROS_JOB_DIR=$job)" "$rc|$(logged)"
  expect "pbs, exit status 4: the job log names the next job" "kairos job 93: qsub -W depend=afterany:93.pbs-server -v KAIROS_JOB_DIR,KAIROS_ROOT,KAIROS_BIN,KAIROS_OUT,KAIROS_QSUB_ARGS,KAIROS_SYNC -q long -l walltime=12:00:00 $pbs|95.pbs-server" \
    "$(grep -A1 '^kairos job 93: qsub ' <<<"$out" | paste -sd'|')"
  expect "pbs, exit status 4: status.txt" "kairos job 93, attempt 1: exit status 4 (checkpointed, not finished), requeued for attempt 2 of 10" "$(status_of "$job")"
  run "$pbs" PBS_JOBID=95.pbs-server "PBS_NODEFILE=$tmp/nodefile" KAIROS_SYNC=window "KAIROS_JOB_DIR=$job" STUB_STATUS=0
  expect "pbs, the next job: goes on from the checkpoint in the same folder, no further job" "0|qstat -f 95.pbs-server | mpirun -np 6 --map-by core --bind-to core --hostfile $tmp/nodefile $bin run $model --stats $job/stats.json --sync window --checkpoint-dir $job/checkpoints --restart $job/checkpoints --stop-before-wall 3300" "$rc|$(logged)"
  expect "pbs, the next job: status.txt" "kairos job 93, attempt 1: exit status 4 (checkpointed, not finished), requeued for attempt 2 of 10
kairos job 95, attempt 2: exit status 0 (done)" "$(status_of "$job")"
  run "$pbs" PBS_JOBID=96.pbs-server KAIROS_STOP_BEFORE=signal STUB_STATUS=3
  expect "pbs, exit status 3: no next job" "3|mpirun|kairos job 96, attempt 1: exit status 3 (deadlock)" "$rc|$(steps)|$(status_of "$tmp/runs/kairos-96-rows")"
  run "$pbs" PBS_JOBID=97.pbs-server KAIROS_STOP_BEFORE=signal KAIROS_MAX_ATTEMPTS=1 STUB_STATUS=4
  expect "pbs, attempt limit: no next job" "4|mpirun" "$rc|$(steps)"

  # Signals to the batch shell: SIGUSR1 (sbatch --signal=B:USR1@300, qsig)
  # is passed on to the launcher, which stands for the ranks; SIGTERM is not
  # (the scheduler signals the ranks itself).
  # signal_job SCRIPT SIGNAL SETTINGS...: starts the job in the background,
  # sends SIGNAL to its shell once the launcher waits, then, if the launcher
  # is still there, SIGTERM to the launcher (as the scheduler would); $rc,
  # $out, the log as for run.
  signal_job() {
    local script=$1 sig=$2 shell i
    shift 2
    : >"$log"
    rm -f "$tmp/ready"
    (cd "$tmp" && clean_env STUB_WAIT=1 STUB_READY="$tmp/ready" "$@" "$script" >"$tmp/out" 2>"$tmp/err") &
    shell=$!
    for ((i = 0; i < 200; i++)); do
      [[ -s $tmp/ready ]] && break
      sleep 0.05
    done
    kill -"$sig" "$shell"
    # the launcher ends on SIGUSR1 (wait up to 10 s); after SIGTERM, 0.5 s
    # shows it was not passed on
    local ticks=200
    [[ $sig == TERM ]] && ticks=10
    for ((i = 0; i < ticks; i++)); do
      kill -0 "$(cat "$tmp/ready")" 2>/dev/null || break
      sleep 0.05
    done
    kill -0 "$(cat "$tmp/ready")" 2>/dev/null && echo "launcher still there" >>"$log" && kill -TERM "$(cat "$tmp/ready")"
    wait "$shell"
    rc=$?
    out=$(cat "$tmp/out")
  }
  signal_job "$sbatch" USR1 SLURM_JOB_ID=6001 KAIROS_RANKS=2
  expect "slurm, SIGUSR1 to the batch shell: passed on to srun, then requeued" "4|srun | launcher got SIGUSR1 | scontrol|scontrol requeue 6001" "$rc|$(steps)|$(tail -n 1 "$log")"
  expect "slurm, SIGUSR1 to the batch shell: the job log" yes "$(grep -q '^kairos job 6001: got SIGUSR1, passing it on to srun: checkpoint and stop$' <<<"$out" && echo yes)"
  signal_job "$pbs" USR1 PBS_JOBID=6002.pbs-server KAIROS_STOP_BEFORE=signal
  expect "pbs, SIGUSR1 to the batch shell: passed on to mpirun, then the next job" "4|mpirun | launcher got SIGUSR1 | qsub" "$rc|$(steps)"
  signal_job "$sbatch" TERM SLURM_JOB_ID=6003 KAIROS_RANKS=2 KAIROS_CHECKPOINT_ON_TERM=1 STUB_TERM_STATUS=4
  expect "slurm, SIGTERM to the batch shell: not passed on, not requeued after the checkpoint" "4|srun | launcher still there | launcher got SIGTERM" "$rc|$(steps)"
  expect "slurm, SIGTERM: status.txt" "kairos job 6003, attempt 1: exit status 4 (checkpointed, not finished), not requeued: the job got SIGTERM; to go on, submit again with KAIROS_JOB_DIR=$tmp/runs/kairos-6003-rows" "$(status_of "$tmp/runs/kairos-6003-rows")"
  # mpirun exits 1 once signalled itself: the job's status is the run's, told
  # by whether a checkpoint appeared
  signal_job "$pbs" TERM PBS_JOBID=6004.pbs-server KAIROS_STOP_BEFORE=signal KAIROS_CHECKPOINT_ON_TERM=1 STUB_TERM_STATUS=1 STUB_TERM_CHECKPOINT=1
  expect "pbs, SIGTERM, mpirun's 1 after a checkpoint: checkpointed, not requeued" "4|kairos job 6004, attempt 1: exit status 4 (checkpointed, not finished; mpirun's own status was 1, after the job's SIGTERM), not requeued: the job got SIGTERM; to go on, submit again with KAIROS_JOB_DIR=$tmp/runs/kairos-6004-rows" "$rc|$(status_of "$tmp/runs/kairos-6004-rows")"
  signal_job "$pbs" TERM PBS_JOBID=6005.pbs-server KAIROS_STOP_BEFORE=signal STUB_TERM_STATUS=1
  expect "pbs, SIGTERM, mpirun's 1 and no checkpoint: interrupted" "143|kairos job 6005, attempt 1: exit status 143 (interrupted by SIGTERM; mpirun's own status was 1, after the job's SIGTERM)" "$rc|$(status_of "$tmp/runs/kairos-6005-rows")"
else
  # A job as Slurm would start it, launched with mpirun on this machine.
  args=()
  run "$sbatch" SLURM_JOB_ID=local7 KAIROS_LAUNCHER=mpirun KAIROS_RANKS=2 KAIROS_BIND=none "KAIROS_SETS=end_time=600"
  job=$tmp/runs/kairos-local7-rows
  expect "job exit status" 0 "$rc"
  [[ $rc == 0 ]] || echo "$err"
  expect "job folder: the model file used" same "$(cmp -s "$model" "$job/model.json" && echo same)"
  expect "job folder: the command" "mpirun -np 2 --map-by core --bind-to none $bin run $model --stats $job/stats.json --sync auto --set end_time=600 --checkpoint-dir $job/checkpoints" "$(cat "$job/command.txt" 2>&1)"
  expect "job folder: stats of 2 ranks" "2 600.0" "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["ranks"], s["end_time"])' "$job/stats.json" 2>&1)"
  expect "job folder: the summary" yes "$(grep -q 'on 2 ranks' "$job/summary.txt" && echo yes)"
  expect "job folder: the status" "kairos job local7, attempt 1: exit status 0 (done)" "$(cat "$job/status.txt" 2>&1)"
  # a run that fails: its status, and no stats file that looks finished
  run "$sbatch" SLURM_JOB_ID=local8 KAIROS_LAUNCHER=mpirun KAIROS_RANKS=2 KAIROS_BIND=none "KAIROS_SETS=end_time=-1"
  expect "failed job: kairos's exit status" 2 "$rc"
  expect "failed job: status file" "kairos job local8, attempt 1: exit status 2 (bad input)" "$(cat "$tmp/runs/kairos-local8-rows/status.txt" 2>&1)"
  expect "failed job: no stats" no "$([[ -e $tmp/runs/kairos-local8-rows/stats.json ]] && echo yes || echo no)"
  # the same job id again: refused, the first run left alone
  run "$sbatch" SLURM_JOB_ID=local7 KAIROS_LAUNCHER=mpirun KAIROS_RANKS=2
  expect "a second run into a finished job's folder is refused" "2|kairos job: KAIROS_OUT: expected a folder without a finished run, found '$job' (status.txt: exit status 0)" "$rc|$err"
fi

echo "$failures failed"
((failures == 0))
