// agentd for VS Code: hosts `agentd serve` through vscode-languageclient and adds agentd's
// views, decorations, CodeLens and commands. Rules live in the server; this renders what the
// server says and sends the user's decisions.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ChildProcess, spawn } from 'node:child_process';
// Types only: the client library is loaded when the daemon starts (startClient), after the
// daemon's process is spawned, so that neither waits for the other.
import type {
  LanguageClient, LanguageClientOptions, ServerOptions,
  WorkDoneProgressBegin, WorkDoneProgressReport, WorkDoneProgressEnd,
} from 'vscode-languageclient/node';
import { ApprovalRequest, ChangeSet, FileInfo, Plan, RunState, applyPatchText, approvalPrompt, hunkAt, isOpen, isModelDriven, moveEdit, statusText } from './model';
import { DIFF_SCHEME, Metrics, Review } from './review';
import { findBinary, missingBinaryMessage, protocolProblem, serverCommand } from './binary';
import { ChangeNode, ChangesTree, PlanNode, PlanTree, Problem, SnapNode, SnapshotInfo, SnapshotsTree } from './views';

let client: LanguageClient | undefined;
let lc: typeof import('vscode-languageclient/node') | undefined;
/** Where the time to a started daemon goes (the e2e figures): loading the client library, and
 *  from start to the answer of initialize. */
const startTimes: { libMs?: number; startMs?: number } = {};

/** A JSON-RPC error answer (vscode-languageclient's ResponseError), told apart without loading
 *  the library: a numeric code and a message. */
interface RpcError { code: number; message: string; data?: unknown }
function isRpcError(e: unknown): e is RpcError {
  return !!e && typeof e === 'object' && typeof (e as RpcError).code === 'number' && typeof (e as RpcError).message === 'string';
}


class FileMetrics implements Metrics {
  private readonly file = process.env.AGENTD_VSCODE_METRICS;
  record(name: string, value: number, extra?: Record<string, unknown>): void {
    if (!this.file) return;
    try { fs.appendFileSync(this.file, JSON.stringify({ name, value, ...extra }) + '\n'); } catch { /* metrics are best effort */ }
  }
}

interface State {
  context: vscode.ExtensionContext;
  out: vscode.LogOutputChannel;
  review: Review;
  plan: PlanTree;
  planView: vscode.TreeView<PlanNode>;
  changes: ChangesTree;
  snapshots: SnapshotsTree;
  status: vscode.StatusBarItem;
  diagnostics: vscode.DiagnosticCollection;
  metrics: FileMetrics;
  run?: RunState;
  lastUndo?: string;
}

/** When the bundle began to load (esbuild.mjs puts it first in out/extension.js). */
declare const __agentdLoadStart: number | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const t0 = typeof __agentdLoadStart === 'number' ? __agentdLoadStart : performance.now();
  const tActivate = performance.now();
  const out = vscode.window.createOutputChannel('agentd', { log: true });
  // The daemon first: it starts (a process and an initialize round trip) while the views,
  // decorations and commands are set up, and nothing waits for the views.
  const cfg = vscode.workspace.getConfiguration('agentd');
  const bin = findBinary(cfg.get<string>('path', ''), process.env.PATH ?? '', context.extensionPath);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const starting = bin && folder ? startClient(context, out, bin, folder.uri.fsPath) : undefined;
  starting?.catch(() => undefined); // reported below, once the views exist
  const metrics = new FileMetrics();
  const review = new Review(metrics);
  const plan = new PlanTree();
  const changes = new ChangesTree(review.sets);
  const snapshots = new SnapshotsTree();
  const planView = vscode.window.createTreeView('agentd.plan', { treeDataProvider: plan });
  const status = vscode.window.createStatusBarItem('agentd.status', vscode.StatusBarAlignment.Left, 50);
  status.name = 'agentd';
  status.command = { command: 'workbench.view.extension.agentd', title: 'Show agentd' };
  const diagnostics = vscode.languages.createDiagnosticCollection('agentd');
  const st: State = { context, out, review, plan, planView, changes, snapshots, status, diagnostics, metrics };

  context.subscriptions.push(out, review, planView, status, diagnostics,
    vscode.window.createTreeView('agentd.changes', { treeDataProvider: changes }),
    vscode.window.createTreeView('agentd.snapshots', { treeDataProvider: snapshots }),
    vscode.languages.registerCodeLensProvider({ scheme: 'file' }, review),
    vscode.languages.registerHoverProvider({ scheme: 'file' }, review),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, review),
    review.onDidChangeSets(() => { changes.refresh(); updateStatus(st); }),
    planView.onDidChangeCheckboxState((e) => void toggleSkips(st, e.items)),
  );
  registerCommands(st);
  updateStatus(st);
  status.show();
  const tSetup = performance.now();

  if (!bin) {
    const msg = missingBinaryMessage(cfg.get<string>('path', ''));
    out.error(msg);
    void vscode.window.showErrorMessage(msg, 'Open Setting').then((a) => {
      if (a) void vscode.commands.executeCommand('workbench.action.openSettings', 'agentd.path');
    });
    return;
  }
  if (!folder || !starting) { out.info('no workspace folder open: agentd starts when a folder is opened'); return; }
  try {
    const c = await starting;
    attachClient(st, c);
    metrics.record('activationToDaemonMs', performance.now() - t0, { loadMs: tActivate - t0, setupMs: tSetup - tActivate, ...startTimes });
    out.info(`daemon started in ${Math.round(performance.now() - t0)} ms`);
    void refreshAll(st);
  } catch (e) {
    const m = errText(e);
    out.error(`agentd serve failed to start: ${m}`);
    // A refused protocol version is its own whole message (binary.ts, protocolProblem).
    void vscode.window.showErrorMessage(m.startsWith('agentd: ') ? m : `agentd: the daemon did not start: ${m}`, 'Show Log').then((a) => a && out.show(true));
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop().catch(() => undefined);
  client = undefined;
}

function errText(e: unknown): string {
  if (isRpcError(e)) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

function approvalPolicy(cfg: vscode.WorkspaceConfiguration): Record<string, unknown> {
  const a = cfg.get<Record<string, unknown>>('approval') ?? {};
  const out: Record<string, unknown> = { read: 'allow' };
  for (const k of ['write', 'delete', 'command', 'git', 'requireApprovalForRisk', 'allowCommands', 'denyCommands']) if (a[k] !== undefined) out[k] = a[k];
  return out;
}

async function startClient(context: vscode.ExtensionContext, out: vscode.LogOutputChannel, bin: string, cwd: string): Promise<LanguageClient> {
  const cfg = vscode.workspace.getConfiguration('agentd');
  const cmd = serverCommand(bin, cfg.get<string>('logLevel', 'info'), process.env.AGENTD_STATE_DIR);
  // The daemon's process starts first, then the client library loads while it starts. Over
  // stdio, with no `--stdio` argument (serverCommand). A restart spawns a new one.
  const run = (): ChildProcess => spawn(cmd.command, cmd.args, { cwd, stdio: 'pipe' });
  let first: ChildProcess | undefined = run();
  const t0 = performance.now();
  lc = await import('vscode-languageclient/node');
  startTimes.libMs = performance.now() - t0;
  const serverOptions: ServerOptions = async () => { const p = first ?? run(); first = undefined; return p; };
  const model = cfg.get<string>('model', '');
  const init: Record<string, unknown> = {
    review: cfg.get<string>('review', 'before'),
    approval: approvalPolicy(cfg),
    // hunksFollowEdits: Review moves hunks with the typing itself, so the server stays silent
    // about rebases that only moved them (docs/protocol.md, agentd/changes/didChange).
    clientFeatures: { approvalRequest: true, changeReview: true, hunksFollowEdits: true },
  };
  if (model) {
    const i = model.indexOf(':');
    init.model = { provider: i > 0 ? model.slice(0, i) : 'openai', model: i > 0 ? model.slice(i + 1) : model, baseUrl: cfg.get<string>('modelBaseUrl', '') || undefined };
  }
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    outputChannel: out,
    revealOutputChannelOn: lc.RevealOutputChannelOn.Never,
    initializationOptions: init,
  };
  const c = new lc.LanguageClient('agentd', 'agentd', serverOptions, clientOptions);
  client = c;
  context.subscriptions.push({ dispose: () => void c.stop().catch(() => undefined) });
  const t1 = performance.now();
  await c.start();
  startTimes.startMs = performance.now() - t1;
  // A daemon of another protocol version would misread requests: refuse it, saying which
  // versions and what to do.
  const problem = protocolProblem(c.initializeResult?.capabilities?.experimental?.agentd?.protocolVersion, bin);
  if (problem) {
    await c.stop().catch(() => undefined);
    client = undefined;
    throw new Error(problem);
  }
  return c;
}

/** attachClient installs the handlers of the daemon's notifications and requests. */
function attachClient(st: State, c: LanguageClient): void {
  c.onNotification('agentd/run/didChange', (p: { runId: string; event: RunEvent; state?: RunState }) => onRunEvent(st, p));
  c.onNotification('agentd/changes/didChange', (p: { changeId: string; status: string; files: FileInfo[]; version?: number }) => {
    const t0 = performance.now();
    st.review.updateFiles(p.changeId, p.status, p.files, p.version);
    st.metrics.record('changesDidChangeMs', performance.now() - t0, { hunks: p.files.reduce((a, f) => a + f.hunks.length, 0) });
  });
  c.onRequest('agentd/approval/request', (p: ApprovalRequest) => askApproval(st, p));
  c.onRequest('agentd/documents/save', (p: SaveRequest) => saveDocuments(st, p));
  // Run progress as a cancellable notification: cancelling it sends
  // window/workDoneProgress/cancel, which cancels the run (the server's rule).
  c.onRequest('window/workDoneProgress/create', (p: { token: string | number }) => {
    showRunProgress(st, c, p.token);
    return null;
  });
}

interface SaveRequest { uris: string[]; reason: string; userEdited?: string[] }

/** saveDocuments answers agentd/documents/save: it saves exactly the documents the server names
 *  (never "save all"), and one that also holds the user's own unsaved edits only when the user
 *  says so. */
async function saveDocuments(st: State, p: SaveRequest): Promise<{ saved: string[] }> {
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
  return { saved };
}

interface RunEvent { seq: number; type: string; runId: string; stepId?: string; status?: string; error?: string; changeId?: string; snapshotId?: string; reason?: string }

function showRunProgress(st: State, c: LanguageClient, token: string | number): void {
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'agentd', cancellable: true }, (progress, cancel) =>
    new Promise<void>((resolve) => {
      let last = 0;
      const sub = c.onProgress(lc!.WorkDoneProgress.type, token, (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
        if (v.kind === 'end') { sub.dispose(); resolve(); return; }
        const pct = v.percentage ?? last;
        progress.report({ message: v.message ?? (v.kind === 'begin' ? v.title : undefined), increment: Math.max(0, pct - last) });
        last = pct;
      });
      cancel.onCancellationRequested(() => {
        void c.sendNotification('window/workDoneProgress/cancel', { token });
        st.out.info(`run cancelled from the progress notification (${token})`);
      });
    }));
}

function updateStatus(st: State): void {
  const n = st.review.pendingCount();
  st.status.text = statusText(st.run, n);
  st.status.tooltip = st.run ? `agentd run ${st.run.runId}: ${st.run.status}, ${Math.round(st.run.progress * 100)}%` + (n ? `\n${n} hunks pending review` : '') : (n ? `${n} hunks pending review` : 'agentd');
  void vscode.commands.executeCommand('setContext', 'agentd.hasPlan', !!st.plan.plan);
  void vscode.commands.executeCommand('setContext', 'agentd.runActive', st.run?.status === 'running');
  void vscode.commands.executeCommand('setContext', 'agentd.runPaused', st.run?.status === 'paused');
}

async function onRunEvent(st: State, p: { runId: string; event: RunEvent; state?: RunState }): Promise<void> {
  const ev = p.event;
  if (p.state) st.run = { ...(st.run?.runId === p.runId ? st.run : {}), ...p.state } as RunState;
  switch (ev.type) {
    case 'runStarted': st.plan.resetSteps(); break;
    case 'stepStarted': if (ev.stepId) st.plan.stepEvent(ev.stepId, 'running'); break;
    case 'stepFinished': case 'stepSkipped': case 'stepBlocked': case 'stepFailed':
      if (ev.stepId) st.plan.stepEvent(ev.stepId, ev.status ?? ({ stepFinished: 'completed', stepSkipped: 'skipped', stepBlocked: 'blocked', stepFailed: 'failed' } as Record<string, string>)[ev.type], ev.error);
      if (ev.type === 'stepFailed') st.out.warn(`step ${ev.stepId} failed: ${ev.error ?? ''}`);
      break;
    case 'changeProposed':
      if (ev.changeId) {
        const t0 = performance.now();
        await fetchChangeSet(st, ev.changeId);
        st.metrics.record('changeProposedToDecoratedMs', performance.now() - t0, { changeId: ev.changeId, hunks: st.review.sets.get(ev.changeId)?.files.reduce((a, f) => a + f.hunks.length, 0) });
      }
      break;
    case 'planUpdated': void reloadPlan(st); break;
    case 'snapshotTaken': void refreshSnapshots(st); break;
    case 'runFinished': {
      void refreshSnapshots(st);
      const s = p.state ?? st.run;
      if (s && s.status !== 'completed') void vscode.window.showWarningMessage(`agentd: run ${s.runId} ${s.status}${s.error ? `: ${s.error}` : ''}`);
      break;
    }
  }
  if (ev.type === 'stepFinished' || ev.type === 'runFinished') {
    // A change set offered after its step (after mode) may be announced before the server can
    // return it: pick up any open set of this run not shown yet.
    const list = await req<ChangeSet[]>('agentd/changes/list', { runId: p.runId }).catch(() => [] as ChangeSet[]);
    for (const c of list) if (!st.review.sets.has(c.id) && isOpen(c)) await fetchChangeSet(st, c.id);
  }
  if (ev.type === 'runFinished' || ev.type === 'stepFailed') {
    const full = await req<RunState>('agentd/run/get', { runId: p.runId }).catch(() => undefined);
    if (full) { st.run = full; st.plan.setRun(full); }
  } else if (p.state) st.plan.setRun(st.run);
  updateStatus(st);
}

function req<T>(method: string, params: unknown): Promise<T> {
  if (!client) return Promise.reject(new Error('the agentd daemon is not running (see the agentd output channel)'));
  return client.sendRequest<T>(method, params);
}

async function fetchChangeSet(st: State, id: string): Promise<ChangeSet | undefined> {
  const cs = await req<ChangeSet>('agentd/changes/get', { changeId: id }).catch((e) => { st.out.warn(`changes/get ${id}: ${errText(e)}`); return undefined; });
  if (cs) {
    const t0 = performance.now();
    st.review.setChangeSet(cs);
    st.metrics.record('changeSetLayoutMs', performance.now() - t0, { hunks: cs.files.reduce((a, f) => a + f.hunks.length, 0), files: cs.files.length });
  }
  return cs;
}

async function refreshAll(st: State): Promise<void> {
  const list = await req<ChangeSet[]>('agentd/changes/list', {}).catch(() => [] as ChangeSet[]);
  await Promise.all(list.filter((c) => c.status !== 'accepted' && c.status !== 'rejected').map((c) => fetchChangeSet(st, c.id)));
  await refreshSnapshots(st);
}

async function refreshSnapshots(st: State): Promise<void> {
  const list = await req<SnapshotInfo[]>('agentd/snapshot/list', {}).catch(() => undefined);
  if (list) st.snapshots.set(list);
}

async function askApproval(st: State, r: ApprovalRequest): Promise<{ outcome: 'selected'; optionId: string; reason?: string } | { outcome: 'cancelled' }> {
  const p = approvalPrompt(r, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  const pick = await vscode.window.showWarningMessage(p.message, { modal: true, detail: p.detail }, ...p.buttons.map((b) => ({ title: b.title, optionId: b.optionId })));
  if (!pick) return { outcome: 'cancelled' };
  st.out.info(`approval for step ${r.stepId}: ${pick.title}`);
  return { outcome: 'selected', optionId: pick.optionId };
}

// Plans -------------------------------------------------------------------------------------

async function loadPlan(st: State, uri: vscode.Uri): Promise<Plan | undefined> {
  st.diagnostics.delete(uri);
  try {
    const plan = await req<Plan>('agentd/plan/load', { uri: uri.toString() });
    st.plan.setPlan(plan, uri);
    updateStatus(st);
    return plan;
  } catch (e) {
    const problems = (isRpcError(e) && (e.data as { problems?: Problem[] })?.problems) || undefined;
    if (problems) {
      showProblems(st, uri, problems);
      void vscode.window.showErrorMessage(`agentd: the plan ${path.basename(uri.fsPath)} has ${problems.length} problem${problems.length === 1 ? '' : 's'} (see Problems)`);
    } else {
      void vscode.window.showErrorMessage(`agentd: cannot open the plan: ${errText(e)}`);
    }
    return undefined;
  }
}

function showProblems(st: State, uri: vscode.Uri, problems: Problem[]): void {
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  const text = doc?.getText() ?? (fs.existsSync(uri.fsPath) ? fs.readFileSync(uri.fsPath, 'utf8') : '');
  const diags = problems.map((p) => {
    // Point at the step's id in the file when it can be found.
    let range = new vscode.Range(0, 0, 0, 0);
    if (p.stepId) {
      const i = text.search(new RegExp(`["']?id["']?\\s*:\\s*["']?${p.stepId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`));
      if (i >= 0) {
        const before = text.slice(0, i).split('\n');
        range = new vscode.Range(before.length - 1, before[before.length - 1].length, before.length - 1, before[before.length - 1].length + p.stepId.length + 6);
      }
    }
    const d = new vscode.Diagnostic(range, `${p.stepId ? `step ${p.stepId}: ` : ''}${p.field ? p.field + ': ' : ''}${p.message}`, vscode.DiagnosticSeverity.Error);
    d.source = 'agentd';
    return d;
  });
  st.diagnostics.set(uri, diags);
  if (!st.plan.plan || st.plan.planUri?.toString() !== uri.toString()) st.plan.setPlan(undefined, uri);
  st.plan.setProblems(problems);
}

async function reloadPlan(st: State): Promise<void> {
  const id = st.plan.plan?.id;
  if (!id) return;
  const plan = await req<Plan>('agentd/plan/get', { planId: id }).catch(() => undefined);
  if (plan) st.plan.setPlan(plan);
}

async function editPlan(st: State, edits: unknown[]): Promise<void> {
  const plan = st.plan.plan;
  if (!plan) { void vscode.window.showInformationMessage('agentd: open a plan first (agentd: Open Plan…)'); return; }
  try {
    const next = await req<Plan>('agentd/plan/edit', { planId: plan.id, version: plan.version, edits });
    st.plan.setPlan(next);
  } catch (e) {
    const problems = (isRpcError(e) && (e.data as { problems?: Problem[] })?.problems) || undefined;
    if (problems && st.plan.planUri) st.plan.setProblems(problems);
    void vscode.window.showErrorMessage(`agentd: the edit was refused: ${problems ? problems.map((p) => `${p.stepId ?? ''} ${p.message}`).join('; ') : errText(e)}`);
    if (isRpcError(e) && e.code === -32002) void reloadPlan(st);
  }
}

async function toggleSkips(st: State, items: readonly [PlanNode, vscode.TreeItemCheckboxState][]): Promise<void> {
  const edits = items.filter(([n]) => n.type === 'step').map(([n, s]) => ({ op: s === vscode.TreeItemCheckboxState.Checked ? 'unskip' : 'skip', stepId: (n as { stepId: string }).stepId }));
  if (edits.length) await editPlan(st, edits);
}

function stepArg(st: State, n: unknown): string | undefined {
  if (n && typeof n === 'object' && 'stepId' in n) return (n as { stepId: string }).stepId;
  const sel = st.planView.selection[0];
  return sel?.type === 'step' ? sel.stepId : undefined;
}

async function pickPlanFile(): Promise<vscode.Uri | undefined> {
  const active = vscode.window.activeTextEditor?.document.uri;
  const files = await vscode.workspace.findFiles('**/*.{agentd.json,agentd.yaml,agentd.yml}', '**/node_modules/**', 200);
  const more = await vscode.workspace.findFiles('**/plans/*.{json,yaml,yml}', '**/node_modules/**', 200);
  const all = [...files, ...more.filter((m) => !files.some((f) => f.toString() === m.toString()))];
  const items: (vscode.QuickPickItem & { uri?: vscode.Uri })[] = all.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u }));
  if (active && /\.(json|ya?ml)$/.test(active.path) && !all.some((u) => u.toString() === active.toString())) items.unshift({ label: vscode.workspace.asRelativePath(active), description: 'active editor', uri: active });
  items.push({ label: 'Browse…' });
  const pick = await vscode.window.showQuickPick(items, { title: 'agentd: Open Plan', placeHolder: 'a plan file (JSON or YAML)' });
  if (!pick) return undefined;
  if (pick.uri) return pick.uri;
  const chosen = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { Plans: ['json', 'yaml', 'yml'] } });
  return chosen?.[0];
}

// Review ------------------------------------------------------------------------------------

interface HunkRef { changeId?: string; uri?: string; hunkId?: string; line?: number }

interface ResolveResult { changeId: string; status: string; applied: string[]; rejected: string[]; conflicts: { uri: string; hunkId: string; message: string }[] }

async function reasonFor(st: State, changeId: string): Promise<string | undefined | null> {
  const cs = st.review.sets.get(changeId);
  const step = st.plan.plan?.steps.find((s) => s.id === cs?.stepId);
  if (!isModelDriven(step)) return undefined;
  const r = await vscode.window.showInputBox({ title: `agentd: reject step ${step!.id}'s change`, prompt: 'Why? The model reads this (optional; Escape cancels the rejection).', ignoreFocusOut: true });
  return r === undefined ? null : r || undefined;
}

async function resolve(st: State, changeId: string, decisions: Decision[], reason?: string, retried = false): Promise<void> {
  let res: ResolveResult;
  try {
    res = await req<ResolveResult>('agentd/changes/resolve', { changeId, decisions: decisions.map(({ line: _l, ...d }) => d), reason });
  } catch (e) {
    // The user's typing may have rebased the hunk since the lens was drawn: the server gave it
    // a new id. Take the server's current view and decide the hunk now at the same line.
    if (!retried && isRpcError(e) && (e.code === -32602 || e.code === -32003) && decisions.some((d) => d.hunkId)) {
      await fetchChangeSet(st, changeId);
      const again = decisions.map((d) => (d.hunkId && d.uri && d.line !== undefined ? { ...d, hunkId: currentHunkId(st, changeId, d.uri, d.hunkId, d.line) } : d));
      if (again.some((d, i) => d.hunkId !== decisions[i].hunkId)) return resolve(st, changeId, again, reason, true);
    }
    void vscode.window.showErrorMessage(`agentd: ${errText(e)}`);
    return;
  }
  st.out.info(`${changeId}: ${decisions.map((d) => `${d.action} ${d.hunkId ?? (d.uri ? vscode.workspace.asRelativePath(vscode.Uri.parse(d.uri)) : 'all')}`).join(', ')} -> ${res.status}; applied [${res.applied.join(' ')}] rejected [${res.rejected.join(' ')}]${res.conflicts.length ? ` conflicts ${res.conflicts.length}` : ''}`);
  for (const c of res.conflicts) void vscode.window.showWarningMessage(`agentd: ${vscode.workspace.asRelativePath(vscode.Uri.parse(c.uri))}: ${c.message}`);
  await fetchChangeSet(st, changeId);
}

interface Decision { uri?: string; hunkId?: string; action: 'accept' | 'reject'; line?: number }

/** currentHunkId maps a hunk id from a lens to the hunk the review shows now at that place. */
function currentHunkId(st: State, changeId: string, uri: string, hunkId: string, line: number): string {
  const hs = st.review.hunks(uri);
  if (hs.some((h) => h.id === hunkId && h.changeId === changeId)) return hunkId;
  const at = hunkAt(hs.filter((h) => h.changeId === changeId), line);
  return at ? at.id : hunkId;
}

function refOrCursor(st: State, ref: HunkRef | undefined): HunkRef | undefined {
  if (ref?.changeId && ref.hunkId) return ref;
  if (ref && 'hunkId' in ref && ref.changeId) return ref;
  const h = st.review.hunkUnderCursor();
  return h ? { changeId: h.changeId, uri: h.uri, hunkId: h.id, line: h.start + h.focus } : undefined;
}

async function decideHunk(st: State, ref: HunkRef | undefined, action: 'accept' | 'reject'): Promise<void> {
  const r = refOrCursor(st, ref);
  if (!r?.changeId) { void vscode.window.showInformationMessage('agentd: no pending hunk under the cursor'); return; }
  let reason: string | undefined;
  if (action === 'reject') { const x = await reasonFor(st, r.changeId); if (x === null) return; reason = x; }
  const hunkId = r.uri && r.hunkId && r.line !== undefined ? currentHunkId(st, r.changeId, r.uri, r.hunkId, r.line) : r.hunkId;
  await resolve(st, r.changeId, [{ uri: r.uri, hunkId, action, line: r.line }], reason);
}

async function decideFile(st: State, ref: { uri?: string } | undefined, action: 'accept' | 'reject'): Promise<void> {
  const uri = ref?.uri ?? vscode.window.activeTextEditor?.document.uri.toString();
  if (!uri) return;
  const sets = [...st.review.sets.values()].filter((c) => c.files.some((f) => f.uri === uri && (f.status === 'pending' || f.status === 'partial' || f.status === 'stale')));
  for (const cs of sets) {
    let reason: string | undefined;
    if (action === 'reject') { const x = await reasonFor(st, cs.id); if (x === null) return; reason = x; }
    await resolve(st, cs.id, [{ uri, action }], reason);
  }
}

async function decideAll(st: State, node: ChangeNode | undefined, action: 'accept' | 'reject'): Promise<void> {
  const ids = node?.changeId ? [node.changeId] : [...st.review.sets.values()].filter(isOpen).map((c) => c.id);
  for (const id of ids) {
    let reason: string | undefined;
    if (action === 'reject') { const x = await reasonFor(st, id); if (x === null) return; reason = x; }
    await resolve(st, id, [{ action }], reason);
  }
}

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

// Snapshots ---------------------------------------------------------------------------------

async function pickSnapshot(title: string): Promise<SnapshotInfo | undefined> {
  const list = await req<SnapshotInfo[]>('agentd/snapshot/list', {});
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

async function restore(st: State, id: string, label: string): Promise<void> {
  // The server decides everything: it puts the restored text into open buffers through
  // workspace/applyEdit, saves them through agentd/documents/save, and reports buffers with the
  // user's unsaved edits as conflicts, left alone. This shows what it did.
  let res: { restored: string[]; deleted: string[]; created: string[]; conflicts: { uri: string; message: string }[]; leftAlone?: { uri: string; message: string }[]; undoSnapshotId: string };
  try {
    res = await req('agentd/snapshot/restore', { id });
  } catch (e) { void vscode.window.showErrorMessage(`agentd: restore failed: ${errText(e)}`); return; }
  st.lastUndo = res.undoSnapshotId;
  await st.context.workspaceState.update('agentd.lastUndo', res.undoSnapshotId);
  const n = res.restored.length + res.deleted.length + res.created.length;
  const rel = (u: string) => vscode.workspace.asRelativePath(vscode.Uri.parse(u));
  st.out.info(`restored ${label}: ${n} files, ${res.conflicts.length} conflicts`);
  for (const c of res.conflicts) st.out.warn(`restore conflict: ${rel(c.uri)}: ${c.message}`);
  for (const c of res.leftAlone ?? []) st.out.info(`restore left alone: ${rel(c.uri)}: ${c.message}`);
  const msg = `agentd: restored ${label} (${n} file${n === 1 ? '' : 's'})` + (res.conflicts.length ? `; ${res.conflicts.length} conflict${res.conflicts.length === 1 ? '' : 's'} left alone: ${res.conflicts.map((c) => `${rel(c.uri)} (${c.message})`).join(', ')}` : '');
  const show = res.conflicts.length ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  void show(msg, 'Undo Restore').then((a) => a && vscode.commands.executeCommand('agentd.undoRestore'));
  await refreshSnapshots(st);
}

async function compareWithSnapshot(st: State, snap: SnapshotInfo): Promise<void> {
  const d = await req<{ files: { uri: string; op: string; patch: string; binary?: boolean }[] }>('agentd/snapshot/diff', { from: snap.id });
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

// Commands ----------------------------------------------------------------------------------

function registerCommands(st: State): void {
  const reg = (id: string, f: (...a: any[]) => unknown) => st.context.subscriptions.push(vscode.commands.registerCommand(id, async (...a: any[]) => {
    try { await f(...a); } catch (e) { st.out.error(`${id}: ${errText(e)}`); void vscode.window.showErrorMessage(`agentd: ${errText(e)}`); }
  }));
  const runId = () => st.run?.runId;
  const runCtl = async (m: string) => {
    const id = runId();
    if (!id) { void vscode.window.showInformationMessage('agentd: no run'); return; }
    st.run = { ...st.run!, ...(await req<RunState>(m, { runId: id })) };
    st.plan.setRun(st.run);
    updateStatus(st);
  };
  reg('agentd.newPlan', async () => {
    const request = await vscode.window.showInputBox({ title: 'agentd: New Plan from Request', prompt: 'What should agentd do?', ignoreFocusOut: true });
    if (!request) return;
    const ed = vscode.window.activeTextEditor;
    const context = ed ? { uris: [ed.document.uri.toString()], selection: ed.selection.isEmpty ? undefined : { uri: ed.document.uri.toString(), range: { start: ed.selection.start, end: ed.selection.end } } } : undefined;
    const plan = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'agentd: making a plan…', cancellable: false },
      () => req<Plan>('agentd/plan/create', { request, context }));
    st.plan.setPlan(plan);
    updateStatus(st);
  });
  reg('agentd.openPlan', async (u?: vscode.Uri) => {
    const uri = u instanceof vscode.Uri ? u : await pickPlanFile();
    if (uri) await loadPlan(st, uri);
  });
  reg('agentd.runPlan', async () => {
    if (!st.plan.plan) { const uri = await pickPlanFile(); if (!uri || !await loadPlan(st, uri)) return; }
    const cfg = vscode.workspace.getConfiguration('agentd');
    const r = await req<{ runId: string; snapshotId: string }>('agentd/run/start', { planId: st.plan.plan!.id, options: { review: cfg.get<string>('review', 'before') } });
    st.out.info(`run ${r.runId} started (snapshot ${r.snapshotId.slice(0, 12)})`);
    st.run = { runId: r.runId, planId: st.plan.plan!.id, status: 'running', progress: 0, completedSteps: 0, failedSteps: 0, skippedSteps: 0, totalSteps: st.plan.plan!.steps.length, currentSteps: [] };
    updateStatus(st);
  });
  reg('agentd.pause', () => runCtl('agentd/run/pause'));
  reg('agentd.resume', () => runCtl('agentd/run/resume'));
  reg('agentd.cancel', () => runCtl('agentd/run/cancel'));
  reg('agentd.retryStep', async (n?: PlanNode) => {
    const stepId = stepArg(st, n) ?? await vscode.window.showInputBox({ prompt: 'Step id to retry' });
    if (!stepId || !runId()) return;
    st.run = { ...st.run!, ...(await req<RunState>('agentd/run/retryStep', { runId: runId(), stepId })) };
    st.plan.setRun(st.run);
  });
  reg('agentd.skipStep', async (n?: PlanNode) => {
    const stepId = stepArg(st, n) ?? await vscode.window.showInputBox({ prompt: 'Step id to skip' });
    if (!stepId) return;
    if (runId() && st.run?.status === 'running' || st.run?.status === 'paused') {
      st.run = { ...st.run!, ...(await req<RunState>('agentd/run/skipStep', { runId: runId(), stepId })) };
      st.plan.setRun(st.run);
    } else await editPlan(st, [{ op: 'skip', stepId }]);
  });
  reg('agentd.editStep', async (n?: PlanNode) => {
    const stepId = stepArg(st, n);
    const step = st.plan.plan?.steps.find((s) => s.id === stepId);
    if (!step) return;
    const text = await vscode.window.showInputBox({ title: `agentd: args of step ${step.id} (JSON)`, value: JSON.stringify(step.args ?? {}), ignoreFocusOut: true,
      validateInput: (v) => { try { JSON.parse(v); return undefined; } catch (e) { return `not JSON: ${errText(e)}`; } } });
    if (text === undefined) return;
    await editPlan(st, [{ op: 'update', stepId: step.id, step: { ...step, args: JSON.parse(text) } }]);
  });
  const move = (dir: -1 | 1) => async (n?: PlanNode) => {
    const stepId = stepArg(st, n);
    if (!stepId || !st.plan.plan) return;
    const e = moveEdit(st.plan.plan, stepId, dir);
    if (e) await editPlan(st, [e]);
  };
  reg('agentd.moveStepUp', move(-1));
  reg('agentd.moveStepDown', move(1));
  reg('agentd.removeStep', async (n?: PlanNode) => { const stepId = stepArg(st, n); if (stepId) await editPlan(st, [{ op: 'remove', stepId }]); });

  reg('agentd.acceptHunk', (r?: HunkRef) => decideHunk(st, r, 'accept'));
  reg('agentd.rejectHunk', (r?: HunkRef) => decideHunk(st, r, 'reject'));
  reg('agentd.acceptFile', (r?: { uri?: string }) => decideFile(st, r, 'accept'));
  reg('agentd.rejectFile', (r?: { uri?: string }) => decideFile(st, r, 'reject'));
  reg('agentd.acceptAll', (n?: ChangeNode) => decideAll(st, n, 'accept'));
  reg('agentd.rejectAll', (n?: ChangeNode) => decideAll(st, n, 'reject'));
  reg('agentd.nextHunk', () => gotoHunk(st, 1));
  reg('agentd.previousHunk', () => gotoHunk(st, -1));
  reg('agentd.reviewAll', (n?: ChangeNode) => reviewAll(st, n));
  reg('agentd.openDiff', (r?: { uri?: string; changeId?: string }) => openDiff(st, r));

  reg('agentd.restoreSnapshot', async (n?: SnapNode) => {
    const snap = snapArg(n) ?? await pickSnapshot('agentd: Restore Snapshot');
    if (snap) await restore(st, snap.id, snap.stepId ? `step ${snap.stepId}` : snap.label);
  });
  reg('agentd.undoRestore', async () => {
    const id = st.lastUndo ?? st.context.workspaceState.get<string>('agentd.lastUndo');
    if (!id) { void vscode.window.showInformationMessage('agentd: no restore to undo'); return; }
    await restore(st, id, 'the state before the last restore');
  });
  reg('agentd.compareWithSnapshot', async (n?: SnapNode) => {
    const snap = snapArg(n) ?? await pickSnapshot('agentd: Compare with Snapshot');
    if (snap) await compareWithSnapshot(st, snap);
  });
  reg('agentd.showLog', () => st.out.show(true));
  reg('agentd.refresh', () => refreshAll(st));
}
