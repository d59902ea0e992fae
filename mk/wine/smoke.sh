#!/usr/bin/env bash
# End-to-end smoke of agentd.exe under Wine (mk/wine.mk):
#   1. agentd.exe run examples/plans/refactor.json on a copy of examples/demo
#      whose main.go has CRLF line endings: the four edit steps complete and
#      main.go keeps CRLF on every line, the edited one included. The plan's
#      `go test ./...` step fails with cmd.exe's "not recognized": Wine has no
#      Go for Windows (Debian has none to install), so the run exits 1 with
#      exactly that step failed and its check blocked;
#   2. agentd.exe undo brings the workspace back byte for byte (diff -r);
#   3. agentd.exe serve answers initialize (Content-Length framing over stdio).
# Usage: smoke.sh AGENTD_EXE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
exe=$(realpath "${1:?usage: smoke.sh AGENTD_EXE}")
eval "$("$here/setup.sh")"
fail() { echo "wine smoke: FAILED: $*" >&2; exit 1; }
win() { echo "Z:${1//\//\\}"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/examples/demo" "$tmp/demo"
sed -i 's/$/\r/' "$tmp/demo/main.go"
cp -r "$tmp/demo" "$tmp/orig"
state=$(win "$tmp/state")

echo "== agentd.exe run examples/plans/refactor.json (under Wine)"
set +e
(cd "$tmp" && timeout 300 "$WINE64" "$exe" run "$(win "$root/examples/plans/refactor.json")" --workspace "$(win "$tmp/demo")" \
  --yes --json --state-dir "$state") >"$tmp/run.jsonl" 2>"$tmp/run.err"
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$tmp/run.err"; fail "run exited $rc; want 1 (only the go test step failing)"; }
node - "$tmp/run.jsonl" <<'JS' || { tail -5 "$tmp/run.err"; fail "the run's steps are not as expected"; }
const lines = require('fs').readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
let steps = [];
for (const e of lines) if (e.state?.steps) steps = e.state.steps;
const status = Object.fromEntries(steps.map((s) => [s.id, s.status]));
const want = { find: 'completed', rename_def: 'completed', rename_tests: 'completed', rename_main: 'completed', test: 'failed', check: 'blocked' };
const text = JSON.stringify(lines);
if (JSON.stringify(status) !== JSON.stringify(want)) {
  console.error('steps:', status, 'want', want);
  for (const st of steps) if (st.status === 'failed') console.error(`${st.id}: ${JSON.stringify(st.error ?? st.message ?? st).slice(0, 600)}`);
  process.exit(1);
}
if (!/recognize/i.test(text)) { console.error('the test step did not fail through cmd.exe'); process.exit(1); }
console.log('steps:', JSON.stringify(status));
JS
grep -q 'greet.Greet(\*name))'$'\r''$' "$tmp/demo/main.go" || fail "main.go: the edited line lost its CRLF or the edit is missing"
[ "$(grep -c $'\r$' "$tmp/demo/main.go")" = "$(wc -l < "$tmp/demo/main.go")" ] || fail "main.go: not every line ends with CRLF after the run"
echo "ok   run: four edits applied through Windows paths, CRLF kept"

echo "== agentd.exe undo"
(cd "$tmp" && timeout 120 "$WINE64" "$exe" undo --workspace "$(win "$tmp/demo")" --state-dir "$state") || fail "undo exited $?"
diff -r "$tmp/orig" "$tmp/demo" || fail "the workspace differs from its copy after undo"
cmp "$tmp/orig/main.go" "$tmp/demo/main.go" || fail "main.go is not byte for byte the original"
echo "ok   undo: the workspace is back byte for byte"

echo "== agentd.exe serve answers initialize"
node - "$WINE64" "$exe" "$(win "$tmp/demo")" "$state" <<'JS' || fail "serve did not answer initialize"
const { spawn } = require('child_process');
const [wine, exe, ws, state] = process.argv.slice(2);
const p = spawn(wine, [exe, 'serve', '--state-dir', state], { stdio: ['pipe', 'pipe', 'pipe'] });
let stderr = '';
p.stderr.on('data', (b) => { stderr += b; process.stderr.write(b); });
const uri = 'file:///' + ws.replace(/\\/g, '/');
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { processId: null, rootUri: uri, capabilities: {}, workspaceFolders: [{ uri, name: 'demo' }] } });
p.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
let buf = '';
const timer = setTimeout(() => { console.error('no answer in 60 s'); p.kill(); process.exit(1); }, 60000);
p.stdout.on('data', (b) => {
  buf += b;
  const i = buf.indexOf('\r\n\r\n');
  if (i < 0) return;
  const n = Number(/Content-Length: (\d+)/.exec(buf)[1]);
  if (buf.length < i + 4 + n) return;
  const msg = JSON.parse(buf.slice(i + 4, i + 4 + n));
  clearTimeout(timer);
  const v = msg.result?.capabilities?.experimental?.agentd?.protocolVersion;
  console.log('initialize answered: server', JSON.stringify(msg.result?.serverInfo), 'protocolVersion', v);
  // The workspace opens from the file:///Z:/... URI (logged when it cannot).
  setTimeout(() => {
    p.kill();
    if (/opening the workspace failed/.test(stderr)) { console.error('the workspace did not open from', uri); process.exit(1); }
    process.exit(msg.result ? 0 : 1);
  }, 1500);
});
JS
echo "ok   serve: initialize answered"
echo "wine smoke: 3 passed, 0 failed"
