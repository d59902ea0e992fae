// Changes under review: fetching and drawing change sets, the documents the daemon asks to save,
// after mode's saves, and the user's decisions (hunk, file, set, all) by the client recipe
// (decide.ts), with the diff views and Re-propose.
import * as vscode from 'vscode';
import { ChangeSet, agentOnly, asksReason, fileOpenUnits, isOpen } from './model';
import { DIFF_SCHEME, Review } from './review';
import { ChangeNode } from './views';
import { DaemonDown, errText } from './errors';
import { Decision, DecideIO, ResolveResult, decide, openSetIds } from './decide';
import { Reg, State } from './state';
import type * as wire from './protocol.gen';
import { refreshSnapshots } from './snapshots';

/** The buffer version of each open document: a change set asked for now is computed on these. */
function versionsNow(): Map<string, number> {
  return new Map(vscode.workspace.textDocuments.map((d) => [d.uri.toString(), d.version]));
}

export async function fetchChangeSet(st: State, id: string): Promise<ChangeSet | undefined> {
  const versions = versionsNow();
  const cs = await st.daemon.req<ChangeSet>('agentd/changes/get', { changeId: id }).catch((e) => { st.out.warn(`changes/get ${id}: ${errText(e)}`); return undefined; });
  if (cs) {
    const t0 = performance.now();
    st.review.setChangeSet(cs, versions);
    if (cs.review === 'after') void saveAfterMode(st, cs);
    st.metrics.record('changeSetLayoutMs', performance.now() - t0, { hunks: cs.files.reduce((a, f) => a + f.hunks.length, 0), files: cs.files.length });
  }
  return cs;
}

/** resyncFile: a hunk the user typed into got no notice from the server; its sets are asked for
 *  (the server rebases onto the buffer first) and drawn as the server has them. */
export async function resyncFile(st: State, uri: string, ids: string[]): Promise<void> {
  st.out.debug(`no notice for the hunks typed into in ${vscode.workspace.asRelativePath(vscode.Uri.parse(uri))}: asking for ${ids.join(', ')}`);
  for (const id of ids) await fetchChangeSet(st, id);
}

export type SaveRequest = wire.SaveParams;

/** saveDocuments answers agentd/documents/save: it saves exactly the documents the server names
 *  (never "save all"), and one that also holds the user's own unsaved edits only when the user
 *  says so. */
export async function saveDocuments(st: State, p: SaveRequest): Promise<wire.SaveResult> {
  const saved: string[] = [];
  const rel = (u: string) => vscode.workspace.asRelativePath(vscode.Uri.parse(u));
  let ok = new Set<string>(p.uris.filter((u) => !p.userEdited?.includes(u)));
  const ask = p.uris.filter((u) => p.userEdited?.includes(u));
  if (ask.length) {
    const a = await vscode.window.showWarningMessage(`agentd: ${p.reason}. Save ${ask.map(rel).join(', ')}? ${ask.length === 1 ? 'It also holds' : 'They also hold'} your own unsaved edits.`, 'Save', 'Don\'t Save');
    if (a === 'Save') ok = new Set([...ok, ...ask]);
    st.out.info(`documents/save: ${a === 'Save' ? 'saved' : 'left unsaved'} ${ask.map(rel).join(', ')} (the user's edits)`);
  }
  for (const u of p.uris) {
    if (!ok.has(u)) continue;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === u);
    if (!doc) continue;
    if (!doc.isDirty || await doc.save()) saved.push(u);
  }
  if (saved.length) st.out.info(`documents/save: saved ${saved.map(rel).join(', ')} (${p.reason})`);
  return { saved };
}

/** saveAfterMode: in after mode a change is on disk. The server puts it into an open editor
 *  (workspace/applyEdit) and saves it there itself (agentd/documents/save, answered by
 *  saveDocuments); a rejection takes it out of the editor: an editor whose unsaved text is the
 *  disk's minus the rejected hunks alone is saved; one with the user's own edits too is left to
 *  the user, who is told. */
const afterSeen = new Map<string, string>();
async function saveAfterMode(st: State, cs: ChangeSet): Promise<void> {
  for (const f of cs.files) {
    if (!f.patch || !f.hunks.some((h) => h.status === 'rejected')) continue;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === f.uri);
    if (!doc?.isDirty) continue;
    const disk = await vscode.workspace.fs.readFile(doc.uri).then((b) => Buffer.from(b).toString('utf8'), () => undefined);
    if (disk === undefined) continue;
    const buf = doc.getText();
    // The disk (with all hunks: the server saved them) minus the rejected ones.
    const rejected = f.hunks.map((h) => h.status === 'rejected');
    const ok = agentOnly(disk, buf, f.patch, rejected, 'reverse');
    const key = `${cs.id}|${f.uri}|${doc.version}`;
    if (ok) {
      if (await doc.save()) st.out.info(`after mode: saved ${vscode.workspace.asRelativePath(doc.uri)} (the change of step ${cs.stepId ?? '?'})`);
    } else if (!afterSeen.has(key)) {
      afterSeen.set(key, '');
      const rel = vscode.workspace.asRelativePath(doc.uri);
      void vscode.window.showWarningMessage(`agentd: ${rel} holds the change of step ${cs.stepId ?? '?'} and your own unsaved edits; the disk has neither until you save it.`, 'Save').then(async (a) => { if (a) await doc.save(); });
    }
  }
}

/** refreshAll draws every set still open and the snapshots, as the daemon has them. */
export async function refreshAll(st: State): Promise<void> {
  const list = await st.daemon.req<ChangeSet[]>('agentd/changes/list', {}).catch(() => [] as ChangeSet[]);
  await Promise.all(list.filter((c) => c.status !== 'accepted' && c.status !== 'rejected').map((c) => fetchChangeSet(st, c.id)));
  await refreshSnapshots(st);
}

// Decisions ---------------------------------------------------------------------------------

interface HunkRef { changeId?: string; uri?: string; hunkId?: string; line?: number }

async function reasonFor(st: State, changeId: string): Promise<string | undefined | null> {
  const cs = st.review.sets.get(changeId);
  if (!cs || !asksReason(cs)) return undefined;
  const r = await vscode.window.showInputBox({ title: `agentd: reject step ${cs.stepId ?? cs.id}'s change`, prompt: 'Why? The model reads this (optional; Escape cancels the rejection).', ignoreFocusOut: true });
  return r === undefined ? null : r || undefined;
}

/** The editor's side of the client recipe (decide.ts). */
function decideIO(st: State): DecideIO {
  return {
    resolve: (changeId, decisions, reason) => st.daemon.req<ResolveResult>('agentd/changes/resolve', { changeId, decisions, reason }),
    refetch: async (changeId) => { await fetchChangeSet(st, changeId); },
    relist: async (changeId) => {
      const list = await st.daemon.req<ChangeSet[]>('agentd/changes/list', {});
      const listed = new Set(list.map((c) => c.id));
      for (const id of [...st.review.sets.keys()]) if (!listed.has(id)) st.review.removeChangeSet(id);
      for (const c of list) if (isOpen(c) && (c.id === changeId || !st.review.sets.has(c.id))) await fetchChangeSet(st, c.id);
    },
    redrawn: (line, why) => {
      st.out.info(`decision not sent again: ${why}; redrawn as the daemon has it`);
      void vscode.window.showWarningMessage(line);
    },
  };
}

async function resolve(st: State, changeId: string, decisions: Decision[], reason?: string): Promise<void> {
  let res: ResolveResult | undefined;
  try {
    res = await decide(decideIO(st), changeId, decisions, reason);
  } catch (e) {
    if (e instanceof DaemonDown) throw e;
    void vscode.window.showErrorMessage(`agentd: ${errText(e)}`);
    return;
  }
  if (!res) return;
  st.out.info(`${changeId}: ${decisions.map((d) => `${d.action} ${d.hunkId ?? (d.uri ? vscode.workspace.asRelativePath(vscode.Uri.parse(d.uri)) : 'all')}`).join(', ')} -> ${res.status}; applied [${res.applied.join(' ')}] rejected [${res.rejected.join(' ')}]${res.conflicts.length ? ` conflicts ${res.conflicts.length}` : ''}`);
  for (const c of res.conflicts) {
    // The daemon's message may name the file already: not twice.
    const rel = vscode.workspace.asRelativePath(vscode.Uri.parse(c.uri));
    void vscode.window.showWarningMessage(`agentd: ${c.message.startsWith(`${rel}: `) ? c.message : `${rel}: ${c.message}`}`);
  }
  await fetchChangeSet(st, changeId);
}

function refOrCursor(st: State, ref: HunkRef | undefined): HunkRef | undefined {
  if (ref?.changeId && ref.hunkId) return ref;
  if (ref && 'hunkId' in ref && ref.changeId) return ref;
  const h = st.review.hunkUnderCursor();
  return h ? { changeId: h.changeId, uri: h.uri, hunkId: h.id, line: h.start + h.focus } : undefined;
}

/** decideHunk decides the hunk of a lens or view item, else the one under the cursor, by the id
 *  it was drawn with (a stale id is redrawn, never remapped: decide.ts). */
async function decideHunk(st: State, ref: HunkRef | undefined, action: 'accept' | 'reject'): Promise<void> {
  const r = refOrCursor(st, ref);
  if (!r?.changeId) { void vscode.window.showInformationMessage('agentd: no pending hunk under the cursor'); return; }
  let reason: string | undefined;
  if (action === 'reject') { const x = await reasonFor(st, r.changeId); if (x === null) return; reason = x; }
  await resolve(st, r.changeId, [{ uri: r.uri, hunkId: r.hunkId, action }], reason);
}

/** fileUriOf: the file a command is about: a lens or view item's `{uri}`, the Uri an editor
 *  title action passes (the file, or its proposed side in a diff), else the active editor's. */
function fileUriOf(ref: unknown): string | undefined {
  if (ref instanceof vscode.Uri) return ref.with({ scheme: 'file', query: '', fragment: '' }).toString();
  if (ref && typeof ref === 'object' && typeof (ref as { uri?: unknown }).uri === 'string') return (ref as { uri: string }).uri;
  const u = vscode.window.activeTextEditor?.document.uri;
  return u && (u.scheme === 'file' || u.scheme === DIFF_SCHEME) ? u.with({ scheme: 'file', query: '', fragment: '' }).toString() : undefined;
}

async function decideFile(st: State, ref: { uri?: string } | vscode.Uri | undefined, action: 'accept' | 'reject'): Promise<void> {
  const uri = fileUriOf(ref);
  if (!uri) return;
  // Sets where the file still has a unit to decide, by the wire's counts (a partial file whose
  // units are all decided has none: a file decision only decides pending and stale units).
  const sets = [...st.review.sets.values()].filter((c) => c.files.some((f) => f.uri === uri && fileOpenUnits(f) > 0));
  for (const cs of sets) {
    let reason: string | undefined;
    if (action === 'reject') { const x = await reasonFor(st, cs.id); if (x === null) return; reason = x; }
    await resolve(st, cs.id, [{ uri, action }], reason);
  }
}

/** decideAll decides one set (the Changes view's item) or every open set as the daemon lists
 *  them (one not drawn yet included), one resolve without hunkId per set (the client recipe). */
async function decideAll(st: State, node: ChangeNode | undefined, action: 'accept' | 'reject'): Promise<void> {
  const ids = node?.changeId ? [node.changeId] : openSetIds(await st.daemon.req<ChangeSet[]>('agentd/changes/list', {}));
  if (!ids.length) { void vscode.window.showInformationMessage('agentd: nothing pending review'); return; }
  for (const id of ids) {
    let reason: string | undefined;
    if (action === 'reject') { const x = await reasonFor(st, id); if (x === null) return; reason = x; }
    await resolve(st, id, [{ action }], reason);
  }
}

// Moving and looking ------------------------------------------------------------------------

function gotoHunk(st: State, dir: 1 | -1): void {
  const ed = vscode.window.activeTextEditor;
  if (!ed) return;
  const hs = st.review.hunks(ed.document.uri.toString());
  const open = hs.filter((h) => h.status === 'pending' || h.status === 'stale').map((h) => h.start + h.focus).sort((a, b) => a - b);
  if (!open.length) return;
  const cur = ed.selection.active.line;
  const line = dir === 1 ? open.find((l) => l > cur) ?? open[0] : [...open].reverse().find((l) => l < cur) ?? open[open.length - 1];
  const pos = new vscode.Position(line, 0);
  ed.selection = new vscode.Selection(pos, pos);
  ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

async function openDiff(st: State, ref: { uri?: string; changeId?: string } | undefined): Promise<void> {
  const uri = ref?.uri ?? vscode.window.activeTextEditor?.document.uri.toString();
  if (!uri) return;
  const cs = ref?.changeId ? st.review.sets.get(ref.changeId) : [...st.review.sets.values()].find((c) => c.files.some((f) => f.uri === uri));
  const d = Review.diffSides(cs, uri);
  await vscode.commands.executeCommand('vscode.diff', d.left, d.right, d.title, { preview: true });
}

async function reviewAll(st: State, node: ChangeNode | undefined): Promise<void> {
  const sets = node?.changeId ? [st.review.sets.get(node.changeId)!] : [...st.review.sets.values()].filter(isOpen);
  const rows: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
  const seen = new Set<string>();
  for (const cs of sets) for (const f of cs.files) {
    if (seen.has(f.uri)) continue;
    seen.add(f.uri);
    const d = Review.diffSides(cs, f.uri);
    rows.push([vscode.Uri.parse(f.uri), d.left, d.right]);
  }
  if (!rows.length) { void vscode.window.showInformationMessage('agentd: nothing pending review'); return; }
  await vscode.commands.executeCommand('vscode.changes', `agentd: ${rows.length} file${rows.length === 1 ? '' : 's'} pending review`, rows);
}

/** repropose computes a stale hunk (or every undecided hunk of its file) again against the text
 *  as it is now (agentd/changes/repropose) and draws the new change set. */
async function repropose(st: State, ref: HunkRef | undefined): Promise<void> {
  const r = refOrCursor(st, ref);
  if (!r?.changeId) { void vscode.window.showInformationMessage('agentd: no stale hunk under the cursor'); return; }
  const versions = versionsNow();
  const cs = await st.daemon.req<ChangeSet>('agentd/changes/repropose', { changeId: r.changeId, uri: r.uri, hunkId: r.hunkId });
  st.review.setChangeSet(cs, versions);
  st.out.info(`${r.changeId}: re-proposed ${r.hunkId ?? r.uri ?? 'the set'} against the current text`);
}

/** The review commands: decide hunks, files, sets and all; move between hunks; the diffs. */
export function registerChangeCommands(st: State, reg: Reg): void {
  // From the Changes view with several items selected, VS Code passes the clicked item and the
  // selection: each selected item is decided (files and hunks alike).
  const each = (action: 'accept' | 'reject', one: (r: any) => Promise<void>) => async (r?: any, sel?: unknown) => {
    const nodes = Array.isArray(sel) && sel.length > 1 ? sel as ChangeNode[] : undefined;
    if (!nodes) { await one(r); return; }
    for (const n of nodes) {
      if (n.type === 'file') await decideFile(st, { uri: n.uri }, action);
      else if (n.type === 'hunk') await decideHunk(st, { changeId: n.changeId, uri: n.uri, hunkId: n.hunkId }, action);
      else if (n.type === 'changeset') await decideAll(st, n, action);
    }
  };
  reg('agentd.acceptHunk', each('accept', (r?: HunkRef) => decideHunk(st, r, 'accept')));
  reg('agentd.rejectHunk', each('reject', (r?: HunkRef) => decideHunk(st, r, 'reject')));
  reg('agentd.acceptFile', each('accept', (r?: { uri?: string } | vscode.Uri) => decideFile(st, r, 'accept')));
  reg('agentd.rejectFile', each('reject', (r?: { uri?: string } | vscode.Uri) => decideFile(st, r, 'reject')));
  // All: every open change set, whatever a menu passes (a view's title or an editor's title may
  // pass the focused item or the file); one set: the Changes view's inline action.
  reg('agentd.acceptAll', () => decideAll(st, undefined, 'accept'));
  reg('agentd.rejectAll', () => decideAll(st, undefined, 'reject'));
  reg('agentd.acceptChangeSet', each('accept', async (n?: ChangeNode) => { if (n?.type === 'changeset') await decideAll(st, n, 'accept'); }));
  reg('agentd.rejectChangeSet', each('reject', async (n?: ChangeNode) => { if (n?.type === 'changeset') await decideAll(st, n, 'reject'); }));
  reg('agentd.nextHunk', () => gotoHunk(st, 1));
  reg('agentd.previousHunk', () => gotoHunk(st, -1));
  reg('agentd.reviewAll', (n?: ChangeNode) => reviewAll(st, n));
  reg('agentd.openDiff', (r?: { uri?: string; changeId?: string }) => openDiff(st, r));
  reg('agentd.reproposeHunk', (r?: HunkRef) => repropose(st, r));
}
