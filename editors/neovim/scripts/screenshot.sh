#!/usr/bin/env bash
# Takes the README's screenshots in Neovim inside tmux, against the real
# daemon. Writes the tmux capture as text (doc/review.txt; doc/chat.capture,
# not .txt: :helptags reads every doc/*.txt and refuses the capture's UTF-8
# beside the help's encoding) and, rendered by Chromium, as PNG (doc/NAME.png).
#   screenshot.sh AGENTD_BIN NVIM_BIN         review: a real run reviewed inline
#   screenshot.sh AGENTD_BIN NVIM_BIN chat    chat: :Agent chat with an inline
#     approval, folded command output, tokens and a change to review, against
#     the fake model (FAKEMODEL_BIN: tests/fakemodel built, as for the tests)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugin=$(dirname "$here")
repo=$(cd "$plugin/../.." && pwd)
AGENTD_BIN=$(realpath "$1"); NVIM=$(realpath "$2"); mode=${3:-review}
case $mode in
review) name=review text=review.txt script=screenshot.lua cols=100 rows=30 ;;
chat)
  name=chat text=chat.capture script=screenshot-chat.lua cols=142 rows=49
  [ -x "${FAKEMODEL_BIN:-}" ] || { echo "screenshot.sh chat needs FAKEMODEL_BIN (the built tests/fakemodel, e.g. .cache/neovim-fakemodel)"; exit 1; } ;;
*) echo "screenshot.sh: unknown mode $mode (review or chat)"; exit 1 ;;
esac
command -v tmux >/dev/null || { echo "screenshot.sh needs tmux (apt-get install tmux)"; exit 1; }
t=$(mktemp -d); cleanup() {
  [ -S "$t/sock" ] && "$NVIM" --server "$t/sock" --remote-send '<C-\\><C-N>:qa!<CR>' >/dev/null 2>&1 || true
  tmux -L agentd-shot kill-server 2>/dev/null || true
  sleep 0.5; rm -rf "$t"
}
trap cleanup EXIT
cp -r "$repo/examples/demo" "$t/demo"
(cd "$t/demo" && git init -q && git add -A && git -c user.email=d@example.com -c user.name=demo commit -qm demo)
cat >"$t/plan.json" <<'JSON'
{"title": "Rename Hello to Greet", "steps": [
 {"id": "rename", "description": "Rename greet.Hello", "tool": "edit_file", "args": {"path": "greet/greet.go", "edits": [
  {"oldText": "// Hello returns a greeting for name.\nfunc Hello(name string) string {", "newText": "// Greet returns a greeting for name.\nfunc Greet(name string) string {"},
  {"oldText": "\treturn \"Hello, \" + name + \"!\"", "newText": "\treturn \"Hello, \" + name + \".\""},
  {"oldText": "// HelloAll greets several people, one per line.\nfunc HelloAll(", "newText": "// GreetAll greets several people, one per line.\nfunc GreetAll("},
  {"oldText": "b.WriteString(Hello(n))", "newText": "b.WriteString(Greet(n))"}]}}]}
JSON
# The editor runs headless with a socket; tmux shows it through Neovim's own
# terminal UI attached to that socket (the private Neovim's TUI cannot start
# an embedded child of itself).
(cd "$t/demo" && AGENTD_BIN=$AGENTD_BIN FAKEMODEL_BIN=${FAKEMODEL_BIN:-} AGENTD_SHOT_PLAN=$t/plan.json AGENTD_SHOT_STATE=$t/state AGENTD_SHOT_READY=$t/ready \
  timeout 120 "$NVIM" --headless --listen "$t/sock" -u NONE -i NONE -n --cmd "set rtp^=$plugin" -c "luafile $here/$script" \
  >"$t/nvim.err" 2>&1 &)
for _ in $(seq 300); do [ -f "$t/ready" ] && break; sleep 0.2; done
[ -f "$t/ready" ] || { echo "screenshot.sh: Neovim did not get ready"; cat "$t/nvim.err"; exit 1; }
tmux -L agentd-shot -f /dev/null new-session -d -s shot -x "$cols" -y "$rows" \
  "TERM=tmux-256color $NVIM --remote-ui --server $t/sock"
sleep 1
# Redraw the hunks now that a UI of the real width is attached.
"$NVIM" --server "$t/sock" --remote-expr "luaeval(\"(function() local r = require('agentd.review'); local b = vim.fn.bufnr('greet/greet.go'); r.forget(b); r.draw(b); vim.cmd('redraw!'); return 0 end)()\")" >/dev/null
# A script's own layout for that width (_G.shot_attached, when it has one).
"$NVIM" --server "$t/sock" --remote-expr "luaeval(\"(_G.shot_attached or function() return 0 end)()\")" >/dev/null
sleep 1
tmux -L agentd-shot capture-pane -p -t shot >"$plugin/doc/$text"
tmux -L agentd-shot capture-pane -e -N -p -t shot >"$t/capture.ans"
python3 "$here/ansi2html.py" <"$t/capture.ans" >"$t/capture.html"
if command -v chromium >/dev/null; then
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=$((cols * 852 / 100)),$((rows * 542 / 30)) \
    --screenshot="$plugin/doc/$name.png" "file://$t/capture.html" >/dev/null 2>&1
  echo "wrote $plugin/doc/$name.png and doc/$text"
else
  echo "wrote $plugin/doc/$text (no chromium: apt-get install chromium for the PNG)"
fi
