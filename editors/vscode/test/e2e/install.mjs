// One-step install: the linux-x64 platform .vsix (scripts/package-platform.sh) installed into
// code-server with no agentd anywhere on PATH and agentd.path unset runs a plan with the agentd
// it carries. Needs CODE_SERVER, VSIX (the platform .vsix), Chromium; writes
// test-results/install-*.png. Prints "N passed, N failed".
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
const fail = (m) => { console.error(`install e2e: FAILED: ${m}`); console.log('0 passed, 1 failed'); process.exit(1); };
for (const [n, p] of [['CODE_SERVER', CODE_SERVER], ['VSIX', VSIX], ['chromium', CHROMIUM]]) if (!p || !fs.existsSync(p)) fail(`${n} (${p}) is missing`);

// A PATH with node (code-server runs on it) and the system, and no agentd anywhere on it.
const PATH = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(':');
for (const d of PATH.split(':')) if (fs.existsSync(path.join(d, 'agentd'))) fail(`${d}/agentd is on the test's PATH`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-install-e2e-'));
const ws = path.join(tmp, 'ws'), userDir = path.join(tmp, 'user'), extDir = path.join(tmp, 'ext');
fs.mkdirSync(ws, { recursive: true });
fs.writeFileSync(path.join(ws, 'greet.txt'), 'hello\n');
fs.writeFileSync(path.join(ws, 'hello.agentd.json'), JSON.stringify({ title: 'Say hello from the bundled agentd', steps: [
  { id: 'write', tool: 'write_file', args: { path: 'hello.txt', content: 'written by the bundled agentd\n' } },
  { id: 'edit', tool: 'edit_file', dependsOn: ['write'], args: { path: 'greet.txt', edits: [{ oldText: 'hello', newText: 'hello, world' }] } },
] }, null, 1));
fs.mkdirSync(path.join(userDir, 'User'), { recursive: true });
fs.writeFileSync(path.join(userDir, 'User', 'settings.json'), JSON.stringify({
  'security.workspace.trust.enabled': false, 'agentd.review': 'after', 'workbench.startupEditor': 'none',
}));
const env = { PATH, HOME: tmp, XDG_CONFIG_HOME: path.join(tmp, 'xdg'), AGENTD_STATE_DIR: path.join(tmp, 'state') };
execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', VSIX], { env, stdio: ['ignore', 'inherit', 'inherit'] });
const installed = fs.readdirSync(extDir).find((d) => d.startsWith('agentd.agentd'));
if (!installed) fail(`the .vsix did not install into ${extDir}`);
const bundled = path.join(extDir, installed, 'bin', 'linux-x64', 'agentd');
try { fs.accessSync(bundled, fs.constants.X_OK); } catch { fail(`${bundled} is not an executable after install`); }

const port = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const csLog = fs.openSync(path.join(results, 'install-code-server.log'), 'w');
const cs = spawn(CODE_SERVER, ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
  '--disable-workspace-trust', '--user-data-dir', userDir, '--extensions-dir', extDir, ws], { env, stdio: ['ignore', csLog, csLog], detached: true });
process.on('exit', () => { try { process.kill(-cs.pid, 'SIGTERM'); } catch { /* gone */ } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, f, timeout = 30000) {
  const end = Date.now() + timeout;
  while (Date.now() < end) { try { const v = await f(); if (v) return v; } catch { /* not yet */ } await sleep(200); }
  throw new Error(`timed out waiting for ${what}`);
}
await until('code-server', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 120000);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.setDefaultTimeout(30000);
try {
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { timeout: 180000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 180000 });
  async function palette(command, pick) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${command}`);
    await until(`"${command}" in the palette`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(command), 60000);
    await page.keyboard.press('Enter');
    if (pick) {
      await input.waitFor({ state: 'visible' });
      await input.fill(pick);
      await until(`"${pick}" in the pick`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(pick));
      await page.keyboard.press('Enter');
    }
  }
  // The extension activates on the workspace's *.agentd.json; its daemon is the bundled one.
  await until('the bundled agentd running', async () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').some((l) => l.startsWith(`${bundled} serve`)), 90000);
  await sleep(1000);
  await palette('agentd: Open Plan', 'hello.agentd.json');
  await until('the bundled agentd running', async () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').some((l) => l.startsWith(`${bundled} serve`)), 60000);
  await palette('agentd: Run Plan');
  // Each write asks for approval (the default policy under the new-step rules): allow it once.
  let shot = false;
  await until('hello.txt written and greet.txt edited by the plan', async () => {
    const allow = page.locator('.monaco-dialog-box .monaco-button', { hasText: /^Allow once$/ });
    if (await allow.count()) {
      if (!shot) { await page.screenshot({ path: path.join(results, 'install-approval.png') }); shot = true; }
      await allow.first().click();
    }
    return fs.existsSync(path.join(ws, 'hello.txt')) && fs.readFileSync(path.join(ws, 'greet.txt'), 'utf8') === 'hello, world\n';
  }, 90000);
  await sleep(1500);
  await page.screenshot({ path: path.join(results, 'install-plan-run.png') });
  if (fs.readFileSync(path.join(ws, 'hello.txt'), 'utf8') !== 'written by the bundled agentd\n') fail('hello.txt has other content');
  console.log(`ok   the linux-x64 .vsix runs a plan with its own agentd (${bundled}), no agentd on PATH`);
  console.log('1 passed, 0 failed');
} catch (e) {
  await page.screenshot({ path: path.join(results, 'install-failure.png') }).catch(() => undefined);
  fail(String(e));
} finally {
  await browser.close();
}
process.exit(0);
