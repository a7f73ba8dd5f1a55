# Shared by the shell tests of tests/cli: `source` it after setting
# failures=0. expect WHAT EXPECTED FOUND prints "ok: WHAT", or a FAIL with
# both values and counts the failure.
expect() {
  if [[ $2 != "$3" ]]; then
    printf 'FAIL: %s\n  expected: %s\n  found:    %s\n' "$1" "$2" "$3"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}
