// End-to-end tests of the packaged extension in code-server (VS Code in a browser), driven by
// Debian's Chromium through playwright-core, against the real agentd daemon on a real workspace.
// Needs: CODE_SERVER (the code-server binary), AGENTD_BIN (the agentd binary), the .vsix at
// out/agentd.vsix. Prints `N passed, N failed`; screenshots of failures go to test-results/.
import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as net from 'node:net';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import * as cpu from './cpu.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.resolve(here, '../..');
const repo = path.resolve(ext, '../..');
const results = path.join(ext, 'test-results');
// README pictures: written to test-results/, and to media/ (committed) with UPDATE_SCREENSHOTS=1.
const media = process.env.UPDATE_SCREENSHOTS ? path.join(ext, 'media') : results;
const CODE_SERVER = process.env.CODE_SERVER;
// Absolute: code-server runs the extension, and so agentd, from another folder.
const AGENTD_BIN = process.env.AGENTD_BIN && path.resolve(process.env.AGENTD_BIN);
const VSIX = path.join(ext, 'out', 'agentd.vsix');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

function fail(msg) { console.error(`e2e: FAILED: ${msg}`); process.exit(1); }
for (const [name, p] of [['CODE_SERVER', CODE_SERVER], ['AGENTD_BIN', AGENTD_BIN], ['the .vsix', VSIX], ['chromium', CHROMIUM]]) {
  if (!p || !fs.existsSync(p)) fail(`${name} not found (${p}); run editors/vscode/scripts/install-tools.sh and npm run package`);
}

fs.rmSync(results, { recursive: true, force: true });
fs.mkdirSync(results, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-vscode-e2e-'));
const ws = path.join(tmp, 'demo');
const userDir = path.join(tmp, 'user');
const extDir = path.join(tmp, 'ext');
const stateDir = path.join(tmp, 'state');
const metricsFile = path.join(tmp, 'metrics.jsonl');

// The workspace: the example project and its example plan, plus files for the speed runs.
fs.cpSync(path.join(repo, 'examples', 'demo'), ws, { recursive: true });
fs.copyFileSync(path.join(repo, 'examples', 'plans', 'refactor.json'), path.join(ws, 'refactor.agentd.json'));
const bulkLines = (n, tag) => Array.from({ length: n }, (_, i) => `${tag} line ${i + 1}`);
fs.mkdirSync(path.join(ws, 'bulk'));
let bulkPatch = '';
for (let f = 0; f < 50; f++) {
  const name = `bulk/f${String(f).padStart(2, '0')}.txt`;
  const lines = bulkLines(200, `file ${f}`);
  fs.writeFileSync(path.join(ws, name), lines.join('\n') + '\n');
  bulkPatch += `--- a/${name}\n+++ b/${name}\n`;
  for (let h = 0; h < 10; h++) {
    const at = h * 20 + 10; // 1-based line changed; 3 lines of context each side
    bulkPatch += `@@ -${at - 3},7 +${at - 3},7 @@\n`;
    for (let k = at - 3; k <= at + 3; k++) {
      if (k === at) bulkPatch += `-${lines[k - 1]}\n+${lines[k - 1]} changed by agentd\n`;
      else bulkPatch += ` ${lines[k - 1]}\n`;
    }
  }
}
const bigLines = bulkLines(2000, 'big');
fs.writeFileSync(path.join(ws, 'big.txt'), bigLines.join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'plain.txt'), bigLines.join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'plain2.txt'), bigLines.join('\n') + '\n');
// top.txt: the same text with only big.txt's first 10 hunks (lines 3-99: those in and near the
// view while the typing figure types at the top, so the same lenses and decorations are drawn).
// big.txt against top.txt is what the 190 other hunks cost; top.txt against plain.txt is what
// drawing the review in view costs.
fs.writeFileSync(path.join(ws, 'top.txt'), bigLines.join('\n') + '\n');
let bigPatch = '--- a/big.txt\n+++ b/big.txt\n';
for (let h = 0; h < 200; h++) {
  const at = h * 10 + 6;
  bigPatch += `@@ -${at - 3},7 +${at - 3},7 @@\n`;
  for (let k = at - 3; k <= at + 3; k++) {
    if (k === at) bigPatch += `-${bigLines[k - 1]}\n+${bigLines[k - 1]} changed\n`;
    else bigPatch += ` ${bigLines[k - 1]}\n`;
  }
}
// far.txt: the same text with only big.txt's last hunk (line 1996), out of view: the file's
// Accept All lens is the only thing of the review on screen. far.txt against plain.txt is what a
// CodeLens on the file costs on each key (VS Code lays its lenses out again on every keystroke).
fs.writeFileSync(path.join(ws, 'far.txt'), bigLines.join('\n') + '\n');
// ui.txt: the same text, no review, and what agentd draws on top.txt (its CodeLens lines, and
// the decorations of those hunks) drawn by another extension that does nothing else
// (test/e2e/lens-control). ui.txt against plain.txt is what that UI costs on each key in this
// VS Code; big.txt against ui.txt is what agentd's review of 200 hunks adds to it.
fs.writeFileSync(path.join(ws, 'ui.txt'), bigLines.join('\n') + '\n');
const farPatch = `--- a/far.txt\n+++ b/far.txt\n${bigPatch.split('\n').slice(2 + 199 * 9, 2 + 200 * 9).join('\n')}\n`;
const topPatch = `--- a/top.txt\n+++ b/top.txt\n${bigPatch.split('\n').slice(2, 2 + 10 * 9).join('\n')}\n`;
fs.writeFileSync(path.join(ws, 'bulk.agentd.json'), JSON.stringify({
  title: 'Bulk changes for the speed figures',
  steps: [
    { id: 'bulk', description: '50 files, 500 hunks', tool: 'apply_patch', args: { patch: bulkPatch } },
    { id: 'big', description: 'one file, 200 hunks', tool: 'apply_patch', args: { patch: bigPatch } },
    { id: 'top', description: 'the same text, its first 10 hunks', tool: 'apply_patch', args: { patch: topPatch } },
    { id: 'far', description: 'the same text, its last hunk', tool: 'apply_patch', args: { patch: farPatch } },
  ],
}, null, 1));

const afterLines = bulkLines(40, 'after');
fs.writeFileSync(path.join(ws, 'after.txt'), afterLines.join('\n') + '\n');
let afterPatch = '--- a/after.txt\n+++ b/after.txt\n';
for (const at of [10, 30]) {
  afterPatch += `@@ -${at - 3},7 +${at - 3},7 @@\n`;
  for (let k = at - 3; k <= at + 3; k++) afterPatch += k === at ? `-${afterLines[k - 1]}\n+${afterLines[k - 1]} changed by agentd\n` : ` ${afterLines[k - 1]}\n`;
}
fs.writeFileSync(path.join(ws, 'after.agentd.json'), JSON.stringify({ title: 'After mode', steps: [{ id: 'edit', tool: 'apply_patch', args: { patch: afterPatch } }] }));

// A file of three hunks, the middle one adding three lines: where the third is drawn after the
// middle one was accepted with the file closed (the wire's at).
const shiftLines = bulkLines(40, 'shift');
fs.writeFileSync(path.join(ws, 'shift.txt'), shiftLines.join('\n') + '\n');
let shiftPatch = '--- a/shift.txt\n+++ b/shift.txt\n';
for (const [at, add] of [[5, 0], [20, 3], [35, 0]]) {
  shiftPatch += `@@ -${at - 3},7 +${at - 3},${7 + add} @@\n`;
  for (let k = at - 3; k <= at + 3; k++) {
    if (k !== at) { shiftPatch += ` ${shiftLines[k - 1]}\n`; continue; }
    shiftPatch += `-${shiftLines[k - 1]}\n+${shiftLines[k - 1]} changed\n`;
    for (let j = 0; j < add; j++) shiftPatch += `+added ${j}\n`;
  }
}
fs.writeFileSync(path.join(ws, 'shift.agentd.json'), JSON.stringify({ title: 'Shift', steps: [{ id: 'edit', tool: 'apply_patch', args: { patch: shiftPatch } }] }));
// Plans for the plan view's context menu, a validation problem, a model-driven step and a
// cancelled run.
const plan = (title, steps) => JSON.stringify({ title, steps }, null, 1);
fs.writeFileSync(path.join(ws, 'ctx.agentd.json'), plan('Context menu', [
  { id: 'one', description: 'read main.go', tool: 'read_file', args: { path: 'main.go' } },
  { id: 'two', description: 'read go.mod', tool: 'read_file', args: { path: 'go.mod' } },
  { id: 'three', description: 'read a file made later', tool: 'read_file', args: { path: 'later.txt' }, critical: false },
  { id: 'four', description: 'to be removed', tool: 'read_file', args: { path: 'main.go' } },
  { id: 'wait', description: 'keeps the run going', tool: 'run_command', args: { command: 'sleep 8' } },
]));
fs.writeFileSync(path.join(ws, 'bad.agentd.json'), plan('Invalid', [
  { id: 'first', tool: 'read_file', args: { path: 'main.go' } },
  { id: 'second', tool: 'read_file', args: { path: 'main.go' }, dependsOn: ['nosuchstep'] },
]));
fs.writeFileSync(path.join(ws, 'reason.txt'), bulkLines(10, 'reason').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'agent.agentd.json'), plan('Model-driven', [
  { id: 'agent', kind: 'agent', prompt: 'make line 3 of reason.txt a word', tools: ['edit_file'], maxIterations: 3 },
]));
fs.writeFileSync(path.join(ws, 'slow.agentd.json'), plan('Slow', [{ id: 'slow', tool: 'run_command', args: { command: 'sleep 60' } }]));
// Second round (issue 27): typing near and into a hunk in a Go file and in plain text, one run
// at a time, a high-risk approval, Reject All over two sets, the diff's actions, ghost text.
fs.mkdirSync(path.join(ws, 'stale'));
const goLines = ['package stale', '', '// Sum adds the numbers.', 'func Sum(xs []int) int {', '\tt := 0', '\tfor _, x := range xs {', '\t\tt += x', '\t}', '\treturn t', '}', ''];
fs.writeFileSync(path.join(ws, 'stale', 's.go'), goLines.join('\n'));
fs.writeFileSync(path.join(ws, 'stale', 's.txt'), bulkLines(20, 'text').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'stale.agentd.json'), plan('Stale', [
  { id: 'go', tool: 'edit_file', args: { path: 'stale/s.go', edits: [{ oldText: '\t\tt += x\n', newText: '\t\tt += 2 * x\n' }] } },
  { id: 'txt', tool: 'edit_file', args: { path: 'stale/s.txt', edits: [{ oldText: 'text line 10\n', newText: 'text line ten\n' }] } },
]));
fs.writeFileSync(path.join(ws, 'stale', 'c.go'), goLines.join('\n'));
fs.writeFileSync(path.join(ws, 'stale', 'c.txt'), bulkLines(20, 'text').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'ctx2.agentd.json'), plan('Context and re-propose', [
  { id: 'go', tool: 'edit_file', args: { path: 'stale/c.go', edits: [{ oldText: '\t\tt += x\n', newText: '\t\tt += 2 * x\n' }] } },
  { id: 'txt', tool: 'edit_file', args: { path: 'stale/c.txt', edits: [{ oldText: 'text line 10\n', newText: 'text line ten\n' }] } },
]));
fs.writeFileSync(path.join(ws, 'mod.txt'), bulkLines(6, 'mod').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'create.agentd.json'), plan('A create and a modify', [
  { id: 'new', tool: 'write_file', args: { path: 'made/hello.txt', content: 'hello one\nhello two\nhello three\n' } },
  { id: 'mod', tool: 'edit_file', args: { path: 'mod.txt', edits: [{ oldText: 'mod line 3\n', newText: 'mod line three\n' }] } },
]));
fs.writeFileSync(path.join(ws, 'undo.agentd.json'), plan('Undo', [{ id: 'write', tool: 'write_file', args: { path: 'undo.txt', content: 'made by a run\n' } }]));
// Issue 38 (undo is a revert): undo takes back the agent's edits and never the user's lines.
// Each case has its own copy of the demo's files, so that it does not depend on the cases before.
const demoGreet = path.join(repo, 'examples', 'demo', 'greet');
for (const d of ['u1', 'u5']) {
  fs.mkdirSync(path.join(ws, d), { recursive: true });
  for (const f of ['greet.go', 'greet_test.go']) fs.copyFileSync(path.join(demoGreet, f), path.join(ws, d, f));
}
fs.copyFileSync(path.join(repo, 'examples', 'demo', 'main.go'), path.join(ws, 'u5', 'main.go'));
fs.writeFileSync(path.join(ws, 'u5', 'notes.txt'), 'notes the run never touches\n');
const renameDef = (dir) => ({ id: 'rename_def', tool: 'edit_file', args: { path: `${dir}/greet.go`, edits: [
  { oldText: '// Hello returns a greeting for name.\nfunc Hello(name string) string {', newText: '// Greet returns a greeting for name.\nfunc Greet(name string) string {' },
  { oldText: 'b.WriteString(Hello(n))', newText: 'b.WriteString(Greet(n))' }] } });
fs.writeFileSync(path.join(ws, 'undo1.agentd.json'), plan('Undo keeps typed lines', [
  { id: 'rename_tests', tool: 'edit_file', args: { path: 'u1/greet_test.go', edits: [
    { oldText: 'func TestHello(t *testing.T) {', newText: 'func TestGreet(t *testing.T) {' },
    { oldText: 'if got := Hello(tc.in); got != tc.want {\n\t\t\tt.Errorf("Hello(%q) = %q, want %q"', newText: 'if got := Greet(tc.in); got != tc.want {\n\t\t\tt.Errorf("Greet(%q) = %q, want %q"' }] } },
  renameDef('u1'),
]));
fs.writeFileSync(path.join(ws, 'undo5.agentd.json'), plan('Rename across two files', [
  renameDef('u5'),
  { id: 'rename_main', tool: 'edit_file', args: { path: 'u5/main.go', edits: [{ oldText: 'greet.Hello(*name)', newText: 'greet.Greet(*name)' }] } },
]));
fs.writeFileSync(path.join(ws, 'undo12.agentd.json'), plan('Creations', [
  { id: 'make_empty', tool: 'write_file', args: { path: 'u12/empty.txt', content: 'made by the plan\n' } },
  { id: 'make_other', tool: 'write_file', args: { path: 'u12/other.txt', content: 'other made by the plan\n' } },
]));
fs.writeFileSync(path.join(ws, 'rule.agentd.json'), plan('Rule', [{ id: 'ruled', tool: 'run_command', args: { command: 'echo ruled' }, critical: false }]));
fs.mkdirSync(path.join(ws, 'two'));
for (const f of ['a', 'b', 'c', 'd']) fs.writeFileSync(path.join(ws, 'two', `${f}.txt`), bulkLines(8, `${f}`).join('\n') + '\n');
const twoSteps = (files) => files.map((f) => ({ id: `edit_${f}`, tool: 'edit_file', args: { path: `two/${f}.txt`, edits: [{ oldText: `${f} line 4\n`, newText: `${f} line four\n` }] } }));
fs.writeFileSync(path.join(ws, 'two.agentd.json'), plan('Two sets', twoSteps(['a', 'b'])));
fs.writeFileSync(path.join(ws, 'diffs.agentd.json'), plan('Diff actions', twoSteps(['c', 'd'])));
fs.writeFileSync(path.join(ws, 'ghost.txt'), bulkLines(10, 'ghost').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'ghost.agentd.json'), plan('Ghost', [
  { id: 'add', tool: 'edit_file', args: { path: 'ghost.txt', edits: [{ oldText: 'ghost line 5\n', newText: 'ghost line 5\nadded one\nadded two\nadded three\n' }] } },
]));
fs.writeFileSync(path.join(ws, 'pause.agentd.json'), plan('Pause', [
  // Long enough that the run is still going for the second pause, after the first resume.
  { id: 'p1', tool: 'run_command', args: { command: 'sleep 3' } },
  { id: 'p2', tool: 'run_command', args: { command: 'sleep 10' }, dependsOn: ['p1'] },
  { id: 'p3', tool: 'run_command', args: { command: 'sleep 1' }, dependsOn: ['p2'] },
]));
// Issue 35: what the editor shows is what is on disk, whole-file units, the Plan view's states.
fs.writeFileSync(path.join(ws, 'unsaved.txt'), bulkLines(6, 'unsaved').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'unsaved.agentd.json'), plan('Unsaved edit', [
  { id: 'edit', tool: 'edit_file', args: { path: 'unsaved.txt', edits: [{ oldText: 'unsaved line 3\n', newText: 'unsaved line three\n' }] } },
]));
fs.mkdirSync(path.join(ws, 'p4'));
fs.writeFileSync(path.join(ws, 'p4', 'old.txt'), 'old\n');
fs.writeFileSync(path.join(ws, 'p4', 'mv.txt'), 'moving\n');
fs.writeFileSync(path.join(ws, 'p4.agentd.json'), plan('Whole files', [
  { id: 'mk', tool: 'write_file', args: { path: 'p4/new.txt', content: 'new by the agent\n' } },
  { id: 'typed', tool: 'write_file', args: { path: 'p4/typed.txt', content: 'the agent\'s text\n' } },
  { id: 'rm', tool: 'delete_file', args: { path: 'p4/old.txt' } },
  { id: 'mv', tool: 'move_file', args: { from: 'p4/mv.txt', to: 'p4/moved.txt' } },
]));
fs.writeFileSync(path.join(ws, 'blk.txt'), bulkLines(4, 'blk').join('\n') + '\n');
fs.writeFileSync(path.join(ws, 'blocked.agentd.json'), plan('Blocked', [
  { id: 'change', tool: 'edit_file', args: { path: 'blk.txt', edits: [{ oldText: 'blk line 2\n', newText: 'blk line two\n' }] } },
  { id: 'after', tool: 'read_file', args: { path: 'blk.txt' }, dependsOn: ['change'] },
]));
fs.writeFileSync(path.join(ws, 'risk.agentd.json'), plan('Risk', [{ id: 'risky', tool: 'run_command', args: { command: 'touch ran.txt' }, critical: false }]));
// A git read (risk low, category git: the default policy asks): the approval below high risk.
fs.writeFileSync(path.join(ws, 'gitread.agentd.json'), plan('Git read', [{ id: 'status', tool: 'git', args: { action: 'status' }, critical: false }]));

// The project's fake model server (internal/fakemodel) for the model-driven step.
const FAKEMODEL_BIN = process.env.FAKEMODEL_BIN;
if (!FAKEMODEL_BIN || !fs.existsSync(FAKEMODEL_BIN)) fail(`FAKEMODEL_BIN (${FAKEMODEL_BIN}) must name the built fake model (scripts/test.sh builds it)`);
const fake = spawn(FAKEMODEL_BIN, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const fakeURL = await new Promise((res, rej) => {
  let buf = '';
  fake.stdout.on('data', (b) => { buf += b; const m = /^(http\S+)\n/.exec(buf); if (m) res(m[1]); });
  fake.on('exit', (c) => rej(new Error(`fakemodel exited ${c}`)));
});

fs.mkdirSync(path.join(userDir, 'User'), { recursive: true });
fs.writeFileSync(path.join(userDir, 'User', 'settings.json'), JSON.stringify({
  'security.workspace.trust.enabled': false,
  'agentd.path': AGENTD_BIN,
  'agentd.review': 'before',
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'telemetry.telemetryLevel': 'off',
  'extensions.ignoreRecommendations': true,
  'editor.minimap.enabled': false,
  'editor.codeLens': true,
  'files.autoSave': 'off',
  'git.enabled': false,
  'go.toolsManagement.autoUpdate': false,
  'window.dialogStyle': 'custom',
  'workbench.colorTheme': 'Default Dark Modern',
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'chat.disableAIFeatures': true,
  'search.followSymlinks': false,
  'agentd.model': 'openai:fake',
  'agentd.modelBaseUrl': `${fakeURL}/v1`,
  'agentd.approval.allowCommands': ['sleep *'],
  // Sent to the daemon's policy by the extension (agentd/policy/set), as a user's setting is.
  'agentd.approval.write': 'allow',
}, null, 1));

const env = { ...process.env, XDG_CONFIG_HOME: path.join(tmp, 'xdg'), AGENTD_VSCODE_METRICS: metricsFile, AGENTD_STATE_DIR: stateDir, OPENAI_API_KEY: 'test-key' };
delete env.npm_config_nodedir;
execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', VSIX], { env, stdio: ['ignore', 'inherit', 'inherit'] });
if (!fs.readdirSync(extDir).some((d) => d.startsWith('agentd.agentd'))) fail(`the .vsix did not install into ${extDir}`);
const controlVsix = path.join(tmp, 'lens-control.vsix');
execFileSync(path.join(ext, 'node_modules', '.bin', 'vsce'), ['package', '--no-dependencies', '--skip-license', '-o', controlVsix], { cwd: path.join(here, 'lens-control'), stdio: ['ignore', 'ignore', 'inherit'] });
execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', controlVsix], { env, stdio: ['ignore', 'inherit', 'inherit'] });
if (!fs.readdirSync(extDir).some((d) => d.startsWith('agentd-e2e.lens-control'))) fail(`the lens control extension did not install into ${extDir}`);

async function freePort() {
  return new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
}
const port = await freePort();
const csLog = fs.openSync(path.join(results, 'code-server.log'), 'w');
const cs = spawn(CODE_SERVER, ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
  '--disable-workspace-trust', '--user-data-dir', userDir, '--extensions-dir', extDir, ws], { env, stdio: ['ignore', csLog, csLog], detached: true });
let browser;
const cleanup = () => {
  try { process.kill(-cs.pid, 'SIGTERM'); } catch { /* gone */ }
  try { fake.kill('SIGTERM'); } catch { /* gone */ }
};
process.on('exit', cleanup);
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { cleanup(); process.exit(1); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, f, timeout = 30000, every = 100) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try { const v = await f(); if (v) return v; } catch (e) { last = e; }
    await sleep(every);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
}
for (let i = 0; ; i++) {
  try { const r = await fetch(`http://127.0.0.1:${port}/healthz`); if (r.ok) break; } catch { /* not yet */ }
  if (i > 600) fail('code-server did not start (see test-results/code-server.log)');
  await sleep(100);
}

browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.setDefaultTimeout(30000);
await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { timeout: 180000 });
await page.waitForSelector('.monaco-workbench', { timeout: 180000 });

// Helpers ------------------------------------------------------------------------------------
const metrics = () => (fs.existsSync(metricsFile) ? fs.readFileSync(metricsFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
async function palette(command, pick) {
  // A modal left open by an earlier step (an approval of a run still going) makes the workbench
  // inert: say which, and dismiss it (the answer is "reject once").
  const dialog = page.locator('.monaco-dialog-box');
  if (await dialog.count()) {
    console.log(`  (dismissing a dialog before "${command}": ${(await dialog.first().innerText()).replace(/\s+/g, ' ').slice(0, 200)})`);
    await page.keyboard.press('Escape');
    await until('the dialog closed', async () => (await dialog.count()) === 0, 5000);
  }
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  try {
    await input.fill(`>${command}`, { timeout: 10000 });
  } catch (e) {
    // Once in some twenty runs the workbench turned inert between the check above and the fill
    // (a modal came up and went), and the case failed on an unrelated command: say what was
    // there, keep a picture, and try once more; a second failure fails the case.
    const what = await page.evaluate(() => [...document.querySelectorAll('[inert], .monaco-dialog-box')]
      .map((el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}: ${(el.innerText ?? '').replace(/\s+/g, ' ').slice(0, 160)}`).join(' | '));
    console.log(`  (the palette was not editable before "${command}": ${what || 'nothing inert now'}; ${String(e).split('\n')[0]})`);
    await page.screenshot({ path: path.join(results, `palette-not-editable-${command.replace(/[^A-Za-z0-9]+/g, '-')}.png`) });
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${command}`);
  }
  await page.locator('.quick-input-list .monaco-list-row').first().waitFor();
  await until(`the command "${command}" in the palette`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(command));
  await page.keyboard.press('Enter');
  if (pick !== undefined) await quickPick(pick);
}
async function quickPick(text) {
  const input = page.locator('.quick-input-widget input');
  // The command's own pick, not the palette still showing while the command starts (under load
  // its pick can come seconds later: filled into the palette, the text would open a file).
  await until('the command\'s pick', async () => (await input.isVisible()) && !(await input.inputValue()).startsWith('>'), 30000);
  await input.fill(text);
  await until(`"${text}" in the quick pick`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(text));
  await page.keyboard.press('Enter');
}
async function openFile(rel) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  try {
    await input.fill(rel, { timeout: 10000 });
  } catch (e) {
    // As in palette(): the workbench went inert for a moment (a modal came and went) and quick
    // open closed under the keys; a user presses Ctrl+P again, and so does this, once.
    console.log(`  (quick open was not editable for ${rel}: ${String(e).split('\n')[0]}; pressing Ctrl+P again)`);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    await input.waitFor({ state: 'visible' });
    await input.fill(rel);
  }
  await until(`${rel} in quick open`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(path.basename(rel)));
  await page.keyboard.press('Enter');
  await until(`the editor of ${rel}`, async () => (await page.locator('.tab.active').textContent())?.includes(path.basename(rel)));
  await page.waitForSelector('.editor-instance .monaco-editor .view-lines');
}
const editor = () => page.locator('.editor-group-container.active .monaco-editor').first();
async function editorText() { return (await editor().locator('.view-lines').innerText()).replace(/\u00a0/g, ' '); }
async function lenses() { return editor().locator('.contentWidgets .codelens-decoration a, .codelens-decoration a').allTextContents(); }
async function clickLens(title, nth = 0) {
  const l = editor().locator('.codelens-decoration a', { hasText: new RegExp(`^${title.replace(/[()]/g, '\\$&')}$`) }).nth(nth);
  await l.waitFor();
  await l.click();
}
async function closeEditor() {
  const before = await page.locator('.editor-group-container.active .tab').count();
  const tab = page.locator('.editor-group-container.active .tab.active');
  await tab.hover();
  await tab.locator('.action-label[aria-label^="Close"]').first().click();
  await until('the editor closed', async () => (await page.locator('.editor-group-container.active .tab').count()) < before, 10000);
}
const activeTab = async () => (await page.locator('.editor-group-container.active .tab.active').textContent()) ?? '';
const planPane = () => page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Plan/ }) });
const planRow = (id) => planPane().locator('.monaco-list-row', { has: page.locator('.label-name', { hasText: new RegExp(`^${id}$`) }) });
async function planIds() {
  return (await planPane().locator('.monaco-list-row .label-name').allTextContents()).map((t) => t.trim());
}
async function planMenu(id, item) {
  const entry = page.getByRole('menuitem', { name: item, exact: true }).first();
  // A right-click that lands while the tree re-renders its rows (a run's status events replace
  // them) opens no menu: right-click again, up to three times.
  for (let i = 0; ; i++) {
    await planRow(id).click({ button: 'right' });
    const shown = await entry.waitFor({ timeout: 5000 }).then(() => true, () => false);
    if (shown) break;
    await page.keyboard.press('Escape');
    if (i === 2) throw new Error(`no context menu with ${item} on step ${id}`);
  }
  // A click that lands while the menu still animates in is lost: click until it closes.
  for (let i = 0; ; i++) {
    await entry.hover();
    await entry.click().catch(() => undefined);
    const closed = await until(`the menu closed after ${item}`, async () => !(await entry.isVisible()), 2000).then(() => true, () => false);
    if (closed) break;
    if (i === 2) throw new Error(`the context menu item ${item} did not run`);
  }
}
const checked = async (id) => /\bchecked\b/.test((await planRow(id).locator('.monaco-custom-toggle').getAttribute('class')) ?? '');
async function notifications() { return page.locator('.notifications-toasts .notification-toast, .notification-list-item-message').allTextContents(); }
const disk = (rel) => fs.readFileSync(path.join(ws, rel), 'utf8');

// A new window reads the settings file again and starts a new extension host.
async function reload() {
  await sleep(1000);
  await page.reload({ timeout: 180000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 180000 });
  await until('the workbench ready', async () => (await page.locator('.statusbar-item').count()) > 3, 120000);
}
let passed = 0, failed = 0, notRun = 0;
const figures = {};
// E2E_ONLY=<regexp> runs only the cases whose names match (and the first, which starts the
// daemon), for iterating on one case; the suite then fails, so a filtered run never passes for a
// full one.
const only = process.env.E2E_ONLY ? new RegExp(process.env.E2E_ONLY) : undefined;
async function check(name, f) {
  if (only && passed + failed + notRun > 0 && !only.test(name)) { notRun++; return; }
  const t0 = Date.now();
  try {
    await f();
    passed++;
    console.log(`ok - ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    const shot = path.join(results, `${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
    await page.screenshot({ path: shot }).catch(() => undefined);
    console.log(`not ok - ${name}: ${e.stack ?? e}\n  screenshot: ${shot}`);
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }

// Tests --------------------------------------------------------------------------------------
await check('the .vsix is installed and the daemon starts for the workspace', async () => {
  // Activation: on workspaceContains:**/*.agentd.{json,yaml} (VS Code gives that search 7 s and
  // gives up on a loaded machine), else on opening the agentd view, as a user would.
  const byWorkspace = await until('activation by workspaceContains', async () => metrics().some((m) => m.name === 'activationToDaemonMs'), 20000).catch(() => false);
  if (!byWorkspace) await palette('agentd: Focus on Plan View');
  await until('the daemon started (activation metrics)', async () => metrics().some((m) => m.name === 'activationToDaemonMs'), 30000);
  await until('the agentd status bar item', async () => (await page.locator('.statusbar-item', { hasText: 'agentd' }).count()) > 0, 10000);
  figures.activatedBy = byWorkspace ? 'workspaceContains' : 'onView';
});

// In a window as a user opens it (no editors, no pending changes): each reload starts a new
// extension host, activates the extension and starts a daemon.
await check('speed: activation to a started daemon, over several window reloads', async () => {
  const acts = () => metrics().filter((m) => m.name === 'activationToDaemonMs');
  for (let i = 0; i < 5; i++) {
    const n = acts().length;
    await reload();
    const byWorkspace = await until('activation', async () => acts().length > n, 15000).catch(() => false);
    if (!byWorkspace) await palette('agentd: Focus on Plan View');
    await until('the daemon started', async () => acts().length > n, 30000);
  }
});
await check('open the example plan: the Plan view lists its steps', async () => {
  await palette('agentd: Open Plan', 'refactor.agentd.json');
  await palette('agentd: Focus on Plan View');
  const view = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Plan' }) });
  await until('the steps in the Plan view', async () => {
    const t = await view.locator('.monaco-list-row').allTextContents();
    return ['find', 'rename_def', 'rename_tests', 'rename_main', 'test', 'check'].every((s) => t.some((x) => x.includes(s)));
  });
});

await check('run the plan: CodeLens Accept | Reject on each pending hunk and Accept All on top', async () => {
  await openFile('main.go');
  await openFile('greet/greet.go');
  await palette('agentd: Run Plan');
  await until('two hunk lenses in greet.go', async () => (await lenses()).filter((t) => t === 'Accept').length === 2, 60000);
  const ls = await lenses();
  assert(ls.filter((t) => t === 'Reject').length === 2, `lenses: ${ls.join(' | ')}`);
  assert(ls.some((t) => t.startsWith('Accept All')), `no Accept All lens: ${ls.join(' | ')}`);
  assert((await editor().locator('.cdr, [class*="ced-"]').count()) >= 0, 'decorations');
  const text = await editorText();
  assert(text.includes('func Hello(name string) string {'), 'before mode: the buffer still holds the old text');
  await page.mouse.move(0, 0);
  await editor().screenshot({ path: path.join(media, 'inline-hunk.png') });
});

await check('Open Diff shows the file against the proposal in a virtual document', async () => {
  await clickLens('Open Diff');
  await until('the diff editor', async () => (await activeTab()).includes('now ↔ proposed by agentd'), 15000);
  const modified = page.locator('.editor-group-container.active .monaco-diff-editor .editor.modified .view-lines');
  await until('the proposed side shows the rename', async () => (await modified.innerText()).replace(/\u00a0/g, ' ').includes('func Greet(name string) string {'), 15000);
  const original = page.locator('.editor-group-container.active .monaco-diff-editor .editor.original .view-lines');
  assert((await original.innerText()).replace(/\u00a0/g, ' ').includes('func Hello(name string) string {'), 'the left side is the file as it is');
  await closeEditor();
});

await check('Review All Changes opens every pending file in the multi-file diff editor', async () => {
  await palette('agentd: Review All Changes');
  await until('the multi-file diff editor', async () => /\d+ files? pending review/.test(await activeTab()), 15000);
  const area = page.locator('.editor-group-container.active');
  await until('both files of the change set in it', async () => { const t = await area.innerText(); return t.includes('greet.go') && t.includes('main.go'); }, 15000);
  await closeEditor();
  await openFile('greet/greet.go');
  await until('greet.go lenses back', async () => (await lenses()).filter((t) => t === 'Accept').length === 2, 15000);
});

await check('accept one hunk and reject the other, then the file on disk', async () => {
  await clickLens('Accept', 0);
  await until('one hunk left', async () => (await lenses()).filter((t) => t === 'Accept').length === 1);
  await clickLens('Reject', 0);
  await until('no hunk left', async () => !(await lenses()).some((t) => t === 'Accept' || t === 'Reject'));
  const text = await editorText();
  assert(text.includes('func Greet(name string) string {'), 'the accepted hunk is in the buffer');
  await editor().click();
  await page.keyboard.press('Control+S');
  await until('greet.go saved', async () => disk('greet/greet.go').includes('func Greet(name string) string {'));
  const d = disk('greet/greet.go');
  assert(d.includes('// Greet returns a greeting for name.'), 'accepted hunk on disk');
  assert(d.includes('b.WriteString(Hello(n))'), 'rejected hunk not on disk');
});

await check('type above a pending hunk, then accept it', async () => {
  await openFile('main.go');
  await until('the hunk in main.go', async () => (await lenses()).includes('Accept'));
  await editor().locator('.view-line').first().click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.insertText('// typed by the user\n');
  await until('the hunk moved with the typing and is pending again', async () => (await lenses()).includes('Accept'));
  await clickLens('Accept', 0);
  await until('the hunk applied in the buffer', async () => (await editorText()).includes('greet.Greet(*name)'));
  const text = await editorText();
  assert(text.startsWith('// typed by the user'), `the user's line is kept: ${text.slice(0, 80)}`);
  await until('no pending hunk left in main.go', async () => !(await lenses()).includes('Accept'), 10000);
});

await check('answer an approval: the command and folder are shown, Allow once runs it', async () => {
  await palette('agentd: Accept All Changes');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 60000 });
  const t = await dialog.innerText();
  assert(t.includes('go test ./...'), `the dialog shows the command: ${t}`);
  assert(t.includes(`Folder: ${ws}`), `the dialog shows the folder: ${t}`);
  for (const b of ['Allow once', 'Always allow', 'Reject', 'Always reject']) assert(t.includes(b), `option ${b} missing: ${t}`);
  await dialog.locator('.monaco-button', { hasText: /^Allow once$/ }).click();
  // greet.go kept one call to Hello: the tests fail to build and the run ends failed; a
  // critical step asks Retry / Skip / Abort through window/showMessageRequest.
  // main.go holds an accepted hunk and the user's typed line, unsaved: before the command the
  // daemon asks to save it (agentd/documents/save, userEdited), and the extension asks the user.
  const save = page.locator('.notification-toast', { hasText: 'your own unsaved edits' }).locator('.monaco-button', { hasText: /^Save$/ });
  await save.first().waitFor({ timeout: 60000 });
  assert((await page.locator('.notification-toast', { hasText: 'your own unsaved edits' }).first().innerText()).includes('main.go'), 'the save prompt names main.go');
  await save.first().click();
  await until('main.go saved with the user\'s line', async () => disk('main.go').startsWith('// typed by the user'), 15000);
  await until('the run to end', async () => {
    const abort = page.locator('.notification-toast .monaco-button', { hasText: /^Abort$/ });
    if (await abort.count()) await abort.first().click();
    return (await page.locator('.statusbar-item', { hasText: /agentd \d+\/\d+ (failed|partial|completed|cancelled)/ }).count()) > 0;
  }, 120000, 300);
  await palette('agentd: Focus on Plan View');
  await page.mouse.move(0, 0);
  await page.locator('.part.sidebar').screenshot({ path: path.join(media, 'plan-tree.png') });
});

await check('restore the run start snapshot: the open editor shows the restored text', async () => {
  await openFile('greet/greet.go');
  await palette('agentd: Restore Snapshot', 'run start');
  await until('greet.go restored in the editor', async () => (await editorText()).includes('func Hello(name string) string {'), 30000);
  assert(disk('greet/greet.go').includes('// Hello returns a greeting for name.'), 'restored on disk');
  assert(!disk('greet/greet_test.go').includes('TestGreet'), 'greet_test.go restored on disk');
  // Which files are conflicts is the server's rule (docs/protocol.md, snapshot/restore); the
  // extension shows its answer.
  await until('the restore message', async () => (await notifications()).some((n) => n.includes('restored run start')), 10000);
});

await check('undo of the last restore puts the result of the run back in the editor and on disk', async () => {
  await palette('agentd: Undo Last Restore');
  await until('greet.go back to the run\'s result in the editor', async () => (await editorText()).includes('func Greet(name string) string {'), 30000);
  await until('and on disk', async () => disk('greet/greet.go').includes('func Greet(name string) string {'), 10000);
});

await check('compare with snapshot: the workspace against the run start in the multi-file diff editor', async () => {
  await palette('agentd: Compare with Snapshot', 'run start');
  await until('the comparison', async () => (await activeTab()).includes('now vs'), 15000);
  await until('greet.go in it', async () => (await page.locator('.editor-group-container.active').innerText()).includes('greet.go'), 15000);
  await closeEditor();
});

await check('a validation problem shows on its step and in the Problems panel', async () => {
  await palette('agentd: Open Plan', 'bad.agentd.json');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+Shift+M');
  const panel = page.locator('.markers-panel');
  await until('the problem in the Problems panel', async () => (await panel.innerText()).includes('nosuchstep'), 15000);
  await palette('agentd: Focus on Plan View');
  await until('the step and its problem in the Plan view', async () => (await planPane().locator('.monaco-list-row').allTextContents()).some((t) => t.includes('second') && t.includes('nosuchstep')), 15000);
});

await check('plan context menu: move up, remove, edit args as JSON, skip; skip checkboxes; retry', async () => {
  await palette('agentd: Open Plan', 'ctx.agentd.json');
  await palette('agentd: Focus on Plan View');
  await until('the steps', async () => (await planIds()).join(' ') === 'one two three four wait', 15000);
  await planMenu('two', 'Move Step Up');
  await until('two moved up', async () => (await planIds()).join(' ') === 'two one three four wait', 15000);
  await planMenu('four', 'Remove Step');
  await until('four removed', async () => (await planIds()).join(' ') === 'two one three wait', 15000);
  await planMenu('one', 'Edit Step Args as JSON');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  assert(JSON.parse(await input.inputValue()).path === 'main.go', `the args shown: ${await input.inputValue()}`);
  await input.fill('{"path":"go.mod"}');
  await page.keyboard.press('Enter');
  await sleep(500);
  await planMenu('one', 'Edit Step Args as JSON');
  await input.waitFor({ state: 'visible' });
  await until('the server\'s plan has the new args', async () => JSON.parse(await input.inputValue()).path === 'go.mod', 5000);
  await page.keyboard.press('Escape');
  await planMenu('one', 'Skip Step');
  await until('one unchecked (skipped)', async () => !(await checked('one')), 15000);
  await planRow('one').locator('.monaco-custom-toggle').click();
  await until('one checked again', async () => checked('one'), 15000);
  await planRow('two').locator('.monaco-custom-toggle').click();
  await until('two unchecked', async () => !(await checked('two')), 15000);
  await palette('agentd: Run Plan');
  await until('three failed', async () => (await planRow('three').getAttribute('aria-label'))?.includes('three failed'), 60000);
  assert((await planRow('two').getAttribute('aria-label'))?.includes('two skipped'), `two: ${await planRow('two').getAttribute('aria-label')}`);
  fs.writeFileSync(path.join(ws, 'later.txt'), 'made later\n');
  await planMenu('three', 'Retry Step');
  await until('three completed on retry', async () => (await planRow('three').getAttribute('aria-label'))?.includes('three completed'), 30000);
  await until('the run ends', async () => (await planRow('wait').getAttribute('aria-label'))?.includes('wait completed'), 30000);
});

await check('rejecting a model-driven step\'s hunk asks for a reason, which reaches the model', async () => {
  const push = await fetch(`${fakeURL}/_fake/push`, { method: 'POST', body: JSON.stringify([
    { text: 'editing', toolCalls: [{ id: 'c1', name: 'edit_file', args: JSON.stringify({ path: 'reason.txt', edits: [{ oldText: 'reason line 3\n', newText: 'reason line three\n' }] }) }] },
    { text: 'understood, leaving it' },
  ]) });
  assert(push.ok, `push to the fake model: ${push.status}`);
  await openFile('reason.txt');
  await palette('agentd: Open Plan', 'agent.agentd.json');
  await palette('agentd: Run Plan');
  await openFile('reason.txt');
  await until('the hunk of the model-driven step', async () => (await lenses()).includes('Reject'), 60000);
  await clickLens('Reject');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  const title = await page.locator('.quick-input-widget .quick-input-title').innerText();
  assert(title.includes("reject step agent's change"), `the prompt: ${title}`);
  await input.fill('keep digits, please');
  await page.keyboard.press('Enter');
  await until('the hunk gone', async () => !(await lenses()).includes('Reject'), 30000);
  await until('the reason in a request to the model', async () => {
    const reqs = await (await fetch(`${fakeURL}/_fake/requests`)).json();
    return JSON.stringify(reqs).includes('keep digits, please');
  }, 30000);
  assert(disk('reason.txt').includes('reason line 3\n'), 'nothing written');
});

await check('cancel from the progress notification cancels the run', async () => {
  await palette('agentd: Open Plan', 'slow.agentd.json');
  await palette('agentd: Run Plan');
  // The notification of this run: it names its running step.
  const cancel = page.locator('.notification-toast', { hasText: /agentd: .*slow/ }).locator('.monaco-button', { hasText: /^Cancel$/ });
  await cancel.first().waitFor({ timeout: 30000 });
  await cancel.first().click();
  await until('the run cancelled', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/\d+ cancelled/ }).count()) > 0, 30000);
  await until('its step cancelled in the Plan view', async () => /slow (cancelled|failed)/.test((await planRow('slow').getAttribute('aria-label')) ?? ''), 30000);
  await until('its notification gone', async () => (await cancel.count()) === 0, 30000);
});



// Second round (issue 27) -------------------------------------------------------------------
const lensRows = () => editor().locator('.codelens-decoration').allInnerTexts();
async function gotoLine(n) { await palette('Go to Line/Column'); await page.keyboard.type(String(n)); await page.keyboard.press('Enter'); }
// setSetting changes a user setting the way a user does, in the Settings editor: the change
// reaches the extension at once (a write to settings.json is only seen after a reload here).
async function setSetting(key, value) {
  await palette('Preferences: Open User Settings');
  const box = page.locator('.settings-editor .settings-header .suggest-input-container .monaco-editor').first();
  await box.waitFor({ timeout: 15000 });
  await box.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.type(key);
  // This extension's item (the search results come in asynchronously: wait for it, not for
  // any item with the same label).
  const label = key.split('.').pop().replace(/^./, (c) => c.toUpperCase()).replace(/([a-z])([A-Z])/g, '$1 $2');
  const item = page.locator(`.settings-editor .setting-item-contents:has(.setting-item-category:text-matches("^Agentd:", "i")):has(.setting-item-label:text-is("${label}"))`).first();
  await item.waitFor({ timeout: 15000 });
  const input = item.locator('input.input, textarea').first();
  await input.fill(value);
  await page.keyboard.press('Tab');
  await until(`${key} set to "${value}"`, async () => (await input.inputValue()) === value, 5000);
  await sleep(1000);
  await shot(`setting-${key}`);
  await page.keyboard.press('Escape');
}
// Pictures of the second round's cases, looked at by hand (test-results/walk-*.png).
const shot = (name) => page.screenshot({ path: path.join(results, `walk-${name}.png`) }).catch(() => undefined);
// A case that failed half-way can leave its run waiting for a review: the next case's Run Plan
// would then (rightly) offer Resume or Cancel. Each of these cases starts from no live run.
async function settle() {
  // Unsaved editors with accepted hunks would make the next command step ask to save them.
  await palette('File: Save All');
  await palette('agentd: Cancel Run');
  await sleep(800);
  await page.keyboard.press('Escape');
}
async function noUpdatingFor(ms) {
  // "Updating…" may show for the moment the server takes; it must not stay.
  await until('no hunk left updating', async () => !(await lensRows()).some((t) => t.includes('Updating')), ms);
}
await check('typing into a hunk (Go after a line typed at the top, and plain text): never stuck updating; stale offers Re-propose; undo clears it', async () => {
  await settle();
  await openFile('stale/s.go');
  await openFile('stale/s.txt');
  await palette('agentd: Open Plan', 'stale.agentd.json');
  await palette('agentd: Run Plan');
  // Plain text: into the changed line (10): stale, not updating, Re-propose and Reject.
  await openFile('stale/s.txt');
  await until('the hunk of s.txt', async () => (await lenses()).includes('Accept'), 60000);
  await gotoLine(10);
  await page.keyboard.press('End');
  await page.keyboard.insertText(' x');
  await until('a Stale lens on s.txt', async () => (await lensRows()).some((t) => t.includes('Stale') && t.includes('Re-propose') && t.includes('Reject') && !t.includes('Accept')), 15000);
  await shot('stale-txt');
  // Typing again into a hunk that is already stale changes nothing on the server: no notice.
  await page.keyboard.insertText('y');
  await noUpdatingFor(10000);
  assert((await lensRows()).some((t) => t.includes('Stale')), `still stale: ${await lensRows()}`);
  // Go: the issue's case: a line typed at the top, then typing inside the pending hunk.
  await openFile('stale/s.go');
  await until('the hunk of s.go', async () => (await lenses()).includes('Accept'), 30000);
  await editor().locator('.view-line').first().click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.insertText('// typed at the top\n');
  await sleep(600);
  await gotoLine(8); // `t += x`, one line down now
  await page.keyboard.press('End');
  await page.keyboard.insertText(' // mine');
  await until('a Stale lens on s.go', async () => (await lensRows()).some((t) => t.includes('Stale')), 15000);
  await page.keyboard.insertText('!');
  await noUpdatingFor(10000);
  assert((await lensRows()).some((t) => t.includes('Stale') && t.includes('Re-propose')), `s.go stale: ${await lensRows()}`);
  await shot('stale-go');
  // Undoing the edits of s.txt's changed line clears stale (the server's state, redrawn).
  await openFile('stale/s.txt');
  await gotoLine(10);
  // Undoing the edits of the changed line clears stale (the server's state, redrawn).
  for (let i = 0; i < 6 && /text line 10 x/.test(await editorText()); i++) await page.keyboard.press('Control+Z');
  await until('pending again after undo', async () => !(await lensRows()).some((t) => t.includes('Stale') || t.includes('Updating')) && (await lenses()).includes('Accept'), 20000);
});

await check('editing a context line keeps the hunk; Re-propose makes a stale hunk acceptable (agentd/changes/repropose)', async () => {
  await settle();
  await openFile('stale/c.go');
  await openFile('stale/c.txt');
  await palette('agentd: Open Plan', 'ctx2.agentd.json');
  await palette('agentd: Run Plan');
  // c.txt: line 9 is context of the hunk at line 10: editing it keeps the hunk pending.
  await openFile('stale/c.txt');
  await until('the hunk of c.txt', async () => (await lenses()).includes('Accept'), 60000);
  await gotoLine(9);
  await page.keyboard.press('End');
  await page.keyboard.insertText(' ctx');
  await noUpdatingFor(10000);
  await sleep(1000);
  assert((await lenses()).includes('Accept') && !(await lensRows()).some((t) => t.includes('Stale')), `a context edit keeps the hunk pending: ${await lensRows()}`);
  // c.go: a line typed at the top, the changed line edited: stale; Re-propose computes it
  // against the text as it is now, and Accept keeps the user's lines.
  await openFile('stale/c.go');
  await until('the hunk of c.go', async () => (await lenses()).includes('Accept'), 30000);
  await editor().locator('.view-line').first().click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.insertText('// typed at the top\n');
  await sleep(600);
  await gotoLine(8);
  await page.keyboard.press('End');
  await page.keyboard.insertText(' // mine');
  await until('the stale hunk of c.go', async () => (await lensRows()).some((t) => t.includes('Re-propose')), 15000);
  await clickLens('Re-propose');
  await until('a pending hunk again after Re-propose', async () => (await lenses()).includes('Accept') && !(await lensRows()).some((t) => t.includes('Stale')), 20000);
  await shot('reproposed');
  await clickLens('Accept');
  // The re-proposed hunk replaces the line the user edited; the line typed at the top stays.
  await until('accepted with the user\'s line at the top kept', async () => { const t = await editorText(); return t.includes('t += 2 * x') && t.includes('// typed at the top'); }, 20000);
  await palette('agentd: Reject All Changes');
});

await check('Run Plan while a run is paused offers Resume or Cancel, never a second run; Resume Run resumes it', async () => {
  await settle();
  await palette('agentd: Open Plan', 'pause.agentd.json');
  await palette('agentd: Run Plan');
  await until('the run going', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/3/ }).count()) > 0, 30000);
  await palette('agentd: Pause Run');
  await until('the run paused', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/3 paused/ }).count()) > 0, 30000);
  const runsBefore = JSON.parse(execFileSync(AGENTD_BIN, ['runs', '--json', '--state-dir', stateDir], { cwd: ws, env }).toString());
  await palette('agentd: Run Plan');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 15000 });
  const t = await dialog.innerText();
  await shot('run-while-paused');
  assert(/is paused/.test(t) && t.includes('Resume') && t.includes('Cancel It and Run'), `the dialog: ${t}`);
  await dialog.locator('.monaco-button', { hasText: /^Resume$/ }).click();
  await until('the paused run resumed', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/3 paused/ }).count()) === 0, 15000);
  const runsAfter = JSON.parse(execFileSync(AGENTD_BIN, ['runs', '--json', '--state-dir', stateDir], { cwd: ws, env }).toString());
  assert(runsAfter.length === runsBefore.length, `no second run: ${runsBefore.length} runs before, ${runsAfter.length} after`);
  await palette('agentd: Pause Run');
  await until('paused again', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/3 paused/ }).count()) > 0, 30000);
  await palette('agentd: Resume Run');
  await until('Resume Run ends the pause and the run completes', async () => (await page.locator('.statusbar-item', { hasText: /agentd 3\/3/ }).count()) > 0, 60000);
});

await check('a high-risk approval: Enter does not allow it (the default button is Reject)', async () => {
  await settle();
  await palette('agentd: Open Plan', 'risk.agentd.json');
  await palette('agentd: Run Plan');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 30000 });
  assert((await dialog.innerText()).includes('touch ran.txt'), await dialog.innerText());
  // The default button is the one focused when the modal opens: what Enter presses.
  await sleep(300);
  const focused = (await page.evaluate(() => document.activeElement?.textContent ?? '')).trim();
  await shot('high-risk-approval');
  assert(focused === 'Reject', `the default (focused) button: ${focused}`);
  await page.keyboard.press('Enter');
  await until('the run ends', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/1 (partial|failed|completed|cancelled)/ }).count()) > 0, 30000);
  assert(!fs.existsSync(path.join(ws, 'ran.txt')), 'Enter ran the high-risk command');
});

await check('Reject All Changes in the Changes view title rejects every pending change set', async () => {
  await settle();
  await palette('agentd: Open Plan', 'two.agentd.json');
  await palette('agentd: Run Plan');
  await palette('agentd: Focus on Changes View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Changes/ }) });
  await until('both change sets in the Changes view', async () => { const t = (await pane.locator('.monaco-list-row').allTextContents()).join(' '); return t.includes('step edit_a') && t.includes('step edit_b'); }, 60000);
  await pane.locator('.pane-header').hover();
  await pane.locator('.pane-header .action-label[aria-label="Reject All Changes"]').click();
  await until('no change set left', async () => { const t = (await pane.locator('.monaco-list-row').allTextContents()).join(' '); return !t.includes('step edit_a') && !t.includes('step edit_b'); }, 30000);
  assert(disk('two/a.txt').includes('a line 4\n') && disk('two/b.txt').includes('b line 4\n'), 'nothing written');
  await until('the run ends', async () => (await page.locator('.statusbar-item', { hasText: /agentd \d+\/2 (partial|completed)/ }).count()) > 0, 30000);
});

await check('Open Diff and the multi-file diff offer accept and reject (editor title)', async () => {
  await settle();
  await palette('agentd: Open Plan', 'diffs.agentd.json');
  await palette('agentd: Run Plan');
  await openFile('two/c.txt');
  await until('the hunk of c.txt', async () => (await lenses()).includes('Accept'), 60000);
  await clickLens('Open Diff');
  await until('the diff editor', async () => (await activeTab()).includes('now ↔ proposed by agentd'), 15000);
  const title = page.locator('.editor-group-container.active .editor-actions');
  await shot('diff-actions');
  console.log(`  (editor title actions: ${(await page.locator('.editor-group-container.active .action-label').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')))).join(' | ')})`);
  await title.locator('.action-label[aria-label^="Accept File"]').click();
  await until('c.txt accepted', async () => { try { return disk('two/c.txt').includes('c line four'); } catch { return false; } }, 15000).catch(async () => {
    // Accepted into the open buffer: saved by the user; the Changes view says it.
    await until('c.txt accepted in its editor', async () => !(await pendingIn('two/c.txt')), 15000);
  });
  await closeEditor();
  await palette('agentd: Review All Changes');
  await until('the multi-file diff editor', async () => /pending review/.test(await activeTab()), 15000);
  await title.locator('.action-label[aria-label^="Reject All Changes"]').click();
  await until('d.txt rejected', async () => !(await pendingIn('two/d.txt')), 15000);
  assert(disk('two/d.txt').includes('d line 4\n'), 'd.txt untouched');
  await closeEditor();
});
async function pendingIn(rel) {
  await palette('agentd: Focus on Changes View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Changes/ }) });
  return (await pane.locator('.monaco-list-row').allTextContents()).some((t) => t.includes(path.basename(rel)));
}

await check('a plan with a create and a modify: the new file shows in a diff, and accepting writes both', async () => {
  await settle();
  await palette('agentd: Open Plan', 'create.agentd.json');
  await palette('agentd: Run Plan');
  await palette('agentd: Focus on Changes View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Changes/ }) });
  await until('the create and the modify in the Changes view', async () => { const t = (await pane.locator('.monaco-list-row').allTextContents()).join(' '); return t.includes('hello.txt') && t.includes('mod.txt'); }, 60000);
  await shot('create-changes');
  // The new file's content, from its row: a diff against nothing.
  await pane.locator('.monaco-list-row', { hasText: 'hello.txt' }).first().click();
  await until('the diff of the new file', async () => (await activeTab()).includes('hello.txt'), 15000);
  const modified = page.locator('.editor-group-container.active .monaco-diff-editor .editor.modified .view-lines');
  await until('its proposed content', async () => (await modified.innerText()).replace(/\u00a0/g, ' ').includes('hello three'), 15000);
  await shot('create-diff');
  await page.locator('.editor-group-container.active .editor-actions .action-label[aria-label^="Accept File"]').click();
  await until('hello.txt written', async () => fs.existsSync(path.join(ws, 'made', 'hello.txt')) && disk('made/hello.txt') === 'hello one\nhello two\nhello three\n', 15000);
  await closeEditor();
  await openFile('mod.txt');
  await until('the hunk of mod.txt', async () => (await lenses()).includes('Accept'), 30000);
  await clickLens('Accept');
  await until('mod.txt changed in its editor', async () => (await editorText()).includes('mod line three'), 15000);
  await until('the run completed', async () => (await page.locator('.statusbar-item', { hasText: /agentd 2\/2/ }).count()) > 0, 30000);
});

await check('Always allow makes a rule: the next run is allowed by it (allowedBy shown), Approval Rules revokes it, and the run after asks again', async () => {
  await settle();
  const dialog = page.locator('.monaco-dialog-box');
  const runRule = async () => { await palette('agentd: Open Plan', 'rule.agentd.json'); await palette('agentd: Run Plan'); };
  const ended = async () => (await page.locator('.statusbar-item', { hasText: /agentd 1\/1/ }).count()) > 0;
  await runRule();
  await dialog.waitFor({ timeout: 30000 });
  await dialog.locator('.monaco-button', { hasText: /^Always allow$/ }).click();
  await until('the first run ends', ended, 30000);
  await runRule();
  await until('the second run ends without asking', async () => (await dialog.count()) === 0 && ended(), 30000);
  await palette('agentd: Focus on Plan View');
  const row = async () => (await planRow('ruled').textContent()) ?? '';
  const allowedBy = await until('the step says which rule allowed it', async () => /allowed by rule-\S+ \(`echo ruled`\)/.test(await row()), 10000).then(() => true, () => false);
  await palette('agentd: Approval Rules');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await until('the rule listed', async () => (await page.locator('.quick-input-list .monaco-list-row').allTextContents()).some((t) => t.includes('echo ruled')), 10000);
  await shot('rules');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'echo ruled' }).first().click();
  await until('the rule selected', async () => /1 Selected/.test(await page.locator('.quick-input-widget').innerText()), 5000);
  await page.locator('.quick-input-widget .monaco-button', { hasText: /^OK$/ }).click();
  await until('revoked', async () => (await notifications()).some((n) => n.includes('revoked')), 10000);
  await runRule();
  await dialog.waitFor({ timeout: 30000 });
  await dialog.locator('.monaco-button', { hasText: /^Reject$/ }).click();
  await until('the third run ends', ended, 30000);
  assert(allowedBy, `the step's notes name the rule: ${await row()}`);
});

await check('a multi-line proposal shows every line as ghost text; the hover shows context as context', async () => {
  await settle();
  await openFile('ghost.txt');
  await palette('agentd: Open Plan', 'ghost.agentd.json');
  await palette('agentd: Run Plan');
  await openFile('ghost.txt');
  await until('the hunk of ghost.txt', async () => (await lenses()).includes('Accept'), 60000);
  // Ghost text is CSS content of a decoration class: read it from the page's style rules.
  await until('every added line in the ghost text', async () => page.evaluate(() => [...document.styleSheets].some((sh) => {
    try { return [...sh.cssRules].some((r) => r.cssText.includes('added one') && r.cssText.includes('added two') && r.cssText.includes('added three')); } catch { return false; }
  })), 10000);
  // The hunk's hover is on its first changed line: the line the three go before.
  await gotoLine(6);
  await editor().locator('.view-line', { hasText: 'ghost line 6' }).first().locator('span').first().hover();
  const hover = page.locator('.monaco-hover-content');
  await until('the hover', async () => (await hover.count()) > 0 && (await hover.first().innerText()).includes('added two'), 10000).catch(async () => {
    await palette('Show or Focus Hover');
    await until('the hover (keyboard)', async () => (await hover.count()) > 0 && (await hover.first().innerText()).includes('added two'), 10000);
  });
  const h = await hover.first().innerText();
  await shot('ghost-hover');
  assert(!/^-ghost line [2-5]$/m.test(h) && !/^\+ghost line [2-5]$/m.test(h), `context listed as removed and added: ${h}`);
  await page.keyboard.press('Escape');
  await palette('agentd: Reject All Changes');
});

await check('undo the last run: its changes are taken back (agentd/undo/run)', async () => {
  await settle();
  await palette('agentd: Open Plan', 'undo.agentd.json');
  await palette('agentd: Run Plan');
  await until('the change of the run to review', async () => (await page.locator('.statusbar-item', { hasText: /pending/ }).count()) > 0, 60000);
  await palette('agentd: Accept All Changes');
  await until('the run wrote undo.txt', async () => fs.existsSync(path.join(ws, 'undo.txt')), 30000);
  await until('the run completed', async () => (await page.locator('.statusbar-item', { hasText: /agentd 1\/1/ }).count()) > 0, 30000);
  await palette('agentd: Undo Last Run');
  await until('undo.txt taken back', async () => !fs.existsSync(path.join(ws, 'undo.txt')), 30000);
});

// Issue 38: undo is a revert (points 1, 5 and 12 in VS Code) -----------------------------------
const newestRun = () => JSON.parse(execFileSync(AGENTD_BIN, ['runs', '--json', '--state-dir', stateDir], { cwd: ws, env }).toString())[0];
/** runToEnd accepts whatever the run proposes until the run (a new one, not `before`) is over. */
async function runToEnd(before, what) {
  await until(`${what}: the run completed`, async () => {
    const r = newestRun();
    if (r && r.runId !== before && r.status === 'completed') return true;
    if ((await page.locator('.statusbar-item', { hasText: /pending/ }).count()) > 0) await palette('agentd: Accept All Changes');
    return false;
  }, 90000, 1000);
  return newestRun().runId;
}
const conflictDialogBox = () => page.locator('.monaco-dialog-box', { hasText: 'conflicts with your edits' });

await check('issue 38 point 1: Undo Last Run takes back the agent\'s hunks and keeps a line typed (and auto-saved) during the run', async () => {
  await settle();
  const before = newestRun()?.runId;
  await openFile('u1/greet_test.go');
  await palette('agentd: Open Plan', 'undo1.agentd.json');
  await palette('agentd: Run Plan');
  await openFile('u1/greet_test.go');
  await until('the pending hunks of greet_test.go', async () => (await lenses()).includes('Accept'), 60000);
  // The suite runs with files.autoSave off; the user of the issue had it on (code-server's
  // default: after a delay): turn it on, as a user does, for this case.
  await palette('File: Toggle Auto Save');
  try {
    await gotoLine(3);
    await page.keyboard.press('End');
    await page.keyboard.insertText(' // USER-TYPED-DURING-RUN');
    await until('the typed line auto-saved', async () => disk('u1/greet_test.go').includes('import "testing" // USER-TYPED-DURING-RUN'), 15000);
    // A context line: the hunks stay pending (once the daemon has moved them). Accept them in
    // the editor; a click on a lens being drawn again is lost, so click until they are taken.
    await noUpdatingFor(15000);
    await until('the hunks of greet_test.go accepted in the editor', async () => {
      if ((await lenses()).includes('Accept')) await clickLens('Accept', 0).catch(() => undefined);
      return (await editorText()).includes('func TestGreet(') && !(await lenses()).includes('Accept');
    }, 30000, 1000);
    await until('the agent\'s hunks auto-saved with the typed line', async () => {
      const d = disk('u1/greet_test.go');
      return d.includes('func TestGreet(') && d.includes('Greet(%q)') && d.includes('// USER-TYPED-DURING-RUN');
    }, 20000);
    await runToEnd(before, 'point 1');
    await until('greet.go renamed on disk', async () => disk('u1/greet.go').includes('func Greet('), 15000);
    await palette('agentd: Undo Last Run');
    await until('greet_test.go reverted on disk', async () => disk('u1/greet_test.go').includes('func TestHello('), 30000);
    const d = disk('u1/greet_test.go');
    assert(d.includes('import "testing" // USER-TYPED-DURING-RUN'), `the typed line is gone from disk:\n${d}`);
    assert(!d.includes('Greet'), `an agent's hunk is left on disk:\n${d}`);
    assert(disk('u1/greet.go').includes('func Hello(') && !disk('u1/greet.go').includes('Greet'), `greet.go not reverted:\n${disk('u1/greet.go')}`);
    await openFile('u1/greet_test.go');
    await until('the editor shows the reverted file with the typed line', async () => {
      const t = await editorText();
      return t.includes('func TestHello(') && t.includes('// USER-TYPED-DURING-RUN') && !t.includes('TestGreet');
    }, 15000);
    assert((await conflictDialogBox().count()) === 0, 'no conflict: the user typed no line of the agent\'s');
  } finally {
    await palette('File: Toggle Auto Save');
  }
});

await check('issue 38 point 5: a conflicting Undo Last Run asks (Cancel changes nothing; Show the conflicts opens a diff; keep reverts the other file only)', async () => {
  await settle();
  const before = newestRun()?.runId;
  await palette('agentd: Open Plan', 'undo5.agentd.json');
  await palette('agentd: Run Plan');
  const runId = await runToEnd(before, 'point 5');
  await until('both files renamed on disk', async () => disk('u5/greet.go').includes('func Greet(') && disk('u5/main.go').includes('greet.Greet(*name)'), 15000);
  // The user changes the agent's line in main.go, and a file the run never touched.
  await openFile('u5/main.go');
  await gotoLine(15);
  await page.keyboard.press('End');
  await page.keyboard.insertText(' // mine');
  await page.keyboard.press('Control+S');
  await until('main.go saved', async () => disk('u5/main.go').includes('greet.Greet(*name)) // mine'), 10000);
  fs.writeFileSync(path.join(ws, 'u5', 'notes.txt'), 'notes the user edited\n');
  const greet0 = disk('u5/greet.go'), main0 = disk('u5/main.go');
  await palette('agentd: Undo Last Run');
  const dialog = conflictDialogBox();
  await dialog.waitFor({ timeout: 30000 });
  let t = await dialog.innerText();
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(media, 'undo-conflict.png'), clip: await dialog.boundingBox().then((b) => ({ x: Math.max(0, b.x - 16), y: Math.max(0, b.y - 16), width: b.width + 32, height: b.height + 32 })) });
  assert(t.includes('main.go') && t.includes(runId), `the dialog names main.go and the run ${runId}: ${t}`);
  assert(!t.includes('greet.go:') && !t.includes('notes.txt') && !t.includes('README'), `the dialog names a file without a conflict: ${t}`);
  assert(!t.includes('--overwrite'), `a flag the editor cannot pass: ${t}`);
  for (const b of ['Undo the rest, keep these files', 'Overwrite them', 'Show the conflicts', 'Cancel']) assert(t.includes(b), `choice ${b} missing: ${t}`);
  // Cancel: nothing changes, the run is not undone.
  await dialog.locator('.monaco-button', { hasText: /^Cancel$/ }).click();
  await until('the dialog closed', async () => (await dialog.count()) === 0, 10000);
  await until('the cancel said', async () => (await notifications()).some((n) => n.includes('cancelled; nothing was changed')), 10000);
  assert(disk('u5/greet.go') === greet0 && disk('u5/main.go') === main0, 'Cancel changed a file');
  assert(!newestRun().undone, `Cancel marked the run undone: ${JSON.stringify(newestRun().undone)}`);
  // Again: Show the conflicts opens main.go now against what overwriting would write.
  await palette('agentd: Undo Last Run');
  await dialog.waitFor({ timeout: 30000 });
  await dialog.locator('.monaco-button', { hasText: /^Show the conflicts$/ }).click();
  await until('the conflict diff', async () => (await activeTab()).includes('main.go (now ↔ after undo with overwrite)'), 15000);
  const modified = page.locator('.editor-group-container.active .monaco-diff-editor .editor.modified .view-lines');
  await until('the overwrite side has the line from before the run', async () => (await modified.innerText()).replace(/\u00a0/g, ' ').includes('greet.Hello(*name)'), 15000);
  await shot('undo-conflict-diff');
  assert(disk('u5/greet.go') === greet0 && disk('u5/main.go') === main0, 'showing the conflicts changed a file');
  // The choices stay offered beside the diff: keep.
  const keep = page.locator('.notification-toast', { hasText: 'nothing has been changed yet' }).locator('.monaco-button', { hasText: /^Undo the rest, keep these files$/ });
  await keep.first().waitFor({ timeout: 15000 });
  await keep.first().click();
  await until('greet.go reverted', async () => disk('u5/greet.go').includes('func Hello(') && !disk('u5/greet.go').includes('Greet'), 30000);
  assert(disk('u5/main.go') === main0, `main.go (kept) changed:\n${disk('u5/main.go')}`);
  assert(disk('u5/notes.txt') === 'notes the user edited\n', 'a file the run never touched changed');
  await until('the report names what was reverted and what was kept', async () => (await notifications()).some((n) => n.includes('reverted u5/greet.go') && n.includes('kept your version of u5/main.go')), 15000);
  t = (await notifications()).find((n) => n.includes('reverted u5/greet.go')) ?? '';
  assert(!t.includes('notes.txt'), `the report names a file the run never touched: ${t}`);
  await closeEditor();
});

await check('issue 38 point 12: an empty file where a creation is pending takes the creation; one with other content gets a stale hunk that Re-propose recomputes', async () => {
  await settle();
  const before = newestRun()?.runId;
  await palette('agentd: Open Plan', 'undo12.agentd.json');
  await palette('agentd: Run Plan');
  await palette('agentd: Focus on Changes View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Changes/ }) });
  await until('both creations pending', async () => { const x = (await pane.locator('.monaco-list-row').allTextContents()).join(' '); return x.includes('empty.txt') && x.includes('other.txt'); }, 60000);
  // The user makes both files first: one empty, one with text of their own.
  fs.mkdirSync(path.join(ws, 'u12'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'u12', 'empty.txt'), '');
  fs.writeFileSync(path.join(ws, 'u12', 'other.txt'), 'the user\'s own text\n');
  await openFile('u12/empty.txt');
  await palette('agentd: Accept All Changes');
  await until('the creation written into the empty file', async () => disk('u12/empty.txt') === 'made by the plan\n', 20000);
  // Only empty.txt's creation must go through: other.txt's (the user's text) is a conflict, and
  // its notice says so, in the same words, whenever it shows.
  assert(!(await notifications()).some((n) => n.includes('empty.txt') && n.includes('created since the change was computed')), `accepting the creation of empty.txt failed: ${await notifications()}`);
  assert(disk('u12/other.txt') === 'the user\'s own text\n', `other.txt (the user's text) overwritten:\n${disk('u12/other.txt')}`);
  await openFile('u12/other.txt');
  await until('a stale hunk on other.txt offering Re-propose', async () => (await lensRows()).some((r) => r.includes('Re-propose')), 20000);
  await clickLens('Re-propose');
  await until('one pending hunk, no stale one beside it', async () => {
    const rows = await lensRows();
    return rows.some((r) => r.includes('Accept')) && !rows.some((r) => r.includes('Stale') || r.includes('Re-propose'));
  }, 20000);
  await shot('undo12-reproposed');
  await clickLens('Accept');
  // The accept writes into the open editor (workspace/applyEdit) after the click returns: save
  // once the text is there, not before (a save of the old text leaves the accept unsaved).
  await until('the accepted text in the editor of other.txt', async () => (await editorText()).includes('other made by the plan') && !(await lensRows()).some((r) => r.includes('Accept')), 20000);
  await page.keyboard.press('Control+S');
  await until('other.txt has the plan\'s text', async () => disk('u12/other.txt') === 'other made by the plan\n', 15000);
  // The step failed when its creation met the user's file (a conflict on accept fails the step,
  // docs/protocol.md); the user retries it: the change is computed again, with nothing left to do.
  const failure = page.locator('.notification-toast', { hasText: 'step "make_other" failed' }).locator('.monaco-button', { hasText: /^Retry$/ });
  await failure.first().waitFor({ timeout: 60000 });
  await failure.first().click();
  await runToEnd(before, 'point 12');
  const rows = (await pane.locator('.monaco-list-row').allTextContents()).join(' ');
  assert(!/stale/i.test(rows), `a dead stale hunk left in the Changes view: ${rows}`);
});

await check('the daemon\'s info lines are logged as info', async () => {
  const logs = execFileSync('find', [userDir, '-path', '*agentd*', '-name', '*.log']).toString().trim().split('\n').filter(Boolean);
  const text = logs.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  assert(/\[info\].*(serving|daemon|workspace|start)/i.test(text), `no daemon info line at info in ${logs.join(', ')}:\n${text.slice(0, 2000)}`);
  const errLines = text.split('\n').filter((l) => /\[error\]/.test(l) && /level=INFO/.test(l));
  assert(!errLines.length, `info lines logged as errors: ${errLines.slice(0, 3).join('\n')}`);
});

await check('a dead daemon: hunks cleared, reported on each command with Restart, which brings the review back', async () => {
  await settle();
  await openFile('two/a.txt');
  await palette('agentd: Open Plan', 'two.agentd.json');
  await palette('agentd: Run Plan');
  await openFile('two/a.txt');
  await until('the hunk of a.txt', async () => (await lenses()).includes('Accept'), 60000);
  const pids = execFileSync('ps', ['-eo', 'pid,args']).toString().split('\n').filter((l) => l.includes(AGENTD_BIN) && / serve /.test(l) && l.includes(stateDir)).map((l) => +l.trim().split(/\s+/)[0]);
  assert(pids.length === 1, `one daemon: ${pids}`);
  process.kill(pids[0], 'SIGKILL');
  await until('the hunks cleared', async () => !(await lenses()).includes('Accept'), 15000);
  await until('no step shown running, no progress left', async () => {
    const labels = await planPane().locator('.monaco-list-row').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
    return !labels.some((l) => / (running|waiting)$/.test(l)) && (await page.locator('.notification-toast', { hasText: /agentd: \d+\/2 steps/ }).count()) === 0;
  }, 15000);
  await until('the daemon\'s death reported', async () => (await notifications()).some((n) => n.includes('the daemon stopped')), 15000);
  await shot('daemon-died');
  await page.keyboard.press('Escape');
  await palette('Notifications: Clear All Notifications');
  await palette('agentd: Run Plan');
  const toast = page.locator('.notification-toast', { hasText: 'the daemon stopped' });
  await toast.first().waitFor({ timeout: 15000 });
  await toast.first().locator('.monaco-button', { hasText: 'Restart agentd' }).click();
  await openFile('two/a.txt');
  await until('the pending hunk back after the restart', async () => (await lenses()).includes('Accept'), 30000);
  await palette('agentd: Reject All Changes');
});


await check('a hunk below one accepted with its file closed is listed and drawn where its text now is (the wire\'s at)', async () => {
  await settle();
  await palette('View: Close All Editors');
  await palette('agentd: Open Plan', 'shift.agentd.json');
  await palette('agentd: Run Plan');
  await palette('agentd: Focus on Changes View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Changes/ }) });
  const rows = async () => (await pane.locator('.monaco-list-row').allTextContents()).join(' | ');
  await until('shift.txt in the Changes view', async () => (await rows()).includes('shift.txt'), 60000);
  const fileRow = pane.locator('.monaco-list-row', { hasText: 'shift.txt' }).first();
  if ((await fileRow.getAttribute('aria-expanded')) === 'false') await fileRow.locator('.monaco-tl-twistie').click();
  await until('the three hunks at their proposed lines', async () => /lines 2–8.*lines 17–23.*lines 32–38/.test(await rows()), 15000);
  const mid = pane.locator('.monaco-list-row', { hasText: /^lines 17–/ }).first();
  await mid.hover();
  await mid.locator('.action-label[aria-label^="Accept Hunk"]').click();
  await until('the middle hunk accepted and written (three lines added above the third)', async () => disk('shift.txt').split('\n')[37] === 'shift line 35', 15000);
  // The third hunk's context starts at old line 32, now line 35.
  await until('the third hunk listed at line 35', async () => /lines 35–41\s*pending/.test(await rows()), 15000);
  // The accepted hunk is labelled with the lines its new text spans (three more than before).
  await until('the accepted middle hunk listed as lines 17–26', async () => /lines 17–26\s*accepted/.test(await rows()), 15000);
  await pane.locator('.monaco-list-row', { hasText: /^lines 35–/ }).first().click();
  await until('shift.txt open at the third hunk', async () => (await activeTab()).includes('shift.txt') &&
    /^Ln 35,/.test((await page.locator('.statusbar-item', { hasText: /^Ln \d+/ }).first().textContent()) ?? ''), 15000);
  await until('its lens drawn', async () => (await lenses()).filter((t) => t === 'Accept').length === 2, 15000);
  await shot('at-opened');
  await palette('agentd: Reject All Changes');
});

await check('New Plan says what is missing before asking for the request', async () => {
  await setSetting('agentd.model', '');
  // Check that the request's own input box (its prompt, not any quick input: the palette may
  // still be closing) never came once the setting has reached the extension. The Settings
  // editor writes the setting after a debounce and the extension host hears of it after the
  // settings file is read again: on a loaded machine a command run at once can still see the
  // old model (CI saw the request asked for) or show nothing for a while. So ask up to three
  // times, 5 s apart, and require the message in the end: an extension that never checks the
  // model fails all three.
  const toast = page.locator('.notification-toast', { hasText: 'a plan from a request needs' });
  const asked = page.locator('.quick-input-widget', { hasText: 'What should agentd do?' });
  const outcome = async () => (await toast.count()) > 0 || (await asked.isVisible());
  for (let i = 1; ; i++) {
    await palette('agentd: New Plan from Request');
    const seen = await until('the missing model named, or the request asked for', outcome, 20000).then(() => true, () => false);
    if (seen && (await toast.count()) > 0) break;
    console.log(`  (New Plan try ${i}: ${seen ? 'the request was asked for: the setting had not reached the extension yet' : 'nothing shown in 20 s'})`);
    await shot(`new-plan-try-${i}`);
    if (i === 3) throw new Error(`New Plan never named the missing model in 3 tries (last: ${seen ? 'asked for the request anyway' : 'nothing shown'})`);
    await page.keyboard.press('Escape');
    await sleep(5000);
  }
  assert(!(await asked.isVisible()), 'asked for the request anyway');
  const t = await toast.first().innerText();
  await shot('new-plan-missing');
  assert(t.includes('agentd.model') && t.includes('AGENTD_MODEL'), `the message: ${t}`);
  await setSetting('agentd.model', 'openai:fake');
});

// E2E_PROFILE=<dir>: a CPU profile of the page and a Chromium trace of one typing block per file,
// for finding where the time of a key goes (not part of the suite's checks).
function profileBlock(prefix) {
  let cdp;
  return {
    before: async () => {
      fs.mkdirSync(path.dirname(prefix), { recursive: true });
      cdp = await page.context().newCDPSession(page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
      await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing', 'v8.execute', 'toplevel'] });
      await cdp.send('Profiler.start');
    },
    after: async () => {
      const { profile } = await cdp.send('Profiler.stop');
      fs.writeFileSync(`${prefix}.cpuprofile`, JSON.stringify(profile));
      fs.writeFileSync(`${prefix}.trace.json`, await browser.stopTracing());
      await cdp.detach();
    },
  };
}

// Speed figures (reported, not asserted) ------------------------------------------------------
await check('speed: 50 files / 500 hunks decorated, typing with 200 pending hunks', async () => {
  await openFile('bulk/f00.txt');
  const before = metrics().length;
  await palette('agentd: Open Plan', 'bulk.agentd.json');
  await palette('agentd: Run Plan');
  // Three hunks (lines 10, 30, 50) in view: an earlier case may have left a panel open.
  if (await page.locator('.part.panel').isVisible()) await page.keyboard.press('Control+J');
  await until('the lenses of bulk/f00.txt', async () => (await lenses()).filter((t) => t === 'Accept').length >= 3, 60000);
  const m = metrics().slice(before);
  const dec = m.filter((x) => x.name === 'changeProposedToDecoratedMs');
  figures.decorate = dec.map((x) => ({ ms: +x.value.toFixed(1), hunks: x.hunks }));
  // Typing: the same keystrokes in a file with 200 pending hunks (big.txt), in the same text
  // without any (plain.txt), and in a second copy of that (plain2.txt: the control, whose ratio
  // to plain.txt is the noise of the measure), interleaved block by block in a rotating
  // order (the machine's load changes over a run), after a warm-up round that is not counted.
  // Also in the same text with only the 10 hunks in and near the view (top.txt), to tell what the
  // 190 hunks out of view cost (big.txt against top.txt) from what drawing the review in view
  // costs (top.txt against plain.txt: VS Code lays every CodeLens out again on each key), and in
  // the same text with one hunk out of view (far.txt: the file's lens alone).
  // Each key: from the key press to the character drawn on the line (checked in the page, so
  // no round trip per poll); also the CPU time each process spent while typing each file, and the
  // renderer's main-thread time (Chromium's Performance metrics: rm.TaskDuration and its parts).
  const typeTime = async (rel, round, block) => {
    await openFile(rel);
    await editor().locator('.view-line').first().click();
    await page.keyboard.press('Control+Home');
    const text = `r${round}abcdefghijklmnopqrstuvw`;
    const per = [];
    await block?.before?.();
    const m0 = metrics().length;
    const c0 = cpu.sample(roots());
    const r0 = await rendererMetrics();
    // The whole line is compared: the text typed goes in front of the earlier rounds' text, and
    // a prefix check would pass before the key is drawn whenever the next key is the letter the
    // line already goes on with (the 'r' of the last round).
    const firstLine = () => {
      const l = document.querySelector('.editor-group-container.active .monaco-editor .view-lines .view-line');
      return l ? l.textContent.replace(/\u00a0/g, ' ') : undefined;
    };
    const rest = await page.evaluate(firstLine);
    for (let i = 0; i < text.length; i++) {
      const want = text.slice(0, i + 1) + rest;
      const t0 = performance.now();
      await page.keyboard.type(text[i]);
      await page.waitForFunction((w) => {
        const l = document.querySelector('.editor-group-container.active .monaco-editor .view-lines .view-line');
        return !!l && l.textContent.replace(/\u00a0/g, ' ') === w;
      }, want, { polling: 'raf', timeout: 10000 });
      per.push(performance.now() - t0);
    }
    const used = cpu.diff(c0, cpu.sample(roots()));
    const r1 = await rendererMetrics();
    for (const k of Object.keys(r1)) used['rm.' + k] = (r1[k] - r0[k]) * (k.endsWith('Count') ? 1 : 1000);
    // Decorations set again while the keys were typed (none: no key touches a hunk).
    const draws = metrics().slice(m0).filter((x) => x.name === 'decorationsDrawn').length;
    await block?.after?.();
    return { per, used, draws };
  };
  const roots = () => [process.pid];
  const perfCdp = await page.context().newCDPSession(page);
  await perfCdp.send('Performance.enable');
  const rendererMetrics = async () => Object.fromEntries((await perfCdp.send('Performance.getMetrics')).metrics
    .filter((m) => /^(TaskDuration|ScriptDuration|LayoutDuration|RecalcStyleDuration|LayoutCount|RecalcStyleCount)$/.test(m.name)).map((m) => [m.name, m.value]));
  await openFile('big.txt');
  await until('the lenses of big.txt', async () => (await lenses()).filter((t) => t === 'Accept').length >= 3, 60000);
  // Lines with lenses in big.txt's editor: each is laid out again on every keystroke.
  const lensLines = await editor().locator('.codelens-decoration').count();
  await openFile('top.txt');
  await until('the lenses of top.txt', async () => (await lenses()).filter((t) => t === 'Accept').length >= 3, 60000);
  const topLensLines = await editor().locator('.codelens-decoration').count();
  // The decorations drawn on the lines in view (removed lines' backgrounds and ghost texts), to
  // check that ui.txt (below) shows what top.txt shows.
  const decorated = () => editor().locator('.view-overlays .cdr[class*="ced-"], .view-line span[class*="ced-"]').count();
  const topDecorated = await decorated();
  await openFile('far.txt');
  await until('the lens of far.txt', async () => (await lenses()).some((t) => t.startsWith('Accept All')), 60000);
  await openFile('ui.txt');
  // As many lens lines and decorations in view as top.txt has (how many are in view depends on
  // the editor's height, which the Problems panel takes from in a whole run).
  await until('the control lenses of ui.txt', async () => (await editor().locator('.codelens-decoration').count()) >= topLensLines, 60000);
  await until('the control decorations of ui.txt', async () => (await decorated()) >= topDecorated, 10000);
  const controlLensLines = await editor().locator('.codelens-decoration').count();
  const controlDecorated = await decorated();
  const files = ['big.txt', 'top.txt', 'far.txt', 'ui.txt', 'plain.txt', 'plain2.txt'];
  const keys = Object.fromEntries(files.map((f) => [f, []]));
  const perRound = Object.fromEntries(files.map((f) => [f, []])); // each round's keys, for paired ratios
  const cpuMs = Object.fromEntries(files.map((f) => [f, {}]));
  // A multiple of the files, so that each file is typed in each place of the rotation equally often.
  const rounds = +(process.env.TYPING_ROUNDS ?? 12);
  const profileDir = process.env.E2E_PROFILE;
  let mBig0 = metrics().length;
  let redraws = 0;
  // Round -1 warms up. With E2E_PROFILE every round is profiled (the figures then say little).
  for (let round = -1; round < rounds; round++) {
    for (let k = 0; k < files.length; k++) {
      const f = files[(k + Math.max(0, round)) % files.length];
      const block = profileDir && round >= 0 ? profileBlock(path.join(profileDir, `${f}.${round}`)) : undefined;
      const { per, used, draws } = await typeTime(f, round, block);
      if (round < 0) continue;
      redraws += draws;
      keys[f].push(...per);
      perRound[f].push(per);
      for (const [r, ms] of Object.entries(used)) cpuMs[f][r] = (cpuMs[f][r] ?? 0) + ms;
    }
    if (round < 0) mBig0 = metrics().length;
  }
  await sleep(1200); // the extension writes its typing figures once a second
  const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
  const p90 = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length * 0.9)];
  const withT = keys['big.txt'], withoutT = keys['plain.txt'], controlT = keys['plain2.txt'], topT = keys['top.txt'];
  const paired = (a, b) => +median(perRound[a].map((r, i) => median(r) / median(perRound[b][i]))).toFixed(2);
  const typing = metrics().slice(mBig0).filter((x) => x.name === 'typingHandlerMs' && x.hunks >= 200);
  const dc = metrics().slice(mBig0).filter((x) => x.name === 'changesDidChangeMs');
  const lensCalls = metrics().slice(mBig0).filter((x) => x.name === 'provideCodeLensesMs' && x.hunks >= 200);
  const perKeyCpu = (f) => Object.fromEntries(Object.entries(cpuMs[f]).map(([r, ms]) => [r, +(ms / keys[f].length).toFixed(2)]));
  figures.typing = {
    keys: withT.length, msPerKeyWith200Hunks: +median(withT).toFixed(1), msPerKeyWithout: +median(withoutT).toFixed(1), ratio: +(median(withT) / median(withoutT)).toFixed(2),
    p90With: +p90(withT).toFixed(1), p90Without: +p90(withoutT).toFixed(1),
    controlMsPerKey: +median(controlT).toFixed(1), controlRatio: +(median(controlT) / median(withoutT)).toFixed(2),
    // The median over rounds of each round's ratio (the files' blocks of a round are typed
    // back to back, so a change of the machine's load between rounds cancels out).
    pairedRatio: paired('big.txt', 'plain.txt'), pairedControlRatio: paired('plain2.txt', 'plain.txt'),
    // Attribution: 200 hunks against the 10 in and near the view (the same lenses and
    // decorations drawn), and those 10 against none.
    topHunksMsPerKey: +median(topT).toFixed(1), ratio200vsTop: +(median(withT) / median(topT)).toFixed(2), pairedRatio200vsTop: paired('big.txt', 'top.txt'),
    ratioTop: +(median(topT) / median(withoutT)).toFixed(2), pairedRatioTop: paired('top.txt', 'plain.txt'),
    meanWith: +(withT.reduce((a, x) => a + x, 0) / withT.length).toFixed(1), meanWithout: +(withoutT.reduce((a, x) => a + x, 0) / withoutT.length).toFixed(1),
    cpuMsPerKeyWith: perKeyCpu('big.txt'), cpuMsPerKeyWithout: perKeyCpu('plain.txt'), cpuMsPerKeyControl: perKeyCpu('plain2.txt'), cpuMsPerKeyTopHunks: perKeyCpu('top.txt'), cpuMsPerKeyFar: perKeyCpu('far.txt'),
    farMsPerKey: +median(keys['far.txt']).toFixed(1), ratioFar: +(median(keys['far.txt']) / median(withoutT)).toFixed(2), pairedRatioFar: paired('far.txt', 'plain.txt'), pairedRatio200vsFar: paired('big.txt', 'far.txt'),
    // What agentd's review adds to the same UI drawn by an extension that does nothing else
    // (its CodeLens lines and decorations), and what that UI costs against none.
    uiMsPerKey: +median(keys['ui.txt']).toFixed(1), ratioUi: +(median(keys['ui.txt']) / median(withoutT)).toFixed(2), pairedRatioUi: paired('ui.txt', 'plain.txt'),
    ratio200vsUi: +(median(withT) / median(keys['ui.txt'])).toFixed(2), pairedRatio200vsUi: paired('big.txt', 'ui.txt'),
    ratioTopVsUi: +(median(topT) / median(keys['ui.txt'])).toFixed(2), pairedRatioTopVsUi: paired('top.txt', 'ui.txt'),
    cpuMsPerKeyUi: perKeyCpu('ui.txt'),
    extensionHandlerMsMean: typing.length ? +(typing.reduce((a, x) => a + x.value * x.keys, 0) / typing.reduce((a, x) => a + x.keys, 0)).toFixed(3) : null,
    extensionHandlerMsMax: typing.length ? +Math.max(...typing.map((x) => x.max)).toFixed(3) : null,
    serverNotesHandledMsMean: dc.length ? +(dc.reduce((a, x) => a + x.value, 0) / dc.length).toFixed(2) : null,
    serverNotesDuringTyping: dc.length,
    lensRequestsDuringTyping: lensCalls.length, decorationDrawsDuringTyping: redraws, lensLines, topLensLines, controlLensLines, topDecorated, controlDecorated,
    load: os.loadavg().map((x) => +x.toFixed(2)),
    // The median latency of each key of a block over the rounds (the first follows the switch to the file).
    byKey: Object.fromEntries(files.map((f) => [f, perRound[f][0].map((_, i) => +median(perRound[f].map((r) => r[i])).toFixed(1))])),
  };
  figures.layout = metrics().filter((x) => x.name === 'changeSetLayoutMs' && x.hunks >= 200).map((x) => ({ ms: +x.value.toFixed(1), hunks: x.hunks, files: x.files }));
  const lensMs = metrics().filter((x) => x.name === 'provideCodeLensesMs' && x.hunks >= 200);
  figures.provideCodeLens200Ms = lensMs.length ? +Math.max(...lensMs.map((x) => x.value)).toFixed(2) : null;
  assert(figures.decorate.some((d) => d.hunks === 500), `no 500-hunk change set measured: ${JSON.stringify(figures.decorate)}`);
});
await check('a hunk the user types into turns stale and offers no Accept', async () => {
  await openFile('bulk/f01.txt');
  // Hunk lenses are drawn within a screen of the view: check the rows of the hunks at lines 10
  // and 30 (the first two), whatever else is near the view.
  const rows = () => editor().locator('.codelens-decoration').allInnerTexts();
  const accepts = async () => (await lenses()).filter((t) => t === 'Accept').length;
  await until('the lenses of bulk/f01.txt', async () => (await accepts()) >= 2 && (await lenses()).includes('Accept All (10)'), 30000);
  // Line 10 is the first hunk's changed line: type into it.
  await palette('Go to Line/Column');
  await page.keyboard.type('10');
  await page.keyboard.press('Enter');
  await page.keyboard.press('End');
  await page.keyboard.insertText(' typed here');
  await until('a stale lens', async () => (await rows()).some((t) => t.includes('Stale')), 30000);
  const stale = (await rows()).filter((t) => t.includes('Stale'));
  assert(stale.length === 1 && !stale[0].includes('Accept') && stale[0].includes('Reject'), `the stale hunk's lens offers Reject only: ${JSON.stringify(stale)}`);
  assert((await accepts()) >= 1, 'the hunk at line 30 still offers Accept');
  await until('nine hunks of the file offer Accept', async () => (await lenses()).includes('Accept All (9)'), 30000);
  for (let i = 0; i < 6 && (await editorText()).includes('line 10 typed'); i++) await page.keyboard.press('Control+Z');
  await until('the hunk pending again after undo', async () => !(await rows()).some((t) => t.includes('Stale') || t.includes('Updating')) && (await lenses()).includes('Accept All (10)'), 30000);
});

await check('review keys work only with a hunk under the cursor (agentd.hunkUnderCursor)', async () => {
  const goto = async (line) => { await palette('Go to Line/Column'); await page.keyboard.type(String(line)); await page.keyboard.press('Enter'); };
  const cursorLine = async () => +((await page.locator('.statusbar-item', { hasText: /^Ln \d+/ }).first().innerText()).match(/Ln (\d+)/)?.[1] ?? NaN);
  await goto(1); // above the first hunk (lines 7-13)
  await until('the cursor on line 1', async () => (await cursorLine()) === 1, 10000);
  await sleep(500);
  await page.keyboard.press('Alt+F5');
  await sleep(1000);
  assert(await cursorLine() === 1, `no hunk under the cursor: Next Hunk is not bound, the cursor stays (line ${await cursorLine()})`);
  await goto(10);
  await until('the cursor on line 10', async () => (await cursorLine()) === 10, 10000);
  await sleep(500);
  await page.keyboard.press('Alt+F5');
  await until('Next Hunk moved the cursor to the next hunk (line 30)', async () => (await cursorLine()) === 30, 10000);
  await page.keyboard.press('Control+Alt+KeyY');
  // Accepted: its line changes in the editor, and the Accept All count of the file drops to 9.
  await until('Accept Hunk accepted the hunk under the cursor', async () => (await editorText()).includes('file 1 line 30 changed by agentd'), 15000);
  // The file's lens is on its first line, and VS Code fills in lenses as they come into view.
  await page.keyboard.press('Control+Home');
  await until('nine hunks left in the file', async () => (await lenses()).includes('Accept All (9)'), 15000);
});

// Issue 35 (VS Code) -------------------------------------------------------------------------
const statusItem = (re) => page.locator('.statusbar-item', { hasText: re });
const changesPane = () => page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Changes/ }) });
const changeRow = (name) => changesPane().locator('.monaco-list-row', { hasText: name }).first();
/** changesEnd shows the end of the Changes view, where the newest change sets are: the sets
 *  the speed case leaves pending (hundreds of rows) stay above, out of the rendered rows. */
async function changesEnd() {
  await palette('agentd: Focus on Changes View');
  await page.keyboard.press('End');
}
/** allowDialogs answers an approval modal, if one is up, with Allow once. */
async function allowDialogs() {
  const allow = page.locator('.monaco-dialog-box .monaco-button', { hasText: /^Allow once$/ });
  if (await allow.count()) await allow.first().click().catch(() => undefined);
}

await check('issue 35 point 3: a before-mode run whose accepted change is only in an unsaved editor says so, with Save All; waiting for you, no time left', async () => {
  await settle();
  await openFile('unsaved.txt');
  await palette('agentd: Open Plan', 'unsaved.agentd.json');
  await palette('agentd: Run Plan');
  await until('the hunk of unsaved.txt', async () => (await lenses()).includes('Accept'), 60000);
  // The run only waits for the user's review: the status bar says so, not a time left.
  await until('the status bar says the run waits for you', async () => (await statusItem(/waiting for you/).count()) > 0, 15000);
  assert(!(await statusItem(/agentd .* left/).count()), `a time left while waiting: ${await statusItem(/agentd/).allTextContents()}`);
  await clickLens('Accept');
  await until('the accepted hunk in the editor', async () => (await editorText()).includes('unsaved line three'), 15000);
  const toast = page.locator('.notification-toast', { hasText: 'not on disk yet' });
  await toast.first().waitFor({ timeout: 60000 });
  const t = await toast.first().innerText();
  assert(t.includes('unsaved.txt'), `the note names the file: ${t}`);
  assert(disk('unsaved.txt').includes('unsaved line 3\n'), 'not on disk before Save All');
  await shot('p35-unsaved-note');
  await toast.first().locator('.monaco-button', { hasText: /^Save All$/ }).click();
  await until('Save All wrote it', async () => disk('unsaved.txt').includes('unsaved line three\n'), 15000);
});

await check('issue 35 point 6: the Snapshots view lists a run by its plan\'s title, with its id in the tooltip', async () => {
  await palette('agentd: Focus on Snapshots View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Snapshots/ }) });
  await until('the run listed by its title', async () => (await pane.locator('.monaco-list-row').allTextContents()).some((x) => x.includes('Unsaved edit')), 15000);
  await shot('p35-snapshots-titles');
});

await check('issue 35 point 6: after a window reload the Plan view shows the current plan and its run; another plan shows none of its states', async () => {
  await reload();
  await palette('agentd: Focus on Plan View');
  await until('the plan and its completed step after the reload', async () => /edit completed/.test((await planRow('edit').getAttribute('aria-label')) ?? ''), 30000);
  await shot('p35-plan-after-reload');
  // shift.agentd.json has a step of the same id: the state of the run before is not its.
  await palette('agentd: Open Plan', 'shift.agentd.json');
  await until('the new plan\'s step pending', async () => /edit pending/.test((await planRow('edit').getAttribute('aria-label')) ?? ''), 15000);
});

await check('issue 35 point 6: a step blocked after its dependency\'s change was rejected says why', async () => {
  await settle();
  await openFile('blk.txt');
  await palette('agentd: Open Plan', 'blocked.agentd.json');
  await palette('agentd: Run Plan');
  await until('the hunk of blk.txt', async () => (await lenses()).includes('Reject'), 60000);
  await clickLens('Reject');
  await palette('agentd: Focus on Plan View');
  await until('the blocked step names its dependency', async () => /dependency "change" was skipped/.test(await planRow('after').innerText()), 30000);
  await shot('p35-blocked-reason');
});

await check('issue 35 point 4: the Changes view lists creations, deletions and moves; a new file\'s typed buffer is a conflict on accept; multi-select; the diff\'s Accept File goes once decided', async () => {
  await settle();
  await palette('agentd: Open Plan', 'p4.agentd.json');
  await palette('agentd: Run Plan');
  await until('the four whole-file changes listed', async () => {
    await allowDialogs();
    await changesEnd();
    const rows = (await changesPane().locator('.monaco-list-row').allTextContents()).join(' | ');
    return /new\.txt.*create/.test(rows) && /typed\.txt.*create/.test(rows) && /old\.txt.*delete/.test(rows) && /moved\.txt.*move/.test(rows);
  }, 60000, 300);
  await shot('p35-whole-files');
  // The user makes the file the agent would create (as the Explorer's New File does: empty on
  // disk) and types into it without saving: accepting the creation must not write under it.
  fs.writeFileSync(path.join(ws, 'p4', 'typed.txt'), '');
  await openFile('p4/typed.txt');
  await editor().click();
  await page.keyboard.type('mine');
  await changesEnd();
  await changeRow('typed.txt').hover();
  await changeRow('typed.txt').locator('.action-label[aria-label^="Accept File"]').click();
  const conflict = page.locator('.notification-toast', { hasText: 'typed.txt' });
  await conflict.first().waitFor({ timeout: 30000 });
  assert(/created since/.test(await conflict.first().innerText()), `the conflict says what happened: ${await conflict.first().innerText()}`);
  assert(disk('p4/typed.txt') === '', `written under the user's buffer: ${JSON.stringify(disk('p4/typed.txt'))}`);
  await until('typed.txt stale in the Changes view', async () => /stale/.test(await changeRow('typed.txt').innerText()), 15000);
  await shot('p35-typed-conflict');
  // Two files selected, one Accept File: both decided.
  await changeRow('new.txt').click();
  await changeRow('old.txt').click({ modifiers: ['Control'] });
  await changeRow('old.txt').hover();
  await changeRow('old.txt').locator('.action-label[aria-label^="Accept File"]').click();
  await until('new.txt created and old.txt deleted', async () => fs.existsSync(path.join(ws, 'p4', 'new.txt')) && !fs.existsSync(path.join(ws, 'p4', 'old.txt')), 15000);
  // The move's diff: Accept File in its title, then no Accept File there.
  // The rows move as the decided ones go: click until the move's diff is the one open.
  await until('the diff of the move', async () => {
    await changesEnd();
    await changeRow('moved.txt').click();
    return until('its tab', async () => (await activeTab()).includes('moved.txt'), 2000).then(() => true, () => false);
  }, 20000, 200);
  // The old file's text goes to the new path.
  const modified = page.locator('.editor-group-container.active .monaco-diff-editor .editor.modified .view-lines');
  await until('the moved text on the proposed side', async () => (await modified.innerText()).includes('moving'), 15000);
  await shot('p35-move-diff');
  const title = page.locator('.editor-group-container.active .editor-actions');
  await title.locator('.action-label[aria-label^="Accept File"]').click();
  await until('the move done', async () => fs.existsSync(path.join(ws, 'p4', 'moved.txt')) && !fs.existsSync(path.join(ws, 'p4', 'mv.txt')), 15000);
  await until('Accept File gone from the decided file\'s diff', async () => (await title.locator('.action-label[aria-label^="Accept File"], .action-label[aria-label^="Reject File"]').count()) === 0, 15000);
  await shot('p35-diff-decided');
  await closeEditor();
});

await check('after mode: the change is in the open editor at once; rejecting a hunk takes it out; saved, the disk has the other', async () => {
  const settings = path.join(userDir, 'User', 'settings.json');
  fs.writeFileSync(settings, JSON.stringify({ ...JSON.parse(fs.readFileSync(settings, 'utf8')), 'agentd.review': 'after' }, null, 1));
  await reload();
  await palette('agentd: Focus on Plan View');
  // The file is open before the run: the reject goes through its editor.
  await openFile('after.txt');
  await palette('agentd: Open Plan', 'after.agentd.json');
  await palette('agentd: Run Plan');
  // Open, the file gets the change through its editor (workspace/applyEdit), unsaved.
  await openFile('after.txt');
  // Both hunks (lines 10 and 30) must be in view to count their lenses: an earlier case may
  // have left the panel (Problems) open, which hides line 30.
  if (await page.locator('.part.panel').isVisible()) await page.keyboard.press('Control+J');
  await until('the editor shows it with its lenses', async () => (await editorText()).includes('after line 10 changed by agentd') && (await lenses()).filter((t) => t === 'Reject').length === 2, 60000);
  // As the README says: the change is on disk, not only in the unsaved editor.
  await until('the change on disk without a save', async () => disk('after.txt').includes('after line 10 changed by agentd'), 15000);
  await clickLens('Reject', 0);
  // The file is open: the daemon takes the hunk out through the editor (workspace/applyEdit);
  // saving writes it.
  await until('the first hunk taken out in the editor', async () => !(await editorText()).includes('after line 10 changed by agentd'), 30000);
  // The editor shows only the lines in view: line 30 must be one of them.
  if (await page.locator('.part.panel').isVisible()) await page.keyboard.press('Control+J');
  await until('line 30 in view', async () => (await editorText()).includes('after line 30'), 10000);
  assert((await editorText()).includes('after line 30 changed by agentd'), 'the other hunk stays in the editor');
  await until('one hunk left to review', async () => (await lenses()).filter((t) => t === 'Reject').length === 1, 30000);
  // The rejection is on disk too, without a save: the original line 10 and the agent's line 30.
  await until('the rejection on disk', async () => disk('after.txt').includes('after line 10\n'), 15000);
  const d = disk('after.txt');
  assert(d.includes('after line 10\n') && d.includes('after line 30 changed by agentd\n'), `after.txt on disk:\n${d}`);
  assert(d.split('\n').length === 41, `after.txt has ${d.split('\n').length - 1} lines, want 40`);
});

// Issue 35 point 6, in the front end: the approval modal's answers, and one restart per edit.
const runSteps = (runId) => JSON.parse(execFileSync(AGENTD_BIN, ['runs', runId, '--json', '--state-dir', stateDir], { cwd: ws, env }).toString()).steps;
const dialogButtons = () => page.locator('.monaco-dialog-box .dialog-buttons .monaco-button').allInnerTexts().then((a) => a.map((t) => t.trim()));
const runEnded = (n) => until('the run ends', async () => (await page.locator('.statusbar-item', { hasText: new RegExp(`agentd \\d+/${n} (partial|failed|completed|cancelled)`) }).count()) > 0, 30000);

await check('issue 35 point 6: below high risk the approval has one Reject and no Cancel; Escape rejects it', async () => {
  await settle();
  await palette('agentd: Open Plan', 'gitread.agentd.json');
  await palette('agentd: Run Plan');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 30000 });
  assert((await dialog.innerText()).includes('git status'), await dialog.innerText());
  await shot('approval-low-risk');
  const b = await dialogButtons();
  assert(b.filter((t) => t === 'Reject').length === 1 && !b.includes('Cancel'), `one Reject, no Cancel: ${b.join(' | ')}`);
  assert((await dialog.innerText()).includes('Escape rejects it this time'), await dialog.innerText());
  await page.keyboard.press('Escape');
  await runEnded(1);
  const s = runSteps(newestRun().runId)[0];
  assert(s.status === 'skipped' && s.reason === 'approval denied', `the step rejected as Reject does: ${JSON.stringify(s)}`);
});

await check('issue 35 point 6: a high-risk approval keeps VS Code\'s Cancel, which rejects like Reject (the command does not run)', async () => {
  await settle();
  fs.rmSync(path.join(ws, 'ran.txt'), { force: true });
  await palette('agentd: Open Plan', 'risk.agentd.json');
  await palette('agentd: Run Plan');
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 30000 });
  const b = await dialogButtons();
  assert(b.filter((t) => t === 'Reject').length === 1 && b.includes('Cancel'), `Reject and VS Code's Cancel: ${b.join(' | ')}`);
  assert((await dialog.innerText()).includes('(Cancel is the same)'), `the modal says what Cancel does: ${await dialog.innerText()}`);
  await shot('approval-high-risk');
  await dialog.locator('.dialog-buttons .monaco-button', { hasText: /^Cancel$/ }).click();
  await runEnded(1);
  assert(!fs.existsSync(path.join(ws, 'ran.txt')), 'Cancel ran the high-risk command');
  // The same record as Reject (the high-risk case above presses Enter on it): not "cancelled".
  const s = runSteps(newestRun().runId)[0];
  assert(s.status === 'skipped' && s.reason === 'approval denied', `Cancel answered as Reject does: ${JSON.stringify(s)}`);
});

/** The agentd output channel's log, as the window writes it. */
function agentdLog() {
  const logs = execFileSync('find', [userDir, '-path', '*agentd*', '-name', '*.log']).toString().trim().split('\n').filter(Boolean);
  return logs.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
}
const count = (text, re) => (text.match(re) ?? []).length;

await check('issue 35 point 6: one base-URL edit in the Settings UI restarts the daemon once', async () => {
  await settle();
  const byUrl = /restarting the daemon: agentd\.modelBaseUrl changed/g, byPath = /restarting the daemon: agentd\.path changed/g;
  const before = agentdLog();
  const url0 = count(before, byUrl), path0 = count(before, byPath);
  await setSetting('agentd.modelBaseUrl', 'http://127.0.0.1:9/v1');
  await until('the restart for the base URL', async () => count(agentdLog(), byUrl) > url0, 30000, 300);
  // A barrier: a restart for another setting (the same binary, spelled another way) is queued
  // after everything the base-URL edit caused (the change events and restarts run in order), so
  // once it is logged, every restart of the base-URL edit is too.
  await setSetting('agentd.path', `${path.dirname(AGENTD_BIN)}/./${path.basename(AGENTD_BIN)}`);
  await until('the restart for the path', async () => count(agentdLog(), byPath) > path0, 30000, 300);
  const n = count(agentdLog(), byUrl) - url0;
  assert(n === 1, `one edit of agentd.modelBaseUrl restarted the daemon ${n} times`);
  // Back as it was (more restarts), and a daemon that answers.
  await setSetting('agentd.modelBaseUrl', `${fakeURL}/v1`); // as the suite set it (settings.json above)
  await setSetting('agentd.path', AGENTD_BIN);
  await palette('agentd: Focus on Plan View');
  await until('a plan opens again', async () => {
    await palette('agentd: Open Plan', 'ctx.agentd.json');
    return (await planIds()).join(' ').includes('one');
  }, 30000, 2000);
});
// The chat view (issue 36): test/e2e/chat.mjs. Last but the two that break agentd.path: its
// layout (the other views collapsed while it is shown) would change the room of the views that
// the cases before it count rows in.
await (await import('./chat.mjs')).chatCases({ page, check, until, assert, palette, reload, openFile, fakeURL, ws, results, media, userDir, figures });

await check('agentd.path changed without a reload: a missing binary is reported by each command that needs it; fixed, the daemon starts', async () => {
  await setSetting('agentd.path', '/nonexistent/agentd');
  const msg = 'the agentd binary was not found';
  const toasts = page.locator('.notification-toast', { hasText: msg });
  await toasts.first().waitFor({ timeout: 15000 });
  await palette('Notifications: Clear All Notifications');
  await palette('agentd: Run Plan');
  await toasts.first().waitFor({ timeout: 15000 });
  assert((await toasts.first().innerText()).includes('/nonexistent/agentd'), await toasts.first().innerText());
  await palette('Notifications: Clear All Notifications');
  await palette('agentd: Open Plan', 'ctx.agentd.json');
  await toasts.first().waitFor({ timeout: 15000 });
  await palette('Notifications: Clear All Notifications');
  // Fixed in the settings: the daemon starts with no reload.
  await setSetting('agentd.path', AGENTD_BIN);
  await palette('agentd: Focus on Plan View');
  await until('a plan opens again', async () => {
    await palette('agentd: Open Plan', 'ctx.agentd.json');
    return (await planIds()).join(' ').includes('one');
  }, 30000, 2000);
});

await check('a missing binary: one message with a button that opens the setting', async () => {
  const settings = path.join(userDir, 'User', 'settings.json');
  fs.writeFileSync(settings, JSON.stringify({ ...JSON.parse(fs.readFileSync(settings, 'utf8')), 'agentd.path': '/nonexistent/agentd' }, null, 1));
  await reload();
  // The workspace's plan files activate the extension at once; else the view does. (Escape, as
  // the palette presses it, would hide a toast already shown: then it is in the notification
  // center.)
  const msg = 'the agentd binary was not found';
  let toast = page.locator('.notification-toast', { hasText: msg });
  if (!await toast.first().waitFor({ timeout: 15000 }).then(() => true, () => false)) {
    await palette('agentd: Focus on Plan View');
    if (!await toast.first().waitFor({ timeout: 20000 }).then(() => true, () => false)) {
      await palette('Notifications: Show Notifications');
      toast = page.locator('.notifications-center .notification-list-item', { hasText: msg });
      await toast.first().waitFor({ timeout: 10000 });
    }
  }
  assert((await toast.count()) === 1, `one message, got ${await toast.count()}`);
  const text = await toast.first().innerText();
  assert(text.includes('agentd.path ("/nonexistent/agentd")') && !/\bat .*\.js:\d+/.test(text), `the message: ${text}`);
  await toast.first().locator('.monaco-button', { hasText: 'Open Setting' }).click();
  await until('the settings editor on agentd.path', async () => (await page.locator('.settings-editor').count()) > 0 && (await page.locator('.setting-item-contents', { hasText: 'agentd' }).count()) > 0, 30000);
});

// The first six activations are the fresh window and its five reloads; the seventh is the
// reload in after mode, with many editors and 701 pending hunks to restore.
const acts = metrics().filter((m) => m.name === 'activationToDaemonMs');
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const fresh = acts.slice(0, 6);
const r1 = (x) => +(x ?? NaN).toFixed(1);
figures.activationToDaemonMs = fresh.length ? {
  runs: fresh.map((m) => r1(m.value)), median: r1(median(fresh.map((m) => m.value))), max: r1(Math.max(...fresh.map((m) => m.value))),
  parts: fresh.map((m) => ({ load: r1(m.loadMs), setup: r1(m.setupMs), lib: r1(m.libMs), initialize: r1(m.startMs) })),
  busyWindow: acts.slice(6).map((m) => ({ ms: r1(m.value), load: r1(m.loadMs), lib: r1(m.libMs), initialize: r1(m.startMs) })),
} : null;
console.log(`figures: ${JSON.stringify(figures)}`);
console.log(`load average at the end: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
fs.writeFileSync(path.join(results, 'figures.json'), JSON.stringify(figures, null, 1));

await browser.close();
cleanup();
await sleep(300);
if (!process.env.KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed${notRun ? `, ${notRun} not run (E2E_ONLY)` : ''}`);
process.exit(failed || notRun ? 1 : 0);
