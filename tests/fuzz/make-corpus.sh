#!/usr/bin/env bash
# Remakes the seed corpora of tests/fuzz/corpus/ (checked in; run it after
# a change of a wire or pack format, or of the examples):
#   model_file/  the examples' model files (examples/*.json);
#   batch/       batches rank 1 would send rank 0 in fuzz_batch's model
#                (the model run on one rank, its traffic recorded:
#                prefixes of it, single records, and prefixes with the
#                runs of sync-events merged as over MPI);
#   unpack/      packs of a small scene (fuzz_unpack.c's make_seeds);
#   emulation/   written here: input streams (first byte '0', even) and
#                replay logs (first byte '1', odd), good and bad;
#   gateway/     written here: input streams of fuzz_gateway's gateway,
#                good lines and each kind of line it must skip;
#   checkpoint/  checkpoints written by the store (fuzz_checkpoint.c's
#                make_seeds), manifest and rank file in one input.
#   checkpoint_part/  every simulator's part of fuzz_checkpoint_part's
#                models cut by the target itself.
#   recording/   recordings of frames made by `kairos run --frames` (the
#                ecology, the factory's robots, walkers), one simulator
#                each, manifest and frame file in one input.
# The crash-* inputs a fuzzer found, in any of them, are kept across a
# remake.
#
# Usage: tests/fuzz/make-corpus.sh BUILD_FUZZ_DIR   (a -Dfuzz=true build;
#        recording/ runs $KAIROS_BIN, by default build/kairos)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: make-corpus.sh BUILD_FUZZ_DIR}
corpus=$here/corpus

keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
# the crash-* inputs the fuzzers found, in every corpus, stay as regression seeds
(cd "$corpus" && for f in */crash-*; do [[ -e $f ]] && mkdir -p "$keep/${f%/*}" && cp "$f" "$keep/$f"; done) || true
rm -rf "$corpus"
mkdir -p "$corpus"/{model_file,batch,unpack,emulation,gateway,checkpoint,checkpoint_part,recording}
cp -r "$keep"/. "$corpus/" 
cp "$here"/../../examples/*.json "$corpus/model_file/"
# Smaller versions of the examples fuzz_model_file skips as too large (it
# skips models above 64 simulators or 2^19 in an entry's size; see its
# header), so that every built-in kind is fuzzed.
python3 - "$here/../../examples" "$corpus/model_file" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
small = {
    "walkers": {"width": 20, "height": 10, "agents": 300},
    "ecology": {"width": 20, "height": 12, "swarms": 5, "seed_max_distance": 2},
    "mm1": {"capacity": 100, "warmup": 100},
}
for name, params in small.items():
    with open(f"{src}/{name}.json") as f:
        model = json.load(f)
    model["simulators"][0]["params"].update(params)
    with open(f"{dst}/{name}-small.json", "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")
PY
KAIROS_FUZZ_SEEDS=$corpus/batch "$build"/tests/fuzz/fuzz_batch
KAIROS_FUZZ_SEEDS=$corpus/unpack "$build"/tests/fuzz/fuzz_unpack
KAIROS_FUZZ_SEEDS=$corpus/checkpoint "$build"/tests/fuzz/fuzz_checkpoint
KAIROS_FUZZ_SEEDS=$corpus/checkpoint_part "$build"/tests/fuzz/fuzz_checkpoint_part

python3 - "${KAIROS_BIN:-$here/../../build/kairos}" "$here/../../examples" "$corpus/recording" <<'PY'
import json, os, struct, subprocess, sys, tempfile
kairos, examples, out = sys.argv[1:]
runs = {"ecology": ["ecology.json", "--set", "simulators.eco.regions=[1,1]", "--set", "simulators.eco.params.width=12",
                    "--set", "simulators.eco.params.height=8", "--set", "simulators.eco.params.swarms=3",
                    "--set", "simulators.eco.params.seed_max_distance=2", "--end", "3"],
        "robots": ["factory.json", "--end", "40", "--frame-every", "10"],
        "walkers": ["walkers.json", "--set", "simulators.walkers.params.agents=40", "--end", "2"]}
with tempfile.TemporaryDirectory() as tmp:
    for name, args in runs.items():
        d = os.path.join(tmp, name)
        subprocess.run([kairos, "run", os.path.join(examples, args[0]), *args[1:], "--frames", d, "--quiet"],
                       check=True)
        man = json.load(open(os.path.join(d, "manifest.json")))
        world = man["worlds"][0]
        sim = world["simulators"][0]
        body = open(os.path.join(d, sim["file"]), "rb").read()
        world["simulators"] = [dict(sim, file="s.frames")]
        man["worlds"], man["series"] = [world], None
        text = json.dumps(man).encode()
        with open(os.path.join(out, f"recording-{name}"), "wb") as f:
            f.write(struct.pack("<H", len(text)) + text + body)
PY

e=$corpus/emulation
printf '0{"event": "order", "data": 3}\nnot json\n{"event": "order", "data": 5}\n{"event": "other", "data": {"x": [1, 2.5]}}\n' >"$e/input-orders"
printf '0{"event": "tick", "data": null}\n{"event": "order", "data": "2"}\n{"data": 1}\n{"event": "order", "data": 1}' >"$e/input-unterminated"
printf '1{"time":300000,"after":0,"event":"order","data":3}\n{"time":1100000,"after":2,"event":"order","data":5}\n{"time":1100000,"after":2,"event":"other","data":{"x":[1,2.5]}}\n' >"$e/replay-orders"
printf '1{"time": 5}\n' >"$e/replay-bad"
printf '1{"time":5000,"after":3,"event":"x","data":1}\n{"time":4000,"after":4,"event":"x","data":1}\n' >"$e/replay-out-of-order"
g=$corpus/gateway
printf '%s\n' '{"event": "reading", "to": "plant", "data": {"on": true, "i8": -128, "u8": 255, "i16": -32768, "u16": 65535, "i32": 7, "u32": 4294967295, "i64": -9223372036854775808, "u64": 9223372036854775807, "f32": 1.5, "f64": -2.25, "flags": [true, false, true], "a16": [1, -1], "au64": [0, 1.8446744073709550e19], "af32": [0.5, 1, 2, 3.4028234663852886e38], "af64": [1e308, -1e-308]}}' \
  '{"event": "reading", "to": "plant", "data": {"i32": 0, "f64": 1, "u8": 3}}' \
  '{"event": "reading", "to": "plant", "data": {"i32": 0, "f64": 0}}' \
  '{"event": "reading", "to": "plant", "data": null}' \
  '{"event": "reading", "to": "plant"}' \
  '{"event": "ping", "to": "plant"}' \
  '{"event": "bulk", "to": "plant", "data": {"n": 3, "v": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70]}}' \
  >"$g/good"
printf '%s\n' '{"event": "reading", "to": "plant", "data": {"i8": 1}' 'not json' '[1, 2]' '{"event": 5}' '' '{"to": "plant"}' \
  '{"event": "reading", "to": "plant", "data": {"i8": 2}}' >"$g/bad-json"
printf '%s\n' '{"event": "nosuch", "to": "plant", "data": {}}' '{"event": "reading", "to": "nosuch", "data": {}}' \
  '{"event": "reading", "data": {}}' '{"event": "reading", "to": "island", "data": {}}' \
  '{"event": "reading", "to": "gateway", "data": {}}' '{"event": "tick", "to": "plant"}' \
  '{"event": "blob", "to": "plant", "data": null}' '{"event": "ping", "to": "plant", "data": {"x": 1}}' >"$g/bad-targets"
printf '%s\n' '{"event": "reading", "to": "plant", "data": {"on": 1}}' '{"event": "reading", "to": "plant", "data": {"i8": 1.5}}' \
  '{"event": "reading", "to": "plant", "data": {"u32": "7"}}' '{"event": "reading", "to": "plant", "data": {"nosuch": 1}}' \
  '{"event": "reading", "to": "plant", "data": 3}' '{"event": "reading", "to": "plant", "data": [1]}' \
  '{"event": "reading", "to": "plant", "data": {"f64": null}}' '{"event": "reading", "to": "plant", "data": {"flags": true}}' \
  '{"event": "reading", "to": "plant", "data": {"i16": 2.0, "u8": 1e2}}' >"$g/wrong-types"
printf '%s\n' '{"event": "reading", "to": "plant", "data": {"i8": 128}}' '{"event": "reading", "to": "plant", "data": {"i8": -129}}' \
  '{"event": "reading", "to": "plant", "data": {"u8": -1}}' '{"event": "reading", "to": "plant", "data": {"u32": 4294967296}}' \
  '{"event": "reading", "to": "plant", "data": {"u64": -1}}' '{"event": "reading", "to": "plant", "data": {"u64": 1.8446744073709552e19}}' \
  '{"event": "reading", "to": "plant", "data": {"i64": 9.3e18}}' '{"event": "reading", "to": "plant", "data": {"f32": 1e39}}' \
  '{"event": "reading", "to": "plant", "data": {"i64": 99999999999999999999}}' >"$g/out-of-range"
printf '%s\n' '{"event": "reading", "to": "plant", "data": {"a16": [1]}}' '{"event": "reading", "to": "plant", "data": {"a16": [1, 2, 3]}}' \
  '{"event": "reading", "to": "plant", "data": {"flags": [true, false, 1]}}' '{"event": "reading", "to": "plant", "data": {"af64": []}}' \
  '{"event": "bulk", "to": "plant", "data": {"v": [1, 2]}}' >"$g/array-lengths"
python3 - "$g/long-line" <<'PY'
import json, sys
line = json.dumps({"event": "reading", "to": "plant", "data": {"f64": 1, "pad": "x" * 70000}})
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"event": "ping", "to": "plant"}) + "\n" + line[:59000] + "\n")
    f.write(json.dumps({"event": "reading", "to": "plant", "data": {"i8": 5}}) + "\n")
PY
find "$corpus" -type f | sed "s|$here/||" | sort | awk -F/ '{ n[$2]++ } END { for (t in n) printf "%s: %d seeds\n", t, n[t] }'
