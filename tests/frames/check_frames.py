#!/usr/bin/env python3
"""Frames (docs/viewer.md): `kairos run --frames DIR` records without
changing a result, the same frame files on 1 and 2 ranks with either
algorithm, a restart from a checkpoint (on another number of ranks) goes
on to the uninterrupted run's recording, and bad input is one line with
exit status 2. The frame files are read back here from the documented
format, independently of kairos' own reader.

Usage: check_frames.py KAIROS MPIRUN"""
import json
import re
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ECOLOGY = str(ROOT / "examples" / "ecology.json")
FACTORY = str(ROOT / "examples" / "factory.json")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(kairos, mpirun, ranks, args, cwd, env=None):
    cmd = [kairos, "run", *args, "--quiet"]
    if ranks > 1:
        cmd = [mpirun, "-np", str(ranks), "--oversubscribe", *cmd]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, **(env or {})))


def checksum(stats):
    return json.loads(Path(stats).read_text())["checksum"]


def blocks(path):
    """(frame, time, agents, pieces) of every block of a frame file, from
    the format in docs/viewer.md (sizes only: the payload stays packed).
    Each block's zstd frame carries a content checksum (its frame header's
    descriptor, after the 4-byte magic, has bit 2 set): a byte changed
    inside the compressed data was drawn."""
    data = Path(path).read_bytes()
    assert data[:8] == b"KRFRAMES", path
    out, at = [], 16
    while at < len(data):
        magic, frame, time, n, pieces, labels, packed, raw, zero = struct.unpack_from("<4sIdIIIIII", data, at)
        assert magic == b"KRFB" and zero == 0, (path, at)
        assert data[at + 40:at + 44] == b"\x28\xb5\x2f\xfd" and data[at + 44] & 0x04, (path, at, "no zstd checksum")
        out.append((frame, time, n, pieces))
        at += 40 + packed
    assert at == len(data), path
    return out


def main():
    kairos, mpirun = str(Path(sys.argv[1]).resolve()), sys.argv[2]
    work = Path(tempfile.mkdtemp(prefix="kairos-frames-"))
    try:
        # No result changes: the checksum with and without frames, 1 and 2 ranks, both algorithms.
        r = run(kairos, mpirun, 1, [ECOLOGY, "-o", "plain.json"], work)
        check(r.returncode == 0, "ecology without frames")
        runs = {}
        for ranks, sync in [(1, "null-message"), (2, "window"), (2, "null-message")]:
            tag = f"f{ranks}{sync[0]}"
            r = run(kairos, mpirun, ranks, [ECOLOGY, "--frames", tag, "--sync", sync, "-o", f"{tag}.json"], work)
            check(r.returncode == 0 and checksum(work / f"{tag}.json") == checksum(work / "plain.json"),
                  f"ecology with frames on {ranks} rank(s), {sync}: the checksum of the run without ({r.stderr.strip()})")
            runs[tag] = work / tag
        man = json.loads((work / "f1n" / "manifest.json").read_text())
        check(man["format"] == "kairos-frames" and man["version"] == 1 and man["times"] == [float(t) for t in range(61)],
              "the manifest lists a frame at every step 0..60 (the default period: the time step)")
        world = man["worlds"][0]
        check(world["name"] == "eco" and [s["name"] for s in world["simulators"]] == [f"eco[{i}]" for i in range(4)]
              and [l["name"] for l in world["layers"]] == ["plants", "swarms"] and world["fields"][0]["name"] == "signal",
              "the manifest's world: four regions, plants, swarms and the signal")
        check(sorted(s["rank"] for s in json.loads((work / "f2w" / "manifest.json").read_text())["worlds"][0]["simulators"])
              == [0, 0, 1, 1], "a 2-rank manifest says which rank ran each region")
        for sim in world["simulators"]:
            b = blocks(work / "f1n" / sim["file"])
            check([x[0] for x in b] == list(range(61)) and all(x[3] == 1 for x in b),
                  f"{sim['file']}: blocks for frames 0..60, each with its signal piece")
            same = all((runs[t] / sim["file"]).read_bytes() == (work / "f1n" / sim["file"]).read_bytes()
                       for t in ("f2w", "f2n"))
            check(same, f"{sim['file']}: the same bytes on 1 and 2 ranks, with either algorithm")
        csv = (work / "f1n" / "series.csv").read_text()
        r = run(kairos, mpirun, 1, [ECOLOGY, "--series", "plain.csv"], work)
        check(csv == (work / "plain.csv").read_text(), "series.csv in the recording equals --series")

        # A world cut into 2 x 2 regions on 2 ranks draws as the uncut world on 1 rank: no agent is lost or
        # doubled at a border, not even a migrant on its way to a neighbour at a frame's cut.
        r = run(kairos, mpirun, 1, [ECOLOGY, "--set", "simulators.eco.regions=[1,1]", "--frames", "uncut"], work)
        pics = {}
        for tag in ("uncut", "f2w"):
            p = subprocess.run([kairos, "frames", tag, "--png", f"{tag}.png"], cwd=work, capture_output=True, text=True)
            pics[tag] = {f: (work / f"{tag}.png" / f).read_bytes() for f in sorted(os.listdir(work / f"{tag}.png"))} \
                if p.returncode == 0 else {}
        check(r.returncode == 0 and len(pics["uncut"]) == 61 and pics["uncut"] == pics["f2w"],
              "the same 61 PNGs from the uncut world on 1 rank and 2 x 2 regions on 2 ranks")
        # Also with frames between the steps: a migrant is on its way for a whole step, and every frame
        # in it draws it (only a frame at the step's own time did).
        for tag, ranks, cut in (("between1", 1, "[1,1]"), ("between2", 2, "[2,2]")):
            r = run(kairos, mpirun, ranks, [ECOLOGY, "--end", "6", "--set", "simulators.eco.time_step=0.4", "--set",
                                            f"simulators.eco.regions={cut}", "--frames", tag, "--frame-every", "0.3"],
                    work)
            p = subprocess.run([kairos, "frames", tag, "--png", f"{tag}.png"], cwd=work, capture_output=True, text=True)
            pics[tag] = {f: (work / f"{tag}.png" / f).read_bytes() for f in sorted(os.listdir(work / f"{tag}.png"))} \
                if r.returncode == 0 and p.returncode == 0 else {}
        check(len(pics["between1"]) == 21 and pics["between1"] == pics["between2"],
              "frames every 0.3 of a world stepping every 0.4: the same 21 PNGs uncut and cut 2 x 2")
        # ... and after a restart cut inside a step (2.1, between the steps at 2.0 and 2.4): the frame at 2.1
        # draws the migrants that left at 2.0, which the checkpoint keeps (they are in no world at the cut),
        # whether the recording goes on or a restart with another period begins a new one there.
        between = [ECOLOGY, "--end", "6", "--set", "simulators.eco.time_step=0.4", "--set", "simulators.eco.regions=[2,2]"]
        r = run(kairos, mpirun, 2, [*between, "--frames", "cutwhole", "--frame-every", "0.3", "--checkpoint-at",
                                    "2.1", "--checkpoint-dir", "ck-between"], work)
        check(r.returncode == 0, f"the world stepping every 0.4 with a checkpoint at 2.1 ({r.stderr.strip()})")
        shutil.copytree(work / "cutwhole", work / "cutagain")
        r = run(kairos, mpirun, 1, [*between, "--frames", "cutagain", "--restart", "ck-between/ckpt-2.1"], work)
        p = subprocess.run([kairos, "frames", "cutagain", "--png", "cutagain.png"], cwd=work, capture_output=True,
                           text=True)
        again = {f: (work / "cutagain.png" / f).read_bytes() for f in sorted(os.listdir(work / "cutagain.png"))} \
            if r.returncode == 0 and p.returncode == 0 else {}
        check(len(again) == 21 and again == pics["between2"],
              f"a restart at 2.1, inside a step: the uninterrupted run's 21 PNGs ({r.stderr.strip()})")
        # The migrants' records are read back whole, labels too (the ecology draws none: one is given a 32-byte
        # label and one more record follows, the manifest's digest set to what its content gives).
        shutil.copytree(work / "ck-between", work / "ck-labels")
        shutil.copytree(work / "cutwhole", work / "labels")
        man_path = work / "ck-labels" / "ckpt-2.1" / "manifest.json"
        man = json.loads(man_path.read_text())
        departed = man["extra"]["frames"]["departed"]
        name = sorted(departed)[0]
        rec = departed[name]["agents"][:56]
        departed[name]["agents"] = rec[:52] + "2000" + "41" * 32 + rec
        man_path.write_text(json.dumps(man))
        r = run(kairos, mpirun, 1, [*between, "--frames", "labels", "--frame-every", "0.3", "--restart",
                                    str(work / "ck-labels" / "ckpt-2.1")], work)
        digest = re.search(r"digest: expected ([0-9a-f]{16})", r.stderr)
        if digest:
            man["digest"] = digest.group(1)
            man_path.write_text(json.dumps(man))
            r = run(kairos, mpirun, 1, [*between, "--frames", "labels", "--frame-every", "0.3", "--restart",
                                        str(work / "ck-labels" / "ckpt-2.1")], work)
        check(digest is not None and r.returncode == 0,
              f"a checkpoint's migrants with a 32-byte label are read back ({r.stderr.strip()})")
        # (recording every 1.5, no frame of that run falls between 2.0 and 2.4: the migrants are kept all the same)
        r = run(kairos, mpirun, 1, [*between, "--frames", "cut15", "--frame-every", "1.5", "--checkpoint-at", "2.1",
                                    "--checkpoint-dir", "ck-between15"], work)
        check(r.returncode == 0, f"... and with frames every 1.5 ({r.stderr.strip()})")
        r = run(kairos, mpirun, 2, [*between, "--frames", "cutnew", "--frame-every", "0.7", "--restart",
                                    "ck-between15/ckpt-2.1"], work)
        r2 = run(kairos, mpirun, 1, [*between, "--set", "simulators.eco.regions=[1,1]", "--frames", "every07",
                                     "--frame-every", "0.7"], work)
        pngs = {}
        for tag in ("cutnew", "every07"):
            p = subprocess.run([kairos, "frames", tag, "--png", f"{tag}.png"], cwd=work, capture_output=True, text=True)
            pngs[tag] = {f: (work / f"{tag}.png" / f).read_bytes() for f in sorted(os.listdir(work / f"{tag}.png"))} \
                if p.returncode == 0 else {}
        # (PNGs are named by the frame's number: the new recording's first is frame 3, at 2.1)
        tail = {f: b for f, b in pngs["every07"].items() if f >= "frame-000003.png"}
        check(r.returncode == 0 and r2.returncode == 0 and len(pngs["cutnew"]) == 6 and len(pngs["every07"]) == 9
              and pngs["cutnew"] == tail,
              f"a restart at 2.1 with frames every 0.7 (2.1 .. 5.6, the first before the migrants of 2.0 arrive): "
              f"the uncut world's PNGs ({r.stderr.strip()})")

        # The series' rows are at the time step of the simulators that report them: walkers (step 1) draw but
        # report no series, the ecology (step 0.5) does (series_step was 1, and the viewer's cursor at t showed
        # the row of t / 2).
        two = {"seed": 3, "end_time": 10, "simulators": [
            {"name": "w", "kind": "walkers", "formalism": "agent-based", "time_step": 1, "regions": [2, 1],
             "params": {"width": 20, "height": 10, "agents": 50, "halo": 1}},
            {"name": "eco", "kind": "ecology", "formalism": "agent-based", "time_step": 0.5, "regions": [1, 2],
             "params": {"width": 20, "height": 20, "swarms": 5, "seed_max_distance": 3, "sweeps": 2}}]}
        (work / "two.json").write_text(json.dumps(two))
        r = run(kairos, mpirun, 1, [str(work / "two.json"), "--frames", "two"], work)
        m = json.loads((work / "two" / "manifest.json").read_text()) if r.returncode == 0 else {}
        check(m.get("series_step") == 0.5 and m.get("frame_every") == 1.0,
              f"series_step is the reporting simulators' time step, 0.5 ({r.stderr.strip()}: {m.get('series_step')})")

        # The period: --frame-every, and at most 200 frames by default.
        r = run(kairos, mpirun, 1, [ECOLOGY, "--frames", "every5", "--frame-every", "5"], work)
        times = json.loads((work / "every5" / "manifest.json").read_text())["times"] if r.returncode == 0 else None
        check(times == [float(t) for t in range(0, 61, 5)], "--frame-every 5: frames at 0, 5, .., 60")
        r = run(kairos, mpirun, 1, [FACTORY, "--frames", "factory"], work)
        fm = json.loads((work / "factory" / "manifest.json").read_text()) if r.returncode == 0 else {"times": []}
        check(0 < len(fm["times"]) <= 200 and fm["frame_every"] == 19 and fm["worlds"][0]["name"] == "TransportRobots",
              f"factory (end 3600, step 1): at most 200 frames, every 19 ({len(fm['times'])} frames)")

        # The longest name a simulator may have names its files, NAME.frames.partial the longest, and one
        # byte more is refused by the model file's check, not by the file system halfway through a run.
        for length in (233, 234):
            long_name = "R" * length
            text = Path(FACTORY).read_text().replace('"TransportRobots"', json.dumps(long_name))
            (work / f"long{length}.json").write_text(text)
            r = run(kairos, mpirun, 1, [f"long{length}.json", "--end", "50", "--frames", f"lf{length}",
                                        "--event-log", f"ll{length}"], work)
            if length == 233:
                check(r.returncode == 0 and (work / "lf233" / f"{long_name}.frames").exists()
                      and (work / "ll233" / f"{long_name}.jsonl").exists(),
                      f"a name of 233 bytes: its frames and its event log are written ({r.stderr.strip()[:200]})")
            else:
                check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
                      and "simulators[1].name: expected a name of at most 233 bytes" in r.stderr
                      and not (work / "lf234").exists() and not (work / "ll234").exists(),
                      f"a name of 234 bytes: one line, exit 2, no output ({r.stderr.strip()[:200]})")

        # A restart from a checkpoint goes on to the uninterrupted recording (another rank count, another algorithm).
        r = run(kairos, mpirun, 1, [ECOLOGY, "--frames", "whole", "--checkpoint-at", "30.5,40", "--checkpoint-dir",
                                    "ck"], work)
        check(r.returncode == 0, "ecology with frames and checkpoints at 30.5 and 40")
        for ranks, at in [(2, "30.5"), (1, "40")]:
            again = work / f"again{ranks}"
            shutil.copytree(work / "whole", again)
            # what the run wrote after the cut must go: the restart cuts each file at its checkpointed length
            (again / "manifest.json").unlink()
            for f in again.glob("*.frames"):
                with open(f, "ab") as out:
                    out.write(b"not a frame" * 100)
            r = run(kairos, mpirun, ranks, [ECOLOGY, "--frames", again.name, "--restart", f"ck/ckpt-{at}", "--sync",
                                            "window"], work)
            same = r.returncode == 0 and all((again / f).read_bytes() == (work / "whole" / f).read_bytes()
                                             for f in os.listdir(work / "whole") if f != "manifest.json")
            m1 = json.loads((work / "whole" / "manifest.json").read_text())
            m2 = json.loads((again / "manifest.json").read_text()) if r.returncode == 0 else {}
            m1.pop("ranks"), m2.pop("ranks", None)
            for w in m1["worlds"] + m2.get("worlds", []):
                for sim in w["simulators"]:
                    sim.pop("rank")
            check(same and m1 == m2,
                  f"restart at {at} on {ranks} rank(s): the uninterrupted run's frames ({r.stderr.strip()})")
        # A run refused by a check after the frames' own (here its stats output, a folder) changes no
        # recording: a restart's files are not cut back, and an old recording keeps its manifest; a folder
        # the refused run made is not left behind.
        (work / "a-folder").mkdir()
        for ranks in (1, 2):
            kept = work / f"kept{ranks}"
            shutil.copytree(work / "whole", kept)
            for f in kept.glob("*.frames"):
                with open(f, "ab") as out:
                    out.write(b"written after the checkpoint" * 10)
            before = {f: (kept / f).read_bytes() for f in os.listdir(kept)}
            for extra in (["--restart", "ck/ckpt-30.5"], []):
                r = run(kairos, mpirun, ranks, [ECOLOGY, "--frames", kept.name, "-o", "a-folder", *extra], work)
                after = {f: (kept / f).read_bytes() for f in os.listdir(kept)}
                check(r.returncode == 2 and "a-folder" in r.stderr and after == before,
                      f"a {'restart' if extra else 'run'} on {ranks} rank(s) refused for its -o leaves the recording "
                      f"as it was ({r.returncode}, {r.stderr.strip()}, {sorted(set(after) ^ set(before))})")
        # An unfinished run's files (stopped by SIGTERM after its checkpoint) outlive a new run into the same
        # folders that is refused, whether by its -o or by one rank's trace (found after the setup's
        # agreement); the restart then goes on with them.
        long = [ECOLOGY, "--end", "20000", "--frame-every", "10", "--frames", "unfinished", "--event-log", "logs"]
        p = subprocess.Popen([kairos, "run", *long, "--checkpoint-at", "100", "--checkpoint-dir", "ck-long", "--quiet"],
                             cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if (work / "ck-long" / "ckpt-100").exists() or p.poll() is not None:
                break
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        (work / "tt.json.rank1").mkdir()
        left = {f: f.read_bytes() for d in ("unfinished", "logs") for f in (work / d).iterdir()}
        for ranks, extra in ((1, ["-o", "a-folder"]), (2, ["--trace", "tt.json"])):
            r = run(kairos, mpirun, ranks, [*long, *extra], work)
            now = {f: f.read_bytes() for d in ("unfinished", "logs") for f in (work / d).iterdir()}
            check(r.returncode == 2 and len(left) == 8 and all(f.name.endswith(".partial") for f in left) and now == left,
                  f"a new run refused for {extra[0]} on {ranks} rank(s) leaves an unfinished run's files as they were "
                  f"({r.returncode}, {sorted(f.name for f in set(now) ^ set(left))})")
        r = run(kairos, mpirun, 1, [*long, "--end", "200", "--restart", "ck-long/ckpt-100"], work)
        check(r.returncode == 0 and (work / "unfinished" / "manifest.json").exists(),
              f"... and the restart goes on with them ({r.stderr.strip()})")
        # a bad KAIROS_FAIL_ALLOC and a trace that is a folder are refused before anything is cut (the first
        # was checked after the frames were cut, the second only when the trace was joined, after the run)
        before = {f: (work / "kept1" / f).read_bytes() for f in os.listdir(work / "kept1")}
        for extra, env, words in (([], {"KAIROS_FAIL_ALLOC": "abc"}, "KAIROS_FAIL_ALLOC"),
                                  (["--trace", "a-folder"], None, "a-folder: cannot write: found a directory")):
            r = run(kairos, mpirun, 1, [ECOLOGY, "--frames", "kept1", "--restart", "ck/ckpt-30.5", *extra], work, env)
            after = {f: (work / "kept1" / f).read_bytes() for f in os.listdir(work / "kept1")}
            check(r.returncode == 2 and words in r.stderr and after == before,
                  f"a restart refused for {words} leaves the recording as it was ({r.stderr.strip()})")
        r = run(kairos, mpirun, 2, [ECOLOGY, "--frames", "never-made", "-o", "a-folder"], work)
        check(r.returncode == 2 and not (work / "never-made").exists(),
              f"a refused run leaves no frames folder it made ({r.stderr.strip()})")
        r = run(kairos, mpirun, 1, [ECOLOGY, "--frames", "empty", "--restart", "ck/ckpt-30.5"], work)
        check(r.returncode == 2 and "eco[0].frames" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              f"restart with frames into a folder without the checkpointed frames: one line, exit 2 ({r.stderr.strip()})")
        r = run(kairos, mpirun, 1, [ECOLOGY, "--frames", "fresh", "--restart", "ck/ckpt-40", "--frame-every", "2"], work)
        fresh = json.loads((work / "fresh" / "manifest.json").read_text())["times"] if r.returncode == 0 else None
        p = subprocess.run([kairos, "frames", "fresh", "--png", "fresh.png"], cwd=work, capture_output=True, text=True)
        check(fresh == [float(t) for t in range(40, 61, 2)] and p.returncode == 0 and
              len(os.listdir(work / "fresh.png")) == 11,
              f"a restart with another period starts a new recording at the cut, read as 11 PNGs ({p.stderr.strip()})")
        # A recording damaged in its middle: one line, exit 2, and none of the
        # pictures before the damage left as if the folder were complete.
        # (the magic number of a zstd frame in the file's second half: its
        # size still fits, so only reading that frame finds the damage)
        damaged = work / "fresh" / "eco[0].frames"
        data = bytearray(damaged.read_bytes())
        at = data.find(b"\x28\xb5\x2f\xfd", len(data) // 2)
        data[at:at + 4] = b"\0\0\0\0"
        damaged.write_bytes(bytes(data))
        p = subprocess.run([kairos, "frames", "fresh", "--png", "damaged.png"], cwd=work, capture_output=True, text=True)
        left = sorted(os.listdir(work / "damaged.png")) if (work / "damaged.png").exists() else []
        check(at > 0 and p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and not left,
              f"a damaged recording: exit 2, one line, no pictures left ({p.returncode}, {p.stderr.strip()}, {left})")

        # Bad input: one line, exit status 2, no manifest.
        bad_model = work / "bad.json"
        model = json.loads(Path(ECOLOGY).read_text())
        cases = [
            (["examples/mm1.json"], "expected a simulator that draws"),
            ([ECOLOGY, "--frame-every", "0"], "--frame-every: expected a model time > 0"),
            ([ECOLOGY, "--frame-every", "1e-9"], "expected a whole number of ticks"),
            ([ECOLOGY, "--frame-every", "0.00001"], "expected at most 1000000 frames"),
            ([ECOLOGY, "--replications", "2"], "expected no frames with --replications"),
            ({"nope": {"colour": "#fff"}}, "simulators[0].render.nope: expected a layer or field of kind ecology "
                                           "(plants, swarms, signal)"),
            ({"plants": {"colour": "green"}}, "simulators[0].render.plants.colour: expected a colour"),
            ({"plants": {"shape": "star"}}, "expected circle, square, triangle or diamond"),
            ({"signal": {"min": 3, "max": 1}}, "simulators[0].render.signal: expected a range with min < max"),
            ({"signal": {"colormap": "rainbow"}}, "expected a colour map: viridis"),
            # (a size beyond a 32-bit float's range was stored as infinity: the layer vanished)
            ({"plants": {"size": 1e308}}, "plants.size: expected a size > 0 (world units) from 1.2e-38 to 3.4e38, "
             "found 1e308"),
            ({"plants": {"size": 1e-50}}, "plants.size: expected a size > 0 (world units) from 1.2e-38 to 3.4e38, "
             "found 1e-50"),
            ([], None),
        ]
        for i, (case, words) in enumerate(cases):
            if words is None:
                break
            if isinstance(case, dict):
                model["simulators"][0]["render"] = case
                bad_model.write_text(json.dumps(model))
                args = [str(bad_model), "--frames", f"bad{i}"]
            else:
                args = [str(ROOT / case[0]) if case[0].startswith("examples") else case[0], *case[1:]]
                if "--frames" not in args:
                    args += ["--frames", f"bad{i}"]
            r = run(kairos, mpirun, 1, args, work)
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 2 and len(lines) == 1 and words in lines[0] and
                  not (work / f"bad{i}" / "manifest.json").exists(), f"refused: {words} ({r.stderr.strip()})")
        # a failed run into a folder that held a recording leaves no manifest there
        r = run(kairos, mpirun, 1, [ECOLOGY, "--frames", "every5"], work, {"KAIROS_FAIL_ALLOC": "200"})
        check(r.returncode == 1 and not (work / "every5" / "manifest.json").exists() and
              not list((work / "every5").glob("*.partial")),
              f"a failed run leaves no manifest, not even the folder's old one ({r.stderr.strip()})")
        r = run(kairos, mpirun, 1, [ECOLOGY, "--frame-every", "2"], work)
        check(r.returncode == 2 and "--frame-every: expected --frames DIR too" in r.stderr, "--frame-every alone")
        model["simulators"][0]["render"] = {"plants": {"colour": "#00ff00", "size": 0.5, "shape": "diamond"},
                                           "signal": {"colormap": "magma", "max": 3}}
        bad_model.write_text(json.dumps(model))
        r = run(kairos, mpirun, 1, [str(bad_model), "--frames", "styled"], work)
        w = json.loads((work / "styled" / "manifest.json").read_text())["worlds"][0] if r.returncode == 0 else None
        check(w and w["layers"][0] == {"name": "plants", "shape": "diamond", "colour": "#00ff00ff", "size": 0.5}
              and w["fields"][0]["colormap_name"] == "magma" and w["fields"][0]["max"] == 3,
              "the model file's render restyles a layer and a field")

        # A restart with a later end and no --frame-every goes on with the recording's period (the default,
        # from the end time, would be 4 here instead of 2, and began a new recording at the cut).
        run(kairos, mpirun, 1, [ECOLOGY, "--end", "300", "--frames", "longer", "--checkpoint-at", "100",
                                "--checkpoint-dir", "longer-ck"], work)
        r = run(kairos, mpirun, 1, [ECOLOGY, "--end", "600", "--frames", "longer", "--restart", "longer-ck"], work)
        m = json.loads((work / "longer" / "manifest.json").read_text()) if r.returncode == 0 else {}
        check(m.get("frame_every") == 2.0 and m.get("first_frame") == 0 and len(m.get("times", [])) == 301,
              "a restart to a later end keeps the recording's period: frames 0, 2, .., 600 in one recording "
              f"({r.returncode}: every {m.get('frame_every')}, first {m.get('first_frame')})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
