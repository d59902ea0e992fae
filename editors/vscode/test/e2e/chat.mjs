// End-to-end cases of the chat view (issue 36), run by run.mjs in its code-server window (its
// helpers are passed in). The view is a webview: an iframe in an iframe, driven through
// Playwright's frame locators. The model is the fake model server: each plan is a scripted
// reply, and what the planner was told is read from the recorded requests.
import * as fs from 'node:fs';
import * as path from 'node:path';

export async function chatCases(h) {
  const { page, check, until, assert, palette, reload, fakeURL, ws, results, media, userDir } = h;
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
    // The README's picture; the others stay in test-results/.
    if (media !== results && name === 'chat.png') fs.copyFileSync(path.join(results, name), path.join(media, name));
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
}
