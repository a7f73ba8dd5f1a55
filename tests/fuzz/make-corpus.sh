#!/usr/bin/env bash
# Remakes the seed corpora of tests/fuzz/corpus/ (checked in; run it after
# a change of a wire or pack format, or of the examples):
#   model_file/  the examples' model files (examples/*.json);
#   batch/       batches rank 1 would send rank 0 in fuzz_batch's model
#                (the model run on one rank, its traffic recorded:
#                prefixes of it and single records);
#   unpack/      packs of a small scene (fuzz_unpack.c's make_seeds);
#   emulation/   written here: input streams (first byte '0', even) and
#                replay logs (first byte '1', odd), good and bad;
#   checkpoint/  checkpoints written by the store (fuzz_checkpoint.c's
#                make_seeds), manifest and rank file in one input.
#   checkpoint_part/  every simulator's part of fuzz_checkpoint_part's
#                models cut by the target itself, and the crash-* inputs
#                it found (kept across a remake).
#   recording/   recordings of frames made by `kairos run --frames` (the
#                ecology, the factory's robots, walkers), one simulator
#                each, manifest and frame file in one input.
#
# Usage: tests/fuzz/make-corpus.sh BUILD_FUZZ_DIR   (a -Dfuzz=true build;
#        recording/ runs $KAIROS_BIN, by default build/kairos)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: make-corpus.sh BUILD_FUZZ_DIR}
corpus=$here/corpus

keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
cp "$corpus"/checkpoint_part/crash-* "$keep/" 2>/dev/null || true
rm -rf "$corpus"
mkdir -p "$corpus"/{model_file,batch,unpack,emulation,checkpoint,checkpoint_part,recording}
cp "$keep"/* "$corpus/checkpoint_part/" 2>/dev/null || true
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
find "$corpus" -type f | sed "s|$here/||" | sort | awk -F/ '{ n[$2]++ } END { for (t in n) printf "%s: %d seeds\n", t, n[t] }'
