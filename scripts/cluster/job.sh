# shellcheck shell=bash
# What scripts/slurm/kairos.sbatch and scripts/pbs/kairos.pbs share (sourced
# by both; docs/cluster.md): read and check the job's settings from the
# environment, make the job's output folder, and print (dry run) or run the
# launch line. The caller sets, before `kairos_job_run`:
#   KJ_SCHEDULER  slurm | pbs
#   KJ_JOB_ID     the scheduler's job id ("dry-run" outside a job)
#   KJ_NODES      nodes of the allocation (a default; KAIROS_NODES wins)
#   KJ_RANKS      tasks of the allocation (a default; KAIROS_RANKS wins)
#   KJ_HOSTFILE   a host file for mpirun (PBS), or empty
#   KJ_LAUNCHER   srun | mpirun (a default; KAIROS_LAUNCHER wins)
#   KJ_DRY_RUN    1 to print the launch command and run nothing

# One line on stderr, exit status 2: bad input.
kj_fail() {
  echo "kairos job: $*" >&2
  exit 2
}

kj_whole() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

kairos_job_run() {
  local root=$KAIROS_ROOT
  local model=${KAIROS_MODEL:-$root/examples/rows.json}
  local bin=${KAIROS_BIN:-$root/build/kairos}
  local sync=${KAIROS_SYNC:-null-message}
  local nodes=${KAIROS_NODES:-$KJ_NODES}
  local ranks=${KAIROS_RANKS:-$KJ_RANKS}
  local launcher=${KAIROS_LAUNCHER:-$KJ_LAUNCHER}
  local bind=${KAIROS_BIND:-cores}
  local out_root=${KAIROS_OUT:-$PWD/kairos-runs}

  [[ -f $model && -r $model ]] || kj_fail "KAIROS_MODEL: expected a readable model file, found '$model'"
  [[ -x $bin && -f $bin ]] || kj_fail "KAIROS_BIN: expected the kairos executable (meson compile -C build), found '$bin'"
  [[ $sync == null-message || $sync == window ]] ||
    kj_fail "KAIROS_SYNC: expected null-message or window, found '$sync'"
  kj_whole "$nodes" || kj_fail "KAIROS_NODES: expected a whole number >= 1, found '$nodes'"
  kj_whole "$ranks" || kj_fail "KAIROS_RANKS: expected a whole number >= 1, found '$ranks'"
  ((ranks >= nodes)) || kj_fail "KAIROS_RANKS: expected at least one rank per node ($nodes nodes), found '$ranks'"
  [[ $launcher == srun || $launcher == mpirun ]] ||
    kj_fail "KAIROS_LAUNCHER: expected srun or mpirun, found '$launcher'"
  [[ $launcher == srun && $KJ_SCHEDULER == pbs ]] &&
    kj_fail "KAIROS_LAUNCHER: expected mpirun under PBS, found 'srun'"
  [[ $bind == cores || $bind == none ]] || kj_fail "KAIROS_BIND: expected cores or none, found '$bind'"

  local name
  name=$(basename "$model" .json)
  local out=$out_root/kairos-$KJ_JOB_ID-$name

  local -a sets=() words=()
  local s
  # split on blanks only: values such as regions=[2,2] or k=* are not globs
  read -r -a words <<< "${KAIROS_SETS:-}"
  for s in "${words[@]}"; do
    [[ $s == *=* ]] || kj_fail "KAIROS_SETS: expected KEY=VALUE words separated by spaces, found '$s'"
    sets+=(--set "$s")
  done

  local -a cmd
  if [[ $launcher == srun ]]; then
    # srun starts the ranks itself (PMI); kairos sees that the launcher bound them.
    cmd=(srun --nodes="$nodes" --ntasks="$ranks" --cpu-bind="$bind" --kill-on-bad-exit=1)
  else
    cmd=(mpirun -np "$ranks" --map-by core --bind-to "${bind/cores/core}")
    [[ -n $KJ_HOSTFILE ]] && cmd+=(--hostfile "$KJ_HOSTFILE")
  fi
  cmd+=("$bin" run "$model" --stats "$out/stats.json" --sync "$sync" "${sets[@]+"${sets[@]}"}")

  if [[ $KJ_DRY_RUN == 1 ]]; then
    # Exactly the command a job would run, one line, shell-quoted.
    printf '%q ' "${cmd[@]}" | sed 's/ $//'
    echo
    return 0
  fi

  [[ -e $out ]] && kj_fail "KAIROS_OUT: expected a folder without a run of job $KJ_JOB_ID, found '$out'"
  mkdir -p "$out" || kj_fail "KAIROS_OUT: expected a folder that can be created, found '$out_root'"
  cp "$model" "$out/model.json"
  {
    printf '%q ' "${cmd[@]}" | sed 's/ $//'
    echo
  } >"$out/command.txt"
  env | grep -E '^(SLURM_|PBS_|KAIROS_|OMPI_)' | sort >"$out/environment.txt" || true
  echo "kairos job $KJ_JOB_ID: $ranks ranks on $nodes nodes, $sync; output in $out"
  # The summary is rank 0's stdout; the stats file appears only if the run succeeded.
  local rc
  set +e
  "${cmd[@]}" | tee "$out/summary.txt"
  rc=${PIPESTATUS[0]}
  set -e
  echo "kairos job $KJ_JOB_ID: exit status $rc" | tee "$out/status.txt"
  return "$rc"
}
