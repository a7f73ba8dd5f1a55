#!/usr/bin/env bash
# scripts/gen-kind-docs with the test plug-in's kind "gauge": a page whose
# section matches `kairos kinds gauge --markdown` passes --check; a changed
# section, a section of an unknown kind and a kind with a table but no
# section fail, naming the page and the kind; without --check the script
# rewrites the section. Needs KAIROS_BIN, KAIROS_SOURCE_ROOT and
# KAIROS_PARAMS_PLUGIN (tests/cli/meson.build).
set -u
gen="$KAIROS_SOURCE_ROOT/scripts/gen-kind-docs"
dir=$(mktemp -d /tmp/kairos_kind_docs_XXXXXX)
trap 'rm -rf "$dir"' EXIT
# the built-in kinds' pages: a built-in kind with a table needs its section too
cp "$KAIROS_SOURCE_ROOT"/docs/models/*.md "$dir"/
fail() { echo "FAIL: $*"; exit 1; }
run() { python3 "$gen" --kairos "$KAIROS_BIN" --docs "$dir" --plugin "$KAIROS_PARAMS_PLUGIN" "$@" >"$dir/out" 2>"$dir/err"; }

page="$dir/gauge.md"
printf '# gauge\n\nIntro.\n\n<!-- kairos kinds gauge: begin -->\n<!-- kairos kinds gauge: end -->\n\nMore.\n' >"$page"

# an empty section differs; --check says so and leaves the page alone
run --check && fail "--check passed an empty section"
grep -q "gauge.md: the section of kind 'gauge' differs from \`kairos kinds gauge --markdown\`" "$dir/err" \
    || fail "the message names the page and the kind: $(cat "$dir/err")"
grep -q "^Intro.$" "$page" && ! grep -q "| Parameter |" "$page" || fail "--check changed the page"

# the script fills it, then --check passes
run || fail "rewriting failed: $(cat "$dir/err")"
run --check || fail "--check after a rewrite: $(cat "$dir/err")"
want=$("$KAIROS_BIN" kinds gauge --markdown --plugin "$KAIROS_PARAMS_PLUGIN")
got=$(sed -n '/: begin -->$/,/: end -->$/p' "$page" | sed '1d;$d')
[ "$got" = "$want" ] || fail "the section is not the command's output"
grep -q "^More.$" "$page" || fail "the rest of the page is kept"

# a hand edit inside the section fails
sed -i 's/readings per second/readings per minute/' "$page"
run --check && fail "--check passed an edited section"
grep -q "gauge.md: the section of kind 'gauge' differs" "$dir/err" || fail "edited: $(cat "$dir/err")"
run && run --check || fail "the rewrite restores it"

# a section of a kind kairos does not know
printf '<!-- kairos kinds nosuch: begin -->\n<!-- kairos kinds nosuch: end -->\n' >>"$page"
run --check && fail "--check passed an unknown kind"
grep -q "gauge.md: a section for kind 'nosuch', which kairos does not know" "$dir/err" || fail "unknown: $(cat "$dir/err")"

# a kind with a table and no section anywhere
printf '# nothing here\n' >"$page"
run --check && fail "--check passed a missing section"
grep -q "no page has a section for kind 'gauge', which declares a parameter table" "$dir/err" \
    || fail "missing: $(cat "$dir/err")"
echo ok
