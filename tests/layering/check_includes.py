#!/usr/bin/env python3
"""Includes follow the layers (docs/internals.md): a file in a layer's folder
includes private headers of its own layer and the layers below it only,
always by their layer's name ("base/error.h"), and nothing anywhere includes
with "../". schedulers/ reaches net/ through the transport interface alone,
and public headers never include MPI's or jansson's.

Usage: check_includes.py SOURCE_ROOT"""
import re
import sys
from pathlib import Path

BELOW = {
    "base": set(),
    "ecs": {"base"},
    "net": {"base"},
    "schedulers": {"base", "ecs", "net"},
    "regions": {"base", "ecs", "net", "schedulers"},
    "runtime": {"base", "ecs", "net", "schedulers", "regions"},
    "models": {"base", "ecs", "net", "schedulers", "regions", "runtime"},
    "cli": {"base", "ecs", "net", "schedulers", "regions", "runtime", "models"},
}
# What a layer may include from a lower one, where not everything.
ONLY = {
    ("schedulers", "net"): {"net/transport.h"},
    # regions/ is built on the public API; of the schedulers' internals it
    # uses only these two narrow headers.
    ("regions", "schedulers"): {"schedulers/model_fail.h", "schedulers/time_private.h"},
}
# The layer that implements each public header (docs/internals.md). A layer
# includes public headers of its own layer and the layers below, as it
# includes private ones: kairos/kairos.h, which includes them all, only
# from runtime/ up.
PUBLIC_LAYER = {
    "export.h": "base", "status.h": "base", "buffer.h": "base",
    "entity.h": "ecs", "registry.h": "ecs", "world.h": "ecs", "component.h": "ecs", "behavior.h": "ecs",
    "hierarchy.h": "ecs", "channel.h": "ecs", "name.h": "ecs", "view.h": "ecs", "spatial.h": "ecs",
    "serializer.h": "ecs", "pack.h": "ecs", "digest.h": "ecs",
    "time.h": "schedulers", "event.h": "schedulers", "sync.h": "schedulers", "model.h": "schedulers", "stop.h": "schedulers",
    "sim.h": "schedulers", "log.h": "schedulers", "rng.h": "schedulers", "dist.h": "schedulers",
    "ode.h": "schedulers", "continuous.h": "schedulers", "emulation.h": "schedulers",
    "state.h": "schedulers", "render.h": "schedulers", "handler.h": "schedulers", "statistics.h": "schedulers",
    "region.h": "regions",
    "kind.h": "runtime", "param.h": "runtime", "kairos.h": "runtime",
}
SOURCE_DIRS = list(BELOW) + ["include", "tests", "bench", "examples"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
# Plug-ins compile against include/ alone, without MPI's or jansson's flags.
NOT_IN_PUBLIC = ("mpi.h", "jansson.h")


def main():
    root = Path(sys.argv[1])
    problems = []
    files = 0
    for top in SOURCE_DIRS:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".c", ".h"):
                continue
            files += 1
            rel = path.relative_to(root)
            if top == "include":
                for m in SYSTEM_INCLUDE.finditer(path.read_text(errors="replace")):
                    if m.group(1) in NOT_IN_PUBLIC:
                        problems.append(f"{rel}: a public header includes <{m.group(1)}>")
            for m in INCLUDE.finditer(path.read_text(errors="replace")):
                target = m.group(1)
                line = path.read_text(errors="replace").count("\n", 0, m.start()) + 1
                where = f"{rel}:{line}"
                if target.startswith("../") or "/../" in target:
                    problems.append(f'{where}: #include "{target}" climbs out of its folder; name the header by its layer')
                    continue
                if target.startswith("kairos/"):
                    header = target[len("kairos/"):]
                    owner = PUBLIC_LAYER.get(header)
                    if owner is None:
                        if (root / "include" / target).exists():
                            problems.append(f"{where}: include/{target} has no layer in check_includes.py's PUBLIC_LAYER")
                        continue
                    mine = top if top in BELOW else (PUBLIC_LAYER.get(path.name) if top == "include" else None)
                    if mine is not None and owner != mine and owner not in BELOW[mine]:
                        problems.append(f'{where}: {mine} code includes "{target}", which belongs to {owner}/ above it')
                    continue
                if top not in BELOW:
                    continue
                layer_of_target = target.split("/")[0]
                if "/" not in target or layer_of_target == "kairos":
                    if "/" not in target and not (path.parent / target).exists():
                        problems.append(f'{where}: #include "{target}" is not a file beside it; name it by its layer')
                    continue
                if layer_of_target == top:
                    continue
                if layer_of_target not in BELOW[top]:
                    problems.append(f'{where}: {top}/ includes "{target}" from {layer_of_target}/, which is not below it')
                    continue
                only = ONLY.get((top, layer_of_target))
                if only is not None and target not in only:
                    problems.append(f'{where}: {top}/ may include only {", ".join(sorted(only))} from {layer_of_target}/, not "{target}"')
    for p in problems:
        print(p)
    print(f"{files} files; {len(problems)} problems")
    if files < 100:
        print("too few files found: wrong source root?")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
