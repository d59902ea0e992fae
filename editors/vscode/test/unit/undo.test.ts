// The words of an undo (agentd/undo/run and agentd/undo/restore) from the core's result: the
// conflict dialog names the files and the run and what each choice does; the report after an
// undo says what was reverted and what was kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UNDO_KEEP, UNDO_OVERWRITE, UNDO_SHOW, conflictDialog, needsChoice, normalizeUndo, undoReport } from '../../src/model';

const rel = (p: string) => p.replace(/^file:\/\/\/ws\//, '');

test('a conflicting undo (applied false) needs a choice; the dialog names the run, the files and each choice, no flag', () => {
  const r = normalizeUndo({ runId: 'run-1', applied: false, reverted: ['greet/greet.go'], created: [], deleted: [], conflicts: [{ path: 'main.go', reason: 'you changed lines 7-8 the agent wrote (restore with --overwrite to replace it)', diff: '--- a/main.go\n+++ b/main.go\n' }], leftAlone: [], hint: 'agentd undo run-1 --overwrite' });
  assert.equal(needsChoice(r), true);
  const d = conflictDialog('run run-1', r, rel);
  assert.match(d.message, /run run-1/);
  assert.match(d.message, /main\.go/);
  assert.match(d.message, /Nothing has been changed/);
  for (const c of [UNDO_KEEP, UNDO_OVERWRITE, UNDO_SHOW]) assert.ok(d.detail.includes(c), `the detail explains ${c}: ${d.detail}`);
  assert.match(d.detail, /you changed lines 7-8/);
  assert.match(d.detail, /Undo Last Restore/);
  assert.match(d.detail, /the other 1 file/);
  assert.doesNotMatch(d.message + d.detail, /--overwrite/);
});

test('an applied undo needs no choice; the report names what was reverted and what was kept', () => {
  const r = normalizeUndo({ runId: 'run-1', applied: true, reverted: ['greet/greet.go'], created: ['old.txt'], deleted: ['new.txt'], conflicts: [{ path: 'main.go', reason: 'edited' }], leftAlone: [{ path: 'main.go', message: 'your edits' }], undoId: 'u1' });
  assert.equal(needsChoice(r), false);
  const rep = undoReport('run run-1', r, 'keep', rel);
  assert.equal(rep.message, 'agentd: undid run run-1: reverted greet/greet.go; put back old.txt; removed new.txt; kept your version of main.go');
  assert.equal(rep.warn, true);
  const clean = undoReport('run run-1', normalizeUndo({ runId: 'run-1', applied: true, reverted: ['a.go'], created: [], deleted: [], conflicts: [], leftAlone: [] }), '', rel);
  assert.deepEqual(clean, { message: 'agentd: undid run run-1: reverted a.go', warn: false });
  const over = undoReport('run run-1', normalizeUndo({ applied: true, reverted: ['a.go'], overwritten: ['main.go'], conflicts: [], leftAlone: [] }), 'overwrite', rel);
  assert.match(over.message, /overwrote your edits in main\.go \(Undo Last Restore brings them back\)/);
});

test('the revert result beside its restore-shaped copy: the revert\'s fields are read, with their diffs', () => {
  const r = normalizeUndo({ runId: 'run-3', applied: false, reverted: ['file:///ws/a.go'], conflicts: [{ uri: 'file:///ws/b.go', path: 'b.go', reason: 'you changed line 3', message: 'you changed line 3', diff: '--- a/b.go\n+++ b/b.go\n' }], overwritten: [], leftAlone: [], kept: [], created: [], deleted: [],
    restore: { restored: [], created: [], deleted: [], conflicts: [{ uri: 'file:///ws/b.go', message: 'you changed line 3' }] } });
  assert.equal(needsChoice(r), true);
  assert.deepEqual(r.reverted, ['file:///ws/a.go']);
  assert.deepEqual(r.conflicts.map((c) => [c.path, c.diff]), [['b.go', '--- a/b.go\n+++ b/b.go\n']]);
});

test('the reset-style result of an older daemon reads as applied, its uris as paths', () => {
  const r = normalizeUndo({ runId: 'run-2', snapshotId: 's', restore: { restored: ['file:///ws/a.go'], deleted: [], created: [], conflicts: [{ uri: 'file:///ws/b.go', message: 'changed since' }], leftAlone: [], undoSnapshotId: 'x' } });
  assert.equal(r.applied, true);
  assert.deepEqual(r.reverted, ['file:///ws/a.go']);
  assert.deepEqual(r.conflicts.map((c) => [c.path, c.reason]), [['file:///ws/b.go', 'changed since']]);
  assert.equal(needsChoice(r), false);
  assert.equal(r.undoId, 'x');
});
