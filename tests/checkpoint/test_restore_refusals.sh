#!/usr/bin/env bash
# A kind's restore step must not add to what a checkpoint holds
# (docs/checkpoint.md, "Restarting"): scheduling an event, drawing from the
# simulator's stream or making an entity there is refused with one line
# naming the simulator, on every rank, exit 2 (a restart's setup), and no
# output is left looking done. A restore, or a save, that fails without a
# message says so, with its status.
#
# Usage: test_restore_refusals.sh KAIROS MPIRUN PLUGIN
set -u
kairos=$1 mpirun=$2 plugin=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
expect() {   # what, exit status, pattern, command...
  local what=$1 want=$2 pattern=$3
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  local lines
  lines=$(grep -c '^kairos:' "$work/err")
  if [ "$rc" != "$want" ] || ! grep -q -- "$pattern" "$work/err" || [ "$lines" != 1 ]; then
    echo "FAIL $what: exit $rc, stderr:"; sed 's/^/    /' "$work/err" | head -5
    failed=1
  else
    echo "ok   $what"
  fi
  if ls "$work"/stats.json >/dev/null 2>&1; then echo "FAIL $what: stats.json left"; failed=1; fi
}
for how in 1 2 3 4; do
  args=(run "$here/ckpt_ring.json" --set "plugins=[\"$plugin\"]" --end 20 --quiet
        --set "simulators.a.params.misbehave=$how")
  rm -rf "$work/ck$how"
  "$kairos" "${args[@]}" --checkpoint-at 8 --checkpoint-dir "$work/ck$how" -o "$work/first.json" 2>"$work/err" ||
    { echo "FAIL misbehave=$how: the checkpointing run failed"; cat "$work/err"; failed=1; continue; }
  case $how in
    1) pattern="restoring scheduled an event" ;;
    2) pattern="restoring drew random numbers" ;;
    3) pattern="restoring created or destroyed entities" ;;
    4) pattern="restoring: failed with status 11 (.*) and no message\$" ;;
  esac
  expect "restore misbehave=$how, 1 rank" 2 "$pattern" "$kairos" "${args[@]}" --restart "$work/ck$how/ckpt-8" \
    -o "$work/stats.json"
  expect "restore misbehave=$how, 2 ranks" 2 "$pattern" "$mpirun" -np 2 --oversubscribe "$kairos" "${args[@]}" \
    --restart "$work/ck$how/ckpt-8" -o "$work/stats.json"
done
# saving fails while running: the run fails, exit 1, and names the status
expect "save fails without a message" 1 "saving its state: failed with status 12 (.*) and no message\$" "$kairos" \
  run "$here/ckpt_ring.json" --set "plugins=[\"$plugin\"]" --end 20 --quiet --set simulators.a.params.misbehave=5 \
  --checkpoint-at 8 --checkpoint-dir "$work/ck5" -o "$work/stats.json"
# A restart may change the end time, but not where the state before the
# cut depends on it (docs/checkpoint.md, "Another end time"): a region's
# last step before the end keeps its migrants, a continuous simulator's
# update points stop before the end. Refused in one line, exit 2, on every
# rank; cuts before that point go on (tests/checkpoint/check_restart.py).
root=$(cd "$here/../.." && pwd)
"$kairos" run "$root/examples/walkers.json" --end 49.5 --checkpoint-at 49.2 --checkpoint-dir "$work/w1" --quiet
"$kairos" run "$root/examples/walkers.json" --checkpoint-at 49.2 --checkpoint-dir "$work/w2" --quiet
expect "a region's last step, a later end" 2 \
  "region 'walkers\[0\]': the checkpoint at 49.2, of a run ending at 49.5, cannot go on to the end time 50: its step" \
  "$mpirun" -np 2 --oversubscribe "$kairos" run "$root/examples/walkers.json" --restart "$work/w1" -o "$work/stats.json"
expect "a region's step, an earlier end" 2 "its step at 49 sent its migrants on.*restart with --end 50," \
  "$kairos" run "$root/examples/walkers.json" --restart "$work/w2" --end 49.5 -o "$work/stats.json"
python3 -c "import json,sys; m = json.load(open(sys.argv[1])); m['dependencies'].append(
  {'from': 'ChemicalBath', 'to': 'AssemblyLine', 'promise': 0.5}); json.dump(m, open(sys.argv[2], 'w'))" \
  "$root/examples/factory.json" "$work/fb.json"
"$kairos" run "$work/fb.json" --end 1001 --checkpoint-at 1000.5 --checkpoint-dir "$work/f1" --quiet
expect "a continuous update point, a later end" 2 \
  "'ChemicalBath': the checkpoint at 1000.5, of a run ending at 1001, cannot go on to the end time 3600: its update" \
  "$mpirun" -np 2 --oversubscribe "$kairos" run "$work/fb.json" --restart "$work/f1" -o "$work/stats.json"
# A state event that integrating ahead found on the old end itself (the
# bath's crossing at 1004.958688): integrated again to the later end, it
# ran twice (found by review)
"$kairos" run "$root/examples/factory.json" --end 1004.958688 --checkpoint-at 1004.5 --checkpoint-dir "$work/f2" --quiet
expect "a state event on the old end, a later end" 2 "a state event of its falls on that end.*--end 1004.958688," \
  "$kairos" run "$root/examples/factory.json" --restart "$work/f2" --end 1010 -o "$work/stats.json"

# Not a refusal: a restart with --event-log from a checkpoint of a run
# without event logs makes their folder, as a new run does, and logs from
# the cut: each log is the uninterrupted run's from there (it failed,
# "cannot write", for want of the folder).
"$kairos" run "$root/examples/factory.json" --end 1500 --checkpoint-at 1000 --checkpoint-dir "$work/nolog" --quiet
"$kairos" run "$root/examples/factory.json" --end 1500 --event-log "$work/ref-logs" --quiet
if ! "$kairos" run "$root/examples/factory.json" --end 1500 --restart "$work/nolog" --event-log "$work/new-logs" \
     --quiet 2>"$work/err"; then
  echo "FAIL event logs begun at a restart: $(cat "$work/err")"; failed=1
elif ! python3 - "$work/ref-logs" "$work/new-logs" <<'PY'
import json, pathlib, sys
ref, new = map(pathlib.Path, sys.argv[1:])
cut = 1000 * 10 ** 6  # (the factory's precision)
names = sorted(p.name for p in ref.iterdir())
ok = names == sorted(p.name for p in new.iterdir()) and all(
    [l for l in (ref / n).read_text().splitlines() if json.loads(l)["time"] >= cut] == (new / n).read_text().splitlines()
    for n in names)
sys.exit(0 if ok else 1)
PY
then
  echo "FAIL event logs begun at a restart: not the uninterrupted run's from the cut"; failed=1
else
  echo "ok   event logs begun at a restart, in a folder made for them"
fi
# A region kind whose serialize leaves its region out: its checkpoint is
# refused (the restart went on to other results, exit 0), and nothing is
# left under the checkpoint's name.
expect "a kind's serialize that leaves its region out" 1 "its kind's serialize did not save its region" \
  "$kairos" run "$here/ckpt_field.json" --set "plugins=[\"$plugin\"]" --set simulators.field.kind=\"ckpt_field_forgets\" \
  --quiet --checkpoint-at 5 --checkpoint-dir "$work/forgets" -o "$work/stats.json"
if ls "$work"/forgets/ckpt-5 >/dev/null 2>&1; then echo "FAIL a refused checkpoint was left"; failed=1; fi
exit $failed
