#!/usr/bin/env bash
# Restarts from broken checkpoints, through the kairos command as a user
# runs it (docs/checkpoint.md, "Format"): a truncated, corrupted (bytes
# flipped in the header, a part's zstd frame, its checksum-covered tail),
# foreign-version, other-model, half-written (.partial) or missing-file
# checkpoint, one whose time is after the end time, a folder whose newest
# checkpoint is corrupted (the next older one named), and --restart with
# --replications are refused with exit status 2 on every rank and exactly
# one line on stderr naming the file and what is wrong, printed once under
# mpirun; a refused restart leaves no stats file behind, and one refused
# for a short event log leaves every log as it was. Checkpoints of
# examples/phold.json (written on 1 and on 2 ranks) and examples/sqss.json.
# Usage: test_checkpoint_refusals.sh (tests/cli/meson.build); needs
# KAIROS_BIN, KAIROS_SOURCE_ROOT and MPIRUN.
set -uo pipefail

root=$KAIROS_SOURCE_ROOT
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d /tmp/kairos_ckpt_refusals_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

source "$here/expect.sh"

phold=$root/examples/phold.json
sqss=$root/examples/sqss.json

# A real checkpoint of each model; `fresh NAME SRC` copies one to break.
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/phold" >/dev/null 2>"$tmp/w.err" ||
  { echo "FAIL: writing phold's checkpoint"; cat "$tmp/w.err"; exit 1; }
"$MPIRUN" -np 2 --oversubscribe "$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 \
  --checkpoint-dir "$tmp/phold2" >/dev/null 2>"$tmp/w.err" ||
  { echo "FAIL: writing phold's checkpoint on 2 ranks"; cat "$tmp/w.err"; exit 1; }
"$KAIROS_BIN" run "$sqss" --quiet --end 600 --checkpoint-at 300 --checkpoint-dir "$tmp/sqss" >/dev/null 2>"$tmp/w.err" ||
  { echo "FAIL: writing sqss's checkpoint"; cat "$tmp/w.err"; exit 1; }
for c in "$tmp/phold/ckpt-5" "$tmp/phold2/ckpt-5" "$tmp/sqss/ckpt-300"; do
  [[ -f $c/manifest.json ]] || { echo "FAIL: no $c/manifest.json"; exit 1; }
done
expect "the 2-rank checkpoint has two rank files" "rank-0.bin rank-1.bin" \
  "$(cd "$tmp/phold2/ckpt-5" && echo rank-*.bin)"

# fresh NAME SRC: a copy of checkpoint SRC, named NAME, in a new folder
# (run in $(...): the folder's number comes from mktemp, not a counter).
fresh() {
  local d
  d=$(mktemp -d "$tmp/case_XXXXXX")
  cp -r "$2" "$d/$1"
  echo "$d/$1"
}
n=0

# manifest FIELD-EXPRESSION CKPT: the Python value over manifest m.
manifest() {
  python3 - "$2/manifest.json" "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))
EOF
}

# flip FILE OFFSET: xor the byte at OFFSET with 0x5a.
flip() {
  python3 - "$1" "$2" <<'EOF'
import sys
path, at = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(at)
    b = f.read(1)
    f.seek(at)
    f.write(bytes([b[0] ^ 0x5A]))
EOF
}

# The lines of stderr that kairos wrote about the refusal: mpirun's own
# framed notices (between lines of dashes, "Primary job terminated...")
# and kairos's warnings (sqss's one simulator on 2 ranks: "rank 1 idles")
# left out.
kairos_lines() {
  awk '/^-+$/ { inside = !inside; next } !inside && !/^kairos: warning: /' "$1"
}

# refuse WHAT MODEL FILE PROBLEM [KAIROS ARGS...]: on 1 rank and on 2
# (under rank_status.sh, each rank's own status), kairos exits 2 and writes
# exactly one line, once, that starts "kairos: ", names FILE and says
# PROBLEM (both fixed strings); the stats file it was asked for is not
# there afterwards.
refuse() {
  local what=$1 model=$2 file=$3 problem=$4
  shift 4
  local np
  n=$((n + 1))
  for np in $nps; do
    local out=$tmp/r$n-np$np
    local stats=$out.stats.json
    rm -f "$stats"
    local rc
    if ((np == 1)); then
      "$KAIROS_BIN" run "$model" --quiet -o "$stats" "$@" >"$out.out" 2>"$out.err"
      rc=$?
      expect "$what (1 rank): exit status 2" 2 "$rc"
    else
      mkdir -p "$out.ranks"
      # (every rank ends on its own: mpirun, once a rank exits non-zero,
      # otherwise waited some 2 s before it ended, its
      # odls_base_sigkill_timeout of 1 s, for every refusal here; a rank
      # that hangs is ended by the timeout, its status missing)
      KAIROS_RANK_DIR=$out.ranks timeout 120 "$MPIRUN" -np 2 --oversubscribe --mca orte_abort_on_non_zero_status 0 \
        bash "$here/rank_status.sh" run "$model" --quiet -o "$stats" "$@" >"$out.out" 2>"$out.err"
      rc=$?
      expect "$what (2 ranks): exit status 2 on every rank" "2 2" \
        "$(cat "$out.ranks/status.0" "$out.ranks/status.1" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
    fi
    local lines
    lines=$(kairos_lines "$out.err")
    expect "$what ($np rank(s)): one line on stderr" 1 "$(printf '%s' "$lines" | grep -c '')"
    local line
    line=$(printf '%s\n' "$lines" | head -1)
    if [[ $line == "kairos: "* && $line == *"$file"* && $line == *"$problem"* ]]; then
      echo "ok: $what ($np rank(s)): $line"
    else
      printf 'FAIL: %s (%s rank(s)): expected one line naming %s and saying "%s", found:\n%s\n' \
        "$what" "$np" "$file" "$problem" "$(cat "$out.err")"
      failures=$((failures + 1))
    fi
    [[ -e $stats ]] && { echo "FAIL: $what ($np rank(s)): a refused restart left $stats"; failures=$((failures + 1)); }
  done
}

# Every refusal on 1 rank; on 2 ranks (every rank's status, one line) for
# the checkpoint of one model only: how ranks agree does not depend on
# what was wrong, and each mpirun costs a second.
nps="1 2"
for model in phold phold2 sqss; do
  [[ $model == phold ]] && nps="1 2" || nps="1"
  case $model in
    phold | phold2) m=$phold; src=$tmp/$model/ckpt-5; end=(--end 20); later=6; param=simulators.phold.params.mean=2 ;;
    sqss) m=$sqss; src=$tmp/sqss/ckpt-300; end=(--end 600); later=301; param=simulators.line.params.capacity=6 ;;
  esac
  last=$(manifest 'm["files"][-1]' "$src")
  first_sim=$(manifest 'm["simulators"][0]["name"]' "$src")
  # bytes of the last part: offset and size (zstd frame)
  off=$(manifest '[s for s in m["simulators"] if s["file"] == m["files"][-1]][-1]["offset"]' "$src")
  size=$(manifest '[s for s in m["simulators"] if s["file"] == m["files"][-1]][-1]["size"]' "$src")

  c=$(fresh t "$src")
  truncate -s $((off + size / 2)) "$c/$last"
  refuse "$model: a truncated rank file" "$m" "$c/$last" "truncated" --restart "$c" "${end[@]}"
  c=$(fresh t "$src")
  truncate -s 10 "$c/$last"
  refuse "$model: a rank file cut inside its header" "$m" "$c/$last" "truncated" --restart "$c" "${end[@]}"
  c=$(fresh t "$src")
  : >"$c/$last"
  refuse "$model: an empty rank file" "$m" "$c/$last" "truncated" --restart "$c" "${end[@]}"

  # a byte flipped: in the magic, in the header's version, at a frame's
  # first byte (zstd's magic), inside a frame, in the middle of the last
  # part and its last byte (zstd's content checksum): the manifest's
  # checksum of each part finds them before zstd does
  for at in 0 9 "$off" $((off + 5)) $((off + size / 2)) $((off + size - 1)); do
    c=$(fresh t "$src")
    flip "$c/$last" "$at"
    case $at in
      0) problem="expected a kairos checkpoint rank file, found another header" ;;
      9) problem="expected rank file version 2, found version" ;;
      *) problem=": corrupted" ;;
    esac
    refuse "$model: byte $at of $last flipped" "$m" "$c/$last" "$problem" --restart "$c" "${end[@]}"
  done
  c=$(fresh t "$src")
  rm "$c/$last"
  refuse "$model: rank file missing" "$m" "$c/$last" "expected a checkpoint rank file" --restart "$c" "${end[@]}"
  # the rest is the same for a checkpoint written on 2 ranks
  [[ $model == phold2 ]] && continue

  c=$(fresh t "$src")
  flip "$c/manifest.json" 30
  refuse "$model: a byte of the manifest flipped" "$m" "$c/manifest.json" "not a kairos checkpoint" --restart "$c" \
    "${end[@]}"
  c=$(fresh t "$src")
  sed -i 's/"version": 2,/"version": 3,/' "$c/manifest.json"
  refuse "$model: manifest version 3" "$m" "$c/manifest.json" "version: expected 2, found 3" --restart "$c" "${end[@]}"
  # a value edited to another it could hold (the cut's ticks): the digest finds it
  c=$(fresh t "$src")
  sed -i 's/"ticks": \([0-9]\)/"ticks": 1\1/' "$c/manifest.json"
  refuse "$model: the manifest's ticks edited" "$m" "$c/manifest.json" "the manifest was changed after it was written" \
    --restart "$c" "${end[@]}"
  c=$(fresh t "$src")
  rm "$c/manifest.json"
  refuse "$model: manifest missing" "$m" "$c" "expected a checkpoint (a manifest.json)" --restart "$c" "${end[@]}"

  c=$(fresh "$(basename "$src").partial" "$src")
  refuse "$model: a .partial checkpoint given" "$m" "$c" "half-written" --restart "$c" "${end[@]}"
  c=$(fresh "$(basename "$src").partial" "$src")
  refuse "$model: a folder with only a .partial checkpoint" "$m" "$(dirname "$c")" "found neither" \
    --restart "$(dirname "$c")" \
    "${end[@]}"

  c=$(fresh t "$src")
  # (naming the checkpoint's value too: it named this file's only)
  refuse "$model: another seed" "$m" "$c" "another model: the first difference is seed: 2 in this one, 1 in the checkpoint's" \
    --restart "$c" "${end[@]}" --set seed=2
  refuse "$model: another params value" "$m" "$c" "another model: the first difference is simulators[0].params" \
    --restart "$c" "${end[@]}" --set "$param"
  refuse "$model: a checkpoint after the end time" "$m" "$c" "after this run's end time" --restart "$c" \
    --end $((later - 2))
  refuse "$model: a run's checkpoint to --replications" "$m" "--restart" "found the checkpoint of one run" \
    --restart "$c" "${end[@]}" --replications 2
  refuse "$model: --checkpoint-at with --replications" "$m" "--checkpoint-at" "with --replications" \
    --checkpoint-at 3 "${end[@]}" --replications 2
done

# A stats file a refused restart was asked to overwrite is not left
# looking finished.
c=$(fresh t "$tmp/phold/ckpt-5")
flip "$c/rank-0.bin" 100
echo '{"old": true}' >"$tmp/old-stats.json"
"$KAIROS_BIN" run "$phold" --quiet --end 20 --restart "$c" -o "$tmp/old-stats.json" >/dev/null 2>&1
expect "a refused restart does not write over the stats file" '{"old": true}' "$(cat "$tmp/old-stats.json" 2>/dev/null)"

# A folder of checkpoints whose newest is corrupted is refused, naming
# the newest (no quiet fall back to an older one) and the newest other one
# there that this run could go on from: one that opens, of this model, not
# after the end time (not a link to the damaged one, nor one damaged too);
# none when there is none. With the newest half-written (.partial), the
# newest complete one restarts.
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5,10 --checkpoint-dir "$tmp/two" >/dev/null 2>&1
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5,10,15 --checkpoint-keep 0 \
  --checkpoint-dir "$tmp/three" >/dev/null 2>&1
cp -r "$tmp/two" "$tmp/two-manifest"
flip "$tmp/two/ckpt-10/rank-0.bin" 5000
hint="; to go on from the newest other checkpoint there that opens: --restart"
nps="1 2"
refuse "a folder whose newest checkpoint is corrupted" "$phold" "$tmp/two/ckpt-10/rank-0.bin" \
  "corrupted$hint $tmp/two/ckpt-5" --restart "$tmp/two" --end 20
echo '{' >"$tmp/two-manifest/ckpt-10/manifest.json"
nps="1"
refuse "a folder whose newest manifest does not read" "$phold" "$tmp/two-manifest/ckpt-10/manifest.json" \
  "expected valid JSON, found string or '}' expected near end of file$hint $tmp/two-manifest/ckpt-5" \
  --restart "$tmp/two-manifest" --end 20
ln -s ckpt-15 "$tmp/three/latest"
truncate -s -1 "$tmp/three/ckpt-15/rank-0.bin" "$tmp/three/ckpt-10/rank-0.bin"
refuse "a folder whose two newest are cut short, one also linked" "$phold" "$tmp/three/" \
  "truncated$hint $tmp/three/ckpt-5" --restart "$tmp/three/" --end 20
refuse "... and whose one usable checkpoint is after the end" "$phold" "$tmp/three/" "truncated" \
  --restart "$tmp/three/" --end 4
expect "... names no other then" "" "$(grep -F -e "go on from the newest other" "$tmp/r$n-np1.err")"
refuse "... and whose others are of another model" "$phold" "$tmp/three/" "truncated" \
  --restart "$tmp/three/" --end 20 --set simulators.phold.params.mean=2
expect "... names no other then" "" "$(grep -F -e "go on from the newest other" "$tmp/r$n-np1.err")"
# A folder whose newest is after this run's end names the newest there
# that is not (it said only that the newest was after the end).
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5,10 --checkpoint-keep 0 \
  --checkpoint-dir "$tmp/ends" >/dev/null 2>&1
refuse "a folder whose newest checkpoint is after the end" "$phold" "$tmp/ends/ckpt-10" \
  "the checkpoint is at 10, after this run's end time 8$hint $tmp/ends/ckpt-5" --restart "$tmp/ends" --end 8
# A run that would write checkpoints into a folder holding another
# model's (here another seed's) is refused before it starts: its own
# would replace one of the same name and prune the oldest (a trial lost a
# seed's checkpoints so, in the default folder every run shares).
nps="1 2"
refuse "checkpoints into a folder of another model's" "$phold" "$tmp/ends" \
  "expected a folder of this model's checkpoints, found ckpt-" --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/ends" \
  --set seed=9
expect "... which keeps them" "ckpt-10 ckpt-5" "$(cd "$tmp/ends" && echo ckpt-*)"
# A refusal that a simulator's restore gives names the checkpoint given
# (it named only the region).
eco=$root/examples/ecology.json
"$KAIROS_BIN" run "$eco" --quiet --end 29.5 --checkpoint-at 29.25 --checkpoint-dir "$tmp/eco" >/dev/null 2>&1
nps="1"
refuse "a region's refusal of a checkpoint given by its path" "$eco" "$tmp/eco/ckpt-29.25: region 'eco[0]': " \
  "cannot go on to the end time 60" --restart "$tmp/eco/ckpt-29.25"
nps="1 2"
mv "$tmp/two/ckpt-10" "$tmp/two/ckpt-10.partial"
"$KAIROS_BIN" run "$phold" --quiet --end 20 --restart "$tmp/two" -o "$tmp/two.json" >/dev/null 2>"$tmp/two.err"
expect "a folder whose newest checkpoint is half-written: the older one restarts" 0 "$?"

# The checkpoints themselves restart, to the checksum of the run that
# wrote them (what the refusals broke was theirs).
checksum() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["checksum"])' "$1" 2>/dev/null; }
"$KAIROS_BIN" run "$phold" --quiet --end 20 -o "$tmp/phold-whole.json" >/dev/null 2>&1
expect "the older checkpoint's restart: the uninterrupted checksum" "$(checksum "$tmp/phold-whole.json")" \
  "$(checksum "$tmp/two.json")"
for model in phold phold2; do
  "$KAIROS_BIN" run "$phold" --quiet --end 20 --restart "$tmp/$model" -o "$tmp/$model-restart.json" >/dev/null 2>&1
  expect "$model: its unbroken checkpoint restarts" "0 $(checksum "$tmp/phold-whole.json")" \
    "$? $(checksum "$tmp/$model-restart.json")"
done

# A restart refused for one event log (cut shorter than its checkpoint
# says) leaves every log as it was: none cut back, renamed or removed (on
# 2 ranks, the other rank's logs were cut and renamed).
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/logged" --event-log "$tmp/logs" \
  >/dev/null 2>&1
truncate -s 10 "$tmp/logs/phold[3].jsonl"
before=$(cd "$tmp/logs" && ls && md5sum -- *)
nps="1 2"
refuse "an event log shorter than its checkpoint" "$phold" "phold[3].jsonl" "shorter than" \
  --restart "$tmp/logged" --end 20 --event-log "$tmp/logs"
expect "a refused restart leaves the event logs as they were" "$before" "$(cd "$tmp/logs" && ls && md5sum -- *)"

# An event log changed before the cut (one byte, its length kept) is
# refused by the digest the checkpoint recorded: it went on unnoticed.
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/logged2" --event-log "$tmp/logs2" \
  >/dev/null 2>&1
printf 'X' | dd of="$tmp/logs2/phold[3].jsonl" bs=1 seek=3 conv=notrunc status=none
before=$(cd "$tmp/logs2" && ls && md5sum -- *)
nps="1 2"
refuse "an event log changed before the cut" "$phold" "phold[3].jsonl" "are not the ones the checkpoint saw" \
  --restart "$tmp/logged2" --end 20 --event-log "$tmp/logs2"
expect "a log refused for its digest leaves the event logs as they were" "$before" \
  "$(cd "$tmp/logs2" && ls && md5sum -- *)"

# A restart refused for anything else found in the setup (here the stats
# output is a folder) leaves the event logs as they were too: they were
# cut and renamed before the other checks (found by review).
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/logged3" --event-log "$tmp/logs3" \
  >/dev/null 2>&1
mkdir -p "$tmp/a-folder"
before=$(cd "$tmp/logs3" && ls && md5sum -- *)
for np in 1 2; do
  if ((np == 1)); then
    "$KAIROS_BIN" run "$phold" --quiet --restart "$tmp/logged3" --end 20 --event-log "$tmp/logs3" -o "$tmp/a-folder" \
      >/dev/null 2>"$tmp/other.err"
  else
    "$MPIRUN" -np 2 --oversubscribe "$KAIROS_BIN" run "$phold" --quiet --restart "$tmp/logged3" --end 20 \
      --event-log "$tmp/logs3" -o "$tmp/a-folder" >/dev/null 2>"$tmp/other.err"
  fi
  expect "a restart refused for its stats output ($np rank(s)): exit 2" 2 "$?"
  expect "... and the event logs left as they were ($np rank(s))" "$before" "$(cd "$tmp/logs3" && ls && md5sum -- *)"
done

# The same for a trace that cannot be written, found after the setup's
# agreement: in a folder that does not exist (every rank), and where only
# rank 1's fragment is in the way (a folder): rank 0 had cut its logs.
mkdir -p "$tmp/t.json.rank1"
for np in 1 2; do
  for trace in "$tmp/no-such-folder/t.json" "$tmp/t.json"; do
    ((np == 1)) && [[ $trace == "$tmp/t.json" ]] && continue
    if ((np == 1)); then
      "$KAIROS_BIN" run "$phold" --quiet --restart "$tmp/logged3" --end 20 --event-log "$tmp/logs3" --trace "$trace" \
        >/dev/null 2>"$tmp/other.err"
    else
      "$MPIRUN" -np 2 --oversubscribe "$KAIROS_BIN" run "$phold" --quiet --restart "$tmp/logged3" --end 20 \
        --event-log "$tmp/logs3" --trace "$trace" >/dev/null 2>"$tmp/other.err"
    fi
    expect "a restart refused for its trace $trace ($np rank(s)): exit 2" 2 "$?"
    expect "... and the event logs left as they were ($np rank(s), $trace)" "$before" \
      "$(cd "$tmp/logs3" && ls && md5sum -- *)"
  done
done

# A rank file or a manifest that is a named pipe is refused at once: open()
# waited for a writer for ever, and SIGTERM did not end it.
nps="1 2"
piped=$(fresh ckpt-5 "$tmp/phold/ckpt-5")
rm "$piped/rank-0.bin" && mkfifo "$piped/rank-0.bin"
refuse "a rank file that is a named pipe" "$phold" "rank-0.bin" "expected a regular file" --end 20 --restart "$piped"
piped=$(fresh ckpt-5 "$tmp/phold/ckpt-5")
rm "$piped/manifest.json" && mkfifo "$piped/manifest.json"
refuse "a manifest that is a named pipe" "$phold" "manifest.json" "expected a regular file" --end 20 \
  --restart "$piped"

# A checkpoint folder that cannot be one is refused before the run (exit
# 2, as any output that cannot be written), not at the first cut (exit 1,
# after running up to it).
touch "$tmp/afile"
nps="1 2"
refuse "a checkpoint folder that is a file" "$phold" "$tmp/afile" "expected a directory" \
  --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/afile"
refuse "a checkpoint folder under a file" "$phold" "$tmp/afile" "expected a directory" \
  --end 20 --checkpoint-every 5 --checkpoint-dir "$tmp/afile/sub"
# ... also when only a signal would write there (SIGUSR1 to any run, SIGTERM
# with --checkpoint-on-term): found at the signal, the run was lost (exit 1)
refuse "a checkpoint folder that is a file, for SIGUSR1" "$phold" "$tmp/afile" "expected a directory" \
  --end 20 --checkpoint-dir "$tmp/afile"
refuse "a checkpoint folder that is a file, for SIGTERM" "$phold" "$tmp/afile" "expected a directory" \
  --end 20 --checkpoint-dir "$tmp/afile" --checkpoint-on-term

# ... and a folder where no folder can be made though access() says yes
# (as root; /sys refuses mkdir to everyone): it failed at the first cut
if [ -d /sys/kernel ]; then
  refuse "a checkpoint folder where no folder can be made" "$phold" "/sys/kernel" "cannot write checkpoints there" \
    --end 20 --checkpoint-at 5 --checkpoint-dir /sys/kernel
fi

# ... and for replications, whose checkpoint is DIR/replications.json
refuse "replications' checkpoint folder under a file" "$phold" "$tmp/afile" "expected a directory" \
  --end 5 --replications 3 --checkpoint-dir "$tmp/afile/x" --stop-before-wall 100

# A checkpoint folder the run made is gone again when the run wrote no
# checkpoint there: refused, or ended before any was asked for.
"$KAIROS_BIN" run "$phold" --quiet --end 5 --checkpoint-dir "$tmp/made-1" -o "$tmp/no-such-folder/x.json" \
  >/dev/null 2>&1
"$KAIROS_BIN" run "$phold" --quiet --end 5 --checkpoint-dir "$tmp/made-2" >/dev/null 2>&1
"$KAIROS_BIN" run "$phold" --quiet --end 5 --replications 2 --checkpoint-dir "$tmp/made-3" >/dev/null 2>&1
expect "checkpoint folders made for nothing are removed" "" "$(ls -d "$tmp"/made-* 2>/dev/null)"

# A restart whose log to go on with is a directory says so (it said "4096
# bytes, shorter than ...").
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/logged4" --event-log "$tmp/logs4" \
  >/dev/null 2>&1
rm "$tmp/logs4/phold[2].jsonl" && mkdir "$tmp/logs4/phold[2].jsonl.partial"
nps="1"
refuse "an event log to go on with that is a directory" "$phold" "phold[2].jsonl.partial" \
  "expected the file the checkpoint continues, found a directory" --restart "$tmp/logged4" --end 20 \
  --event-log "$tmp/logs4"
nps="1 2"

# A checkpoint time after the end time never comes: refused, not ignored.
refuse "a checkpoint after the end time" "$phold" "--checkpoint-at" "expected times up to the end time 20, found 30" \
  --end 20 --checkpoint-at 5,30

# A restart passes over --checkpoint-at times before its checkpoint with
# one warning; one at the restart's own time (the checkpoint it goes on
# from) is not warned about.
"$KAIROS_BIN" run "$phold" --quiet --end 20 --restart "$tmp/phold/ckpt-5" --checkpoint-at 2,3,5,10 \
  --checkpoint-dir "$tmp/passed" -o "$tmp/passed.json" >/dev/null 2>"$tmp/passed.err"
expect "checkpoint times before the restart's: exit 0, the uninterrupted checksum" \
  "0 $(checksum "$tmp/phold-whole.json")" "$? $(checksum "$tmp/passed.json")"
expect "checkpoint times before the restart's: one warning" \
  "kairos: warning: --checkpoint-at: 2 and 1 more before the restart's model time 5: no checkpoint there" \
  "$(cat "$tmp/passed.err")"
expect "checkpoint times before the restart's: the later one written" "ckpt-10" "$(ls "$tmp/passed")"
"$KAIROS_BIN" run "$phold" --quiet --end 20 --restart "$tmp/phold/ckpt-5" --checkpoint-at 5,10 \
  --checkpoint-dir "$tmp/passed2" -o "$tmp/passed2.json" >/dev/null 2>"$tmp/passed2.err"
expect "a checkpoint time at the restart's: no warning" "0 " "$? $(cat "$tmp/passed2.err")"

# A folder holding replications' record, not checkpoints: named as such.

# --stop-before-wall too small to run at all stops at the first safe
# point, and says so: a job requeued with it would never get on (each
# restart stopped where it began, with nothing said).
"$KAIROS_BIN" run "$phold" --quiet --stop-before-wall 2 --checkpoint-dir "$tmp/tiny" >/dev/null 2>"$tmp/tiny.err"
expect "--stop-before-wall 2: exit 4, one line saying it leaves no time to run" "4 1 1" \
  "$? $(grep -c . "$tmp/tiny.err") $(grep -c "at this run's first safe point (S leaves no time to run" "$tmp/tiny.err")"

# One run at a time writes a checkpoint folder: a second is refused before
# it starts (both ran, replaced and pruned each other's checkpoints, and
# failed after all their work).
"$KAIROS_BIN" run "$phold" --quiet --end 1000000 --checkpoint-every 100000 --checkpoint-dir "$tmp/busy" \
  -o "$tmp/busy.json" >/dev/null 2>&1 &
busy=$!
for _ in $(seq 100); do [ -d "$tmp/busy" ] && break; sleep 0.1; done
sleep 1
"$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/busy" -o "$tmp/busy2.json" \
  >/dev/null 2>"$tmp/busy2.err"
expect "a folder another run is writing checkpoints in: exit 2, one line naming it, no stats" "2 1 1" \
  "$? $(grep -c . "$tmp/busy2.err") $(grep -c -F "$tmp/busy: expected a checkpoint folder of this run's own, found one \
another run is writing checkpoints in (give each run its own --checkpoint-dir)" "$tmp/busy2.err")$(ls "$tmp/busy2.json" \
  2>/dev/null)"
kill -KILL "$busy"
wait "$busy" 2>/dev/null

# A folder of checkpoints that is also the folder of frames (its manifest
# is the frames'): restarted by the folder's name, from its newest
# checkpoint (the frames' manifest was read as a checkpoint's, exit 2).
walkers=$root/examples/walkers.json
"$KAIROS_BIN" run "$walkers" --quiet --end 30 -o "$tmp/walkers-whole.json" >/dev/null 2>&1
"$KAIROS_BIN" run "$walkers" --quiet --end 30 --checkpoint-at 10,20 --checkpoint-dir "$tmp/shared" --frames "$tmp/shared" \
  >/dev/null 2>&1
"$KAIROS_BIN" run "$walkers" --quiet --end 30 --restart "$tmp/shared" --frames "$tmp/shared" -o "$tmp/shared.json" \
  >/dev/null 2>"$tmp/shared.err"
expect "a folder of checkpoints and frames restarts by its name" "0 $(checksum "$tmp/walkers-whole.json")" \
  "$? $(checksum "$tmp/shared.json")"
mkdir -p "$tmp/reps" && echo '{}' >"$tmp/reps/replications.json"
refuse "a folder of replications' record" "$phold" "$tmp/reps" \
  "found replications.json, the record of a run with --replications or of a sweep (go on with that command and --restart)" \
  --restart "$tmp/reps"

# A restart from a folder says which checkpoint it went on from, in the
# summary and the stats: here not the newest name, which has no manifest
# (half-written, passed over).
mkdir -p "$tmp/which" && cp -r "$tmp/phold/ckpt-5" "$tmp/which/" && mkdir "$tmp/which/ckpt-7"
"$KAIROS_BIN" run "$phold" --end 20 --restart "$tmp/which" -o "$tmp/which.json" >"$tmp/which.out" 2>&1
expect "a restart from a folder: exit 0" "0" "$?"
expect "a restart from a folder names its checkpoint" "  restarted from $tmp/which/ckpt-5 at model time 5" \
  "$(grep "restarted from" "$tmp/which.out")"
expect "a restart from a folder: restarted_from in the stats" "$tmp/which/ckpt-5" \
  "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["checkpoints"]["restarted_from"])' \
    "$tmp/which.json")"

# The same command twice in one folder: the second run's checkpoint
# replaces the first's (it failed at the cut, exit 1, and left a
# .partial folder), and restarts to the uninterrupted checksum.
for k in 1 2; do
  "$KAIROS_BIN" run "$phold" --quiet --end 20 --checkpoint-at 5 --checkpoint-dir "$tmp/again" \
    -o "$tmp/again-$k.json" >/dev/null 2>"$tmp/again.err"
  expect "the same checkpointing run, time $k: exit 0" "0 $(checksum "$tmp/phold-whole.json")" \
    "$? $(checksum "$tmp/again-$k.json")"
done
expect "the same checkpointing run twice: one checkpoint, nothing half-written" "ckpt-5" "$(ls "$tmp/again")"
"$KAIROS_BIN" run "$phold" --quiet --end 20 --restart "$tmp/again" -o "$tmp/again-restart.json" >/dev/null 2>&1
expect "the replaced checkpoint restarts" "0 $(checksum "$tmp/phold-whole.json")" \
  "$? $(checksum "$tmp/again-restart.json")"

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all passed"
