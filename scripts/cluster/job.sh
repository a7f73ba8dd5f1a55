# shellcheck shell=bash
# What scripts/slurm/kairos.sbatch and scripts/pbs/kairos.pbs share (sourced
# by both; docs/cluster.md): read and check the job's settings from the
# environment, make (or go on in) the job's folder, print (dry run) or run
# the launch line, and when the run has checkpointed and stopped (exit status
# 4) queue the job again so that it goes on from its checkpoint. The caller
# sets, before `kairos_job_run`:
#   KJ_SCHEDULER  slurm | pbs
#   KJ_JOB_ID     the scheduler's job id, short ("dry-run" outside a job)
#   KJ_NODES      nodes of the allocation (a default; KAIROS_NODES wins)
#   KJ_RANKS      tasks of the allocation (a default; KAIROS_RANKS wins)
#   KJ_HOSTFILE   a host file for mpirun (PBS), or empty
#   KJ_LAUNCHER   srun | mpirun (a default; KAIROS_LAUNCHER wins)
#   KJ_STOP       signal | auto: how a run stops before the time limit by
#                 default (KAIROS_STOP_BEFORE wins)
#   KJ_SCRIPT     the job script, for a PBS job that submits the next one
#   KJ_DRY_RUN    1 to print the launch command and run nothing

# One line on stderr, exit status 2: bad input.
kj_fail() {
  echo "kairos job: $*" >&2
  exit 2
}

kj_whole() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

# A duration as squeue (%L) and qstat (walltime) print it, [D-]H:M:S, M:S or
# S, in seconds; fails on anything else (UNLIMITED, NOT_SET, nothing).
kj_seconds() {
  local t=$1 d=0 h=0 m=0 s=0
  if [[ $t =~ ^([0-9]+)-(.+)$ ]]; then
    d=${BASH_REMATCH[1]}
    t=${BASH_REMATCH[2]}
  fi
  if [[ $t =~ ^([0-9]+):([0-9]+):([0-9]+)$ ]]; then
    h=${BASH_REMATCH[1]} m=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
  elif [[ $t =~ ^([0-9]+):([0-9]+)$ ]]; then
    m=${BASH_REMATCH[1]} s=${BASH_REMATCH[2]}
  elif [[ $t =~ ^([0-9]+)$ ]]; then
    s=${BASH_REMATCH[1]}
  else
    return 1
  fi
  echo $((((10#$d * 24 + 10#$h) * 60 + 10#$m) * 60 + 10#$s))
}

# Seconds the job has left, from the scheduler; fails when it cannot tell.
# Slurm: SLURM_JOB_END_TIME (newer Slurm sets it), else squeue's %L (time
# left). PBS: qstat -f's Resource_List.walltime minus resources_used.walltime.
kj_time_left() {
  local info limit used
  if [[ $KJ_SCHEDULER == slurm ]]; then
    if [[ ${SLURM_JOB_END_TIME:-} =~ ^[0-9]+$ ]]; then
      echo $((SLURM_JOB_END_TIME - $(date +%s)))
      return 0
    fi
    [[ -n ${SLURM_JOB_ID:-} ]] || return 1
    info=$(squeue -h -j "$SLURM_JOB_ID" -o %L 2>/dev/null) || return 1
    kj_seconds "$info"
  else
    [[ -n ${PBS_JOBID:-} ]] || return 1
    info=$(qstat -f "$PBS_JOBID" 2>/dev/null) || return 1
    limit=$(sed -n 's/^ *Resource_List\.walltime = *//p' <<<"$info")
    used=$(sed -n 's/^ *resources_used\.walltime = *//p' <<<"$info")
    limit=$(kj_seconds "$limit") || return 1
    used=$(kj_seconds "${used:-0}") || return 1
    echo $((limit - used))
  fi
}

# True when DIR holds a complete checkpoint: DIR/ckpt-T/manifest.json, not
# one being written (ckpt-T.partial).
# The complete checkpoints in $1, one manifest a line: a run that wrote
# one changes the list (it may also drop old ones, never without writing).
kj_checkpoints() {
  local m
  for m in "$1"/ckpt-*/manifest.json; do
    [[ -f $m && $m != *.partial/manifest.json ]] && echo "$m"
  done
  return 0
}

kj_has_checkpoint() {
  local m
  for m in "$1"/ckpt-*/manifest.json; do
    [[ -f $m && $m != *.partial/manifest.json ]] && return 0
  done
  return 1
}

# Queue the job again, to go on from its checkpoint in the job folder $1.
# Slurm: the same job, requeued (same job id, so the same folder; needs
# sbatch --requeue); this shell is ended by it. PBS: qrerun needs operator
# rights, so a new job of the same script, with the same KAIROS_* settings and
# the folder in KAIROS_JOB_DIR, that starts once this one has ended.
kj_requeue() {
  local out=$1 names=KAIROS_JOB_DIR,KAIROS_ROOT v script=${KJ_SCRIPT:-}
  local -a extra=()
  if [[ $KJ_SCHEDULER == slurm ]]; then
    echo "kairos job $KJ_JOB_ID: scontrol requeue $SLURM_JOB_ID"
    scontrol requeue "$SLURM_JOB_ID"
    return
  fi
  for v in $(compgen -e); do
    [[ $v == KAIROS_* && $v != KAIROS_JOB_DIR && $v != KAIROS_ROOT ]] && names+=,$v
  done
  read -r -a extra <<<"${KAIROS_QSUB_ARGS:-}"
  # PBS runs a copy of the script; without one, the script in the kairos folder
  [[ -f $script && -r $script ]] || script=$KAIROS_ROOT/scripts/pbs/kairos.pbs
  local -a next=(qsub -W depend=afterany:"$PBS_JOBID" -v "$names" "${extra[@]+"${extra[@]}"}" "$script")
  echo "kairos job $KJ_JOB_ID: ${next[*]}"
  KAIROS_JOB_DIR=$out KAIROS_ROOT=$KAIROS_ROOT "${next[@]}"
}

kairos_job_run() {
  local root=$KAIROS_ROOT
  local model=${KAIROS_MODEL:-$root/examples/rows.json}
  local bin=${KAIROS_BIN:-$root/build/kairos}
  local sync=${KAIROS_SYNC:-auto}
  local nodes=${KAIROS_NODES:-$KJ_NODES}
  local ranks=${KAIROS_RANKS:-$KJ_RANKS}
  local launcher=${KAIROS_LAUNCHER:-$KJ_LAUNCHER}
  local bind=${KAIROS_BIND:-cores}
  local out_root=${KAIROS_OUT:-$PWD/kairos-runs}
  local stop=${KAIROS_STOP_BEFORE:-$KJ_STOP}
  local margin=${KAIROS_STOP_MARGIN:-300}
  local every=${KAIROS_CHECKPOINT_WALL:-}
  local on_term=${KAIROS_CHECKPOINT_ON_TERM:-0}
  # mpirun waits this long after its SIGTERM, passes it on, and kills the
  # ranks as long after that: 2 x it must fit in the scheduler's grace
  # before SIGKILL (Slurm's KillWait, 30 s by default; PBS's kill_delay, 10 s)
  local default_wait=14
  [[ $KJ_SCHEDULER == pbs ]] && default_wait=4
  local term_wait=${KAIROS_TERM_WAIT:-$default_wait}
  local max=${KAIROS_MAX_ATTEMPTS:-10}

  [[ -f $model && -r $model ]] || kj_fail "KAIROS_MODEL: expected a readable model file, found '$model'"
  [[ -x $bin && -f $bin ]] || kj_fail "KAIROS_BIN: expected the kairos executable (meson compile -C build), found '$bin'"
  [[ $sync == auto || $sync == null-message || $sync == window ]] ||
    kj_fail "KAIROS_SYNC: expected auto, null-message or window, found '$sync'"
  kj_whole "$nodes" || kj_fail "KAIROS_NODES: expected a whole number >= 1, found '$nodes'"
  kj_whole "$ranks" || kj_fail "KAIROS_RANKS: expected a whole number >= 1, found '$ranks'"
  ((ranks >= nodes)) || kj_fail "KAIROS_RANKS: expected at least one rank per node ($nodes nodes), found '$ranks'"
  [[ $launcher == srun || $launcher == mpirun ]] ||
    kj_fail "KAIROS_LAUNCHER: expected srun or mpirun, found '$launcher'"
  [[ $launcher == srun && $KJ_SCHEDULER == pbs ]] &&
    kj_fail "KAIROS_LAUNCHER: expected mpirun under PBS, found 'srun'"
  [[ $bind == cores || $bind == none ]] || kj_fail "KAIROS_BIND: expected cores or none, found '$bind'"
  [[ $stop == signal || $stop == auto ]] || kj_whole "$stop" ||
    kj_fail "KAIROS_STOP_BEFORE: expected signal, auto or a whole number of seconds, found '$stop'"
  [[ $margin =~ ^[0-9]+$ ]] || kj_fail "KAIROS_STOP_MARGIN: expected a whole number of seconds, found '$margin'"
  [[ -z $every ]] || kj_whole "$every" ||
    kj_fail "KAIROS_CHECKPOINT_WALL: expected a whole number of seconds, found '$every'"
  [[ $on_term == 0 || $on_term == 1 ]] || kj_fail "KAIROS_CHECKPOINT_ON_TERM: expected 0 or 1, found '$on_term'"
  kj_whole "$term_wait" || kj_fail "KAIROS_TERM_WAIT: expected a whole number of seconds >= 1, found '$term_wait'"
  kj_whole "$max" || kj_fail "KAIROS_MAX_ATTEMPTS: expected a whole number >= 1, found '$max'"

  local name
  name=$(basename "$model" .json)
  # A job that goes on with another job's run names its folder (PBS, or a
  # chained submission); a requeued Slurm job keeps its id, so its folder.
  local out=${KAIROS_JOB_DIR:-$out_root/kairos-$KJ_JOB_ID-$name}
  local where=KAIROS_OUT
  [[ -n ${KAIROS_JOB_DIR:-} ]] && where=KAIROS_JOB_DIR
  # (a folder named to go on with must be there: a mistyped one would start
  # the run again from the beginning)
  [[ -z ${KAIROS_JOB_DIR:-} || -e $out || $KJ_DRY_RUN == 1 ]] ||
    kj_fail "KAIROS_JOB_DIR: expected the folder of an unfinished kairos job to go on with, found none at '$out'"
  local ckpt=$out/checkpoints

  local -a sets=() words=()
  local s
  # split on blanks only: values such as regions=[2,2] or k=* are not globs
  read -r -a words <<< "${KAIROS_SETS:-}"
  for s in "${words[@]}"; do
    [[ $s == *=* ]] || kj_fail "KAIROS_SETS: expected KEY=VALUE words separated by spaces, found '$s'"
    sets+=(--set "$s")
  done

  # Stopping in time: the run checkpoints and exits 4 on SIGUSR1 (always
  # passed on, below), and with --stop-before-wall after so many seconds.
  local stop_wall='' left
  if [[ $stop == auto ]]; then
    if left=$(kj_time_left); then
      ((left > margin)) ||
        kj_fail "KAIROS_STOP_MARGIN: expected fewer seconds than the job has left ($left), found '$margin'"
      stop_wall=$((left - margin))
    else
      echo "kairos job: KAIROS_STOP_BEFORE=auto: the job's time limit is unknown here; no --stop-before-wall, the run stops early only on SIGUSR1" >&2
    fi
  elif [[ $stop != signal ]]; then
    stop_wall=$stop
  fi

  local -a cmd
  if [[ $launcher == srun ]]; then
    # srun starts the ranks itself (PMI); kairos sees that the launcher bound them.
    cmd=(srun --nodes="$nodes" --ntasks="$ranks" --cpu-bind="$bind" --kill-on-bad-exit=1)
  else
    cmd=(mpirun -np "$ranks" --map-by core --bind-to "${bind/cores/core}")
    [[ -n $KJ_HOSTFILE ]] && cmd+=(--hostfile "$KJ_HOSTFILE")
    # mpirun kills the ranks 1 s after passing SIGTERM on: give them time to checkpoint
    [[ $on_term == 1 ]] && cmd+=(--mca odls_base_sigkill_timeout "$term_wait")
  fi
  cmd+=("$bin" run "$model" --stats "$out/stats.json" --sync "$sync" "${sets[@]+"${sets[@]}"}")
  cmd+=(--checkpoint-dir "$ckpt")
  kj_has_checkpoint "$ckpt" && cmd+=(--restart "$ckpt")
  [[ -n $stop_wall ]] && cmd+=(--stop-before-wall "$stop_wall")
  [[ -n $every ]] && cmd+=(--checkpoint-wall "$every")
  [[ $on_term == 1 ]] && cmd+=(--checkpoint-on-term)

  if [[ $KJ_DRY_RUN == 1 ]]; then
    # Exactly the command a job would run, one line, shell-quoted.
    printf '%q ' "${cmd[@]}" | sed 's/ $//'
    echo
    return 0
  fi

  # The job folder: new, or one whose run has not finished (a requeued or
  # chained job goes on there); never one with a finished run.
  local attempt=1 made=0
  if [[ -e $out ]]; then
    [[ -d $out && -f $out/command.txt && -f $out/model.json ]] ||
      kj_fail "$where: expected a kairos job folder to go on with, or none, found '$out'"
    if [[ -f $out/status.txt ]] && tail -n 1 "$out/status.txt" | grep -Eq ': exit status 0( |$)'; then
      kj_fail "$where: expected a folder without a finished run, found '$out' (status.txt: exit status 0)"
    fi
    cmp -s "$model" "$out/model.json" ||
      kj_fail "KAIROS_MODEL: expected the model file of the run in '$out' (its model.json), found a different '$model'"
    [[ -f $out/attempts.txt ]] && read -r made <"$out/attempts.txt"
    [[ $made =~ ^[0-9]+$ ]] || kj_fail "$where: expected a number of attempts in '$out/attempts.txt', found '$made'"
    attempt=$((made + 1))
    ((attempt <= max)) ||
      kj_fail "KAIROS_MAX_ATTEMPTS: expected more than the $made attempts made in '$out', found '$max'"
  else
    mkdir -p "$out" || kj_fail "$where: expected a folder that can be created, found '$out'"
    cp "$model" "$out/model.json"
  fi
  echo "$attempt" >"$out/attempts.txt"
  {
    printf '%q ' "${cmd[@]}" | sed 's/ $//'
    echo
  } >>"$out/command.txt"
  env | grep -E '^(SLURM_|PBS_|KAIROS_|OMPI_)' | sort >"$out/environment.txt" || true
  echo "kairos job $KJ_JOB_ID: attempt $attempt of $max: $ranks ranks on $nodes nodes, $sync; output in $out"
  if kj_has_checkpoint "$ckpt"; then
    echo "kairos job $KJ_JOB_ID: going on from the newest complete checkpoint in $ckpt"
  fi
  [[ -n $stop_wall ]] && echo "kairos job $KJ_JOB_ID: the run checkpoints and stops after $stop_wall s (--stop-before-wall)"

  # The launcher runs in the background and this shell waits for it: bash
  # runs a trap only between commands, and `wait` is one a signal ends. So a
  # SIGUSR1 to this shell (sbatch --signal=B:USR1@300, scancel --batch
  # --signal=USR1, qsig -s USR1) reaches the ranks through the launcher
  # (srun and mpirun pass USR1 on): they checkpoint and exit 4. SIGTERM is
  # not passed on: the scheduler sends it to the ranks itself, and srun
  # answers a SIGTERM of its own by killing the ranks.
  local pid='' rc=0 woken=0 usr1=0 term=0
  trap 'woken=1 usr1=1
    echo "kairos job $KJ_JOB_ID: got SIGUSR1, passing it on to $launcher: checkpoint and stop"
    [[ -z $pid ]] || kill -USR1 "$pid" || true' USR1
  trap 'woken=1 term=1
    echo "kairos job $KJ_JOB_ID: got SIGTERM (time limit, scancel or qdel); not passed on"' TERM
  local before
  before=$(kj_checkpoints "$ckpt")
  "${cmd[@]}" >"$out/summary.txt" &
  pid=$!
  ((usr1 == 0)) || kill -USR1 "$pid" || true # one that came before the launch
  while :; do
    woken=0
    rc=0
    wait "$pid" || rc=$?
    ((woken)) || break # the launcher ended; else a signal ended the wait
  done
  # a SIGUSR1 from now on comes too late to matter; SIGTERM still counts
  trap '' USR1
  # The summary is rank 0's stdout; the stats file appears only if the run succeeded.
  cat "$out/summary.txt"

  local meaning line launcher_said=''
  # After the job's SIGTERM the launcher's own status (mpirun: 1 once it is
  # signalled itself) is not the run's: a checkpoint written since the
  # launch means checkpointed (4), none means interrupted (143).
  if ((term)) && [[ $rc != 0 && $rc != 2 && $rc != 3 && $rc != 4 && $rc != 143 ]]; then
    launcher_said="; $launcher's own status was $rc, after the job's SIGTERM"
    if [[ $(kj_checkpoints "$ckpt") != "$before" ]]; then rc=4; else rc=143; fi
  fi
  case $rc in
    0) meaning="done" ;;
    1) meaning="the run failed" ;;
    2) meaning="bad input" ;;
    3) meaning="deadlock" ;;
    4) meaning="checkpointed, not finished" ;;
    130) meaning="interrupted by SIGINT" ;;
    143) meaning="interrupted by SIGTERM" ;;
    *) meaning="$launcher's own status" ;;
  esac
  line="kairos job $KJ_JOB_ID, attempt $attempt: exit status $rc ($meaning$launcher_said)"
  # Only status 4 means "run me again from the checkpoint"; the job's status is the run's.
  if ((rc != 4)); then
    echo "$line" | tee -a "$out/status.txt"
    return "$rc"
  fi
  if ((term)); then
    echo "$line, not requeued: the job got SIGTERM; to go on, submit again with KAIROS_JOB_DIR=$out" |
      tee -a "$out/status.txt"
    return 4
  fi
  if ((attempt >= max)); then
    echo "$line, not requeued: KAIROS_MAX_ATTEMPTS=$max reached; to go on, submit again with KAIROS_JOB_DIR=$out and a larger KAIROS_MAX_ATTEMPTS" |
      tee -a "$out/status.txt"
    return 4
  fi
  echo "$line, requeued for attempt $((attempt + 1)) of $max" | tee -a "$out/status.txt"
  local requeue_rc=0
  kj_requeue "$out" || requeue_rc=$?
  if ((requeue_rc != 0)); then
    echo "kairos job $KJ_JOB_ID, attempt $attempt: the requeue failed (status $requeue_rc); to go on, submit again with KAIROS_JOB_DIR=$out" |
      tee -a "$out/status.txt" >&2
  fi
  return 4
}
