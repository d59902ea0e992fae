import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ChangeSet, FileInfo, applyPatchText, approvalPrompt, fileLenses, followEdit, hunkAt, hunkLenses, asksReason, moveEdit,
  nextHunkLine, hunkSpan, parsePatch, isOpen, statusText, viewHunks, countPending, replayEdits, lensWindow, lensWindowStale, inWindow,
  fileOpenUnits, ghostText, hoverDiff, agentOnly, activeRun, runConflict, logLine, missingModel, modelSpec, keyEnv, stepNotes, stepIcons, stepDescription, waitingOnUser, RestartGate,
} from '../../src/model';

// greet.go before and after renaming Hello to Greet: two hunks, as the server sends them
// (ranges from the unified header: 0-based start, context included).
const patch = `--- a/greet/greet.go
+++ b/greet/greet.go
@@ -3,8 +3,8 @@
 
 import "strings"
 
-// Hello returns a greeting for name.
-func Hello(name string) string {
+// Greet returns a greeting for name.
+func Greet(name string) string {
 	name = strings.TrimSpace(name)
 	if name == "" {
 		name = "world"
@@ -16,7 +16,7 @@
 func HelloAll(names []string) string {
 	var b strings.Builder
 	for _, n := range names {
-		b.WriteString(Hello(n))
+		b.WriteString(Greet(n))
 		b.WriteByte('\\n')
 	}
 	return b.String()
`;
const r = (a: number, b: number) => ({ start: { line: a, character: 0 }, end: { line: b, character: 0 } });
const file: FileInfo = {
  uri: 'file:///w/greet/greet.go', op: 'modify', baseHash: 'x', status: 'pending', patch,
  hunks: [
    { id: 'h1', status: 'pending', oldRange: r(2, 10), newRange: r(2, 10), wordDiff: [
      { kind: 'delete', range: { start: { line: 5, character: 3 }, end: { line: 5, character: 8 } } },
      { kind: 'insert', range: { start: { line: 5, character: 3 }, end: { line: 5, character: 8 } } },
      { kind: 'delete', range: { start: { line: 6, character: 5 }, end: { line: 6, character: 10 } } },
      { kind: 'insert', range: { start: { line: 6, character: 5 }, end: { line: 6, character: 10 } } },
    ] },
    { id: 'h2', status: 'pending', oldRange: r(15, 22), newRange: r(15, 22) },
  ],
  counts: { pending: 2, accepted: 0, rejected: 0, stale: 0, total: 2 },
};
const cs = (review: 'before' | 'after'): ChangeSet => ({ id: 'cs-1', stepId: 'rename', status: 'pending', review, files: [file], counts: file.counts, reasonToModel: false });

const oldText = `// Package greet makes greetings.
package greet

import "strings"

// Hello returns a greeting for name.
func Hello(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "world"
	}
	return "Hello, " + name + "!"
}

// HelloAll greets several people, one per line.
func HelloAll(names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(Hello(n))
		b.WriteByte('\\n')
	}
	return b.String()
}
`;
const newText = oldText.replace('// Hello returns', '// Greet returns').replace('func Hello(', 'func Greet(').replace('WriteString(Hello(', 'WriteString(Greet(');

test('parsePatch reads headers and line kinds', () => {
  const hs = parsePatch(patch);
  assert.equal(hs.length, 2);
  assert.deepEqual([hs[0].oldStart, hs[0].oldLines, hs[0].newStart, hs[0].newLines], [3, 8, 3, 8]);
  assert.deepEqual(hs[0].lines.map((l) => l.kind).join(''), '   --++   ');
  assert.equal(hs[1].lines[3].text, '\t\tb.WriteString(Hello(n))');
});

test('before mode: deleted lines are in the buffer, inserted lines are ghosts', () => {
  const [h1, h2] = viewHunks(cs('before'), file);
  assert.equal(h1.start, 2);
  assert.equal(h1.length, 8);
  assert.deepEqual(h1.marks, [{ offset: 3, kind: 'removed' }, { offset: 4, kind: 'removed' }]);
  assert.deepEqual(h1.ghosts, [{ offset: 5, kind: 'added', lines: ['// Greet returns a greeting for name.', 'func Greet(name string) string {'] }]);
  assert.equal(h1.focus, 3);
  // Word diff: only the deleted words show in the old text, relative to the hunk.
  assert.deepEqual(h1.words, [{ offset: 3, start: 3, end: 8, kind: 'delete' }, { offset: 4, start: 5, end: 10, kind: 'delete' }]);
  // The buffer's line at the mark is the deleted one.
  assert.equal(oldText.split('\n')[h1.start + h1.marks[0].offset], '// Hello returns a greeting for name.');
  assert.equal(oldText.split('\n')[h2.start + h2.focus], '\t\tb.WriteString(Hello(n))');
});

test('a hunk is laid out at the wire\'s at (where it starts now), its marks and words relative to it', () => {
  // The server says the first hunk starts 4 lines lower now (hunks above it were accepted): the
  // layout moves as a block; the word ranges, in the range's coordinates, stay on their lines.
  const moved: FileInfo = { ...file, hunks: file.hunks.map((h, i) => (i === 0 ? { ...h, at: { line: 6, character: 0 } } : h)) };
  const [h1, h2] = viewHunks(cs('before'), moved);
  const [w1, w2] = viewHunks(cs('before'), file);
  assert.equal(h1.start, 6);
  assert.equal(h1.length, w1.length);
  assert.deepEqual(h1.marks, w1.marks);
  assert.deepEqual(h1.words, w1.words);
  assert.equal(h2.start, w2.start, 'a hunk without at keeps its range');
});

test('hunkSpan labels a hunk with the lines its text spans now: the new text once written in', () => {
  // A hunk that turns 3 lines into 6, starting on line 16 (0-based) now.
  const h = { id: 'h', status: 'pending' as const, oldRange: { start: { line: 16, character: 0 }, end: { line: 19, character: 0 } },
    newRange: { start: { line: 16, character: 0 }, end: { line: 22, character: 0 } }, at: { line: 16, character: 0 } };
  assert.deepEqual(hunkSpan('before', h), { start: 16, length: 3 }, 'pending in before mode: the old text');
  assert.deepEqual(hunkSpan('before', { ...h, status: 'accepted' }), { start: 16, length: 6 }, 'accepted in before mode: the new text');
  assert.deepEqual(hunkSpan('before', { ...h, status: 'rejected' }), { start: 16, length: 3 });
  assert.deepEqual(hunkSpan('after', h), { start: 16, length: 6 }, 'pending in after mode: the new text');
  assert.deepEqual(hunkSpan('after', { ...h, status: 'rejected' }), { start: 16, length: 3 }, 'rejected in after mode: the old text');
  assert.deepEqual(hunkSpan('before', { ...h, status: 'stale' }), { start: 16, length: 3 });
});

test('after mode: inserted lines are in the buffer, deleted lines are ghosts', () => {
  const [h1] = viewHunks(cs('after'), file);
  assert.deepEqual(h1.marks, [{ offset: 3, kind: 'added' }, { offset: 4, kind: 'added' }]);
  assert.equal(h1.ghosts[0].kind, 'removed');
  assert.equal(h1.ghosts[0].offset, 3);
  assert.deepEqual(h1.words.map((w) => w.kind), ['insert', 'insert']);
  assert.equal(newText.split('\n')[h1.start + h1.marks[1].offset], 'func Greet(name string) string {');
});

test('typing above a hunk moves it; typing inside marks it touched; below leaves it', () => {
  const hs = viewHunks(cs('before'), file);
  // A new line typed at the top of the file.
  assert.equal(followEdit(hs, { range: r(0, 0), text: '// note\n' }), true);
  assert.deepEqual(hs.map((h) => h.start), [3, 16]);
  assert.deepEqual(hs.map((h) => h.touched), [false, false]);
  // Typing on a line (no newline) above the first hunk moves nothing.
  assert.equal(followEdit(hs, { range: { start: { line: 1, character: 2 }, end: { line: 1, character: 2 } }, text: 'x' }), false);
  // Deleting two lines above the second hunk, inside the first hunk's span: touched, shifted.
  assert.equal(followEdit(hs, { range: r(8, 10), text: '' }), true);
  assert.equal(hs[0].touched, true);
  assert.equal(hs[1].start, 14);
  assert.equal(hs[1].touched, false);
  // Below every hunk.
  assert.equal(followEdit(hs, { range: r(40, 40), text: 'tail\n' }), false);
  assert.deepEqual(hs.map((h) => h.start), [3, 14]);
});

test('replayEdits moves a server layout of an older buffer version by the edits made since', () => {
  // The user typed two lines at the top (versions 2 and 3) and one inside the second hunk
  // (version 4); the server's notice was computed on version 2.
  const log = [
    { version: 2, changes: [{ range: r(0, 0), text: 'a\n' }] },
    { version: 3, changes: [{ range: r(0, 0), text: 'b\n' }] },
    { version: 4, changes: [{ range: { start: { line: 18, character: 1 }, end: { line: 18, character: 1 } }, text: 'x' }] },
  ];
  const server = viewHunks(cs('before'), file).map((h) => ({ ...h, start: h.start + 1 })); // laid out on version 2
  const keep = replayEdits(server, log, 2);
  assert.deepEqual(server.map((h) => h.start), [4, 17]);
  assert.deepEqual(server.map((h) => h.touched), [false, true]);
  assert.deepEqual(keep.map((e) => e.version), [3, 4]);
  // A notice on the newest version moves nothing and keeps no entries.
  const same = viewHunks(cs('before'), file);
  assert.deepEqual(replayEdits(same, log, 4), []);
  assert.deepEqual(same.map((h) => h.start), viewHunks(cs('before'), file).map((h) => h.start));
});

test('lenses go to hunks near the view; the window moves only when the view nears its edge', () => {
  assert.equal(lensWindow([]), undefined, 'no editor shows it: every hunk');
  // A 41-line view at the top of a file with a hunk every 10 lines: one screen below it.
  const win = lensWindow([{ start: 0, end: 40 }])!;
  assert.deepEqual(win, { lo: 0, hi: 81, margin: 41 });
  const hunks = Array.from({ length: 200 }, (_, i) => ({ start: i * 10 + 2, length: 7 }));
  assert.equal(hunks.filter((h) => inWindow(h, win)).length, 8);
  assert.equal(hunks.filter((h) => inWindow(h, undefined)).length, 200);
  assert.equal(lensWindowStale(win, [{ start: 10, end: 50 }]), false, 'a small scroll keeps the lenses');
  assert.equal(lensWindowStale(win, [{ start: 21, end: 61 }]), true, 'near the edge: ask again');
  const mid = lensWindow([{ start: 1000, end: 1040 }])!;
  assert.deepEqual(mid, { lo: 959, hi: 1081, margin: 41 });
  assert.equal(lensWindowStale(mid, [{ start: 970, end: 1010 }]), true, 'scrolled up near the top edge');
  assert.equal(lensWindowStale(mid, [{ start: 985, end: 1025 }]), false);
  // A page down (one screen) stays within the lenses already there.
  assert.equal(hunks.filter((h) => h.start >= 1041 && h.start <= 1081).every((h) => inWindow(h, mid)), true);
  // A tiny view still gets LENS_MIN_MARGIN lines around it; an explicit margin wins.
  assert.deepEqual(lensWindow([{ start: 100, end: 104 }]), { lo: 80, hi: 124, margin: 20 });
  assert.deepEqual(lensWindow([{ start: 0, end: 40 }], 200), { lo: 0, hi: 240, margin: 200 });
});

test('followEdit with many hunks visits only those from the edit down', () => {
  const many = Array.from({ length: 200 }, (_, i) => ({ ...viewHunks(cs('before'), file)[0], id: `h${i}`, start: i * 10, length: 8 }));
  followEdit(many, { range: r(1000, 1000), text: 'a\n' });
  assert.equal(many[99].start, 990);
  assert.equal(many[100].start, 1001);
  assert.equal(many[199].start, 1991);
});

test('lenses: Accept | Reject per pending hunk, no Accept on a stale one, file lenses on top', () => {
  const [h1, h2] = viewHunks(cs('before'), file);
  assert.deepEqual(hunkLenses(h1).map((l) => l.title), ['Accept', 'Reject']);
  assert.equal(hunkLenses(h1)[0].line, 5);
  assert.deepEqual(hunkLenses(h1)[0].args, [{ changeId: 'cs-1', uri: file.uri, hunkId: 'h1', line: 5 }]);
  h2.status = 'stale';
  assert.ok(!hunkLenses(h2).some((l) => l.command === 'agentd.acceptHunk'));
  assert.match(hunkLenses(h2)[0].title, /Stale/);
  // A stale hunk offers Re-propose (agentd/changes/repropose) and Reject.
  assert.deepEqual(hunkLenses(h2).map((l) => l.command), ['', 'agentd.reproposeHunk', 'agentd.rejectHunk']);
  assert.deepEqual(hunkLenses(h2)[1].args, [{ changeId: 'cs-1', uri: file.uri, hunkId: 'h2', line: 18 }]);
  // Typed into and not answered yet: Updating…, no Re-propose and no Accept until the server says.
  h2.touched = true;
  assert.deepEqual(hunkLenses(h2).map((l) => l.title), ['$(sync) Updating…', 'Reject']);
  h2.touched = false;
  assert.deepEqual(fileLenses(file.uri, [h1, h2]).map((l) => l.title), ['Accept All (1)', 'Reject All (2)', 'Open Diff']);
  h1.status = 'accepted';
  h2.status = 'accepted';
  assert.deepEqual(fileLenses(file.uri, [h1, h2]), []);
});

test('hunkAt and nextHunkLine find hunks by line', () => {
  const hs = viewHunks(cs('before'), file);
  assert.equal(hunkAt(hs, 5)?.id, 'h1');
  assert.equal(hunkAt(hs, 12), undefined);
  assert.equal(hunkAt(hs, 18)?.id, 'h2');
  assert.equal(nextHunkLine(hs, 0, 1), 5);
  assert.equal(nextHunkLine(hs, 5, 1), 18);
  assert.equal(nextHunkLine(hs, 18, 1), 5);
  assert.equal(nextHunkLine(hs, 5, -1), 18);
});

test('applyPatchText: forward, reverse, chosen hunks, and after the user typed above', () => {
  assert.equal(applyPatchText(oldText, patch, undefined, 'forward'), newText);
  assert.equal(applyPatchText(newText, patch, undefined, 'reverse'), oldText);
  const onlySecond = applyPatchText(oldText, patch, [false, true], 'forward');
  assert.ok(onlySecond.includes('func Hello(') && onlySecond.includes('WriteString(Greet('));
  const typed = '// note\n// more\n' + oldText;
  assert.equal(applyPatchText(typed, patch, undefined, 'forward'), '// note\n// more\n' + newText);
  // A hunk whose lines are gone is left out rather than put in the wrong place.
  const gone = oldText.replace('func Hello(name string) string {', 'func Other() string {');
  assert.ok(applyPatchText(gone, patch, undefined, 'forward').includes('func Other()'));
});

test('moveEdit moves a step one place', () => {
  const plan = { id: 'p', version: 1, steps: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] };
  assert.deepEqual(moveEdit(plan, 'b', -1), { op: 'move', stepId: 'b' });
  assert.deepEqual(moveEdit(plan, 'c', -1), { op: 'move', stepId: 'c', after: 'a' });
  assert.deepEqual(moveEdit(plan, 'a', 1), { op: 'move', stepId: 'a', after: 'b' });
  assert.equal(moveEdit(plan, 'a', -1), undefined);
  assert.equal(moveEdit(plan, 'c', 1), undefined);
});

test('approvalPrompt shows the command and folder and orders the four options', () => {
  const p = approvalPrompt({ runId: 'r', stepId: 'test', tool: 'run_command', category: 'command', risk: 'high', title: 'Run go test ./...', command: 'go test ./...', cwd: '/w',
    options: [{ optionId: 'ra', name: 'Always reject', kind: 'reject_always' }, { optionId: 'ao', name: 'Allow once', kind: 'allow_once' },
      { optionId: 'ro', name: 'Reject', kind: 'reject_once' }, { optionId: 'aa', name: 'Always allow', kind: 'allow_always' }] });
  assert.match(p.detail, /Command: go test \.\/\.\.\./);
  assert.match(p.detail, /Folder: \/w/);
  const rel = approvalPrompt({ runId: 'r', stepId: 't', category: 'command', risk: 'high', title: 'x', command: 'ls', cwd: '.', options: [] }, '/home/me/proj');
  assert.match(rel.detail, /Folder: \/home\/me\/proj$/m);
  assert.deepEqual(p.buttons.map((b) => b.optionId), ['ro', 'ao', 'aa', 'ra'], 'high risk: Reject is the default');
  const d = approvalPrompt({ runId: 'r', stepId: 'rm', category: 'delete', risk: 'medium', title: 'Delete old.txt', detail: 'old.txt', options: [] });
  assert.match(d.detail, /old\.txt/);
});

test('approvalPrompt: one Reject, which Escape answers (issue 35 point 6)', () => {
  const options = [{ optionId: 'ra', name: 'Always reject', kind: 'reject_always' as const }, { optionId: 'ao', name: 'Allow once', kind: 'allow_once' as const },
    { optionId: 'ro', name: 'Reject', kind: 'reject_once' as const }, { optionId: 'aa', name: 'Always allow', kind: 'allow_always' as const }];
  const low = approvalPrompt({ runId: 'r', stepId: 'w', category: 'write', risk: 'medium', title: 'Write a.txt', options });
  assert.deepEqual(low.buttons.filter((b) => b.isCloseAffordance).map((b) => b.optionId), ['ro'], 'Reject is the close affordance: VS Code adds no Cancel');
  assert.match(low.detail, /Escape rejects it this time/);
  const high = approvalPrompt({ runId: 'r', stepId: 't', category: 'command', risk: 'high', title: 'Run x', command: 'x', options });
  assert.equal(high.buttons[0].optionId, 'ro', 'high risk: Reject stays the default button');
  assert.match(high.detail, /Escape rejects it this time \(Cancel is the same\)/);
});

test('statusText and counts', () => {
  assert.equal(countPending([cs('before')]), 2);
  assert.equal(isOpen(cs('before')), true);
  const decidedCounts = { pending: 0, accepted: 1, rejected: 1, stale: 0, total: 2 };
  assert.equal(isOpen({ ...cs('before'), status: 'partial', counts: decidedCounts, files: [{ ...file, counts: decidedCounts, hunks: file.hunks.map((h, i) => ({ ...h, status: i ? 'rejected' : 'accepted' })) }] }), false);
  assert.equal(statusText(undefined, 2), '$(hubot) agentd  $(diff) 2 pending');
  const run = { runId: 'r', planId: 'p', status: 'running', progress: 0.5, completedSteps: 2, failedSteps: 0, skippedSteps: 1, totalSteps: 6, currentSteps: [], etaMs: 4000 };
  assert.equal(statusText(run, 0), '$(sync~spin) agentd 3/6 · 4.0 s left');
  assert.equal(statusText({ ...run, status: 'failed' }, 1), '$(error) agentd 3/6 failed  $(diff) 1 pending');
  // Waiting for the user: no time left shown (it would stand still), but what the run waits for.
  assert.equal(statusText({ ...run, currentSteps: ['a'] }, 1, true), '$(bell) agentd 3/6 · waiting for you  $(diff) 1 pending');
  assert.equal(asksReason({ reasonToModel: true }), true);
  assert.equal(asksReason({ reasonToModel: false }), false);
  assert.equal(asksReason(undefined), false);
});

test('ghost text of a multi-line proposal shows every line', () => {
  const [h1] = viewHunks(cs('before'), file);
  const t = ghostText(h1.ghosts[0]);
  assert.equal(t, '+ // Greet returns a greeting for name.  ⏎  func Greet(name string) string {');
  const three = ghostText({ offset: 0, kind: 'added', lines: ['a', '\tb  ', 'c'] });
  for (const l of ['a', 'b', 'c']) assert.ok(three.includes(l), three);
  assert.ok(!three.includes('more line'), three);
});

test('the hover lists context as context, not as removed and added', () => {
  const [h1] = viewHunks(cs('before'), file);
  const d = hoverDiff(h1).split('\n');
  assert.deepEqual(d.filter((l) => l.startsWith('-')), ['-// Hello returns a greeting for name.', '-func Hello(name string) string {']);
  assert.deepEqual(d.filter((l) => l.startsWith('+')), ['+// Greet returns a greeting for name.', '+func Greet(name string) string {']);
  assert.ok(d.includes(' import "strings"'), d.join('\n'));
  // Without a patch: the texts, with their common lines as context.
  const t = hoverDiff({ lines: [], oldText: 'a\nb\nc\n', newText: 'a\nB\nc\n' });
  assert.equal(t, ' a\n-b\n+B\n c');
});

test('after mode: an editor differing from the disk by the agent\'s change alone is saved', () => {
  assert.equal(agentOnly(oldText, newText, patch, undefined, 'forward'), true, 'proposed: disk + the change');
  assert.equal(agentOnly(oldText, '// mine\n' + newText, patch, undefined, 'forward'), false, 'the user\'s edits too');
  assert.equal(agentOnly(oldText, oldText, patch, undefined, 'forward'), false, 'nothing unsaved');
  // The first hunk rejected: the editor has it taken out; the disk has the whole change.
  const taken = applyPatchText(newText, patch, [true, false], 'reverse');
  assert.equal(agentOnly(newText, taken, patch, [true, false], 'reverse'), true);
});

test('one run at a time: the active run, and the -32010 answer', () => {
  const runs = [{ runId: 'r3', status: 'completed' }, { runId: 'r2', status: 'paused' }, { runId: 'r1', status: 'running' }];
  assert.equal(activeRun(runs)?.runId, 'r2');
  assert.equal(activeRun([{ runId: 'r', status: 'cancelled' }]), undefined);
  assert.deepEqual(runConflict({ code: -32010, message: 'run r2 is paused: resume it or cancel it first', data: { runId: 'r2', status: 'paused' } }), { runId: 'r2', status: 'paused' });
  assert.equal(runConflict({ code: -32003, message: 'x' }), undefined);
  assert.equal(runConflict(new Error('x')), undefined);
});

test('the daemon\'s log lines keep their level', () => {
  assert.deepEqual(logLine('time=2026-11-27T03:00:00.000Z level=INFO msg="daemon started" root=/w'), { level: 'info', text: 'daemon started root=/w' });
  assert.deepEqual(logLine('time=2026-11-27T03:00:00.000Z level=WARN msg=slow'), { level: 'warn', text: 'slow' });
  assert.equal(logLine('time=x level=ERROR msg="boom"').level, 'error');
  assert.equal(logLine('level=DEBUG msg=x').level, 'debug');
  assert.deepEqual(logLine('{"time":"t","level":"INFO","msg":"hi","n":2}'), { level: 'info', text: 'hi n=2' });
  assert.deepEqual(logLine('panic: oops'), { level: 'info', text: 'panic: oops' });
});

test('model settings, the key\'s variable, and what New Plan says is missing', () => {
  assert.deepEqual(modelSpec('openai:gpt-4o-mini', '', ''), { provider: 'openai', model: 'gpt-4o-mini', baseUrl: undefined });
  assert.deepEqual(modelSpec('claude-x', 'anthropic', 'http://h/v1'), { provider: 'anthropic', model: 'claude-x', baseUrl: 'http://h/v1' });
  assert.equal(modelSpec('', 'openai', ''), undefined);
  assert.equal(keyEnv('anthropic'), 'ANTHROPIC_API_KEY');
  assert.equal(keyEnv('openai'), 'OPENAI_API_KEY');
  const none = missingModel({ model: '', provider: '', baseUrl: '', hasKey: false, env: {} });
  assert.equal(none.length, 1);
  assert.match(none[0], /agentd\.model/);
  assert.match(none[0], /AGENTD_MODEL/);
  const key = missingModel({ model: 'openai:gpt-4o', provider: '', baseUrl: '', hasKey: false, env: {} });
  assert.match(key[0], /agentd: Set API Key/);
  assert.match(key[0], /OPENAI_API_KEY/);
  assert.deepEqual(missingModel({ model: 'openai:gpt-4o', provider: '', baseUrl: '', hasKey: true, env: {} }), []);
  assert.deepEqual(missingModel({ model: '', provider: '', baseUrl: '', hasKey: false, env: { AGENTD_MODEL: 'anthropic:c', ANTHROPIC_API_KEY: 'k' } }), []);
  assert.deepEqual(missingModel({ model: 'openai:fake', provider: '', baseUrl: 'http://127.0.0.1:1/v1', hasKey: false, env: {} }), [], 'a local server needs no key');
  assert.deepEqual(missingModel({ model: 'ollama:q', provider: '', baseUrl: '', hasKey: false, env: {} }), []);
});

test('the wire\'s counts and whole files decide what is pending; step notes say which rule allowed it', () => {
  const counted: ChangeSet = { ...cs('before'), counts: { pending: 0, accepted: 1, rejected: 1, stale: 0, total: 2 } };
  assert.equal(countPending([counted]), 0, 'the set\'s counts, not the hunks listed');
  assert.equal(isOpen(counted), false);
  // A whole file (a create) listing two hunks for display is one unit: the wire counts it so.
  const one = { pending: 1, accepted: 0, rejected: 0, stale: 0, total: 1 };
  const create: ChangeSet = { id: 'c2', status: 'pending', review: 'before', reasonToModel: false, counts: one, files: [{ ...file, op: 'create', whole: true, status: 'pending', hunks: file.hunks, counts: one }] };
  assert.equal(countPending([create]), 1);
  assert.equal(fileOpenUnits(create.files[0]), 1);
  assert.equal(isOpen(create), true);
  const done = { pending: 0, accepted: 1, rejected: 0, stale: 0, total: 1 };
  const decided: ChangeSet = { ...create, status: 'accepted', counts: done, files: [{ ...create.files[0], status: 'accepted', counts: done }] };
  assert.equal(isOpen(decided), false, 'its hunks still say pending; the counts say decided');
  assert.deepEqual(stepNotes({ id: 'test', status: 'completed', allowedBy: { ruleId: 'rule-2', command: 'go test ./...' } }), ['allowed by rule-2 (`go test ./...`)']);
  assert.deepEqual(stepNotes({ id: 'x', status: 'completed', reason: 'r', allowedBy: { ruleId: 'rule-1' } }), ['r', 'allowed by rule-1']);
  assert.ok(stepIcons.retrying && stepIcons.waiting, 'retrying and waiting have icons');
});

test('the approval modal\'s default (first) button is not allow for a high-risk call', () => {
  const options = [{ optionId: 'ao', name: 'Allow once', kind: 'allow_once' as const }, { optionId: 'aa', name: 'Always allow', kind: 'allow_always' as const },
    { optionId: 'ro', name: 'Reject', kind: 'reject_once' as const }, { optionId: 'ra', name: 'Always reject', kind: 'reject_always' as const }];
  const high = approvalPrompt({ runId: 'r', stepId: 't', category: 'command', risk: 'high', title: 'Run rm -rf build', command: 'rm -rf build', options });
  assert.equal(high.buttons[0].kind, 'reject_once');
  assert.equal(high.buttons.length, 4);
  const low = approvalPrompt({ runId: 'r', stepId: 't', category: 'command', risk: 'low', title: 'Run ls', command: 'ls', options });
  assert.equal(low.buttons[0].kind, 'allow_once');
});

test('waitingOnUser: every current step waits for the user (issue 35 point 6)', () => {
  const run = { status: 'running', currentSteps: ['a', 'b'] };
  assert.equal(waitingOnUser(run, () => 'waiting'), true);
  assert.equal(waitingOnUser(run, (id) => (id === 'a' ? 'waiting' : 'running')), false, 'one step still works');
  assert.equal(waitingOnUser(run, (id) => (id === 'a' ? 'waiting' : 'failed')), true, 'a failed step waits for Retry, Skip or Abort');
  assert.equal(waitingOnUser({ ...run, currentSteps: [] }, () => 'waiting'), false);
  assert.equal(waitingOnUser({ ...run, status: 'paused' }, () => 'waiting'), false);
});

test('stepDescription: a blocked step says why (issue 35 point 6)', () => {
  const step = { description: 'run the tests', tool: 'run_command' };
  assert.equal(stepDescription(step, { id: 'test', status: 'blocked', reason: 'dependency rename_def was rejected' }), 'run the tests · run_command · dependency rename_def was rejected');
  assert.equal(stepDescription(step, { id: 'test', status: 'completed', reason: 'r', durationMs: 1500 }), 'run the tests · run_command · 1.5 s');
  assert.equal(stepDescription(step, undefined), 'run the tests · run_command');
});

test('RestartGate: one restart per change of the values, however many events (issue 35 point 6)', () => {
  let v: Record<string, unknown> = { modelBaseUrl: 'http://a' };
  const key = () => RestartGate.key((k) => v[k]);
  const g = new RestartGate(key());
  assert.equal(g.changed(key()), false, 'an event with the values the daemon runs with');
  v = { modelBaseUrl: 'http://b' };
  assert.equal(g.changed(key()), true, 'the edit restarts');
  assert.equal(g.changed(key()), false, 'a second event for the same edit does not');
  v = { modelBaseUrl: 'http://b', logLevel: 'debug' };
  assert.equal(g.changed(key()), true);
});
