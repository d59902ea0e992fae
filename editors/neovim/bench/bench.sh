#!/usr/bin/env bash
# The plugin's three speed points, against the real daemon, each compared
# with Neovim without the plugin in the same run.
# Usage: bench.sh AGENTD_BIN NVIM_BIN
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugin=$(dirname "$here")
export AGENTD_BIN=$(realpath "${1:?usage: bench.sh AGENTD_BIN NVIM_BIN}")
NVIM=$(realpath "${2:?usage: bench.sh AGENTD_BIN NVIM_BIN}")
export NVIM_BIN=$NVIM
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
run() { (cd "$(mktemp -d)" && timeout 600 "$NVIM" --headless -u NONE -i NONE -n -l "$here/bench.lua" "$@"); }
echo "== keystroke (5,000-line buffer, 200 pending hunks, median of 1,000 edits)"
run keystroke
echo "== drawing (one change set of 50 files, 500 hunks)"
run draw
echo "== startup (30 fresh processes each, interleaved; medians)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1]}'; }
t() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
: >"$tmpd/base"; : >"$tmpd/with"
for i in $(seq 30); do
  t "$NVIM" --headless -u NONE -i NONE -n +q >>"$tmpd/base"
  t "$NVIM" --headless -u NONE -i NONE -n --cmd "set rtp^=$plugin" --cmd 'runtime! plugin/agentd.lua' -c "lua require('agentd').setup({})" +q >>"$tmpd/with"
done
base=$(median <"$tmpd/base"); with=$(median <"$tmpd/with")
# In-process: sourcing plugin/agentd.lua and setup() (no workspace open),
# measured with --startuptime.
"$NVIM" --headless -u NONE -i NONE -n --startuptime "$tmpd/st" --cmd "set rtp^=$plugin" --cmd 'runtime! plugin/agentd.lua' -c "lua local t=vim.uv.hrtime(); require('agentd').setup({}); io.open('$tmpd/setup','w'):write(vim.uv.hrtime()-t)" +q >/dev/null 2>&1
src=$(awk '/plugin\/agentd.lua/ {print $2}' "$tmpd/st" | tail -1)
setup=$(cat "$tmpd/setup")
awk -v b="$base" -v w="$with" -v s="${src:-0}" -v u="$setup" 'BEGIN {
  printf "startup without the plugin: %.1f ms\nstartup with the plugin and setup(): %.1f ms (difference %.1f ms, noisy: whole processes)\n", b/1000, w/1000, (w-b)/1000
  printf "in-process: sourcing plugin/agentd.lua %.3f ms, setup() %.3f ms\n", s, u/1e6 }'
