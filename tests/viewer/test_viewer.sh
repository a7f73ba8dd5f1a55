#!/usr/bin/env bash
# The viewer's browser test (check_viewer.mjs beside this file): records
# examples/ecology.json with `kairos run --frames`, serves it with
# `kairos view` and checks the page in headless Chromium.
#
# Usage: tests/viewer/test_viewer.sh KAIROS_BINARY
# Exit 77 (skipped) when Chromium, node or the viewer's npm packages
# (scripts/setup installs all three) are missing.
set -euo pipefail

if (($# != 1)); then
  echo "usage: $0 KAIROS_BINARY" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}

skip() {
  echo "test_viewer: SKIP: $1 (scripts/setup installs it)"
  exit 77
}
[[ -x $chromium ]] || skip "no Chromium at $chromium"
command -v node >/dev/null 2>&1 || skip "no node"
[[ -d $root/viewer/node_modules/playwright-core && -d $root/viewer/node_modules/uplot ]] ||
  skip "no viewer/node_modules (npm ci --prefix viewer)"

exec node "$here/check_viewer.mjs" "$1"
