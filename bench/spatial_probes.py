#!/usr/bin/env python3
"""How far from their home slot cells land in the spatial hash's cell table
(ecs/spatial.c), for the table's own hash and for alternatives, over cell
patterns a model may have (bench/README.md, "Spatial hash moves: tried").

The table is open-addressed with linear probing: a cell goes to the first
free slot at or after its home slot, and every slot past home is one more
64-byte record, often one more cache miss, when the cell is looked up. This
models the table alone (insert order, no deletes, no rebuilds) and prints,
per pattern and hash, the mean number of slots a cell sits past its home:

    fibonacci        the table's hash: the packed pair (cx, cy) times the
                     64-bit golden ratio, top bits (table_home)
    fibonacci-tiles  tiles of 4 cells along x share a block of 4 slots, the
                     low bits of cx choosing the slot (tried, not kept)
    mixed            the packed pair through a full 64-bit mixer (an ideal
                     hash's behaviour)

    bench/spatial_probes.py [--log2-slots 17] [--load 0.74]
"""
import argparse
import random

M64 = (1 << 64) - 1


def fibonacci(key):
    return (key * 0x9e3779b97f4a7c15) & M64


def mixed(key):
    key = ((key ^ (key >> 30)) * 0xbf58476d1ce4e5b9) & M64
    key = ((key ^ (key >> 27)) * 0x94d049bb133111eb) & M64
    return key ^ (key >> 31)


def home_fn(hash_fn, tiles):
    def home(cx, cy, shift):
        if tiles:
            key = (((cx & 0xFFFFFFFF) >> 2) << 32) | (cy & 0xFFFFFFFF)
            return ((hash_fn(key) >> (shift + 2)) << 2) | (cx & 3)
        return hash_fn(((cx & 0xFFFFFFFF) << 32) | (cy & 0xFFFFFFFF)) >> shift
    return home


HASHES = [("fibonacci", home_fn(fibonacci, False)), ("fibonacci-tiles", home_fn(fibonacci, True)),
          ("mixed", home_fn(mixed, False))]


def mean_distance(cells, log2_slots, home):
    slots, shift = 1 << log2_slots, 64 - log2_slots
    used = bytearray(slots)
    total = 0
    for cx, cy in cells:
        i = home(cx, cy, shift)
        while used[i]:
            i = (i + 1) & (slots - 1)
            total += 1
        used[i] = 1
    return total / len(cells)


def patterns(n, rng):
    def uniform(w, h):
        return rng.sample([(x, y) for x in range(w) for y in range(h)], n)
    side = int(n ** 0.5) + 1
    blobs = {}
    while len(blobs) < n:
        bx, by = rng.choice([(100, 100), (5000, -300), (-2000, 40)])
        blobs[(bx + int(rng.gauss(0, 100)), by + int(rng.gauss(0, 100)))] = None
    return [
        ("uniform, 60 % of an area occupied", uniform(int((n / 0.6) ** 0.5) + 1, int((n / 0.6) ** 0.5) + 1)),
        ("uniform, 20 % occupied", uniform(int((n / 0.2) ** 0.5) + 1, int((n / 0.2) ** 0.5) + 1)),
        ("a full square", [(x, y) for x in range(side) for y in range(side)][:n]),
        ("one column", [(5, y) for y in range(n)]),
        ("one row", [(x, 7) for x in range(n)]),
        ("a diagonal", [(i, i) for i in range(n)]),
        ("three blobs", list(blobs)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2-slots", type=int, default=17)
    ap.add_argument("--load", type=float, default=0.74)
    a = ap.parse_args()
    n = int((1 << a.log2_slots) * a.load)
    print("%d cells in %d slots (load %.2f); mean slots past home:" % (n, 1 << a.log2_slots, a.load))
    print("%-36s %s" % ("pattern", "  ".join("%15s" % name for name, _ in HASHES)))
    for name, cells in patterns(n, random.Random(1)):
        print("%-36s %s" % (name, "  ".join("%15.2f" % mean_distance(cells, a.log2_slots, h) for _, h in HASHES)))


if __name__ == "__main__":
    main()
