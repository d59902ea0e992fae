// End-to-end cases of the chat view (issue 36), run by run.mjs in its code-server window (its
// helpers are passed in). The view is a webview: an iframe in an iframe, driven through
// Playwright's frame locators. The model is the fake model server: each plan is a scripted
// reply, and what the planner was told is read from the recorded requests.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

export async function chatCases(h) {
  const { page, check, until, assert, palette, reload, openFile, fakeURL, ws, results, media, userDir, figures } = h;
  // These cases review before the writes (a run waits on its change: "running", then Accept): an
  // earlier case of the suite turns after mode on and leaves it, so it is set here, as a user
  // would in the settings, and the window reloaded.
  const settings = path.join(userDir, 'User', 'settings.json');
  const cur = JSON.parse(fs.readFileSync(settings, 'utf8'));
  // Files are auto-saved after a delay, as code-server users have it (the restore case types into
  // a file and relies on it reaching the disk).
  if (cur['agentd.review'] !== 'before' || cur['files.autoSave'] !== 'afterDelay') {
    fs.writeFileSync(settings, JSON.stringify({ ...cur, 'agentd.review': 'before', 'files.autoSave': 'afterDelay', 'files.autoSaveDelay': 300 }, null, 1));
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
    if (media !== results && ['chat.png', 'chat-context.png', 'chat-approval.png', 'chat-restore.png', 'chat-branch.png', 'chat-queue.png'].includes(name)) fs.copyFileSync(path.join(results, name), path.join(media, name));
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

  await check('chat: a message sent while a turn runs is queued in the core, shown under the turns, editable and removable; live progress; accept, then undo this turn', async () => {
    const before = (await requests()).length;
    await turn(1).locator('button.run').click();
    await fileRow(1, 'chat/b.txt').locator('button.accept').waitFor({ timeout: 60000 });
    await until('turn 2 running', async () => (await turnText(1)).includes('running'), 15000);
    await say('a third message meanwhile');
    const queued = chat().locator('.queue .queued');
    await until('the message queued, under the running turn', async () => (await queued.count()) === 1 && (await queued.first().innerText()).includes('a third message meanwhile'), 15000);
    assert((await chat().locator('#text').inputValue()) === '', 'the input is free for the next message');
    await queued.first().locator('button.qedit').click();
    const box = page.locator('.quick-input-widget input');
    await until('the edit box of the queued message', async () => (await page.locator('.quick-input-widget .quick-input-title').innerText().catch(() => '')).includes('Edit the queued message'), 15000);
    await box.fill('a third message, edited');
    await page.keyboard.press('Enter');
    await until('the queued message edited', async () => (await queued.first().innerText().catch(() => '')).includes('a third message, edited'), 15000);
    await queued.first().locator('button.qremove').click();
    await until('the queue empty', async () => (await queued.count()) === 0, 15000);
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
  });

  // Checkpoints (docs/protocol.md "Checkpoints"): restore to before a turn, and branches.
  const runAndAccept = async (i, rel, want) => {
    await turn(i).locator('button.run').click();
    await fileRow(i, rel).locator('button.accept').waitFor({ timeout: 60000 });
    await fileRow(i, rel).locator('button.accept').click();
    await until(`${rel} accepted on disk`, async () => disk(rel) === want, 30000);
    await until(`turn ${i + 1} completed`, async () => (await turnText(i)).includes('completed') && (await turn(i).locator('button.undo').count()) === 1, 60000);
  };
  const pickQuick = async (title, item) => {
    await until(`the quick pick "${title}"`, async () => (await qpTitle()).includes(title), 15000);
    await qpInput.fill(item);
    await until(`"${item}" in the quick pick`, async () => ((await page.locator('.quick-input-list .monaco-list-row.focused').textContent()) ?? '').includes(item), 15000);
    await page.keyboard.press('Enter');
  };

  await check('chat: restore to before a turn (files and conversation): the dry run\'s diff first; the agent\'s line goes, the user\'s auto-saved line stays; the turn is rewound; undoing the restore brings the agent\'s line back', async () => {
    fs.writeFileSync(path.join(ws, 'chat', 'r.txt'), 'one\ntwo\nthree\n');
    await focusChat();
    await layout(true);
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('.turn').count()) === 0, 15000);
    await push(planReply('Agent line', 'wr', 'chat/r.txt', 'two\n', 'two\nagent line\n'));
    await say('add an agent line to r');
    await until('the plan card', async () => (await turnText(0)).includes('Agent line'), 60000);
    await runAndAccept(0, 'chat/r.txt', 'one\ntwo\nagent line\nthree\n');
    // The user types a line of their own at the top; auto-save writes it.
    await openFile('chat/r.txt');
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.type('user line\n');
    await until('the user\'s line auto-saved', async () => disk('chat/r.txt') === 'user line\none\ntwo\nagent line\nthree\n', 30000);
    await focusChat();
    await turn(0).locator('button.restore').click();
    await pickQuick('Restore to before turn 1: what?', 'Files and conversation');
    const pv = turn(0).locator('.preview');
    await pv.waitFor({ timeout: 30000 });
    const pt = (await pv.innerText()).replace(/\s+/g, ' ');
    for (const want of ['nothing has changed yet', 'takes back run', 'turn 1 rewound', 'chat/r.txt', '-agent line']) assert(pt.includes(want), `the dry run lacks "${want}": ${pt}`);
    assert(disk('chat/r.txt') === 'user line\none\ntwo\nagent line\nthree\n', 'the dry run changed nothing');
    await shot('chat-restore.png');
    // The same diff in VS Code's diff editor: the file now against what the restore writes.
    await pv.locator('button.opendiff').first().click();
    await until('the diff editor of the restore', async () => (await page.locator('.tab').allInnerTexts()).some((t) => t.includes('r.txt (now ↔ after the restore)')), 15000);
    // Side by side or inline (a narrow editor): the agent's line is the one deleted line.
    await until('the agent\'s line shown deleted, the user\'s kept', async () => {
      const d = page.locator('.editor-group-container.active .monaco-diff-editor');
      const t = (await d.innerText().catch(() => '')).replace(/\u00a0/g, ' ');
      return t.includes('user line') && t.includes('agent line') && (await d.locator('.line-delete, .char-delete').count()) > 0 && (await d.locator('.line-insert, .char-insert').count()) === 0;
    }, 15000);
    await focusChat();
    await pv.locator('button.c-go').click();
    await until('the agent\'s line gone, the user\'s kept, on disk', async () => disk('chat/r.txt') === 'user line\none\ntwo\nthree\n', 30000);
    await until('turn 1 rewound (not told to the model), with the way back', async () => {
      const t = await turnText(0);
      return t.includes('not told to the model') && t.includes('Bring back') && t.includes('Undo the restore') && (await pv.count()) === 0;
    }, 30000);
    await turn(0).locator('button.unrestore').click();
    await until('the agent\'s line back, the user\'s still there', async () => disk('chat/r.txt') === 'user line\none\ntwo\nagent line\nthree\n', 30000);
    await until('turn 1 told to the model again', async () => !(await turnText(0)).includes('not told to the model') && !(await turnText(0)).includes('Undo the restore'), 30000);
    // The conversation only: nothing on disk changes; the rewound turn's Bring back tells it again.
    await turn(0).locator('button.restore').click();
    await pickQuick('Restore to before turn 1: what?', 'Conversation only');
    await pv.waitFor({ timeout: 30000 });
    assert(!(await pv.innerText()).includes('Files:'), 'no files part');
    await pv.locator('button.c-go').click();
    await until('turn 1 rewound', async () => (await turnText(0)).includes('not told to the model'), 30000);
    await shot('chat-rewound.png');
    assert(disk('chat/r.txt') === 'user line\none\ntwo\nagent line\nthree\n', 'the files stay');
    await turn(0).locator('button.unrewind').click();
    await until('turn 1 brought back, no way back left to offer', async () => !(await turnText(0)).includes('not told to the model') && !(await turnText(0)).includes('Undo the restore'), 30000);
  });

  await check('chat: branch from an edited message: edit mode in the input; the branch is a new chat, the files offered back (dry run first), the edited request planned there; both chats in the history after a reload', async () => {
    fs.writeFileSync(path.join(ws, 'chat', 's.txt'), 's0\n');
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('.turn').count()) === 0, 15000);
    await push(planReply('S says one', 'ws', 'chat/s.txt', 's0\n', 's1\n'));
    await say('make s say one');
    await until('the plan card', async () => (await turnText(0)).includes('S says one'), 60000);
    await runAndAccept(0, 'chat/s.txt', 's1\n');
    const origin = await chat().locator('#title').innerText();
    await turn(0).locator('button.editmsg').click();
    await until('the message in the input, in edit mode', async () => (await chat().locator('#text').inputValue()) === 'make s say one' && (await chat().locator('#editing').isVisible()), 15000);
    assert((await chat().locator('#editing').innerText()).includes('Editing turn 1\'s message'), await chat().locator('#editing').innerText());
    // Cancelable: Cancel leaves edit mode; Edit again.
    await chat().locator('#cancelEdit').click();
    await until('edit mode left', async () => !(await chat().locator('#editing').isVisible()) && (await chat().locator('#text').inputValue()) === '', 15000);
    await turn(0).locator('button.editmsg').click();
    await until('edit mode again', async () => await chat().locator('#editing').isVisible(), 15000);
    await push(planReply('S says two', 'ws', 'chat/s.txt', 's0\n', 's2\n'));
    const box = chat().locator('#text');
    await box.fill('make s say two');
    await box.press('Enter');
    await pickQuick('restore them to before that turn?', 'Restore the files to before turn 1 too');
    const pv = chat().locator('#preview .preview');
    await pv.waitFor({ timeout: 30000 });
    const pt = (await pv.innerText()).replace(/\s+/g, ' ');
    for (const want of ['nothing has changed yet', 'chat/s.txt', '-s1', '+s0']) assert(pt.includes(want), `the dry run lacks "${want}": ${pt}`);
    await until('the branch shown, with its origin', async () => /branch of .* at turn 1/.test(await chat().locator('#branchOf').innerText().catch(() => '')), 15000);
    await shot('chat-branch.png');
    await pv.locator('button.c-go').click();
    await until('s.txt back as before turn 1', async () => disk('chat/s.txt') === 's0\n', 30000);
    await until('the edited request planned in the branch', async () => (await turnText(0)).includes('S says two') && (await turnText(0)).includes('make s say two'), 60000);
    const branchTitle = await chat().locator('#title').innerText();
    // The way back to the original, which lists its branch.
    await chat().locator('#branchOf button.gotoOrigin').click();
    await until('the original chat with its turn and its branch', async () => (await turnText(0)).includes('S says one') && /branch: .*at turn 1/.test(await chat().locator('#branches').innerText().catch(() => '')), 30000);
    assert((await chat().locator('#title').innerText()) === origin, 'the original chat');
    await reload();
    await focusChat();
    await layout(true);
    await chat().locator('#history').click();
    await until('both chats in the history, the branch marked', async () => {
      const rows = (await chat().locator('#historyList .chat').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
      return rows.some((r) => r.includes(branchTitle) && r.includes(`branch of ${origin} at turn 1`)) && rows.some((r) => r.includes(origin) && !r.includes('branch of'));
    }, 30000);
    await chat().locator('#historyList .chat', { hasText: 'branch of' }).first().locator('button.open').click();
    await until('the branch opened from the history', async () => (await turnText(0)).includes('S says two') && /branch of/.test(await chat().locator('#branchOf').innerText().catch(() => '')), 30000);
  });

  await check('chat: the queue: a message queued while a run goes is planned when it ends; "send now" stops the run and plans it next; the planner\'s activity shows in the turn being planned; Stop keeps the turn as stopped', async () => {
    fs.writeFileSync(path.join(ws, 'chat', 'q.txt'), 'q0\n');
    const queued = chat().locator('.queue .queued');
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('.turn').count()) === 0, 15000);
    await push(planReply('Q says one', 'wq', 'chat/q.txt', 'q0\n', 'q1\n'));
    await say('make q say one');
    await until('the plan card', async () => (await turnText(0)).includes('Q says one'), 60000);
    await turn(0).locator('button.run').click();
    await fileRow(0, 'chat/q.txt').locator('button.accept').waitFor({ timeout: 60000 });
    await say('then make q say two');
    await until('queued under the running turn', async () => (await queued.count()) === 1 && (await chat().locator('#send').innerText()) === 'Queue', 15000);
    await shot('chat-queue.png');
    await push(planReply('Q says two', 'wq', 'chat/q.txt', 'q1\n', 'q2\n'));
    await fileRow(0, 'chat/q.txt').locator('button.accept').click();
    await until('q.txt accepted', async () => disk('chat/q.txt') === 'q1\n', 30000);
    await until('the queued message planned as turn 2 when turn 1 ended', async () => (await turnText(1)).includes('then make q say two') && (await turnText(1)).includes('Q says two') && (await queued.count()) === 0, 60000);
    // Send now: the running turn is stopped and the message planned next.
    await turn(1).locator('button.run').click();
    await fileRow(1, 'chat/q.txt').locator('button.accept').waitFor({ timeout: 60000 });
    await say('no, make q say three');
    await until('queued', async () => (await queued.count()) === 1, 15000);
    await push(planReply('Q says three', 'wq', 'chat/q.txt', 'q1\n', 'q3\n'));
    await queued.first().locator('button.qnow').click();
    await until('turn 2\'s run stopped, the message planned as turn 3', async () => (await turnText(1)).includes('cancelled') && (await turnText(2)).includes('Q says three') && (await queued.count()) === 0, 60000);
    assert(disk('chat/q.txt') === 'q1\n', 'the stopped run wrote nothing (its change was waiting for review)');
    // The planner's work while the plan is made: it reads a file, then its model does not answer.
    await push({ toolCalls: [{ id: 'r1', name: 'read_file', args: JSON.stringify({ path: 'chat/q.txt' }) }] }, { fault: 'hang' });
    await say('make q say four');
    await until('turn 4 being planned, with the planner\'s activity', async () => (await turnText(3)).includes('making a plan') && (await turn(3).locator('.activity li').count()) >= 1, 60000);
    await shot('chat-activity.png');
    await chat().locator('#stop').click();
    await until('turn 4 kept as stopped, with what the planner did', async () => (await turnText(3)).includes('planning stopped') && (await turn(3).locator('.activity li').count()) >= 1, 30000);
  });

  await check('chat: Guide sends a message to the going turn as guidance (here nothing can take it: the daemon\'s reason shown, queued instead); Stop stops a run and a turn the core plans from the queue through agentd/chat/stop', async () => {
    await focusChat();
    fs.writeFileSync(path.join(ws, 'chat', 'g.txt'), 'g0\n');
    const queued = chat().locator('.queue .queued');
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('.turn').count()) === 0, 15000);
    await push(planReply('G says one', 'wg', 'chat/g.txt', 'g0\n', 'g1\n'));
    await say('make g say one');
    await until('the plan card', async () => (await turnText(0)).includes('G says one'), 60000);
    assert(await chat().locator('#guide').isHidden(), 'no Guide while nothing is going');
    await turn(0).locator('button.run').click();
    await fileRow(0, 'chat/g.txt').locator('button.accept').waitFor({ timeout: 60000 });
    await until('Guide and Stop offered while the run goes', async () => (await chat().locator('#guide').isVisible()) && (await chat().locator('#stop').isVisible()), 15000);
    // The run's only step is an edit (no agent step): the daemon cannot give it the words.
    await chat().locator('#text').fill('keep it short');
    await chat().locator('#guide').click();
    await until('the daemon\'s reason, and the message queued instead', async () => /Not delivered as guidance: .+Queued instead/.test(await notice()) && (await queued.count()) === 1 && (await queued.first().innerText()).includes('keep it short'), 15000);
    assert((await chat().locator('#text').inputValue()) === '', 'the message left the input');
    // Stop: the run is no request of this view: agentd/chat/stop cancels it; the queued message
    // is then planned by the core (its planner does not answer), and Stop stops that too.
    await push({ fault: 'hang' });
    await chat().locator('#stop').click();
    await until('the run stopped, said so', async () => (await turnText(0)).includes('cancelled') && (await notice()).includes('Stopped: the run'), 30000);
    await until('the queued message being planned by the core as turn 2', async () => (await turnText(1)).includes('keep it short') && (await turnText(1)).includes('making a plan') && (await queued.count()) === 0, 60000);
    await until('Stop offered for the turn the core plans', async () => chat().locator('#stop').isVisible(), 15000);
    await chat().locator('#stop').click();
    await until('turn 2 kept as stopped', async () => (await turnText(1)).includes('planning stopped') && (await notice()).includes('Stopped: the planning'), 30000);
    await until('Stop and Guide gone', async () => (await chat().locator('#stop').isHidden()) && (await chat().locator('#guide').isHidden()), 15000);
    assert(disk('chat/g.txt') === 'g0\n', 'the stopped run wrote nothing (its change was waiting for review)');
  });

  await check('chat: Guide, delivered: the run\'s agent step takes the words (said, with what took them), the turn lists its guidance; Stop cancels the run', async () => {
    await focusChat();
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('.turn').count()) === 0, 15000);
    await push({ text: JSON.stringify({ title: 'Think', steps: [{ id: 'ag', kind: 'agent', description: 'think about g', prompt: 'think about chat/g.txt', tools: ['read_file'] }] }) }, { fault: 'hang' });
    await say('think');
    await until('the plan card', async () => (await turnText(0)).includes('Think'), 60000);
    await turn(0).locator('button.run').click();
    await until('the run going, Guide offered', async () => (await turnText(0)).includes('running') && (await chat().locator('#guide').isVisible()), 60000);
    await chat().locator('#text').fill('look at the first line only');
    await chat().locator('#guide').click();
    await until('delivered, said with what took it', async () => (await notice()).startsWith('Guidance delivered to the run run-'), 15000);
    await until('the turn\'s guidance line', async () => (await turn(0).locator('.guidance li').allInnerTexts()).includes('guidance: look at the first line only'), 15000);
    assert((await chat().locator('.queue .queued').count()) === 0, 'not queued');
    await chat().locator('#stop').click();
    await until('the run cancelled', async () => (await turnText(0)).includes('cancelled') && (await chat().locator('#stop').isHidden()), 30000);
  });

  // Speed figure (reported with the others in figures.chatTyping, never asserted): the time from a
  // key pressed to the character in the input, per key, in the chat input with an empty chat and
  // with a 30-turn chat, and in VS Code's own quick open box, in the same run.
  await check('chat: speed: typing in the chat input (empty chat, 30-turn chat) and in quick open (reported, not asserted)', async () => {
    const typed = 'make the greeting say hi';
    const rounds = 3;
    const median = (a) => { const x = [...a].sort((p, q) => p - q); return x.length ? x[Math.floor(x.length / 2)] : null; };
    const innerFrame = async () => {
      const outer = await (await page.locator('iframe.webview.ready').elementHandle()).contentFrame();
      return (await outer.locator('iframe#active-frame').elementHandle()).contentFrame();
    };
    const typeInChat = async () => {
      const f = await innerFrame();
      const box = chat().locator('#text');
      const per = [];
      for (let r = 0; r < rounds; r++) {
        await box.fill('');
        await box.click();
        for (let i = 0; i < typed.length; i++) {
          const t0 = performance.now();
          await page.keyboard.type(typed[i]);
          await f.waitForFunction((w) => document.getElementById('text').value === w, typed.slice(0, i + 1), { polling: 'raf', timeout: 10000 });
          per.push(performance.now() - t0);
        }
      }
      await box.fill('');
      return per;
    };
    const typeInQuickOpen = async () => {
      const per = [];
      for (let r = 0; r < rounds; r++) {
        await page.keyboard.press('Escape');
        await page.keyboard.press('Control+P');
        await qpInput.waitFor({ state: 'visible' });
        await until('quick open empty', async () => (await qpInput.inputValue()) === '', 10000);
        for (let i = 0; i < typed.length; i++) {
          const t0 = performance.now();
          await page.keyboard.type(typed[i]);
          await page.waitForFunction((w) => document.querySelector('.quick-input-widget input')?.value === w, typed.slice(0, i + 1), { polling: 'raf', timeout: 10000 });
          per.push(performance.now() - t0);
        }
        await page.keyboard.press('Escape');
      }
      return per;
    };
    await focusChat();
    await chat().locator('#new').click();
    await until('an empty new chat', async () => (await chat().locator('.turn').count()) === 0, 15000);
    await chat().locator('#modeAsk').click();
    await typeInChat(); // a warm-up round, not counted
    const empty = await typeInChat();
    const quick = await typeInQuickOpen();
    await focusChat();
    const n = 30;
    for (let i = 0; i < n; i++) {
      await push({ text: `Answer ${i + 1}: the greeting says hello in greet.go, line ${i + 1}.` });
      await say(`question ${i + 1} about the greeting`);
      await until(`turn ${i + 1}'s answer`, async () => (await turnText(i)).includes(`Answer ${i + 1}:`), 60000);
      // The answer's text is drawn as it streams, before the request ends; a question sent while
      // the chat still answers is not queued (the view keeps it in the input), so wait, as a user
      // does, until the chat is idle again (Stop hidden) before the next one.
      await until(`turn ${i + 1} ended`, async () => await chat().locator('#stop').isHidden(), 60000);
    }
    await typeInChat(); // a warm-up round with the long chat drawn, not counted
    const long = await typeInChat();
    await chat().locator('#modePlan').click();
    const ms = (a) => +median(a).toFixed(1);
    figures.chatTyping = {
      keys: empty.length, msPerKeyEmptyChat: ms(empty), msPerKey30Turns: ms(long), msPerKeyQuickOpen: ms(quick),
      keysPerSecondEmptyChat: +(1000 / median(empty)).toFixed(1), keysPerSecond30Turns: +(1000 / median(long)).toFixed(1), keysPerSecondQuickOpen: +(1000 / median(quick)).toFixed(1),
      ratio30TurnsVsEmpty: +(median(long) / median(empty)).toFixed(2), ratio30TurnsVsQuickOpen: +(median(long) / median(quick)).toFixed(2),
    };
    console.log(`  chat typing: ${JSON.stringify(figures.chatTyping)}`);
    await layout(false);
  });
  await (await import('./chat_images.mjs')).imageCases(h);
}
