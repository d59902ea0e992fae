// A folder that is the user's home folder: the daemon refuses it (its rule, rpc/lifecycle.go),
// and the extension says so with a button that opens agentd.allowBroadWorkspace, the VS Code
// words for confirming it (never the terminal's --workspace DIR); turning the setting on
// restarts the daemon, which then opens the folder. Needs CODE_SERVER, VSIX (the linux-x64
// platform .vsix), Chromium; writes test-results/broad-*.png. Prints "N passed, N failed".
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.resolve(here, '../..');
const results = path.join(ext, 'test-results');
fs.mkdirSync(results, { recursive: true });
const CODE_SERVER = process.env.CODE_SERVER;
const VSIX = process.env.VSIX && path.resolve(process.env.VSIX);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
let page;
const fail = async (m) => {
  console.error(`broad-workspace e2e: FAILED: ${m}`);
  if (page) await page.screenshot({ path: path.join(results, 'broad-failure.png') }).catch(() => undefined);
  console.log('0 passed, 1 failed');
  process.exit(1);
};
for (const [n, p] of [['CODE_SERVER', CODE_SERVER], ['VSIX', VSIX], ['chromium', CHROMIUM]]) if (!p || !fs.existsSync(p)) await fail(`${n} (${p}) is missing`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-broad-e2e-'));
// The opened folder is HOME itself, as when VS Code is opened on ~.
const home = path.join(tmp, 'home'), userDir = path.join(tmp, 'user'), extDir = path.join(tmp, 'ext');
fs.mkdirSync(home, { recursive: true });
fs.writeFileSync(path.join(home, 'notes.txt'), 'hello\n');
fs.writeFileSync(path.join(home, 'hello.agentd.json'), JSON.stringify({ title: 'Hello', steps: [{ id: 'read', tool: 'read_file', args: { path: 'notes.txt' } }] }));
fs.mkdirSync(path.join(userDir, 'User'), { recursive: true });
const settingsFile = path.join(userDir, 'User', 'settings.json');
fs.writeFileSync(settingsFile, JSON.stringify({ 'security.workspace.trust.enabled': false, 'workbench.startupEditor': 'none' }));
const PATH = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(':');
const env = { PATH, HOME: home, XDG_CONFIG_HOME: path.join(tmp, 'xdg'), AGENTD_STATE_DIR: path.join(tmp, 'state') };
execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', VSIX], { env, stdio: ['ignore', 'inherit', 'inherit'] });
const installed = fs.readdirSync(extDir).find((d) => d.startsWith('agentd.agentd'));
if (!installed) await fail(`the .vsix did not install into ${extDir}`);
const bundled = path.join(extDir, installed, 'bin', 'linux-x64', 'agentd');

const port = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const csLog = fs.openSync(path.join(results, 'broad-code-server.log'), 'w');
const cs = spawn(CODE_SERVER, ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
  '--disable-workspace-trust', '--user-data-dir', userDir, '--extensions-dir', extDir, home], { env, stdio: ['ignore', csLog, csLog], detached: true });
process.on('exit', () => { try { process.kill(-cs.pid, 'SIGTERM'); } catch { /* gone */ } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, f, timeout = 30000) {
  const end = Date.now() + timeout;
  while (Date.now() < end) { try { const v = await f(); if (v) return v; } catch { /* not yet */ } await sleep(200); }
  throw new Error(`timed out waiting for ${what}`);
}
const serving = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').some((l) => l.startsWith(`${bundled} serve`));
await until('code-server', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 120000);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.setDefaultTimeout(30000);
try {
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(home)}`, { timeout: 180000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 180000 });
  // The refusal: a notification naming the home folder and the setting, with Open Setting.
  const toast = page.locator('.notification-toast', { hasText: 'home directory' });
  await until('the refusal naming the home folder', async () => (await toast.count()) > 0, 90000);
  const text = (await toast.first().innerText()).replace(/\s+/g, ' ');
  await page.screenshot({ path: path.join(results, 'broad-refused.png') });
  if (!text.includes('agentd.allowBroadWorkspace')) await fail(`the refusal does not name agentd.allowBroadWorkspace: ${text}`);
  if (text.includes('--workspace DIR')) await fail(`the refusal gives the terminal's flag in VS Code: ${text}`);
  const open = toast.first().locator('.monaco-button', { hasText: /^Open Setting$/ });
  if (!(await open.count())) await fail(`no "Open Setting" button on the refusal: ${text}`);
  if (serving()) await fail('a daemon is serving the refused folder');
  await open.first().click();
  // The Settings editor, searched to the setting, with its checkbox.
  const row = page.locator('.settings-editor .setting-item-contents', { hasText: 'Allow Broad Workspace' });
  await until('the Settings editor showing agentd.allowBroadWorkspace', async () => (await row.count()) > 0, 30000);
  await page.screenshot({ path: path.join(results, 'broad-setting.png') });
  await row.first().locator('.setting-value-checkbox').click();
  // Turning it on restarts the daemon, which now opens the folder.
  await until('the daemon serving the confirmed folder', async () => serving(), 60000);
  await until('the setting written', async () => JSON.parse(fs.readFileSync(settingsFile, 'utf8'))['agentd.allowBroadWorkspace'] === true, 10000);
  await sleep(2000);
  if (!serving()) await fail('the daemon stopped after starting on the confirmed folder');
  await page.screenshot({ path: path.join(results, 'broad-allowed.png') });
  console.log('ok   a home-folder workspace is refused with agentd.allowBroadWorkspace named and opened; turning it on starts the daemon');
  console.log('1 passed, 0 failed');
} catch (e) {
  await fail(e?.message ?? String(e));
} finally {
  await browser.close().catch(() => undefined);
}
process.exit(0);
