// What the .vsix end-to-end tests share (install.mjs, broad.mjs): the platform .vsix installed
// into a fresh code-server with no agentd on PATH, code-server started on a folder, and
// Chromium on it. Needs CODE_SERVER, VSIX (the linux-x64 platform .vsix) and Chromium.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const results = path.join(path.resolve(here, '../..'), 'test-results');
fs.mkdirSync(results, { recursive: true });

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** until polls f until it returns something truthy, or throws naming what was awaited. */
export async function until(what, f, timeout = 30000) {
  const end = Date.now() + timeout;
  while (Date.now() < end) { try { const v = await f(); if (v) return v; } catch { /* not yet */ } await sleep(200); }
  throw new Error(`timed out waiting for ${what}`);
}

/** failer returns fail(message): prints it, saves NAME-failure.png when a page is up, and exits 1. */
export function failer(name, getPage) {
  return async (m) => {
    console.error(`${name} e2e: FAILED: ${m}`);
    const page = getPage();
    if (page) await page.screenshot({ path: path.join(results, `${name}-failure.png`) }).catch(() => undefined);
    console.log('0 passed, 1 failed');
    process.exit(1);
  };
}

/** A PATH with node (code-server runs on it) and the system, and no agentd anywhere on it. */
export function pathWithoutAgentd() {
  const PATH = [path.dirname(process.execPath), '/usr/bin', '/bin'].join(':');
  for (const d of PATH.split(':')) if (fs.existsSync(path.join(d, 'agentd'))) throw new Error(`${d}/agentd is on the test's PATH`);
  return PATH;
}

/** openVsix installs VSIX into code-server (user and extensions dirs under tmp), starts it on
 *  folder with env, and opens Chromium on it. It returns the page, the bundled agentd's path, a
 *  serving() probe for that agentd, and close(). name prefixes the code-server log in results. */
export async function openVsix({ name, tmp, folder, env, settings }) {
  const CODE_SERVER = process.env.CODE_SERVER;
  const VSIX = process.env.VSIX && path.resolve(process.env.VSIX);
  const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
  for (const [n, p] of [['CODE_SERVER', CODE_SERVER], ['VSIX', VSIX], ['chromium', CHROMIUM]]) if (!p || !fs.existsSync(p)) throw new Error(`${n} (${p}) is missing`);
  const userDir = path.join(tmp, 'user'), extDir = path.join(tmp, 'ext');
  fs.mkdirSync(path.join(userDir, 'User'), { recursive: true });
  const settingsFile = path.join(userDir, 'User', 'settings.json');
  fs.writeFileSync(settingsFile, JSON.stringify({ 'security.workspace.trust.enabled': false, 'workbench.startupEditor': 'none', ...settings }));
  execFileSync(CODE_SERVER, ['--user-data-dir', userDir, '--extensions-dir', extDir, '--install-extension', VSIX], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  const installed = fs.readdirSync(extDir).find((d) => d.startsWith('agentd.agentd'));
  if (!installed) throw new Error(`the .vsix did not install into ${extDir}`);
  const bundled = path.join(extDir, installed, 'bin', 'linux-x64', 'agentd');
  fs.accessSync(bundled, fs.constants.X_OK);
  const port = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
  const csLog = fs.openSync(path.join(results, `${name}-code-server.log`), 'w');
  const cs = spawn(CODE_SERVER, ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--disable-workspace-trust', '--user-data-dir', userDir, '--extensions-dir', extDir, folder], { env, stdio: ['ignore', csLog, csLog], detached: true });
  process.on('exit', () => { try { process.kill(-cs.pid, 'SIGTERM'); } catch { /* gone */ } });
  await until('code-server', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 120000);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(30000);
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`, { timeout: 180000 });
  await page.waitForSelector('.monaco-workbench', { timeout: 180000 });
  const serving = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').some((l) => l.startsWith(`${bundled} serve`));
  return { page, bundled, serving, settingsFile, close: () => browser.close().catch(() => undefined) };
}
