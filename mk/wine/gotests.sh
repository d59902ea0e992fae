#!/usr/bin/env bash
# Cross-compiles the Go tests of the packages below for windows/amd64
# (go test -c) and runs each under Wine, in short mode (the property tests
# run a quarter of their rounds, as under -race). The tests that cannot
# hold under Wine are listed in skip.txt with the reason, and passed to
# -test.skip; nothing else is skipped. Prints each package's count of tests
# passed, skipped by the test itself (its own t.Skip, e.g. in short mode) and
# listed in skip.txt, then "N passed, N failed" (packages).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
eval "$("$here/setup.sh")" || exit 1
pkgs=(gitops workspace internal/fileset internal/platform internal/shellcmd diff review engine/tools)
[ $# -gt 0 ] && pkgs=("$@")
out="$root/.cache/wine/tests"
logs="$root/.cache/wine/logs"
mkdir -p "$out" "$logs"
passed=0 failed=0
for p in "${pkgs[@]}"; do
  name=${p//\//_}
  # The skip list's lines for this package: "pkg TestName reason...".
  skip=$(awk -v p="$p" '$1 == p {print "^" $2 "$"}' "$here/skip.txt" | paste -sd'|')
  if ! (cd "$root" && GOOS=windows GOARCH=amd64 CGO_ENABLED=0 ${GO:-go} test -overlay "$WINE_OVERLAY" -c -o "$out/$name/$name.test.exe" "./$p"); then
    echo "FAIL $p (does not build for windows/amd64)"; failed=$((failed + 1)); continue
  fi
  # Each package runs in its own folder (tests read testdata/ relative to it).
  args=(-test.v -test.short -test.count=1 -test.timeout=15m)
  [ -n "$skip" ] && args+=(-test.skip "$skip")
  start=$(date +%s)
  log="$logs/$name.log"
  (cd "$root/$p" && timeout 1200 "$WINE64" "$out/$name/$name.test.exe" "${args[@]}") >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  # Top-level tests only (subtests are indented).
  npass=$(grep -c '^--- PASS' "$log") nskip=$(grep -c '^--- SKIP' "$log")
  nlisted=$(awk -v p="$p" '$1 == p' "$here/skip.txt" | wc -l)
  if [ $rc -eq 0 ] && tail -1 "$log" | grep -q '^PASS$\|^ok'; then
    echo "ok   $p under Wine (${secs}s): $npass tests passed, $nskip skipped by the test itself, $nlisted listed in skip.txt"
    passed=$((passed + 1))
  else
    echo "FAIL $p under Wine (exit $rc, ${secs}s):"; grep -E -A4 '^(--- FAIL|panic|FAIL)' "$log" | head -60 | sed 's/^/     /'
    failed=$((failed + 1))
  fi
done
echo "wine go tests: $passed passed, $failed failed"
[ $failed -eq 0 ]
