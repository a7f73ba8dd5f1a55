#!/usr/bin/env python3
"""Writes a small recording of frames in the format of docs/viewer.md
("The recording's format", version 1), for the tests of the reader,
`kairos frames` and `kairos view` until the runs write their own.

Usage: make_recording.py DIR [--cut 1|2] [--series] [--break WHAT]

Two worlds: "clock" (one simulator, nothing to draw) and "eco", 8 x 6
units with a grid of 1-unit cells, three layers (plants: circles, swarms:
squares, beacons: diamonds) and one field "signal" (black to white over
[0, 1], cell (x, y) worth x / 8; row 5 never recorded). Three frames, at
times 0, 1 and 2. The swarm 2 moves one unit right per frame and carries
the label "s2". With --cut 2, eco is two regions split at x = 4 (eco[0]
and eco[1]), each writing its agents and its part of the field: the
merged frames are those of --cut 1.

--break spoils one thing, for the refusals: no-manifest, foreign (another
format), version (2), missing-file, truncated (a file cut short),
magic (a block's KRFB), sizes (a block's compressed size past the end),
zstd (a block's compressed bytes), count (a frame missing from a file),
huge (the clock's world 1e30 units wide: too large to draw), reserved
(the file header's last u32 not 0), block-reserved (a block header's),
checksum (a bit of a block's zstd content checksum flipped: the content
reads, only the checksum tells), and in the
manifest: twice (the clock's file named by eco's simulator too),
no-series (a series file that is not there), no-simulators (the clock's
world with none), top-array (a list, not an object), end-early (an end
before the last frame), every-zero (frame_every 0), ranks-zero (ranks 0),
file-manifest (the clock's file named manifest.json).
Compression is done by the zstd command."""
import json
import math
import os
import struct
import subprocess
import sys

TIMES = [0.0, 1.0, 2.0]
LAYERS = [
    {"name": "plants", "shape": "circle", "colour": "#1a9641ff", "size": 0.8},
    {"name": "swarms", "shape": "square", "colour": "#d7191cff", "size": 1.0},
    {"name": "beacons", "shape": "diamond", "colour": "#2b83baff", "size": 2.0},
]
SHAPES = {"circle": 0, "square": 1, "triangle": 2, "diamond": 3}
GRID_W, GRID_H, RECORDED_ROWS = 8, 6, 5


def rgba(colour):
    return int.from_bytes(bytes.fromhex(colour[1:]), "little")


def agents_at(frame):
    """(id, x, y, layer, label) of eco's agents at a frame."""
    return [(1, 1.5, 1.5, 0, None), (5, 6.5, 4.5, 0, None), (2, 2.5 + frame, 3.5, 1, "s2"),
            (9, 6.5, 1.5, 2, None)]


def compress(raw):
    return subprocess.run(["zstd", "-q", "-c", "-3", "--check"], input=raw, stdout=subprocess.PIPE, check=True).stdout


def block(frame, agents, pieces):
    """One frame's block: the agents [(id, x, y, layer, label)] and the
    field pieces [(x0, y0, w, h)] of field 0."""
    n = len(agents)
    raw = b"".join(struct.pack("<Q", a[0]) for a in agents)
    raw += b"".join(struct.pack("<f", a[1]) for a in agents)
    raw += b"".join(struct.pack("<f", a[2]) for a in agents)
    raw += b"".join(struct.pack("<f", LAYERS[a[3]]["size"]) for a in agents)
    raw += b"".join(struct.pack("<I", rgba(LAYERS[a[3]]["colour"])) for a in agents)
    raw += bytes(SHAPES[LAYERS[a[3]]["shape"]] for a in agents)
    raw += bytes(a[3] for a in agents)
    for x0, y0, w, h in pieces:
        raw += struct.pack("<IiiII", 0, x0, y0, w, h)
        raw += b"".join(struct.pack("<f", x / 8) for y in range(y0, y0 + h) for x in range(x0, x0 + w))
    labels = b""
    for i, a in enumerate(agents):
        if a[4] is not None:
            text = a[4].encode()
            labels += struct.pack("<II", i, len(text)) + text
    raw += labels
    packed = compress(raw)
    head = b"KRFB" + struct.pack("<IdIIIIII", frame, TIMES[frame], n, len(pieces), len(labels), len(packed),
                                 len(raw), 0)
    return head + packed


def write_frames(path, blocks):
    with open(path, "wb") as f:
        f.write(b"KRFRAMES" + struct.pack("<II", 1, 0))
        for b in blocks:
            f.write(b)


def main():
    args = sys.argv[1:]
    out = args[0]
    cut = int(args[args.index("--cut") + 1]) if "--cut" in args else 1
    spoil = args[args.index("--break") + 1] if "--break" in args else None
    os.makedirs(out, exist_ok=True)
    # eco: one simulator, or two regions split at x = 4
    rects = [[0, 0, GRID_W, GRID_H]] if cut == 1 else [[0, 0, 4, GRID_H], [4, 0, GRID_W, GRID_H]]
    sims = []
    for r, rect in enumerate(rects):
        name = "eco" if cut == 1 else "eco[%d]" % r
        blocks = []
        for frame in range(len(TIMES)):
            mine = [a for a in agents_at(frame) if rect[0] <= a[1] < rect[2]]
            piece = (rect[0], rect[1], rect[2] - rect[0], RECORDED_ROWS)
            blocks.append(block(frame, mine, [piece]))
        write_frames(os.path.join(out, name + ".frames"), blocks)
        sims.append({"name": name, "rank": r, "rect": rect if cut > 1 else None, "file": name + ".frames"})
    # clock: nothing to draw, an empty block per frame
    write_frames(os.path.join(out, "clock.frames"), [block(i, [], []) for i in range(len(TIMES))])
    manifest = {
        "format": "kairos-frames", "version": 1, "model": "test.json", "seed": 1, "end_time": 2,
        "frame_every": 1, "times": TIMES, "ranks": cut, "series": None,
        "worlds": [
            {"name": "clock", "kind": "clock", "bounds": [0, 0, 1, 1], "grid": None, "layers": [], "fields": [],
             "simulators": [{"name": "clock", "rank": 0, "rect": None, "file": "clock.frames"}]},
            {"name": "eco", "kind": "ecology", "bounds": [0, 0, GRID_W, GRID_H],
             "grid": {"width": GRID_W, "height": GRID_H, "cell": 1, "origin": [0, 0]},
             "layers": LAYERS,
             "fields": [{"name": "signal", "colormap": ["#000000ff", "#ffffffff"], "min": 0, "max": 1}],
             "simulators": sims},
        ],
    }
    if "--series" in args:
        manifest["series"] = "series.csv"
        with open(os.path.join(out, "series.csv"), "w") as f:
            f.write("time,plants\n0,2\n1,2\n2,2\n")
    if spoil == "foreign":
        manifest["format"] = "someone-else"
    if spoil == "version":
        manifest["version"] = 2
    if spoil == "huge":
        manifest["worlds"][0]["bounds"] = [0, 0, 1e30, 1]
    if spoil == "twice":
        manifest["worlds"][1]["simulators"][0]["file"] = "clock.frames"
    if spoil == "no-series":
        manifest["series"] = "series.csv"
    if spoil == "no-simulators":
        manifest["worlds"][0]["simulators"] = []
    if spoil == "end-early":
        manifest["end_time"] = -5
    if spoil == "every-zero":
        manifest["frame_every"] = 0
    if spoil == "ranks-zero":
        manifest["ranks"] = 0
    if spoil == "file-manifest":
        manifest["worlds"][0]["simulators"][0]["file"] = "manifest.json"
    if spoil == "top-array":
        manifest = []
    if spoil != "no-manifest":
        with open(os.path.join(out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
    eco = os.path.join(out, sims[0]["file"])
    data = bytearray(open(eco, "rb").read())
    first = 16                                    # the first block
    packed = struct.unpack_from("<I", data, first + 28)[0]
    if spoil == "missing-file":
        os.remove(eco)
    elif spoil == "truncated":
        data = data[:len(data) - 7]
    elif spoil == "magic":
        data[first:first + 4] = b"KRFX"
    elif spoil == "sizes":
        struct.pack_into("<I", data, first + 28, packed + 1000000)
    elif spoil == "zstd":
        for i in range(first + 40 + 4, first + 40 + packed):
            data[i] ^= 0x5a
    elif spoil == "count":
        data = data[:first + 40 + packed]
    elif spoil == "reserved":
        struct.pack_into("<I", data, 12, 1)
    elif spoil == "block-reserved":
        struct.pack_into("<I", data, first + 36, 7)
    elif spoil == "checksum":
        data[first + 40 + packed - 1] ^= 0x01
    if spoil and spoil != "missing-file":
        with open(eco, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
