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
echo "== load before: $(uptime)"
echo "== keystroke (5,000-line buffer, 200 pending hunks, median of 1,000 edits)"
run keystroke || echo "(the keystroke run failed: exit $?)"
echo "== drawing (one change set of 50 files, 500 hunks; ${BENCH_N:-15} runs each)"
echo "   from: the changeProposed notification's bytes handed to the JSON decoder in Neovim's LSP client"
echo "   to:   the extmarks of every hunk in the displayed buffers set (hidden buffers are drawn when shown)"
run draw one || echo "(the drawing run failed: exit $?)"
run draw tabs || echo "(the drawing run failed: exit $?)"
echo "== startup (30 fresh processes each, interleaved; medians)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1]}'; }
t() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
: >"$tmpd/base"; : >"$tmpd/with"
for i in $(seq 30); do
  t "$NVIM" --headless -u NONE -i NONE -n +q >>"$tmpd/base"
  t "$NVIM" --headless -u NONE -i NONE -n --cmd "set rtp^=$plugin" --cmd 'runtime! plugin/agentd.lua' -c "lua require('agentd').setup({})" +q >>"$tmpd/with"
done
base=$(median <"$tmpd/base"); with=$(median <"$tmpd/with")
# In-process: sourcing plugin/agentd.lua (--startuptime) and setup(), in 15
# fresh processes; setup() both as the first require of the process and
# after another module was required (the loader's first search is Neovim's).
: >"$tmpd/src"; : >"$tmpd/cold"; : >"$tmpd/warm"
for i in $(seq 15); do
  "$NVIM" --headless -u NONE -i NONE -n --startuptime "$tmpd/st" --cmd "set rtp^=$plugin" --cmd 'runtime! plugin/agentd.lua' \
    -c "lua local function cpu() local r=vim.uv.getrusage(); return (r.utime.sec+r.stime.sec)*1e9+(r.utime.usec+r.stime.usec)*1e3 end;  local c=cpu(); require('agentd').setup({}); io.open('$tmpd/one','w'):write(cpu()-c)" +q >/dev/null 2>&1
  awk '/plugin\/agentd.lua/ {print $2}' "$tmpd/st" | tail -1 >>"$tmpd/src"; rm -f "$tmpd/st"
  cat "$tmpd/one" >>"$tmpd/cold"; echo >>"$tmpd/cold"
  "$NVIM" --headless -u NONE -i NONE -n --cmd "set rtp^=$plugin" \
    -c "lua local function cpu() local r=vim.uv.getrusage(); return (r.utime.sec+r.stime.sec)*1e9+(r.utime.usec+r.stime.usec)*1e3 end;  pcall(require, 'vim.lsp.protocol'); local c=cpu(); require('agentd').setup({}); io.open('$tmpd/one','w'):write(cpu()-c)" +q >/dev/null 2>&1
  cat "$tmpd/one" >>"$tmpd/warm"; echo >>"$tmpd/warm"
done
src=$(median <"$tmpd/src"); cold=$(grep . "$tmpd/cold" | median); warm=$(grep . "$tmpd/warm" | median)
awk -v b="$base" -v w="$with" -v s="${src:-0}" -v c="$cold" -v u="$warm" 'BEGIN {
  printf "startup without the plugin: %.1f ms\nstartup with the plugin and setup(): %.1f ms (difference %.1f ms, noisy: whole processes)\n", b/1000, w/1000, (w-b)/1000
  printf "in-process (medians of 15): sourcing plugin/agentd.lua %.3f ms; setup() %.3f ms CPU as the first require of the process, %.3f ms CPU after another module\n", s, c/1e6, u/1e6 }'
echo "== load after: $(uptime)"
