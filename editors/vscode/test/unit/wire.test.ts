// The review model against the wire: editors/testdata/changesets.json holds change sets exactly as
// agentd sends them and what each must show. The Neovim suite reads the same file
// (editors/neovim/tests/cases.lua, review_model_matches_wire), so the two editors cannot drift.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ChangeSet, ChangesDidChange, Counts, applyFilesChanged, asksReason, countPending, fileCounts, fileOpenUnits, fileUnits, isOpen, setCounts, viewHunks } from '../../src/model';

interface FileExpect { uri: string; status: string; whole: boolean; units: number; open: number; counts: Counts; hunks?: Record<string, string>; at?: Record<string, number> }
interface SetExpect { status: string; open: number; counts: Counts; reasonToModel?: boolean; files: FileExpect[] }
interface Fixture {
  sets: { set: ChangeSet; expect: SetExpect }[];
  total_open: number;
  didChanges: { about: string; params: ChangesDidChange; expect: SetExpect; total_open: number }[];
}

// esbuild writes this test to out/test/; the fixture sits in editors/testdata.
const fixture: Fixture = JSON.parse(readFileSync(resolve(__dirname, '../../../testdata/changesets.json'), 'utf8'));

function checkSet(cs: ChangeSet, want: SetExpect, only = false) {
  assert.equal(cs.status, want.status, `${cs.id}: status`);
  assert.deepEqual(setCounts(cs), want.counts, `${cs.id}: counts`);
  assert.equal(countPending([cs]), want.open, `${cs.id}: pending (pending + stale units)`);
  assert.equal(isOpen(cs), want.open > 0, `${cs.id}: open`);
  if (want.reasonToModel !== undefined) assert.equal(asksReason(cs), want.reasonToModel, `${cs.id}: a rejection asks for a reason (the wire's reasonToModel)`);
  for (const fw of want.files) {
    const f = cs.files.find((x) => x.uri === fw.uri);
    assert.ok(f, `${cs.id}: ${fw.uri} listed`);
    const what = `${cs.id} ${fw.uri}`;
    assert.equal(f.status, fw.status, `${what}: status`);
    assert.deepEqual(fileCounts(f), fw.counts, `${what}: counts`);
    assert.equal(fileOpenUnits(f), fw.open, `${what}: open units`);
    if (fw.hunks) assert.deepEqual(Object.fromEntries(f.hunks.map((h) => [h.id, h.status])), fw.hunks, `${what}: hunk statuses`);
    // Where each hunk is drawn before the user's typing moves it: the wire's `at`, whatever the
    // decisions of the other hunks did to the ranges.
    if (fw.at) assert.deepEqual(Object.fromEntries(viewHunks(cs, f).map((h) => [h.id, h.start])), fw.at, `${what}: where each hunk starts`);
    // The units the user decides: one for a whole file (whatever hunks it lists), else each hunk;
    // their statuses must add up to the wire's counts.
    const units = fileUnits(f);
    assert.equal(units.length, fw.units, `${what}: decision units`);
    assert.equal(units.filter((u) => u.status === 'pending' || u.status === 'stale').length, fw.open, `${what}: open decision units`);
    for (const k of ['pending', 'accepted', 'rejected', 'stale'] as const) {
      assert.equal(units.filter((u) => u.status === k).length, fw.counts[k], `${what}: ${k} units`);
    }
  }
  if (!only) assert.equal(cs.files.length, want.files.length, `${cs.id}: files`);
}

test('the review model shows each change set of the shared fixture as the wire says', () => {
  const sets = fixture.sets.map((c) => structuredClone(c.set));
  assert.ok(sets.length >= 3, 'the fixture has its sets');
  fixture.sets.forEach((c, i) => checkSet(sets[i], c.expect));
  assert.equal(countPending(sets), fixture.total_open, 'status bar: open units over all sets');
});

test('didChange notices keep each set\'s status and counts as the server says (the set\'s counts, never a sum)', () => {
  const sets = fixture.sets.map((c) => structuredClone(c.set));
  assert.ok(fixture.didChanges.length >= 4, 'the fixture has its notices');
  for (const step of fixture.didChanges) {
    const p = structuredClone(step.params);
    const cs = sets.find((s) => s.id === p.changeId);
    assert.ok(cs, p.changeId);
    applyFilesChanged(cs, p);
    assert.doesNotThrow(() => checkSet(cs, step.expect, true), step.about);
    assert.equal(countPending(sets), step.total_open, `${step.about}: open units over all sets`);
  }
});
