#!/usr/bin/env bash
# Runs every case of cases.lua in its own headless Neovim (always under
# timeout) against the built daemon. Prints "N passed, N failed"; exits
# non-zero on any failure.
# Usage: [FAKEMODEL_BIN=...] run.sh AGENTD_BIN NVIM_BIN [case...]
# FAKEMODEL_BIN (tests/fakemodel, built by make test-neovim) serves the
# project's fake model to the model-driven cases; without it they fail.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
AGENTD_BIN=$(realpath "${1:?usage: run.sh AGENTD_BIN NVIM_BIN [case...]}")
NVIM_BIN=$(realpath "${2:?usage: run.sh AGENTD_BIN NVIM_BIN [case...]}")
shift 2
[ -x "$AGENTD_BIN" ] || { echo "run.sh: $AGENTD_BIN is not an executable (make build)"; exit 1; }
"$NVIM_BIN" --version | head -1 | grep -q '^NVIM v0\.1[0-9]' || { echo "run.sh: $NVIM_BIN is not Neovim >= 0.10"; exit 1; }
if [ $# -gt 0 ]; then
  cases=("$@")
else
  mapfile -t cases < <(sed -n 's/^ *function C\.\([a-z][a-z0-9_]*\)().*/\1/p' "$here/cases.lua" "$here/chat_cases.lua")
fi
passed=0 failed=0 failures=()
for c in "${cases[@]}"; do
  tmp=$(mktemp -d)
  out=$(cd "$tmp" && AGENTD_BIN="$AGENTD_BIN" NVIM_BIN="$NVIM_BIN" FAKEMODEL_BIN="${FAKEMODEL_BIN:-}" XDG_STATE_HOME="$tmp/xdg" XDG_CONFIG_HOME="$tmp/xdg" \
    timeout 120 "$NVIM_BIN" --headless -u NONE -i NONE -n -l "$here/one.lua" "$c" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q "^ok   $c\$" <<<"$out"; then
    passed=$((passed + 1)); echo "ok   $c"
  else
    failed=$((failed + 1)); failures+=("$c")
    [ $rc -eq 124 ] && out="$out"$'\n'"(timed out after 120 s)"
    echo "FAIL $c"; sed 's/^/     /' <<<"$out" | tail -25
  fi
  rm -rf "$tmp"
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
