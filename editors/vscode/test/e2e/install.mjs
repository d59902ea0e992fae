// One-step install: the linux-x64 platform .vsix (scripts/package-platform.sh) installed into
// code-server with no agentd anywhere on PATH and agentd.path unset runs a plan with the agentd
// it carries. Needs CODE_SERVER, VSIX (the platform .vsix), Chromium; writes
// test-results/install-*.png. Prints "N passed, N failed".
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { failer, openVsix, pathWithoutAgentd, results, sleep, until } from './vsix.mjs';

let page;
const fail = failer('install', () => page);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-install-e2e-'));
const ws = path.join(tmp, 'ws');
fs.mkdirSync(ws, { recursive: true });
fs.writeFileSync(path.join(ws, 'greet.txt'), 'hello\n');
fs.writeFileSync(path.join(ws, 'hello.agentd.json'), JSON.stringify({ title: 'Say hello from the bundled agentd', steps: [
  { id: 'write', tool: 'write_file', args: { path: 'hello.txt', content: 'written by the bundled agentd\n' } },
  { id: 'edit', tool: 'edit_file', dependsOn: ['write'], args: { path: 'greet.txt', edits: [{ oldText: 'hello', newText: 'hello, world' }] } },
] }, null, 1));
let vs;
try {
  const env = { PATH: pathWithoutAgentd(), HOME: tmp, XDG_CONFIG_HOME: path.join(tmp, 'xdg'), AGENTD_STATE_DIR: path.join(tmp, 'state') };
  vs = await openVsix({ name: 'install', tmp, folder: ws, env, settings: { 'agentd.review': 'after' } });
} catch (e) {
  await fail(e?.message ?? String(e));
}
page = vs.page;
const { bundled, serving } = vs;
try {
  async function palette(command, pick) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(`>${command}`);
    await until(`"${command}" in the palette`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(command), 60000);
    await page.keyboard.press('Enter');
    if (pick) {
      // The command's own pick, not the palette still showing while the command starts (under
      // load its pick can come seconds later: filled into the palette, the name opened the file
      // and the plan was never loaded; seen in CI).
      await until('the command\'s pick', async () => (await input.isVisible()) && !(await input.inputValue()).startsWith('>'), 60000);
      await input.fill(pick);
      await until(`"${pick}" in the pick`, async () => (await page.locator('.quick-input-list .monaco-list-row.focused').textContent())?.includes(pick));
      await page.keyboard.press('Enter');
    }
  }
  // The extension activates on the workspace's *.agentd.json; its daemon is the bundled one.
  await until('the bundled agentd running', async () => serving(), 90000);
  await sleep(1000);
  await palette('agentd: Open Plan', 'hello.agentd.json');
  await until('the bundled agentd running', async () => serving(), 60000);
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
  if (fs.readFileSync(path.join(ws, 'hello.txt'), 'utf8') !== 'written by the bundled agentd\n') await fail('hello.txt has other content');
  console.log(`ok   the linux-x64 .vsix runs a plan with its own agentd (${bundled}), no agentd on PATH`);
  console.log('1 passed, 0 failed');
} catch (e) {
  await fail(e?.message ?? String(e));
} finally {
  await vs.close();
}
process.exit(0);
