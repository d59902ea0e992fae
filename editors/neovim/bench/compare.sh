#!/usr/bin/env bash
# Keystroke and drawing figures of this plugin against another copy of it
# (e.g. main's: git archive main editors/neovim | tar -x -C /tmp/other),
# same daemon, interleaved so that the machine's load hits both alike.
# Usage: compare.sh AGENTD_BIN NVIM_BIN OTHER_PLUGIN_DIR [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export AGENTD_BIN=$(realpath "${1:?usage: compare.sh AGENTD_BIN NVIM_BIN OTHER_PLUGIN_DIR [ROUNDS]}")
export NVIM_BIN=$(realpath "${2:?usage}")
other=$(realpath "${3:?usage}")
[ -f "$other/bench/bench.lua" ] || { echo "compare.sh: $other/bench/bench.lua is missing"; exit 1; }
for i in $(seq "${4:-3}"); do
  for which in this other; do
    if [ $which = this ]; then b=$here/bench.lua; else b=$other/bench/bench.lua; fi
    for what in keystroke "draw tabs"; do
      # shellcheck disable=SC2086
      out=$(cd "$(mktemp -d)" && timeout 600 "$NVIM_BIN" --headless -u NONE -i NONE -n -l "$b" $what 2>&1 |
        grep -E "keystroke overhead|arrival -> extmarks" || echo "(failed)")
      echo "$which $what: $out"
    done
  done
done
