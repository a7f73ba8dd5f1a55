#!/usr/bin/env bash
# `meson install` installs what the installed commands need: the build is
# installed under a temporary DESTDIR, and the installed `kairos sweep
# --plot`, run from another folder, runs the plot script installed under
# its own prefix (never the source tree's) and draws the plots. The build
# tree's kairos still runs the source tree's script, and KAIROS_PLOT_SCRIPT
# still overrides both. Which script runs is seen through KAIROS_PYTHON: a
# wrapper that writes its first argument (the script) to a log.
# Usage: test_install.sh BUILD_DIR (tests/cli/meson.build); needs
# KAIROS_BIN and KAIROS_SOURCE_ROOT.
set -uo pipefail

build=$1
root=$KAIROS_SOURCE_ROOT
tmp=$(mktemp -d /tmp/kairos_install_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

meson=$(command -v meson) || { echo "FAIL: meson is not on PATH"; exit 1; }
if ! "$meson" install -C "$build" --no-rebuild --quiet --destdir "$tmp/dest" >"$tmp/install.log" 2>&1; then
  echo "FAIL: meson install"; cat "$tmp/install.log"; exit 1
fi
installed=$(find "$tmp/dest" -path '*/bin/kairos' -type f)
script=$(find "$tmp/dest" -path '*/kairos/plot_sweep.py' -type f)
expect "meson install installs the kairos command" 1 "$(printf '%s\n' "$installed" | grep -c .)"
expect "meson install installs the plot script" 1 "$(printf '%s\n' "$script" | grep -c .)"
[[ -n $installed && -n $script ]] || exit 1
# the script sits in DATADIR/kairos of the prefix the binary sits in
prefix=${installed%/bin/kairos}
expect "the script is under the binary's prefix" "$prefix/" "${script:0:${#prefix}+1}"

cat >"$tmp/python" <<EOF2
#!/bin/sh
printf '%s\n' "\$1" >>"$tmp/scripts.log"
exec /usr/bin/python3 "\$@"
EOF2
chmod +x "$tmp/python"
mkdir -p "$tmp/elsewhere"
cat >"$tmp/elsewhere/mm1.json" <<'EOF2'
{"seed": 5, "end_time": 200, "simulators": [{"name": "mm1", "kind": "sqss", "params": {
  "arrival": {"dist": "exponential", "mean": 1.25}, "service": {"dist": "exponential", "mean": 1},
  "capacity": 1000, "servers": 1, "warmup": 10}}]}
EOF2

sweep() { # sweep KAIROS: a sweep with plots in $tmp/elsewhere; prints its exit status
  rm -rf "$tmp/elsewhere/plots" "$tmp/scripts.log"
  (cd "$tmp/elsewhere" && env -u KAIROS_PLOT_SCRIPT KAIROS_PYTHON="$tmp/python" "$1" sweep mm1.json \
     --vary 'simulators.mm1.params.servers=[1,2]' -o sweep.csv --plot plots --quiet >"$tmp/out.txt" 2>"$tmp/err.txt")
  echo $?
}
scripts_used() { sort -u "$tmp/scripts.log" 2>/dev/null; }

rc=$(sweep "$installed")
expect "the installed kairos runs the installed script" "$script" "$(scripts_used)"
if grep -q "matplotlib is missing" "$tmp/err.txt"; then
  echo "ok: no matplotlib on this machine; the plots themselves are not checked"
else
  expect "the installed kairos sweep --plot succeeds" "0|" "$rc|$(cat "$tmp/err.txt")"
  pngs=$(find "$tmp/elsewhere/plots" -name '*.png' | wc -l)
  expect "plots drawn by the installed script" yes "$([[ $pngs -gt 0 ]] && echo yes || echo "no ($pngs)")"
fi

sweep "$KAIROS_BIN" >/dev/null
expect "the build tree's kairos runs the source tree's script" "$root/scripts/plot_sweep.py" "$(scripts_used)"

cp "$script" "$tmp/mine.py"
rm -rf "$tmp/elsewhere/plots" "$tmp/scripts.log"
(cd "$tmp/elsewhere" && KAIROS_PLOT_SCRIPT="$tmp/mine.py" KAIROS_PYTHON="$tmp/python" "$installed" sweep mm1.json \
   --vary 'simulators.mm1.params.servers=[1,2]' -o sweep.csv --plot plots --quiet >/dev/null 2>&1)
expect "KAIROS_PLOT_SCRIPT overrides the installed script" "$tmp/mine.py" "$(scripts_used)"

# the installed kairos view serves the installed page (and uPlot from it),
# not the source tree's
page=$(find "$tmp/dest" -path '*/kairos/viewer/index.html' -type f)
expect "meson install installs the viewer's page" 1 "$(printf '%s\n' "$page" | grep -c .)"
if [[ -n $page && -d $root/viewer/node_modules/uplot/dist ]]; then
  "$installed" run "$root/examples/ecology.json" --frames "$tmp/frames" --quiet --end 2 >/dev/null 2>&1
  (cd "$tmp/elsewhere" && exec env -u KAIROS_VIEWER_DIR "$installed" view "$tmp/frames" --port 0 >"$tmp/view.out" 2>&1) &
  view_pid=$!
  url=
  for _ in $(seq 50); do
    url=$(sed -n 's|.* at \(http://[^ ]*\)$|\1|p' "$tmp/view.out")
    [[ -n $url ]] && break
    sleep 0.1
  done
  served=$(curl -s "${url}" 2>/dev/null)
  expect "the installed kairos view serves the installed page" yes \
    "$([[ -n $url ]] && cmp -s <(printf '%s' "$served") <(printf '%s' "$(cat "$page")") && echo yes || echo "no ($url)")"
  code=$(curl -s -o /dev/null -w '%{http_code}' "${url}lib/uplot/dist/uPlot.iife.min.js" 2>/dev/null)
  expect "the installed kairos view serves uPlot" 200 "$code"
  kill -TERM "$view_pid" 2>/dev/null
  wait "$view_pid" 2>/dev/null
fi

# every public header is installed, and they compile from the installed
# folder alone (the build tree's .pc adds the source's include folder,
# which hid two headers left out of the install)
headers=$(find "$tmp/dest" -path '*/include/kairos/kairos.h' -type f)
incdir=${headers%/kairos/kairos.h}
missing=
for h in "$root"/include/kairos/*.h; do
  [[ -f $incdir/kairos/$(basename "$h") ]] || missing="$missing $(basename "$h")"
done
expect "every public header is installed" "" "$missing"
printf '#include <kairos/kairos.h>\nint main(void) { return kr_entity_index(KR_ENTITY_INVALID) != 0; }\n' >"$tmp/own.c"
cc=$(command -v cc || command -v gcc)
out=$("$cc" -std=c11 -fsyntax-only -I"$incdir" $(pkg-config --cflags gsl 2>/dev/null) "$tmp/own.c" 2>&1)
expect "the installed headers compile alone" "0|" "$?|$out"
# and from C++ with C linkage (unmangled kr_* references)
if cxx=$(command -v g++ || command -v c++); then
  printf '#include <kairos/kairos.h>\nint main() { return kr_model_create(nullptr) == nullptr; }\n' >"$tmp/own.cpp"
  out=$("$cxx" -std=c++17 -c -I"$incdir" $(pkg-config --cflags gsl 2>/dev/null) "$tmp/own.cpp" -o "$tmp/own.o" 2>&1)
  expect "the installed headers compile as C++" "0|" "$?|$out"
  expect "C++ code refers to kr_model_create unmangled" yes \
    "$(nm "$tmp/own.o" 2>/dev/null | grep -qw 'U kr_model_create' && echo yes || echo no)"
fi

# the prefix moved elsewhere: the binary still finds the script beside it,
# and kairos.pc names the headers where they now are
mv "$tmp/dest" "$tmp/moved"
rc=$(sweep "${installed/$tmp\/dest/$tmp/moved}")
expect "a moved prefix still finds its script" "${script/$tmp\/dest/$tmp/moved}" "$(scripts_used)"
pc=$(find "$tmp/moved" -name kairos.pc -type f)
expect "meson install installs kairos.pc" 1 "$(printf '%s\n' "$pc" | grep -c .)"
cflags=$(PKG_CONFIG_PATH=${pc%/kairos.pc} pkg-config --cflags-only-I kairos 2>&1)
moved_inc=$(cd "${incdir/$tmp\/dest/$tmp/moved}" && pwd -P)
got_inc=
for flag in $cflags; do
  [[ -f ${flag#-I}/kairos/kairos.h ]] && got_inc=$(cd "${flag#-I}" && pwd -P)
done
expect "pkg-config --cflags kairos names the moved prefix's headers ($cflags)" "$moved_inc" "$got_inc"

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
