// End-to-end cases of the chat view (issue 36), run by run.mjs in its code-server window (its
// helpers are passed in). The view is a webview: an iframe in an iframe, driven through
// Playwright's frame locators. The model is the fake model server: each plan is a scripted
// reply, and what the planner was told is read from the recorded requests.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

export async function chatCases(h) {
  const { page, check, until, assert, palette, reload, openFile, fakeURL, ws, results, media, userDir } = h;
  // These cases review before the writes (a run waits on its change: "running", then Accept): an
  // earlier case of the suite turns after mode on and leaves it, so it is set here, as a user
  // would in the settings, and the window reloaded.
  const settings = path.join(userDir, 'User', 'settings.json');
  const cur = JSON.parse(fs.readFileSync(settings, 'utf8'));
  if (cur['agentd.review'] !== 'before') {
    fs.writeFileSync(settings, JSON.stringify({ ...cur, 'agentd.review': 'before' }, null, 1));
    await reload();
  }
  fs.mkdirSync(path.join(ws, 'chat'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'chat', 'a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(ws, 'chat', 'b.txt'), 'beta\n');
  const disk = (rel) => fs.readFileSync(path.join(ws, rel), 'utf8');
  const planReply = (title, id, file, from, to) => ({ text: JSON.stringify({ title, steps: [{ id, tool: 'edit_file', args: { path: file, edits: [{ oldText: from, newText: to }] } }] }) });
  const push = async (...replies) => {
    const r = await fetch(`${fakeURL}/_fake/push`, { method: 'POST', body: JSON.stringify(replies) });
    assert(r.ok, `push to the fake model: ${r.status}`);
  };
  const requests = async () => (await (await fetch(`${fakeURL}/_fake/requests`)).json()).map((r) => JSON.stringify(r.body));

  // The chat view's document: the webview view's outer iframe, then its content frame.
  const chat = () => page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  // The chat has a side bar container of its own (agentd Chat): its picture is the side bar.
  const pane = () => page.locator('.part.sidebar').first();
  const turn = (i) => chat().locator(`.turn[data-turn="${i}"]`);
  const turnText = async (i) => (await turn(i).innerText().catch(() => '')).replace(/\s+/g, ' ');
  const notice = async () => ((await chat().locator('#notice:not([hidden])').innerText().catch(() => '')) ?? '');
  async function focusChat() {
    await palette('agentd Chat: Focus on Chat View');
    await chat().locator('#text').waitFor({ timeout: 60000 });
  }
  async function say(text) {
    const box = chat().locator('#text');
    await box.click();
    await box.fill(text);
    await box.press('Enter');
  }
  async function shot(name) {
    await page.mouse.move(0, 0);
    await pane().screenshot({ path: path.join(results, name) });
    // The README's pictures; the others stay in test-results/.
    if (media !== results && ['chat.png', 'chat-context.png', 'chat-approval.png'].includes(name)) fs.copyFileSync(path.join(results, name), path.join(media, name));
  }
  const fileRow = (i, rel) => turn(i).locator(`.file[data-uri$="${rel}"]`);
  // The chat is in a side bar container of its own, with the whole height; a user who works in
  // it widens the side bar (put back at the end, with the Plan view's container shown again, for
  // the cases after these).
  async function layout(chatWide) {
    if (!chatWide) await palette('agentd: Focus on Plan View');
    const sash = page.locator('.part.sidebar').first();
    const box = await sash.boundingBox();
    const want = chatWide ? 460 : 300;
    if (box && Math.abs(box.width - want) > 20) {
      const y = box.y + box.height / 2;
      await page.mouse.move(box.x + box.width, y);
      await page.mouse.down();
      await page.mouse.move(box.x + want, y, { steps: 8 });
      await page.mouse.up();
    }
  }

  await check('chat: two plan turns in one chat; each plan a readable card; turn 2\'s planner is told turn 1; per-file accept', async () => {
    await focusChat();
    await layout(true);
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('#title').innerText()) === 'New chat' && (await chat().locator('.turn').count()) === 0, 15000);
    await push(planReply('Alpha says one', 'wa', 'chat/a.txt', 'alpha\n', 'alpha one\n'));
    await say('make alpha say one');
    await until('turn 1\'s plan card', async () => (await turnText(0)).includes('Alpha says one'), 60000);
    const t1 = await turnText(0);
    for (const want of ['make alpha say one', 'wa', '[edit_file]', 'chat/a.txt', 'not run', 'Run', 'Edit', 'Revise']) assert(t1.includes(want), `turn 1 lacks "${want}": ${t1}`);
    await until('the chat titled by its first request', async () => (await chat().locator('#title').innerText()) === 'make alpha say one', 15000);
    await shot('chat-plan.png');

    await turn(0).locator('button.run').click();
    await fileRow(0, 'chat/a.txt').locator('button.accept').waitFor({ timeout: 60000 });
    assert((await turnText(0)).includes('1 file changed'), await turnText(0));
    await fileRow(0, 'chat/a.txt').locator('button.accept').click();
    await until('a.txt accepted on disk', async () => disk('chat/a.txt') === 'alpha one\n', 30000);
    await until('turn 1 completed, its file accepted, Undo offered', async () => {
      const t = await turnText(0);
      return t.includes('completed') && t.includes('accepted') && t.includes('Undo this turn') && !(await fileRow(0, 'chat/a.txt').locator('button.accept').count());
    }, 60000);

    // Turn 2, revised once in plain words before it runs.
    await push(planReply('Beta says two', 'wb', 'chat/b.txt', 'beta\n', 'beta two\n'));
    await say('now make beta say two');
    await until('turn 2\'s plan card', async () => (await turnText(1)).includes('Beta says two'), 60000);
    const asked = (await requests()).filter((b) => b.includes('now make beta say two'));
    assert(asked.length === 1, `${asked.length} planner requests with turn 2's words`);
    for (const want of ['Turn 1. The user asked: make alpha say one', 'Alpha says one', 'chat/a.txt']) assert(asked[0].includes(want), `turn 2's planner request lacks "${want}"`);
    await push(planReply('Beta says two, twice', 'wb', 'chat/b.txt', 'beta\n', 'beta two two\n'));
    const revise = turn(1).locator('form.revise input');
    await revise.fill('say two twice');
    await revise.press('Enter');
    await until('turn 2\'s plan revised', async () => (await turnText(1)).includes('Beta says two, twice'), 60000);
    assert((await requests()).some((b) => b.includes('say two twice')), 'the revision\'s words reached the planner');
  });

  await check('chat: a message sent while a turn runs is refused with the reason; live progress; accept, then undo this turn', async () => {
    const before = (await requests()).length;
    await turn(1).locator('button.run').click();
    await fileRow(1, 'chat/b.txt').locator('button.accept').waitFor({ timeout: 60000 });
    await until('turn 2 running', async () => (await turnText(1)).includes('running'), 15000);
    await say('a third message meanwhile');
    await until('the refusal with its reason', async () => /Not sent: turn 2 is still running .*not queued/.test(await notice()), 15000);
    assert((await chat().locator('#text').inputValue()) === 'a third message meanwhile', 'the refused text stays in the input');
    assert((await requests()).length === before, 'nothing reached the model');
    await fileRow(1, 'chat/b.txt').locator('button.accept').click();
    await until('b.txt accepted on disk', async () => disk('chat/b.txt') === 'beta two two\n', 30000);
    await until('turn 2 completed with Undo', async () => (await turnText(1)).includes('completed') && (await turn(1).locator('button.undo').count()) === 1, 60000);
    await chat().locator('#text').fill('');
    await shot('chat.png');

    await turn(1).locator('button.undo').click();
    await until('b.txt back as it was', async () => disk('chat/b.txt') === 'beta\n', 30000);
    assert(disk('chat/a.txt') === 'alpha one\n', 'turn 1\'s change stays');
    await until('turn 2 undone, with no second Undo', async () => (await turnText(1)).includes('undone') && (await turn(1).locator('button.undo').count()) === 0, 30000);
    await until('the undo\'s report', async () => (await page.locator('.notification-toast').allInnerTexts()).some((t) => /undid run run-/.test(t)), 15000);
    assert((await turn(0).locator('button.undo').count()) === 1, 'turn 1 can still be undone');
  });

  await check('chat: Ask answers a question in words (agentd/chat/ask): no plan, nothing run; the model is told the turns before', async () => {
    await push({ text: 'chat/a.txt now says "alpha one"; chat/b.txt says "beta" again (turn 2 was undone).' });
    await chat().locator('#modeAsk').click();
    await say('what do the two files say now?');
    await until('the answer in turn 3', async () => (await turnText(2)).includes('now says "alpha one"'), 60000);
    const t3 = await turnText(2);
    assert(!/Run|Undo this turn/.test(t3), `a question turn has nothing to run or undo: ${t3}`);
    const asked = (await requests()).filter((b) => b.includes('what do the two files say now?'));
    assert(asked.length >= 1 && asked[0].includes('Turn 1. The user asked: make alpha say one'), 'the question\'s request carries turn 1');
    assert(disk('chat/b.txt') === 'beta\n' && disk('chat/a.txt') === 'alpha one\n', 'nothing written');
    await chat().locator('#modePlan').click();
  });

  await check('chat: after a window reload the chat is drawn again from the daemon; history lists it; rename', async () => {
    await reload();
    await focusChat();
    await layout(true);
    await until('both turns again', async () => (await turnText(0)).includes('Alpha says one') && (await turnText(1)).includes('Beta says two, twice'), 60000);
    await until('turn 2 still undone, the answer of turn 3 kept', async () => (await turnText(1)).includes('undone') && (await turnText(2)).includes('now says "alpha one"'), 15000);
    assert((await chat().locator('#title').innerText()) === 'make alpha say one', 'the title');
    await chat().locator('#history').click();
    const row = chat().locator('#historyList .chat.current');
    await until('the chat in the history, with its 3 turns', async () => /make alpha say one.*3 turns/.test((await row.innerText().catch(() => '')).replace(/\s+/g, ' ')), 15000);
    await row.locator('button', { hasText: 'Rename' }).click();
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('alpha and beta');
    await page.keyboard.press('Enter');
    await until('the new title in the header and the list', async () => (await chat().locator('#title').innerText()) === 'alpha and beta' && (await row.innerText()).includes('alpha and beta'), 15000);
    await shot('chat-history.png');
    await chat().locator('#historyList button', { hasText: 'Close' }).click();
    await layout(false);
  });
  // Context chips (issue 36): each shows its size in tokens, counted by the daemon
  // (agentd/context/size), before sending; the request carries exactly those blocks.
  const chips = async () => (await chat().locator('#chips .chip').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  const qpInput = page.locator('.quick-input-widget input');
  async function hashPick(text) {
    const box = chat().locator('#text');
    await box.click();
    await box.press('End');
    await box.pressSequentially(' #');
    await qpInput.waitFor({ state: 'visible', timeout: 15000 });
    await until('the context picker', async () => (await page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '')).includes('Add context'), 15000);
    await qpInput.fill(text);
    await until(`"${text}" in the context picker`, async () => ((await page.locator('.quick-input-list .monaco-list-row.focused').textContent()) ?? '').includes(text.replace(/^file:/, '')), 15000);
    await page.keyboard.press('Enter');
  }
  const git = (...a) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...a], { cwd: ws, stdio: 'pipe' });

  await check('chat: context chips: the active editor, #file: and #diff each show their size in tokens before sending; the plan\'s request carries them', async () => {
    // The workspace as a git repository with b.txt changed since HEAD (taken away after the case).
    git('init', '-q'); git('add', '-A'); git('commit', '-qm', 'start');
    fs.writeFileSync(path.join(ws, 'chat', 'b.txt'), 'beta\nbeta changed, not committed\n');
    try {
      await openFile('chat/a.txt');
      await focusChat();
      await layout(true);
      await chat().locator('#new').click();
      await until('the active editor as a chip with its size', async () => (await chips()).some((c) => /^chat\/a\.txt \d+ tokens? ×$/.test(c)), 30000);
      await chat().locator('#text').fill('explain the files');
      await hashPick('file:b.txt');
      await until('chat/b.txt as a chip with its size', async () => (await chips()).some((c) => /^chat\/b\.txt \d+ tokens? ×$/.test(c)), 30000);
      assert((await chat().locator('#text').inputValue()) === 'explain the files ', `the typed "#" is taken out: "${await chat().locator('#text').inputValue()}"`);
      await hashPick('#diff');
      await until('the git diff as a chip with its size', async () => (await chips()).some((c) => /^git diff \d+ tokens? ×$/.test(c)), 30000);
      const sizes = Object.fromEntries((await chips()).map((c) => { const m = /^(.*) (\d+) tokens? ×$/.exec(c); return [m[1], Number(m[2])]; }));
      await shot('chat-context.png');
      await push({ text: JSON.stringify({ title: 'Explained', steps: [{ id: 'r', tool: 'read_file', args: { path: 'chat/a.txt' } }] }) });
      const before = (await requests()).length;
      await chat().locator('#text').press('Enter');
      await until('the plan of the message with chips', async () => (await turnText(0)).includes('Explained'), 60000);
      const asked = (await requests()).slice(before).filter((b) => b.includes('explain the files'));
      assert(asked.length === 1, `${asked.length} planner requests with the words`);
      const req = JSON.parse(asked[0]).messages.map((m) => typeof m.content === 'string' ? m.content : JSON.stringify(m.content)).join('\n');
      const at = req.indexOf('## Context the user attached');
      assert(at > 0, 'the request carries the attached context');
      // Each block: its title line, then the text between fences.
      const blocks = req.slice(at).split('\n### ').slice(1).map((b) => {
        const open = b.indexOf('```\n');
        return '\n### ' + b.slice(0, b.indexOf('\n```\n', open + 3) + 5);
      });
      const tok = (b) => Math.ceil(Buffer.byteLength(b) / 4);
      for (const [title, label] of [['chat/a.txt', 'chat/a.txt'], ['chat/b.txt', 'chat/b.txt'], ['git diff against HEAD', 'git diff']]) {
        const b = blocks.find((x) => x.startsWith(`\n### ${title}\n`));
        assert(b, `the request lacks the block of ${title}: ${req.slice(at, at + 600)}`);
        assert(Math.abs(tok(b) - sizes[label]) <= 1, `${label}: the chip said ${sizes[label]} tokens, the request's block is ${tok(b)}`);
      }
      assert(req.includes('+beta changed, not committed'), 'the diff read by the daemon');
      await until('after sending, the chips added are gone (the active editor\'s stays)', async () => (await chips()).length === 1, 15000);
    } finally {
      fs.rmSync(path.join(ws, '.git'), { recursive: true, force: true });
      fs.writeFileSync(path.join(ws, 'chat', 'b.txt'), 'beta\n');
    }
  });

  const commandPlan = (title, id, command) => ({ text: JSON.stringify({ title, steps: [{ id, tool: 'run_command', args: { command }, critical: false }] }) });
  const approval = (i) => turn(i).locator('.approval');
  const qpTitle = () => page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '');

  await check('chat: an approval inline in the turn and in a quick pick; Allow once inline runs it and closes the quick pick', async () => {
    await chat().locator('#new').click();
    await push(commandPlan('Touch one', 'c', 'touch chat/ran1.txt'));
    await say('touch ran1');
    await until('the plan card', async () => (await turnText(0)).includes('Touch one'), 60000);
    await turn(0).locator('button.run').click();
    await approval(0).waitFor({ timeout: 60000 });
    const t = (await approval(0).innerText()).replace(/\s+/g, ' ');
    for (const want of ['touch chat/ran1.txt', 'run_command', 'Allow once', 'Reject']) assert(t.includes(want), `the inline approval lacks "${want}": ${t}`);
    await until('the same question in a quick pick', async () => (await qpTitle()).includes('turn 1 of the chat'), 15000);
    assert(!fs.existsSync(path.join(ws, 'chat', 'ran1.txt')), 'nothing ran before the answer');
    await shot('chat-approval.png');
    await approval(0).locator('button', { hasText: /^Allow once$/ }).click();
    await until('the quick pick closed', async () => !(await page.locator('.quick-input-widget').isVisible()), 15000);
    await until('the command ran', async () => fs.existsSync(path.join(ws, 'chat', 'ran1.txt')), 30000);
    await until('turn 1 completed, no approval left', async () => (await turnText(0)).includes('completed') && (await approval(0).count()) === 0, 30000);
  });

  await check('chat: closing the approval\'s quick pick (Escape) rejects it this time and closes the inline one; nothing runs', async () => {
    await push(commandPlan('Touch two', 'c', 'touch chat/ran2.txt'));
    await say('touch ran2');
    await until('the plan card', async () => (await turnText(1)).includes('Touch two'), 60000);
    await turn(1).locator('button.run').click();
    await approval(1).waitFor({ timeout: 60000 });
    await until('the quick pick', async () => (await qpTitle()).includes('turn 2 of the chat'), 15000);
    await page.keyboard.press('Escape');
    await until('the inline approval closed', async () => (await approval(1).count()) === 0, 15000);
    await until('the run ended without the command', async () => /partial|completed|failed/.test(await turnText(1)), 30000);
    assert(!fs.existsSync(path.join(ws, 'chat', 'ran2.txt')), 'the rejected command did not run');
    assert((await turnText(1)).includes('skipped'), `the step skipped: ${await turnText(1)}`);
  });

  await check('chat: the model picker in the header sets the next request\'s model through the daemon, and back', async () => {
    const model = chat().locator('#model');
    await until('the model in the header', async () => (await model.innerText()) === 'openai:fake', 15000);
    await model.click();
    await until('the model picker', async () => (await qpTitle()).includes('Model of the next request'), 15000);
    await qpInput.fill('Other model');
    await page.keyboard.press('Enter');
    await until('the model input', async () => (await qpTitle()).includes('agentd: Model') && !(await qpTitle()).includes('next request'), 15000);
    await qpInput.fill('openai:fake-two');
    await page.keyboard.press('Enter');
    await until('the new model in the header', async () => (await model.innerText()) === 'openai:fake-two', 15000);
    // The daemon's own word on it: the picker says the model in force and where it was set.
    await model.click();
    await until('the picker with the model set here', async () => /now: openai:fake-two \(set in the editor/.test(await qpInput.getAttribute('placeholder') ?? ''), 15000);
    await page.keyboard.press('Escape');
    await model.click();
    await until('the model picker', async () => (await qpTitle()).includes('Model of the next request'), 15000);
    await qpInput.fill('Back to the configured');
    await page.keyboard.press('Enter');
    await until('the configured model again', async () => (await model.innerText()) === 'openai:fake', 15000);
    await layout(false);
  });
  await (await import('./chat_images.mjs')).imageCases(h);
}
