#!/usr/bin/env python3
"""The exported symbols of libkairos.so and of the kairos executable are
exactly the public API: every function that include/kairos/ declares with
KR_API is exported by both, and neither exports anything else (kairos is
built with -fvisibility=hidden; kairos/export.h).

Usage: check_exports.py INCLUDE_DIR LIBKAIROS_SO KAIROS_EXE

The executable also shows the C runtime's own symbols and copy relocations
of data defined by the shared libraries it needs (stdout, MPI's predefined
communicators): those are not kairos', and are told apart by asking those
libraries."""
import re
import subprocess
import sys
from pathlib import Path

CRT = {"_start", "_init", "_fini", "_IO_stdin_used", "__bss_start", "__data_start",
       "data_start", "_edata", "_end", "__dso_handle", "__libc_csu_init", "__libc_csu_fini"}


def public_functions(include_dir):
    names = set()
    for header in sorted(Path(include_dir).glob("kairos/*.h")):
        text = re.sub(r"/\*.*?\*/", " ", header.read_text(), flags=re.S)
        for m in re.finditer(r"\bKR_API\b([^;{]*?)\b(kr_\w+)\s*\(", text):
            names.add(m.group(2))
    return names


def exported(binary):
    out = subprocess.run(["nm", "-D", "--defined-only", binary], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            names.add(parts[2].split("@")[0])
    return names


def needed_libraries(binary):
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    return [m.group(1) for m in re.finditer(r"=>\s+(/\S+)", out)]


def main():
    include_dir, so, exe = sys.argv[1:4]
    public = public_functions(include_dir)
    if len(public) < 100:
        print(f"found only {len(public)} KR_API functions under {include_dir}: the header scan is broken")
        return 1
    failures = []
    foreign = set()
    for lib in needed_libraries(exe):
        if "libkairos" not in lib:
            foreign |= exported(lib)
    for binary, ignore in ((so, {"_init", "_fini"}), (exe, CRT | foreign)):
        names = exported(binary)
        extra = sorted(n for n in names - public - ignore)
        missing = sorted(public - names)
        for n in extra:
            failures.append(f"{binary}: exports {n}, which no public header declares with KR_API")
        for n in missing:
            failures.append(f"{binary}: does not export {n}, declared in include/kairos/")
    for f in failures:
        print(f)
    print(f"{len(public)} public functions; {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
