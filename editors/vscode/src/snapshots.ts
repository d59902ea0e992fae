// Snapshots and undo: the Snapshots view, restoring a snapshot, comparing with one, and undoing
// the last run or restore (the core reverts; a conflict is the user's choice, in a modal).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  OnConflict, Plan, RunState, UNDO_KEEP, UNDO_OVERWRITE, UNDO_SHOW, UndoResult, applyPatchText, conflictDialog, needsChoice, normalizeUndo, undoReport,
} from './model';
import { DIFF_SCHEME } from './review';
import { SnapNode, SnapshotInfo } from './views';
import { DaemonDown, errText, isRpcError } from './errors';
import { Reg, State } from './state';
import type * as wire from './protocol.gen';

export async function refreshSnapshots(st: State): Promise<void> {
  const list = await st.daemon.req<SnapshotInfo[]>('agentd/snapshot/list', {}).catch(() => undefined);
  if (!list) return;
  st.snapshots.set(list);
  // Runs are listed by their plan's title, asked for once per run (a title does not change).
  const ids = [...new Set(list.map((s) => s.runId).filter((id): id is string => !!id && !st.snapshots.titles.has(id)))];
  if (!ids.length) return;
  const titles = new Map<string, string>();
  await Promise.all(ids.map(async (id) => {
    const r = await st.daemon.req<RunState & { finalPlan?: Plan; originalPlan?: Plan }>('agentd/run/get', { runId: id }).catch(() => undefined);
    // A run going on has no final plan yet: its plan is the one shown, when it is that run's.
    const shown = st.run?.runId === id && st.plan.plan?.id === r?.planId ? st.plan.plan?.title : undefined;
    const t = r?.finalPlan?.title || r?.originalPlan?.title || shown;
    if (t) titles.set(id, t);
  }));
  if (titles.size) st.snapshots.setTitles(titles);
}

async function pickSnapshot(st: State, title: string): Promise<SnapshotInfo | undefined> {
  const list = await st.daemon.req<SnapshotInfo[]>('agentd/snapshot/list', {});
  if (!list.length) { void vscode.window.showInformationMessage('agentd: no snapshots yet'); return undefined; }
  const pick = await vscode.window.showQuickPick(list.map((s) => ({
    label: s.stepId ? `step ${s.stepId}` : s.label, description: `${s.label}${s.runId ? ` · run ${s.runId}` : ''}`,
    detail: `${new Date(s.createdAt).toLocaleString()} · ${s.filesChanged} files · ${s.id.slice(0, 12)}`, snap: s,
  })), { title, matchOnDescription: true, matchOnDetail: true });
  return pick?.snap;
}

function snapArg(n: unknown): SnapshotInfo | undefined {
  if (n && typeof n === 'object' && 'snap' in n) return (n as { snap: SnapshotInfo }).snap;
  if (n && typeof n === 'object' && 'id' in n) return n as SnapshotInfo;
  return undefined;
}

type RestoreResult = wire.RestoreResult;

async function restore(st: State, id: string, label: string): Promise<void> {
  // The server decides everything: it puts the restored text into open buffers through
  // workspace/applyEdit, saves them through agentd/documents/save, and reports buffers with the
  // user's unsaved edits as conflicts, left alone. This shows what it did. What can be undone is
  // the daemon's journal (agentd/undo/restore), not kept here.
  let res: RestoreResult;
  try {
    res = await st.daemon.req('agentd/snapshot/restore', { id });
  } catch (e) {
    if (e instanceof DaemonDown) throw e;
    void vscode.window.showErrorMessage(`agentd: restore failed: ${errText(e)}`); return;
  }
  showRestore(st, res, label);
  await refreshSnapshots(st);
}

function showRestore(st: State, res: RestoreResult, label: string, undoable = true): void {
  const n = res.restored.length + res.deleted.length + res.created.length;
  const rel = (u: string) => vscode.workspace.asRelativePath(vscode.Uri.parse(u));
  st.out.info(`restored ${label}: ${n} files, ${res.conflicts.length} conflicts`);
  for (const c of res.conflicts) st.out.warn(`restore conflict: ${rel(c.uri)}: ${c.message}`);
  for (const c of res.leftAlone ?? []) st.out.info(`restore left alone: ${rel(c.uri)}: ${c.message}`);
  const msg = `agentd: restored ${label} (${n} file${n === 1 ? '' : 's'})` + (res.conflicts.length ? `; ${res.conflicts.length} conflict${res.conflicts.length === 1 ? '' : 's'} left alone: ${res.conflicts.map((c) => `${rel(c.uri)} (${c.message})`).join(', ')}` : '');
  const show = res.conflicts.length ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  if (undoable) void show(msg, 'Undo Restore').then((a) => a && vscode.commands.executeCommand('agentd.undoRestore'));
  else void show(msg);
}

/** What an undo of a run could not take back (agentd/undo/run's leftovers): the daemon words it
 *  (the same text as the terminal and ACP); shown here as it is, with its git revert to copy. */
type Leftovers = wire.Leftovers;

function showLeftovers(st: State, l: Leftovers): void {
  for (const line of l.text.split('\n')) st.out.warn(line);
  const actions = l.revert ? ['Copy git revert', 'Show Details'] : ['Show Details'];
  // One line per item in a notification: a line that introduces a list runs on with a space, the rest with "; ".
  const oneLine = l.text.split('\n').map((x) => x.trim()).reduce((acc, x) => (acc ? acc + (acc.endsWith(':') ? ' ' : '; ') : '') + x, '');
  void vscode.window.showWarningMessage(`agentd: ${oneLine}`, ...actions).then((a) => {
    if (a === 'Copy git revert' && l.revert) void vscode.env.clipboard.writeText(l.revert);
    if (a === 'Show Details') st.out.show(true);
  });
}

/** A path of the undo wire (workspace-relative, absolute, or a file URI) as a URI and as the
 *  name shown. */
function wireUri(p: string): vscode.Uri {
  if (/^file:/.test(p)) return vscode.Uri.parse(p);
  if (path.isAbsolute(p)) return vscode.Uri.file(p);
  const folder = vscode.workspace.workspaceFolders?.[0];
  return folder ? vscode.Uri.joinPath(folder.uri, p) : vscode.Uri.file(p);
}
const wireRel = (p: string) => vscode.workspace.asRelativePath(wireUri(p), false);

/** undo takes back the last run (agentd/undo/run) or the last restore (agentd/undo/restore). The
 *  core reverts the agent's own edits on top of the files as they are; where the user changed the
 *  agent's lines it writes nothing and names the conflicts: the user then chooses, in a modal,
 *  to undo the rest and keep those files, to overwrite them (a safety snapshot keeps them), to
 *  see them as diffs, or to cancel (nothing changes). */
async function undo(st: State, kind: 'run' | 'restore', runId?: string): Promise<void> {
  const method = kind === 'run' ? 'agentd/undo/run' : 'agentd/undo/restore';
  const call = async (params: Record<string, unknown>): Promise<{ raw: Record<string, unknown>; r: UndoResult } | undefined> => {
    try {
      const raw = await st.daemon.req<Record<string, unknown>>(method, params);
      return { raw, r: normalizeUndo(raw) };
    } catch (e) {
      if (isRpcError(e) && e.code === -32003) { void vscode.window.showInformationMessage(`agentd: ${e.message}`); return undefined; }
      if (e instanceof DaemonDown || !isRpcError(e)) throw e;
      void vscode.window.showErrorMessage(`agentd: undo failed: ${e.message}`);
      return undefined;
    }
  };
  // A run named (the chat view's "Undo this turn"), else the newest run not undone.
  let res = await call(runId ? { runId } : {});
  if (!res) return;
  // The same run (or restore) on every later call, whatever happens meanwhile.
  const target: Record<string, unknown> = kind === 'run' && res.r.runId ? { runId: res.r.runId } : {};
  const what = kind === 'run' ? `run ${res.r.runId ?? ''}`.trim() : 'the last restore';
  let choice: OnConflict = '';
  // A second conflict answer means the files changed again while the user chose: ask again.
  for (let round = 0; needsChoice(res.r); round++) {
    if (round === 3) { void vscode.window.showWarningMessage(`agentd: ${what} was not undone: its files keep changing while you choose. Nothing was changed.`); return; }
    for (const c of res.r.conflicts) st.out.warn(`undo of ${what}: conflict: ${wireRel(c.path)}: ${c.reason}`);
    const d = conflictDialog(what, res.r, wireRel);
    let a = await vscode.window.showWarningMessage(d.message, { modal: true, detail: d.detail }, UNDO_KEEP, UNDO_OVERWRITE, UNDO_SHOW);
    if (a === UNDO_SHOW) {
      await showUndoConflicts(st, method, target, res.r);
      // Not modal: the diffs stay usable while the user decides.
      a = await vscode.window.showWarningMessage(`agentd: undo ${what}? Your edits conflict in ${res.r.conflicts.map((c) => wireRel(c.path)).join(', ')}; nothing has been changed yet.`, UNDO_KEEP, UNDO_OVERWRITE);
    }
    if (a !== UNDO_KEEP && a !== UNDO_OVERWRITE) {
      st.out.info(`undo of ${what} cancelled: nothing changed`);
      void vscode.window.showInformationMessage(`agentd: undo of ${what} cancelled; nothing was changed.`);
      return;
    }
    choice = a === UNDO_KEEP ? 'keep' : 'overwrite';
    const next = await call({ ...target, onConflict: choice });
    if (!next) return;
    res = next;
  }
  const rep = undoReport(what, res.r, choice, wireRel);
  st.out.info(rep.message.replace(/^agentd: /, ''));
  const show = rep.warn ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const back = kind === 'run' ? 'Undo This Undo' : undefined;
  void (back ? show(rep.message, back) : show(rep.message)).then((x) => x && vscode.commands.executeCommand('agentd.undoRestore'));
  const leftovers = res.raw.leftovers as Leftovers | undefined;
  if (leftovers?.text) showLeftovers(st, leftovers);
  await checkOpenEditors(st, [...res.r.reverted, ...res.r.created, ...res.r.deleted, ...(res.r.overwritten ?? [])]);
  await refreshSnapshots(st);
}

/** showUndoConflicts opens, for each conflicting file, the diff editor between the file now and
 *  what overwriting would write there (the core's diff of a dry run). */
async function showUndoConflicts(st: State, method: string, target: Record<string, unknown>, r: UndoResult): Promise<void> {
  let conflicts = r.conflicts;
  if (conflicts.some((c) => c.diff === undefined)) {
    const dry = normalizeUndo(await st.daemon.req(method, { ...target, dryRun: true }));
    conflicts = conflicts.map((c) => ({ ...c, diff: c.diff ?? dry.conflicts.find((x) => x.path === c.path)?.diff }));
  }
  // A daemon that sends no diff (one older than undo as a revert) would leave the click without
  // an answer: the files it leaves out are named.
  const noDiff = conflicts.filter((c) => c.diff === undefined).map((c) => wireRel(c.path));
  if (noDiff.length) {
    st.out.warn(`undo conflicts without a diff from the daemon: ${noDiff.join(', ')}`);
    void vscode.window.showWarningMessage(`agentd: no diff to show for ${noDiff.join(', ')}: this agentd sends none (it is older than the extension; update it).`);
  }
  for (const c of conflicts) {
    const file = wireUri(c.path);
    if (c.diff === undefined) continue;
    const now = await vscode.workspace.openTextDocument(file).then((d) => d.getText(), () => '');
    const right = st.review.setSnapshotText(`undo-overwrite/${wireRel(c.path)}`, applyPatchText(now, c.diff, undefined, 'forward'));
    const left = fs.existsSync(file.fsPath) ? file : file.with({ scheme: DIFF_SCHEME, query: 'side=empty' });
    await vscode.commands.executeCommand('vscode.diff', left, right, `${path.basename(file.fsPath)} (now ↔ after undo with overwrite)`, { preview: false });
  }
}

/** checkOpenEditors: VS Code reloads an unmodified editor of a file the undo wrote; an editor
 *  with unsaved edits keeps them and now differs from the disk: say so, with the way to compare. */
async function checkOpenEditors(st: State, paths: string[]): Promise<void> {
  for (const p of paths) {
    const u = wireUri(p);
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === u.toString());
    if (!doc?.isDirty) continue;
    const disk = await fs.promises.readFile(u.fsPath, 'utf8').catch(() => undefined);
    if (disk === doc.getText()) continue;
    st.out.warn(`${wireRel(p)}: the editor has unsaved edits; the undo changed the file on disk`);
    void vscode.window.showWarningMessage(`agentd: ${wireRel(p)} has unsaved edits in its editor, made before the undo changed the file on disk. Compare them, then save yours or revert the editor.`, 'Compare').then(async (a) => {
      if (a !== 'Compare') return;
      await vscode.window.showTextDocument(doc);
      await vscode.commands.executeCommand('workbench.files.action.compareWithSaved');
    });
  }
}

async function compareWithSnapshot(st: State, snap: SnapshotInfo): Promise<void> {
  const d = await st.daemon.req<{ files: { uri: string; op: string; patch: string; binary?: boolean }[] }>('agentd/snapshot/diff', { from: snap.id });
  if (!d.files.length) { void vscode.window.showInformationMessage('agentd: the workspace is the same as the snapshot'); return; }
  const rows: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
  for (const f of d.files) {
    if (f.binary) continue;
    const file = vscode.Uri.parse(f.uri);
    const now = f.op === 'delete' ? '' : await vscode.workspace.fs.readFile(file).then((b) => Buffer.from(b).toString('utf8'), () => '');
    const then = applyPatchText(now, f.patch, undefined, 'reverse');
    const left = st.review.setSnapshotText(`${snap.id.slice(0, 12)}/${vscode.workspace.asRelativePath(file)}`, then);
    rows.push([file, left, file]);
  }
  await vscode.commands.executeCommand('vscode.changes', `agentd: now vs ${snap.stepId ? `step ${snap.stepId}` : snap.label}`, rows);
}

/** The snapshot and undo commands. */
export function registerSnapshotCommands(st: State, reg: Reg): void {
  reg('agentd.undoRun', (a?: { runId?: string }) => undo(st, 'run', a?.runId));
  reg('agentd.undoRestore', () => undo(st, 'restore'));
  reg('agentd.restoreSnapshot', async (n?: SnapNode) => {
    const snap = snapArg(n) ?? await pickSnapshot(st, 'agentd: Restore Snapshot');
    if (snap) await restore(st, snap.id, snap.stepId ? `step ${snap.stepId}` : snap.label);
  });
  reg('agentd.compareWithSnapshot', async (n?: SnapNode) => {
    const snap = snapArg(n) ?? await pickSnapshot(st, 'agentd: Compare with Snapshot');
    if (snap) await compareWithSnapshot(st, snap);
  });
}
