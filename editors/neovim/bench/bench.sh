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
run() { (cd "$(mktemp -d)" && timeout 600 "$NVIM" --headless -u NONE -i NONE -n -l "$here/bench.lua" "$@"); }
echo "== keystroke (5,000-line buffer, 200 pending hunks, median of 1,000 edits)"
run keystroke
echo "== drawing (one change set of 50 files, 500 hunks)"
run draw
echo "== startup (median of 30 fresh processes, each: start, quit)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1]}'; }
t() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
base=$(for i in $(seq 30); do t "$NVIM" --headless -u NONE -i NONE -n +q; done | median)
with=$(for i in $(seq 30); do t "$NVIM" --headless -u NONE -i NONE -n --cmd "set rtp^=$plugin" --cmd 'runtime! plugin/agentd.lua' -c "lua require('agentd').setup({})" +q; done | median)
echo "startup without the plugin: $((base / 1000)).$(( (base % 1000) / 100 )) ms"
echo "startup with the plugin and setup(): $((with / 1000)).$(( (with % 1000) / 100 )) ms"
echo "startup overhead: $(( (with - base) / 1000 )).$(( ((with - base) % 1000 + 1000) % 1000 / 100 )) ms"
