#!/usr/bin/env bash
# Runs tests/codecompanion.lua: CodeCompanion.nvim (pinned, unpacked by
# scripts/codecompanion.sh into .cache/codecompanion) drives the built
# `agentd acp` in headless Neovim >= 0.11 (scripts/install-nvim.sh DIR forky)
# against the project's fake model (tests/fakemodel). Prints "ok   codecompanion"
# or FAIL with what it waited for, the chat's text and agentd's log; exits
# non-zero on failure.
# Usage: codecompanion.sh AGENTD_BIN NVIM_BIN FAKEMODEL_BIN
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
AGENTD_BIN=$(realpath "${1:?usage: codecompanion.sh AGENTD_BIN NVIM_BIN FAKEMODEL_BIN}")
NVIM_BIN=$(realpath "${2:?usage: codecompanion.sh AGENTD_BIN NVIM_BIN FAKEMODEL_BIN}")
FAKEMODEL_BIN=$(realpath "${3:?usage: codecompanion.sh AGENTD_BIN NVIM_BIN FAKEMODEL_BIN}")
[ -x "$AGENTD_BIN" ] || { echo "codecompanion.sh: $AGENTD_BIN is not an executable (make build)"; exit 1; }
[ -x "$FAKEMODEL_BIN" ] || { echo "codecompanion.sh: $FAKEMODEL_BIN is not an executable (make .cache/neovim-fakemodel)"; exit 1; }
minor=$("$NVIM_BIN" --version | head -1 | sed -n 's/^NVIM v0\.\([0-9][0-9]*\)\..*/\1/p')
[ -n "$minor" ] && [ "$minor" -ge 11 ] || { echo "codecompanion.sh: $NVIM_BIN is not Neovim >= 0.11, which CodeCompanion needs"; exit 1; }
# plenary.nvim, which CodeCompanion needs: Debian's, installed beside this Neovim.
PLENARY_DIR=$(dirname "$NVIM_BIN")/root/usr/share/neovim-plenary
[ -d "$PLENARY_DIR/lua/plenary" ] || { echo "codecompanion.sh: no plenary.nvim at $PLENARY_DIR (editors/neovim/scripts/install-nvim.sh $(dirname "$NVIM_BIN") forky installs it)"; exit 1; }
CC_DIR=$("$repo/editors/neovim/scripts/codecompanion.sh" "$repo/.cache/codecompanion") || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Neovim's and CodeCompanion's own files (logs, RPC logs, shada) stay in tmp.
(cd "$tmp" && TEST_TMP="$tmp" CC_DIR="$CC_DIR" PLENARY_DIR="$PLENARY_DIR" AGENTD_BIN="$AGENTD_BIN" FAKEMODEL_BIN="$FAKEMODEL_BIN" \
  XDG_STATE_HOME="$tmp/xdg/state" XDG_DATA_HOME="$tmp/xdg/data" XDG_CACHE_HOME="$tmp/xdg/cache" XDG_CONFIG_HOME="$tmp/xdg/config" \
  timeout 300 "$NVIM_BIN" --headless -u NONE -i NONE -n -l "$here/codecompanion.lua" 2>&1)
rc=$?
[ $rc -eq 124 ] && echo "FAIL codecompanion (timed out after 300 s)"
exit $rc
