// A folder that is the user's home folder: the daemon refuses it (its rule, rpc/lifecycle.go),
// and the extension says so with a button that opens agentd.allowBroadWorkspace, the VS Code
// words for confirming it (never the terminal's --workspace DIR); turning the setting on
// restarts the daemon, which then opens the folder. Needs CODE_SERVER, VSIX (the linux-x64
// platform .vsix), Chromium; writes test-results/broad-*.png. Prints "N passed, N failed".
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { failer, openVsix, pathWithoutAgentd, results, sleep, until } from './vsix.mjs';

let page;
const fail = failer('broad-workspace', () => page);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-broad-e2e-'));
// The opened folder is HOME itself, as when VS Code is opened on ~.
const home = path.join(tmp, 'home');
fs.mkdirSync(home, { recursive: true });
fs.writeFileSync(path.join(home, 'notes.txt'), 'hello\n');
fs.writeFileSync(path.join(home, 'hello.agentd.json'), JSON.stringify({ title: 'Hello', steps: [{ id: 'read', tool: 'read_file', args: { path: 'notes.txt' } }] }));
let vs;
try {
  const env = { PATH: pathWithoutAgentd(), HOME: home, XDG_CONFIG_HOME: path.join(tmp, 'xdg'), AGENTD_STATE_DIR: path.join(tmp, 'state') };
  vs = await openVsix({ name: 'broad', tmp, folder: home, env, settings: {} });
} catch (e) {
  await fail(e?.message ?? String(e));
}
page = vs.page;
const { serving, settingsFile } = vs;
try {
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
  await vs.close();
}
process.exit(0);
