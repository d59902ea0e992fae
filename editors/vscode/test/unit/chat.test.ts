// The chat view's model (src/chat/model.ts): a turn as the daemon tells it drawn as a plan card,
// its run's progress, its change summary and its undo; the view's own states (a request in
// flight, an answer streaming in, a message refused while a turn runs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatModel, ChatTurn, costWords, guidanceWords, guidedWords, restorePreview, restoredWords, stoppedWords, stepWords, tokenWords, turnView } from '../../src/chat/model';
import { ChangeSet, Plan } from '../../src/model';

const rel = (u: string) => u.replace(/^file:\/\/\/ws\//, '');
const plan: Plan = {
  id: 'plan-1', version: 2, title: 'Say hi', request: 'make the greeting say hi',
  steps: [
    { id: 'w', tool: 'edit_file', args: { path: 'greet/greet.go', edits: [] } },
    { id: 't', tool: 'run_command', args: { command: 'go test ./...' } },
    { id: 'm', tool: 'move_file', args: { from: 'a.txt', to: 'b.txt' }, description: 'rename the notes' },
  ],
};
const counts = (p: number, a = 0, r = 0) => ({ pending: p, accepted: a, rejected: r, stale: 0, total: p + a + r });
const set = (id: string, files: [string, string, ReturnType<typeof counts>][]): ChangeSet => ({
  id, runId: 'run-1', stepId: 'w', status: 'pending', review: 'before', reasonToModel: false, counts: counts(1),
  files: files.map(([uri, op, c]) => ({ uri, op: op as 'modify', baseHash: '', status: c.pending ? 'pending' : 'accepted', hunks: [], counts: c })),
});

test('a plan turn not run yet: the card has the title, the request and each step in words; Run and Revise, no Undo', () => {
  const t: ChatTurn = { request: 'make the greeting say hi', planId: 'plan-1', planTitle: 'Say hi', planSteps: ['w [edit_file] edits greet/greet.go', 't [run_command] $ go test ./...'] };
  const v = turnView(0, t, plan, undefined, [], rel);
  assert.equal(v.kind, 'plan');
  assert.deepEqual(v.plan, { id: 'plan-1', title: 'Say hi', request: 'make the greeting say hi', version: 2 });
  assert.deepEqual(v.steps.map((s) => [s.id, s.tool, s.words]), [
    ['w', 'edit_file', 'edits greet/greet.go'],
    ['t', 'run_command', '$ go test ./...'],
    ['m', 'move_file', 'rename the notes: a.txt → b.txt'],
  ]);
  assert.equal(v.status, 'not run');
  assert.deepEqual([v.canRun, v.canRevise, v.canUndo], [true, true, false]);
});

test('a step without the daemon\'s words is said from its args', () => {
  assert.deepEqual(stepWords({ id: 'r', tool: 'read_file', args: { path: 'a.go' } }), { id: 'r', tool: 'read_file', words: 'a.go' });
  assert.deepEqual(stepWords({ id: 'x', kind: 'agent', prompt: 'fix the test' }), { id: 'x', tool: 'agent', words: 'fix the test' });
});

test('a plan the daemon forgot is drawn from the turn\'s own words', () => {
  const v = turnView(1, { request: 'r', planId: 'plan-gone', planTitle: 'Gone', planSteps: ['w [write_file] writes a.txt'] }, undefined, undefined, [], rel);
  assert.equal(v.plan?.title, 'Gone');
  assert.deepEqual(v.steps.map((s) => [s.id, s.tool, s.words]), [['w', 'write_file', 'writes a.txt']]);
});

test('a run that ended: step statuses, a command\'s output, the files changed with their open units, Undo', () => {
  const t: ChatTurn = { request: 'r', planId: 'plan-1', runId: 'run-1', status: 'partial', failure: 'step t: failed' };
  const run = { runId: 'run-1', planId: 'plan-1', status: 'partial', steps: [{ id: 'w', status: 'completed' }, { id: 't', status: 'failed', error: 'exit status 1', output: '--- FAIL: TestGreet\n' }] };
  const v = turnView(0, t, plan, run, [set('cs-1', [['file:///ws/greet/greet.go', 'modify', counts(0, 2)], ['file:///ws/new.txt', 'create', counts(1)]])], rel);
  assert.equal(v.status, 'partial');
  assert.deepEqual(v.steps.map((s) => s.status), ['completed', 'failed', undefined]);
  assert.equal(v.steps[1].output, '--- FAIL: TestGreet\n');
  assert.equal(v.steps[1].error, 'exit status 1');
  assert.deepEqual(v.changes.map((f) => [f.rel, f.open, f.words]), [['greet/greet.go', 0, 'modified · 2 accepted'], ['new.txt', 1, 'created · 1 pending']]);
  assert.deepEqual([v.canRun, v.canRevise, v.canUndo, v.undone], [false, false, true, false]);
});

test('an undone turn says so and offers no second undo', () => {
  const v = turnView(0, { request: 'r', planId: 'plan-1', runId: 'run-1', status: 'completed', undone: true }, plan, undefined, [], rel);
  assert.equal(v.undone, true);
  assert.equal(v.canUndo, false);
});

test('a question turn: the answer and what was read, no plan, nothing to run or undo', () => {
  const v = turnView(2, { request: 'what does Hello do?', question: true, answer: 'It greets.', read: ['read_file greet.go (the function)'] }, undefined, undefined, [], rel);
  assert.equal(v.kind, 'question');
  assert.equal(v.answer, 'It greets.');
  assert.deepEqual(v.read, ['read_file greet.go (the function)']);
  assert.deepEqual([v.canRun, v.canUndo, v.canRevise], [false, false, false]);
});

test('live progress: run events find the turn by its plan before the chat learns the run, and a running turn refuses a new message', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 'hi', turns: [{ request: 'r', planId: 'plan-1' }] });
  m.plans.set('plan-1', plan);
  assert.equal(m.busyReason(), undefined, 'a plan not run does not block the next message');
  assert.equal(m.runEvent({ runId: 'run-9', event: { type: 'runStarted' }, state: { runId: 'run-9', planId: 'other', status: 'running' } }), false, 'another plan\'s run is not this chat\'s');
  assert.equal(m.runEvent({ runId: 'run-1', event: { type: 'runStarted' }, state: { runId: 'run-1', planId: 'plan-1', status: 'running' } }), true);
  m.runEvent({ runId: 'run-1', event: { type: 'stepStarted', stepId: 't' } });
  m.runEvent({ runId: 'run-1', event: { type: 'stepOutput', stepId: 't', text: 'ok  greet\n' } });
  let v = m.turn(0)!;
  assert.equal(v.status, 'running');
  assert.equal(v.steps[1].status, 'running');
  assert.equal(v.steps[1].output, 'ok  greet\n');
  assert.equal(v.canRun, false, 'no second Run while it runs');
  assert.match(m.busyReason() ?? '', /turn 1 is still running \(run run-1\)/);
  // The chat learns the run (agentd/chat/changed, then load).
  m.load({ chatId: 'chat-1', title: 'hi', turns: [{ request: 'r', planId: 'plan-1', runId: 'run-1', status: 'running' }] });
  m.runEvent({ runId: 'run-1', event: { type: 'stepFinished', stepId: 't', status: 'completed' } });
  m.runEvent({ runId: 'run-1', event: { type: 'runFinished' }, state: { runId: 'run-1', planId: 'plan-1', status: 'completed' } });
  v = m.turn(0)!;
  assert.equal(v.status, 'completed');
  assert.equal(v.canUndo, true);
  assert.equal(m.busyReason(), undefined);
  // A run/get answer that left before the end does not take the end back.
  m.setRun({ runId: 'run-1', planId: 'plan-1', status: 'running', steps: [{ id: 't', status: 'completed', output: 'ok  greet\n' }] });
  assert.equal(m.turn(0)!.status, 'completed');
});

test('a question streams into a pending turn; another chat\'s stream is ignored; the load replaces it', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r', planId: 'plan-1', runId: 'run-1', status: 'completed' }] });
  m.startPending('ask', 'why?');
  assert.match(m.busyReason() ?? '', /still answering/);
  assert.equal(m.streamed({ chatId: 'chat-2', turn: 1, text: 'no' }), false);
  assert.equal(m.streamed({ chatId: 'chat-1', turn: 1, text: 'Because ' }), true);
  m.streamed({ chatId: 'chat-1', turn: 1, text: 'it is.' });
  let s = m.view();
  assert.equal(s.turns.length, 2);
  assert.deepEqual([s.turns[1].kind, s.turns[1].request, s.turns[1].answer, s.turns[1].streaming], ['question', 'why?', 'Because it is.', true]);
  assert.equal(s.working, 'answering…');
  m.endPending();
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r', planId: 'plan-1', runId: 'run-1', status: 'completed' }, { request: 'why?', question: true, answer: 'Because it is.' }] });
  s = m.view();
  assert.equal(s.turns.length, 2);
  assert.equal(s.turns[1].streaming, undefined);
  assert.equal(s.working, undefined);
  assert.equal(s.busy, undefined);
});

test('a plan being made shows the request at once; New chat forgets the chat', () => {
  const m = new ChatModel(rel);
  assert.equal(m.view().title, 'New chat');
  m.load({ chatId: 'chat-1', title: '', turns: [] });
  m.startPending('plan', 'rename Foo');
  const s = m.view();
  assert.deepEqual(s.turns.map((t) => [t.request, t.kind, t.status]), [['rename Foo', 'plan', 'planning']]);
  assert.equal(s.working, 'making a plan…');
  assert.equal(s.title, 'Untitled chat');
  m.clear();
  assert.deepEqual([m.view().turns.length, m.view().chatId, m.busyReason()], [0, undefined, undefined]);
  m.load({ chatId: 'chat-2', title: 'long', turns: [], condensed: [1, 2] });
  assert.match(m.view().condensed ?? '', /condenses turns 1, 2/);
});

test('context chips: the active editor\'s follows it until removed; chips are one per key; the sizes are the daemon\'s, in order; sending keeps the editor\'s only', () => {
  const m = new ChatModel(rel);
  assert.equal(m.setAuto({ key: 'file:a', label: 'a.txt', item: { uri: 'file:///ws/a.txt' } }), true);
  assert.equal(m.setAuto({ key: 'file:a', label: 'a.txt', item: { uri: 'file:///ws/a.txt' } }), false, 'the same editor: nothing to count again');
  assert.equal(m.addChip({ key: 'diff', label: 'git diff', item: { kind: 'diff' } }), true);
  assert.equal(m.addChip({ key: 'diff', label: 'git diff', item: { kind: 'diff' } }), false);
  assert.equal(m.addChip({ key: 'file:a', label: 'a.txt', item: { uri: 'file:///ws/a.txt' } }), false, 'the active editor is already sent');
  const chips = m.sending();
  assert.deepEqual(chips.map((c) => c.key), ['file:a', 'diff']);
  assert.deepEqual(m.view().chips.map((c) => c.size), ['… tokens', '… tokens'], 'no size before the daemon counts');
  m.sized(chips, { items: [{ title: 'a.txt', tokens: 1234 }, { title: 'git diff against HEAD', tokens: 0, error: 'not a git repository' }], total: 1234 });
  assert.deepEqual(m.view().chips.map((c) => [c.label, c.size, c.auto, c.bad]), [['a.txt', '1,234 tokens', true, false], ['git diff', 'cannot be sent', false, true]]);
  m.removeChip('file:a');
  assert.deepEqual(m.sending().map((c) => c.key), ['diff'], 'removed: the editor is not sent');
  m.setAuto({ key: 'file:b', label: 'b.txt', item: { uri: 'file:///ws/b.txt' } });
  assert.deepEqual(m.sending().map((c) => c.key), ['file:b', 'diff'], 'another editor is sent again');
  m.sent();
  assert.deepEqual(m.sending().map((c) => c.key), ['file:b']);
});

test('an approval shows in the turn whose run asks (or the plan being made), in the modal\'s words and order; answered, it goes', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'c', title: 't', turns: [{ request: 'r1', planId: 'plan-1', runId: 'run-1' }, { request: 'r2', planId: 'plan-2' }] });
  const req = { runId: 'run-1', stepId: 'test', tool: 'run_command', category: 'command', risk: 'high', title: 'Run go test ./...', detail: '', command: 'go test ./...',
    options: [{ optionId: 'a1', name: 'Allow once', kind: 'allow_once' }, { optionId: 'r1', name: 'Reject', kind: 'reject_once' }] } as const;
  assert.equal(m.approvalTurn('run-1'), 0);
  assert.equal(m.approvalTurn('run-9'), undefined, 'a run of no turn: the modal');
  assert.equal(m.approvalTurn('plan'), undefined, 'no plan being made in this chat');
  m.runEvent({ runId: 'run-2', event: { type: 'runStarted' }, state: { runId: 'run-2', planId: 'plan-2', status: 'running' } });
  assert.equal(m.approvalTurn('run-2'), 1, 'a run of turn 2\'s plan, before the chat records it');
  m.ask('x', 0, { ...req, options: [...req.options] } as never);
  const a = m.view().turns[0].approval!;
  assert.equal(a.message, 'agentd: Run go test ./...');
  assert.match(a.detail, /Command: go test \.\/\.\.\./);
  assert.deepEqual(a.buttons.map((b) => b.kind), ['reject_once', 'allow_once'], 'high risk: Reject first, as the modal');
  assert.equal(m.view().turns[1].approval, undefined);
  assert.equal(m.answered('x'), true);
  assert.equal(m.answered('x'), false, 'answered once');
  assert.equal(m.view().turns[0].approval, undefined);
  m.startPending('plan', 'r3');
  assert.equal(m.approvalTurn('plan'), 2, 'the planner\'s read: the turn being made');
  m.ask('y', 2, { ...req, runId: 'plan', options: [...req.options] } as never);
  assert.ok(m.view().turns[2].approval, 'shown in the pending turn');
  m.endPending();
  m.startPending('revise', 'shorter', 1);
  assert.equal(m.approvalTurn('plan'), 1, 'a revision\'s read: the turn revised');
});

test('a turn\'s tokens, when the daemon tells them', () => {
  assert.equal(tokenWords(undefined), undefined);
  assert.equal(tokenWords({ input: 1200, output: 300 }), '1,200 in · 300 out tokens');
  const v = turnView(0, { request: 'q', question: true, answer: 'a', tokens: { input: 40, output: 2 } } as ChatTurn, undefined, undefined, [], rel);
  assert.equal(v.tokens, '40 in · 2 out tokens');
});

test('a turn\'s cost beside its tokens, when the daemon knows it', () => {
  assert.equal(tokenWords({ input: 1200, output: 300, cost: 0.004 }), '1,200 in · 300 out tokens · $0.004');
  assert.equal(tokenWords({ input: 1, output: 1, cost: 0 }), '1 in · 1 out tokens · $0');
  assert.deepEqual([costWords(1.5), costWords(0.12345), costWords(0.01234), costWords(0.00001)], ['$1.50', '$0.12', '$0.0123', '<$0.0001']);
});

test('guidance: the turn\'s guidance lines, and the daemon\'s answer to a message sent as guidance', () => {
  assert.equal(guidanceWords(undefined), undefined);
  assert.deepEqual(guidanceWords(['use tabs', 'keep the header']), ['guidance: use tabs', 'guidance: keep the header']);
  const v = turnView(0, { request: 'r', planId: 'p', runId: 'run-1', status: 'running', guidance: ['use tabs'] } as ChatTurn, undefined, undefined, [], rel);
  assert.deepEqual(v.guidance, ['guidance: use tabs']);
  assert.equal(guidedWords({ delivered: true, deliveredTo: ['run run-1'] }).text, 'Guidance delivered to the run run-1: its agent reads it before its next model call.');
  const q = guidedWords({ delivered: false, reason: 'no agent step is running' });
  assert.equal(q.level, 'warn');
  assert.match(q.text, /no agent step is running.*Queued instead/);
});

test('Stop shows while a turn of the chat is going that no request of the view owns (planned from the queue, or a run)', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'c1', title: 't', turns: [{ request: 'a', planId: 'p1', status: 'completed', runId: 'r0' } as ChatTurn] });
  assert.equal(m.view().stoppable, false, 'nothing going');
  m.load({ chatId: 'c1', title: 't', turns: [{ request: 'a', status: 'planning' } as ChatTurn] });
  assert.equal(m.view().stoppable, true, 'a turn planned from the queue');
  m.load({ chatId: 'c1', title: 't', turns: [{ request: 'a', planId: 'p1', runId: 'r1', status: 'running' } as ChatTurn] });
  assert.equal(m.view().stoppable, true, 'a run');
  m.load({ chatId: 'c1', title: 't', turns: [] });
  m.startPending('ask', 'why?');
  assert.equal(m.view().stoppable, true, 'a request of the view');
  assert.equal(stoppedWords(['planning']), 'Stopped: the planning.');
  assert.equal(stoppedWords(['run run-1']), 'Stopped: the run run-1.');
  assert.match(stoppedWords([]), /nothing to stop/);
});

// Checkpoints (docs/protocol.md "Checkpoints"): restore to before a turn, rewound turns, branches.
const filesPart = (over: Record<string, unknown> = {}) => ({
  applied: true, reverted: ['file:///ws/a.txt'], conflicts: [], overwritten: [], leftAlone: [], kept: [], runs: ['run-1'], turns: [0], created: [], deleted: [],
  diffs: [{ uri: 'file:///ws/a.txt', path: 'a.txt', diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1 @@\n-agent line\n mine\n' }], ...over,
});

test('a restore\'s dry run in words: the runs and turns taken back, each file\'s diff, the turns rewound; restore or cancel', () => {
  const p = restorePreview('chat-1', 0, 'both', { chatId: 'chat-1', turn: 0, what: 'both', dryRun: true, applied: true, files: filesPart({ dryRun: true }), conversation: { turns: [0, 1] } }, rel);
  assert.equal(p.lines[0], 'Restore to before turn 1 (files and conversation): nothing has changed yet.');
  assert.ok(p.lines.includes('Files: takes back run run-1 (turn 1) as one undo; your own lines stay.'), p.lines.join('\n'));
  assert.ok(p.lines.includes('Conversation: turns 1, 2 rewound: kept in the chat, not told to the model.'), p.lines.join('\n'));
  assert.deepEqual(p.diffs, [{ uri: 'file:///ws/a.txt', path: 'a.txt', diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1 @@\n-agent line\n mine\n' }]);
  assert.deepEqual(p.choices.map((c) => c.onConflict), ['', 'cancel']);
});

test('a restore that conflicts offers keep my lines / overwrite / cancel, with what overwrite writes', () => {
  const conflict = { uri: 'file:///ws/a.txt', path: 'a.txt', reason: 'changed', message: 'you changed lines the agent wrote', diff: '-yours\n+before\n' };
  const p = restorePreview('chat-1', 1, 'files', { chatId: 'chat-1', turn: 1, what: 'files', dryRun: true, applied: false, files: filesPart({ applied: false, diffs: [], conflicts: [conflict] }) }, rel);
  assert.deepEqual(p.choices.map((c) => c.onConflict), ['keep', 'overwrite', 'cancel']);
  assert.ok(p.choices[0].title.includes('a.txt'));
  assert.ok(p.lines.includes('Conflict: a.txt: you changed lines the agent wrote'), p.lines.join('\n'));
  assert.deepEqual(p.diffs, [{ uri: 'file:///ws/a.txt', path: 'a.txt', diff: '-yours\n+before\n', conflict: true }]);
});

test('an applied restore keeps its way back; the turn shows it; rewound turns say so', () => {
  const wb = { method: 'agentd/undo/restore', params: { id: 'u1' } };
  const cw = { method: 'agentd/chat/unrewind', params: { chatId: 'chat-1', rewindId: 'rw-1' } };
  const w = restoredWords(0, { chatId: 'chat-1', turn: 0, what: 'both', applied: true, files: filesPart({ undoId: 'u1', wayBack: wb }), conversation: { rewindId: 'rw-1', turns: [0], wayBack: cw } }, rel);
  assert.equal(w.text, 'Restored to before turn 1; 1 file taken back; turn 1 rewound (not told to the model); "Undo the restore" on the turn takes it back.');
  assert.deepEqual(w.back, { files: wb, conversation: cw });
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r1', planId: 'p1', runId: 'run-1', status: 'completed', undone: true, rewound: true, rewindId: 'rw-1' }, { request: 'r2' }] });
  m.restored = { chatId: 'chat-1', turn: 0, what: 'both', ...w.back };
  const v = m.view();
  assert.equal(v.turns[0].rewound, true);
  assert.equal(v.turns[0].rewindId, 'rw-1');
  assert.equal(v.turns[0].wayBack, 'Restored to before this turn (files and conversation).');
  assert.equal(v.turns[1].wayBack, undefined);
  assert.equal(v.turns[1].rewound, false);
  // Another chat's restore is not offered here.
  m.restored = { ...m.restored, chatId: 'chat-2' };
  assert.equal(m.view().turns[0].wayBack, undefined);
});

test('the dry run shows in its turn, or above the input when it is another chat\'s (a branch restoring its origin\'s files)', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r1', runId: 'run-1' }] });
  m.preview = restorePreview('chat-1', 0, 'files', { chatId: 'chat-1', turn: 0, what: 'files', dryRun: true, applied: true, files: filesPart() }, rel);
  assert.equal(m.view().turns[0].preview?.turn, 0);
  assert.equal(m.view().preview, undefined);
  m.titles.set('chat-1', 'the origin');
  m.load({ chatId: 'chat-2', title: 'b', turns: [], forkedFrom: { chatId: 'chat-1', turn: 0 } });
  assert.equal(m.view().preview?.otherChat, 'the origin');
});

test('editing a message branches: its text and turn; the header says whose branch, the origin lists its branches; runs after the turn ask about the files', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 'origin', turns: [{ request: 'first' }, { request: 'second', runId: 'run-2' }, { request: '?', question: true, answer: 'a' }], branches: [{ chatId: 'chat-2', turn: 1 }] });
  assert.equal(m.needsTitles(), true);
  m.setTitles([{ chatId: 'chat-2', title: 'the branch', createdAt: '', updatedAt: '', turns: 1 }]);
  assert.equal(m.needsTitles(), false);
  assert.deepEqual(m.view().branches, [{ chatId: 'chat-2', title: 'the branch', turn: 2 }]);
  assert.equal(m.view().branchOf, undefined);
  assert.deepEqual(m.edit(2), { chatId: 'chat-1', turn: 2, request: '?', question: true });
  assert.deepEqual(m.edit(1), { chatId: 'chat-1', turn: 1, request: 'second', question: false });
  assert.deepEqual(m.view().editing, { turn: 2, chatId: 'chat-1' });
  assert.equal(m.runsFrom(1), true);
  assert.equal(m.runsFrom(2), false);
  m.chat!.turns[1].undone = true;
  assert.equal(m.runsFrom(0), false, 'an undone run wrote nothing to take back');
  m.titles.set('chat-1', 'origin');
  m.load({ chatId: 'chat-2', title: 'the branch', turns: [{ request: 'first' }], forkedFrom: { chatId: 'chat-1', turn: 1 } });
  assert.equal(m.view().editing, undefined, 'the edit was of the other chat');
  assert.deepEqual(m.view().branchOf, { chatId: 'chat-1', title: 'origin', turn: 2 });
  m.clear();
  assert.equal(m.editing, undefined);
});

test('while a turn is going a plan message is queued in the core; the queue is listed in order; a daemon without the queue refuses with the reason', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r1', planId: 'p1', runId: 'run-1', status: 'running' }], queued: [{ queueId: 'q1', request: 'then a test', when: 'after', createdAt: '' }, { queueId: 'q2', request: 'now this', when: 'now', createdAt: '' }] });
  const v = m.view();
  assert.equal(v.queues, true);
  assert.deepEqual(v.queued, [{ queueId: 'q1', request: 'then a test', now: false }, { queueId: 'q2', request: 'now this', now: true }]);
  assert.ok(!/not queued/.test(v.busy!), v.busy);
  m.canQueue = false;
  assert.equal(m.view().queues, false);
  assert.match(m.view().busy!, /turn 1 is still running .*Messages are not queued by this agentd/);
  // Nothing going: sent at once, not queued.
  m.canQueue = true;
  m.chat!.turns[0].status = 'completed';
  assert.equal(m.view().queues, false);
  assert.equal(m.view().busy, undefined);
});

test('a plan turn recorded when planning starts shows the planner\'s activity while it is planned, and counts as going', () => {
  const m = new ChatModel(rel);
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r1', status: 'planning' }] });
  assert.equal(m.streamed({ chatId: 'chat-1', turn: 0, activity: 'mapping the repository' }), true);
  assert.equal(m.streamed({ chatId: 'chat-2', turn: 0, activity: 'elsewhere' }), false);
  m.streamed({ chatId: 'chat-1', turn: 0, activity: 'exploring (round 1 of 6): Read a.go' });
  const v = m.view();
  assert.deepEqual(v.turns[0].activity, ['mapping the repository', 'exploring (round 1 of 6): Read a.go']);
  assert.equal(v.turns[0].status, 'planning');
  assert.match(v.busy!, /turn 1 is still being planned/);
  assert.equal(v.queues, true);
  // Planning failed: what the planner did until then stays under the turn.
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r1', status: 'failed', failure: 'no plan: the model failed' }] });
  assert.equal(m.view().turns[0].activity?.length, 2);
  // The plan made: the activity is no longer drawn.
  m.load({ chatId: 'chat-1', title: 't', turns: [{ request: 'r1', planId: 'p1', planTitle: 'P' }] });
  assert.equal(m.view().turns[0].activity, undefined);
});
