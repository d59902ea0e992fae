#!/usr/bin/env bash
# The context-recall set (internal/repomap/testdata/recall.json) run through a
# built agentd, as a user's `agentd map` shows it, instead of in-process as
# TestContextRecall does: for each case, `agentd map --workspace ROOT
# --request REQ --json --state-dir S` (default budget, no focus, as the test),
# and a hit when the file that defines what the request names is among the
# listed files. Roots as the test's: agentd = this checkout, demo =
# examples/demo, nethttp = $(go env GOROOT)/src/net/http ($GOROOT when set).
# One state dir for every case, so each root is walked and parsed once and
# later cases load the map's cache, as a second `agentd map` does.
#
# The pass mark is the set's own ("pass" in recall.json), which the test
# reads too, so the two cannot disagree.
#
# Usage: mk/recall.sh AGENTD_BIN [--wine]
#   --wine: AGENTD_BIN is a windows/amd64 agentd.exe, run under Wine
#           (mk/wine/setup.sh), with every path given as Z:\...
#   RECALL_LISTS=FILE writes each case's listed files, one JSON line a case,
#           so two targets' maps can be compared (diff the two files).
# Prints each miss, "recall: H of N" and the wall time; exits 1 below the mark.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
usage="usage: mk/recall.sh AGENTD_BIN [--wine]"
bin=${1:?$usage}
wine=""
case "${2:-}" in
  "") ;;
  --wine) wine=1 ;;
  *) echo "recall: unknown option ${2}; $usage" >&2; exit 2 ;;
esac
[ -f "$bin" ] || { echo "recall: no agentd binary at $bin; build it first (make build, or the Windows build for --wine)" >&2; exit 2; }
bin=$(realpath "$bin")
command -v node >/dev/null || { echo "recall: needs node (apt-get install nodejs)" >&2; exit 2; }

runner=()
wineserver=""
if [ -n "$wine" ]; then
  eval "$("$root/mk/wine/setup.sh")"
  runner=("$WINE64")
  # One wineserver for the whole set: left to itself it exits a moment
  # after each case's agentd.exe, and a case starting just then failed
  # with "wine client error:0: recvmsg: Connection reset by peer" (seen
  # once in a CI run). A persistent server is killed at the end.
  wineserver="$(dirname "$WINE64")/wineserver"
  "$wineserver" -w 2>/dev/null || true
  "$wineserver" -p </dev/null >/dev/null 2>&1 || { echo "recall: could not start a persistent wineserver ($wineserver -p)" >&2; exit 2; }
fi
goroot=${GOROOT:-$(${GO:-go} env GOROOT)}
[ -d "$goroot/src/net/http" ] || { echo "recall: no $goroot/src/net/http (the nethttp cases map Go's net/http; set GOROOT)" >&2; exit 2; }

[ -z "${RECALL_LISTS:-}" ] || export RECALL_LISTS=$(realpath -m "$RECALL_LISTS")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -z "$wineserver" ] || "$wineserver" -k 2>/dev/null || true' EXIT
(cd "$tmp" && node - "$root" "$goroot" "$tmp" "$bin" "${wine:-}" "${runner[@]}") <<'JS'
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const [root, goroot, tmp, bin, wine, ...runner] = process.argv.slice(2);
const fail = (msg) => { console.error('recall: FAILED: ' + msg); process.exit(1); };

// The set and its pass mark, which TestContextRecall reads too.
const set = JSON.parse(fs.readFileSync(path.join(root, 'internal/repomap/testdata/recall.json'), 'utf8'));
if (!set.pass || !set.pass.of || !Array.isArray(set.cases)) fail('recall.json has no "pass": {"hits", "of"} and "cases"');
const [of, need, cases] = [set.pass.of, set.pass.hits, set.cases];
const roots = { agentd: root, demo: path.join(root, 'examples/demo'), nethttp: path.join(goroot, 'src/net/http') };
const win = (p) => 'Z:' + p.replace(/\//g, '\\');
const arg = (p) => (wine ? win(p) : p);
const state = arg(path.join(tmp, 'state'));

const lists = process.env.RECALL_LISTS;
if (lists) fs.writeFileSync(lists, '');
let hits = 0;
const t0 = Date.now();
const perRoot = {};
for (const c of cases) {
  const dir = roots[c.repo];
  if (!dir) fail(`unknown repository "${c.repo}" in recall.json`);
  if (!fs.existsSync(path.join(dir, c.want))) fail(`${c.repo}: ${c.want} no longer exists; update recall.json`);
  const args = ['map', '--workspace', arg(dir), '--request', c.request, '--json', '--state-dir', state];
  // Output to files, not pipes: the wineserver the first Wine process
  // starts would inherit the pipes and hold each case until it exits.
  const outFile = path.join(tmp, 'out.json'), errFile = path.join(tmp, 'err.txt');
  const fds = [fs.openSync(outFile, 'w'), fs.openSync(errFile, 'w')];
  const t = Date.now();
  const r = wine ? spawnSync(runner[0], [bin, ...args], { stdio: ['ignore', ...fds] }) : spawnSync(bin, args, { stdio: ['ignore', ...fds] });
  (perRoot[c.repo] ??= []).push(Date.now() - t);
  fds.forEach((fd) => fs.closeSync(fd));
  if (r.error) fail(`${bin}: ${r.error.message}`);
  r.stdout = fs.readFileSync(outFile, 'utf8');
  r.stderr = fs.readFileSync(errFile, 'utf8');
  if (r.status !== 0) fail(`agentd map exited ${r.status} for ${c.repo} "${c.request}":\n${r.stderr}`);
  let out;
  try { out = JSON.parse(r.stdout); } catch (e) { fail(`agentd map --json printed no JSON object for ${c.repo} "${c.request}": ${e.message}\n${r.stdout.slice(0, 500)}`); }
  if (!Array.isArray(out.files)) fail(`agentd map --json: no "files" list for ${c.repo} "${c.request}"`);
  if (lists) fs.appendFileSync(lists, JSON.stringify({ repo: c.repo, request: c.request, files: out.files }) + '\n');
  if (out.files.includes(c.want)) hits++;
  else console.log(`miss: ${c.repo} "${c.request}": ${c.want} not among the ${out.files.length} files listed`);
}
const n = cases.length;
for (const [name, ms] of Object.entries(perRoot)) {
  const first = ms[0], rest = ms.slice(1);
  const later = rest.length ? Math.round(rest.reduce((a, b) => a + b, 0) / rest.length) : 0;
  console.log(`${name}: ${ms.length} cases; first (walk and parse) ${first} ms, later (cached) ${later} ms each on average`);
}
console.log(`recall: ${hits} of ${n} (${Math.round((100 * hits) / n)}%; pass mark ${need} of ${of}) in ${((Date.now() - t0) / 1000).toFixed(1)} s${wine ? ' under Wine' : ''}`);
if (n < of) fail(`only ${n} cases; the set needs at least ${of}`);
if (hits * of < need * n) fail(`recall ${hits} of ${n} is below ${need} of ${of}`);
JS
