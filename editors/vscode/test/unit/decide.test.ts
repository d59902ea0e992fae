// The client recipe of docs/protocol.md ("Client recipe: decide all and a hunk id that went
// stale"), as VS Code follows it: a decision refused because what the user saw changed is never
// sent again on a guessed hunk; the set is drawn again and the user is told in one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChangeSet } from '../../src/model';
import { DecideIO, Decision, REDRAWN, ResolveResult, decide, openSetIds, redrawFor } from '../../src/decide';

/** A fake editor side: resolve answers with the given errors first, then with success; every
 *  call is recorded. */
function fakeIO(errors: unknown[]): DecideIO & { calls: string[]; sent: Decision[][]; lines: string[] } {
  const calls: string[] = [], sent: Decision[][] = [], lines: string[] = [];
  return {
    calls, sent, lines,
    resolve: async (changeId, decisions) => {
      calls.push(`resolve ${changeId}`);
      sent.push(decisions);
      const e = errors.shift();
      if (e) throw e;
      return { changeId, status: 'accepted', applied: decisions.map((d) => d.hunkId ?? ''), rejected: [], conflicts: [] } satisfies ResolveResult;
    },
    refetch: async (changeId) => { calls.push(`get ${changeId}`); },
    relist: async (changeId) => { calls.push(`list ${changeId}`); },
    redrawn: (line) => { lines.push(line); },
  };
}

const staleId = { code: -32602, message: 'invalid params: decisions[0].hunkId: unknown hunk h-1', data: { field: 'decisions[0].hunkId' } };
const decided = { code: -32005, message: 'cs-1 was decided in another agentd process', data: { changeId: 'cs-1' } };
const gone = { code: -32003, message: 'change set cs-1 not found' };

for (const [name, err, refetch] of [
  ['-32602 naming decisions[N].hunkId', staleId, 'get cs-1'],
  ['-32005 (decided in another process)', decided, 'get cs-1'],
  ['-32003 (the set is gone)', gone, 'list cs-1'],
] as const) {
  test(`a decision refused with ${name}: the set is fetched again and redrawn, nothing is sent again, one line says decide again`, async () => {
    const io = fakeIO([err]);
    const res = await decide(io, 'cs-1', [{ uri: 'file:///ws/a.go', hunkId: 'h-1', action: 'accept' }]);
    assert.equal(res, undefined, 'nothing was decided');
    assert.deepEqual(io.calls, ['resolve cs-1', refetch], 'one resolve, then the refetch; no second resolve on a guessed hunk');
    assert.deepEqual(io.lines, [REDRAWN]);
    assert.match(REDRAWN, /the change was redrawn; decide again/);
    assert.doesNotMatch(REDRAWN, /\n/, 'one line');
  });
}

test('any other error is not about what was drawn: thrown, nothing refetched', async () => {
  const bad = { code: -32602, message: 'invalid params: decisions[0].action: want accept or reject', data: { field: 'decisions[0].action' } };
  const io = fakeIO([bad]);
  await assert.rejects(decide(io, 'cs-1', [{ hunkId: 'h-1', action: 'accept' }]), (e) => e === bad);
  assert.deepEqual(io.calls, ['resolve cs-1']);
  assert.deepEqual(io.lines, []);
  const other = new Error('the daemon is not running');
  await assert.rejects(decide(fakeIO([other]), 'cs-1', [{ action: 'accept' }]), (e) => e === other);
});

test('redrawFor: -32602 only when it names a hunk id (decisions[N].hunkId or hunkId)', () => {
  assert.equal(redrawFor({ code: -32602, message: 'x', data: { field: 'hunkId' } }), 'get');
  assert.equal(redrawFor({ code: -32602, message: 'x', data: { field: 'decisions[3].hunkId' } }), 'get');
  assert.equal(redrawFor({ code: -32602, message: 'x', data: { field: 'decisions[0].uri' } }), undefined);
  assert.equal(redrawFor({ code: -32602, message: 'x' }), undefined);
  assert.equal(redrawFor({ code: -32603, message: 'x' }), undefined);
});

test('a decision the server takes is sent once, as given', async () => {
  const io = fakeIO([]);
  const res = await decide(io, 'cs-2', [{ uri: 'file:///ws/a.go', hunkId: 'h-9', action: 'reject' }], 'no');
  assert.equal(res?.status, 'accepted');
  assert.deepEqual(io.sent, [[{ uri: 'file:///ws/a.go', hunkId: 'h-9', action: 'reject' }]]);
});

const set = (id: string, status: string, pending: number, stale = 0, accepted = 0): ChangeSet =>
  ({ id, status, review: 'before', files: [], counts: { pending, stale, accepted, rejected: 0, total: pending + stale + accepted } } as unknown as ChangeSet);

test('decide all: every set the server lists with units still open, in its order (oldest first); partial and stale sets included', () => {
  const list = [set('cs-1', 'partial', 1, 0, 1), set('cs-2', 'accepted', 0, 0, 2), set('cs-3', 'pending', 2), set('cs-4', 'stale', 0, 1)];
  assert.deepEqual(openSetIds(list), ['cs-1', 'cs-3', 'cs-4']);
});
