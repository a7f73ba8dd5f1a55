# One rank of an mpirun in the CLI tests (tests/cli/test_cli_mpi.c):
# runs "$KAIROS_BIN" "$@", records its pid and then its exit status in
# $KAIROS_RANK_DIR/pid.RANK and status.RANK, so that a test sees every
# rank's own status, not only mpirun's. Open MPI's mpirun signals the
# process group of each rank (SIGTERM, and SIGKILL a second later): kairos
# gets the signal itself (SIGUSR1 too), and this shell ignores it to outlive kairos and
# write the status.
trap '' TERM INT USR1
rank=${OMPI_COMM_WORLD_RANK:-0}
"$KAIROS_BIN" "$@" &
child=$!
echo "$child" > "$KAIROS_RANK_DIR/pid.$rank"
if [ -n "${KAIROS_RANK_FORWARD_TERM:-}" ]; then
  # (tests of --checkpoint-on-term: mpirun, given a long
  # odls_base_sigkill_timeout, sends SIGTERM to this shell only)
  trap 'kill -TERM "$child" 2>/dev/null' TERM
  while wait "$child"; s=$?; [ "$s" -gt 128 ] && kill -0 "$child" 2>/dev/null; do :; done
else
  wait "$child"
  s=$?
fi
echo "$s" > "$KAIROS_RANK_DIR/status.$rank"
# Once one rank has exited after a signal, mpirun kills the others at
# once: linger a little, so that each rank's kairos (which ends within
# milliseconds of the others) has its status written first.
[ "$s" -eq 0 ] || sleep 0.5
exit "$s"
