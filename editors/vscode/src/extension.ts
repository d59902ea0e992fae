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
import {
  ApprovalRequest, ChangeSet, ChangesDidChange, Plan, RunState, activeRun, agentOnly, applyPatchText, approvalPrompt, fileOpenUnits, hunkAt, isOpen, asksReason, keyEnv,
  logLine, missingModel, modelSpec, moveEdit, runConflict, statusText, waitingOnUser, RestartGate,
  OnConflict, UNDO_KEEP, UNDO_OVERWRITE, UNDO_SHOW, UndoResult, conflictDialog, needsChoice, normalizeUndo, undoReport,
} from './model';
import { DIFF_SCHEME, Metrics, Review } from './review';
import { Down, downFromStart, findBinary, missingBinaryMessage, protocolProblem, serverCommand } from './binary';
import { ChangeNode, ChangesTree, PlanNode, PlanTree, Problem, SnapNode, SnapshotInfo, SnapshotsTree } from './views';
import { attachChat, registerChatView } from './chat/view';

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
  /** Why there is no daemon (no binary, it died, it did not start): said again by every command
   *  that needs it, with the fix. */
  down?: Down;
  /** The settings the daemon was started with: a change event restarts it once (RestartGate). */
  gate: RestartGate;
  /** The restart under way: a restart asked for meanwhile waits for it, never runs beside it. */
  restarting?: Promise<void>;
}

/** The daemon is not there: the message says why and what to do. */
class DaemonDown extends Error {
  constructor(message: string, readonly fix: 'setting' | 'restart') { super(message); }
}

let state: State | undefined;
const SECRET_KEY = 'agentd.apiKey';

/** The API key from the editor's secret storage. A secret store that does not answer (a locked
 *  keychain, a browser's storage still opening) must not leave a command silently waiting: after
 *  3 s it is read as no key, and the output channel says so. */
async function readKey(context: vscode.ExtensionContext, out?: vscode.LogOutputChannel): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => { out?.warn('the secret storage did not answer in 3 s: going on without the API key'); resolve(undefined); }, 3000);
  });
  try {
    return await Promise.race([context.secrets.get(SECRET_KEY).then((k) => k, () => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
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
  const key = await readKey(context, out);
  const starting = bin && folder ? startClient(context, out, bin, folder.uri.fsPath, key) : undefined;
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
  const gate = new RestartGate(RestartGate.key((k) => cfg.get(k)));
  const st: State = { context, out, review, plan, planView, changes, snapshots, status, diagnostics, metrics, gate };
  state = st;
  review.resync = (uri, ids) => resyncFile(st, uri, ids);

  context.subscriptions.push(out, review, planView, status, diagnostics,
    // Several files or hunks can be selected and accepted or rejected at once.
    vscode.window.createTreeView('agentd.changes', { treeDataProvider: changes, canSelectMany: true }),
    vscode.window.createTreeView('agentd.snapshots', { treeDataProvider: snapshots }),
    vscode.languages.registerCodeLensProvider({ scheme: 'file' }, review),
    vscode.languages.registerHoverProvider({ scheme: 'file' }, review),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, review),
    review.onDidChangeSets(() => { changes.refresh(); updateStatus(st); }),
    planView.onDidChangeCheckboxState((e) => void toggleSkips(st, e.items)),
    vscode.workspace.onDidChangeConfiguration((e) => void onSettings(st, e)),
  );
  registerCommands(st);
  context.subscriptions.push(registerChatView(context, { showPlan: (p) => { plan.setPlan(p); updateStatus(st); } }));
  updateStatus(st);
  status.show();
  const tSetup = performance.now();

  if (!bin) {
    st.down = { message: missingBinaryMessage(cfg.get<string>('path', '')) + ' Set agentd.path to the agentd binary, or put agentd on PATH.', fix: 'setting' };
    out.error(st.down.message);
    reportDown(st);
    return;
  }
  if (!folder || !starting) { out.info('no workspace folder open: agentd starts when a folder is opened'); return; }
  try {
    const c = await starting;
    attachClient(st, c);
    void sendPolicy(st);
    metrics.record('activationToDaemonMs', performance.now() - t0, { loadMs: tActivate - t0, setupMs: tSetup - tActivate, ...startTimes });
    out.info(`daemon started in ${Math.round(performance.now() - t0)} ms (${bin})`);
    void refreshAll(st);
    void restorePlanView(st);
  } catch (e) {
    client = undefined;
    // A refused protocol version is its own whole message (binary.ts, protocolProblem).
    st.down = downFromStart(errText(e));
    out.error(st.down.message);
    reportDown(st);
  }
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

/** reportDown says why there is no daemon, with the fix as a button. */
function reportDown(st: State): void {
  const d = st.down;
  if (!d) return;
  const actions = d.fix === 'setting' ? ['Open Setting', 'Show Log'] : ['Restart agentd', 'Show Log'];
  void vscode.window.showErrorMessage(d.message, ...actions).then((a) => {
    if (a === 'Open Setting') void vscode.commands.executeCommand('workbench.action.openSettings', d.setting ?? 'agentd.path');
    else if (a === 'Restart agentd') void vscode.commands.executeCommand('agentd.restart');
    else if (a === 'Show Log') st.out.show(true);
  });
}

/** The daemon's process, spawned by the extension (its stderr is read here, line by line). */
let daemon: ChildProcess | undefined;
let stopping = false;

async function stopClient(): Promise<void> {
  const c = client, p = daemon;
  client = undefined;
  // Not the current daemon any more: its exit, whenever it comes, is not a death to report.
  daemon = undefined;
  stopping = true;
  try {
    await c?.stop(2000).catch(() => undefined);
  } finally {
    stopping = false;
  }
  if (p && p.exitCode === null && p.signalCode === null) p.kill();
}

/** restartDaemon stops the daemon (if any) and starts it again with the current settings:
 *  agentd.path, the model, the key and the log level apply without a window reload. */
function restartDaemon(st: State, why: string): Promise<void> {
  const next = (st.restarting ?? Promise.resolve()).then(() => restartNow(st, why));
  st.restarting = next.finally(() => { if (st.restarting === next) st.restarting = undefined; });
  return next;
}

async function restartNow(st: State, why: string): Promise<void> {
  st.out.info(`restarting the daemon: ${why}`);
  st.gate.started(RestartGate.key((k) => vscode.workspace.getConfiguration('agentd').get(k)));
  await stopClient();
  st.review.clear();
  st.run = undefined;
  updateStatus(st);
  const cfg = vscode.workspace.getConfiguration('agentd');
  const folder = vscode.workspace.workspaceFolders?.[0];
  const bin = findBinary(cfg.get<string>('path', ''), process.env.PATH ?? '', st.context.extensionPath);
  if (!bin) {
    st.down = { message: missingBinaryMessage(cfg.get<string>('path', '')) + ' Set agentd.path to the agentd binary, or put agentd on PATH.', fix: 'setting' };
    st.out.error(st.down.message);
    reportDown(st);
    return;
  }
  if (!folder) return;
  try {
    const key = await readKey(st.context, st.out);
    const c = await startClient(st.context, st.out, bin, folder.uri.fsPath, key);
    st.down = undefined;
    attachClient(st, c);
    st.out.info(`daemon started (${bin})`);
    await refreshAll(st);
    await sendPolicy(st);
  } catch (e) {
    client = undefined;
    st.down = downFromStart(errText(e));
    st.out.error(st.down.message);
    reportDown(st);
  }
}

/** onSettings applies a settings change at once: the binary, model, key and log level restart
 *  the daemon; approval settings go to the daemon's policy (agentd/policy/set). */
async function onSettings(st: State, e: vscode.ConfigurationChangeEvent): Promise<void> {
  const restart = ['agentd.path', 'agentd.model', 'agentd.provider', 'agentd.modelBaseUrl', 'agentd.logLevel', 'agentd.allowBroadWorkspace'].filter((k) => e.affectsConfiguration(k));
  // Once per change of the values: an event that brings the values the daemon runs with
  // already (VS Code may send two for one edit) restarts nothing.
  if (restart.length && st.gate.changed(RestartGate.key((k) => vscode.workspace.getConfiguration('agentd').get(k)))) {
    await restartDaemon(st, `${restart.join(', ')} changed`);
    return;
  }
  if (restart.length) { st.out.debug(`${restart.join(', ')}: the daemon already runs with these values`); return; }
  if (e.affectsConfiguration('agentd.approval') && client) await sendPolicy(st);
}

/** sendPolicy sends the editor's approval settings that the user set (not the defaults) to the
 *  daemon's policy, which keeps it for the workspace. */
async function sendPolicy(st: State): Promise<void> {
  const p = approvalPolicy(vscode.workspace.getConfiguration('agentd'));
  if (!Object.keys(p).length || !client) return;
  try {
    await req('agentd/policy/set', p);
    st.out.info(`approval policy sent: ${JSON.stringify(p)}`);
  } catch (e) {
    st.out.error(`agentd/policy/set: ${errText(e)}`);
    void vscode.window.showErrorMessage(`agentd: the approval settings were refused: ${errText(e)}`);
  }
}

function errText(e: unknown): string {
  if (isRpcError(e)) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** approvalPolicy is the approval settings the user set (workspace, folder or user), not the
 *  defaults: the daemon's policy is the workspace's, and a default must not override it. */
function approvalPolicy(cfg: vscode.WorkspaceConfiguration): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ['write', 'delete', 'command', 'git', 'requireApprovalForRisk', 'allowCommands', 'denyCommands']) {
    const i = cfg.inspect(`approval.${k}`);
    const v = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
    if (v !== undefined && v !== '') out[k] = v;
  }
  return out;
}

async function startClient(context: vscode.ExtensionContext, out: vscode.LogOutputChannel, bin: string, cwd: string, apiKey?: string): Promise<LanguageClient> {
  const cfg = vscode.workspace.getConfiguration('agentd');
  const cmd = serverCommand(bin, cfg.get<string>('logLevel', 'info'), process.env.AGENTD_STATE_DIR);
  const model = modelSpec(cfg.get<string>('model', ''), cfg.get<string>('provider', ''), cfg.get<string>('modelBaseUrl', ''));
  // The key from VS Code's secret storage goes to the daemon in its environment, under the
  // variable its provider reads; never in a file or a setting.
  const env = { ...process.env };
  if (apiKey) env[keyEnv(model?.provider ?? modelSpec(env.AGENTD_MODEL ?? '', '', '')?.provider ?? 'openai')] = apiKey;
  // The daemon's process starts first, then the client library loads while it starts. Over
  // stdio, with no `--stdio` argument (serverCommand). Its stderr (log/slog lines) is read here
  // so the output channel shows each line at its level.
  const p = spawn(cmd.command, cmd.args, { cwd, stdio: 'pipe', env });
  daemon = p;
  const spawnError = new Promise<never>((_, rej) => p.once('error', (e) => rej(new Error(`cannot start ${bin}: ${e.message}`))));
  spawnError.catch(() => undefined);
  let buf = '';
  p.stderr?.setEncoding('utf8');
  p.stderr?.on('data', (d: string) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const l = logLine(buf.slice(0, i));
      buf = buf.slice(i + 1);
      out[l.level](l.text);
    }
  });
  const t0 = performance.now();
  lc = await import('vscode-languageclient/node');
  startTimes.libMs = performance.now() - t0;
  let used = false;
  const serverOptions: ServerOptions = async () => {
    if (used) throw new Error('the daemon is restarted by the extension, not by the client library');
    used = true;
    return { reader: p.stdout!, writer: p.stdin!, detached: false };
  };
  const init: Record<string, unknown> = {
    review: cfg.get<string>('review', 'before'),
    // No approval here: the policy is the workspace's, kept by the daemon; the editor's settings
    // go through agentd/policy/set (sendPolicy) when set and when they change.
    // hunksFollowEdits: Review moves hunks with the typing itself, so the server stays silent
    // about rebases that only moved them (docs/protocol.md, agentd/changes/didChange).
    clientFeatures: { approvalRequest: true, changeReview: true, hunksFollowEdits: true },
  };
  if (model) init.model = model;
  // A workspace that is your home folder or / is refused unless confirmed (the daemon's rule).
  if (cfg.get<boolean>('allowBroadWorkspace', false)) init.allowBroadWorkspace = true;
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    outputChannel: out,
    revealOutputChannelOn: lc.RevealOutputChannelOn.Never,
    initializationOptions: init,
    // The extension reports a dead daemon itself (every command says so, with Restart) and
    // clears what it drew; the library does not restart it behind the user's back.
    errorHandler: {
      error: () => ({ action: lc!.ErrorAction.Continue, handled: true }),
      closed: () => ({ action: lc!.CloseAction.DoNotRestart, handled: true }),
    },
    // A refused initialize is said once, by the extension (reportDown, with the fix as a
    // button), not also by the library's own toasts: no retry offered, and its "couldn't create
    // connection" notice goes to the log only (below).
    initializationFailedHandler: () => false,
  };
  const c = new lc.LanguageClient('agentd', 'agentd', serverOptions, clientOptions);
  const libError = c.error.bind(c);
  c.error = (message: string, data?: unknown, show?: boolean | 'force') => libError(message, data, show === 'force' ? false : show);
  client = c;
  p.once('exit', (code, signal) => { if (daemon === p) onDaemonExit(code, signal); });
  context.subscriptions.push({ dispose: () => { void c.stop().catch(() => undefined); if (p.exitCode === null) p.kill(); } });
  const t1 = performance.now();
  try {
    await Promise.race([c.start(), spawnError]);
  } catch (e) {
    // A refused initialize (the daemon's rules on where it works) leaves no daemon behind; its
    // exit is not a death to report.
    if (daemon === p) daemon = undefined;
    client = undefined;
    if (p.exitCode === null) p.kill();
    throw e;
  }
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

/** onDaemonExit: the daemon ended without being asked. What it drew is taken away (nobody can
 *  decide those hunks now), and the user is told, with Restart. */
function onDaemonExit(code: number | null, signal: NodeJS.Signals | null): void {
  const st = state;
  daemon = undefined;
  if (stopping || !st) return;
  client = undefined;
  st.down = { message: `agentd: the daemon stopped (${signal ? `signal ${signal}` : `exit code ${code}`}); its pending changes are no longer shown. Restart it to go on (pending changes come back from its state).`, fix: 'restart' };
  st.out.error(st.down.message);
  st.review.clear();
  for (const end of [...progressEnds]) end();
  if (st.run && (st.run.status === 'running' || st.run.status === 'paused')) st.run = { ...st.run, status: 'stopped' };
  st.plan.stopRunning();
  updateStatus(st);
  reportDown(st);
}

/** attachClient installs the handlers of the daemon's notifications and requests. */
function attachClient(st: State, c: LanguageClient): void {
  attachChat(c); // first: it wraps onNotification so the chat view sees agentd/run/didChange too
  c.onNotification('agentd/run/didChange', (p: { runId: string; event: RunEvent; state?: RunState; unsaved?: string[]; note?: string }) => onRunEvent(st, p));
  c.onNotification('agentd/changes/didChange', (p: ChangesDidChange) => {
    const t0 = performance.now();
    st.review.updateFiles(p);
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
  if (saved.length) st.out.info(`documents/save: saved ${saved.map(rel).join(', ')} (${p.reason})`);
  return { saved };
}

/** showUnsaved says the daemon's note on a run whose accepted changes are only in unsaved
 *  editors, with Save All: it saves exactly those editors (a run's end never looks done while
 *  the disk does not have its changes). */
function showUnsaved(st: State, runId: string, uris: string[], note?: string): void {
  const rel = (u: string) => vscode.workspace.asRelativePath(vscode.Uri.parse(u));
  const text = note ?? `the accepted changes of ${uris.map(rel).join(', ')} are only in the editor, not on disk yet`;
  st.out.warn(`run ${runId}: ${text}`);
  void vscode.window.showWarningMessage(`agentd: run ${runId}: ${text}`, 'Save All').then(async (a) => {
    if (a !== 'Save All') return;
    const docs = vscode.workspace.textDocuments.filter((d) => uris.includes(d.uri.toString()) && d.isDirty);
    const ok = await Promise.all(docs.map((d) => d.save()));
    st.out.info(`run ${runId}: saved ${docs.filter((_, i) => ok[i]).map((d) => rel(d.uri.toString())).join(', ') || 'nothing'}`);
  });
}

interface RunEvent { seq: number; type: string; runId: string; stepId?: string; status?: string; error?: string; changeId?: string; snapshotId?: string; reason?: string }

/** Ends the progress notifications of a daemon that died (no `end` will come). */
const progressEnds = new Set<() => void>();

function showRunProgress(st: State, c: LanguageClient, token: string | number): void {
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'agentd', cancellable: true }, (progress, cancel) =>
    new Promise<void>((resolve) => {
      const end = () => { progressEnds.delete(end); resolve(); };
      progressEnds.add(end);
      let last = 0;
      const sub = c.onProgress(lc!.WorkDoneProgress.type, token, (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
        if (v.kind === 'end') { sub.dispose(); end(); return; }
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
  st.status.text = statusText(st.run, n, waitingOnUser(st.run, (id) => st.plan.stepState(id)?.status));
  st.status.tooltip = st.run ? `agentd run ${st.run.runId}: ${st.run.status}, ${Math.round(st.run.progress * 100)}%` + (n ? `\n${n} hunks pending review` : '') : (n ? `${n} hunks pending review` : 'agentd');
  void vscode.commands.executeCommand('setContext', 'agentd.hasPlan', !!st.plan.plan);
  void vscode.commands.executeCommand('setContext', 'agentd.runActive', st.run?.status === 'running');
  void vscode.commands.executeCommand('setContext', 'agentd.runPaused', st.run?.status === 'paused');
}

async function onRunEvent(st: State, p: { runId: string; event: RunEvent; state?: RunState; unsaved?: string[]; note?: string }): Promise<void> {
  const ev = p.event;
  if (p.state) st.run = { ...(st.run?.runId === p.runId ? st.run : {}), ...p.state } as RunState;
  switch (ev.type) {
    case 'runStarted': st.plan.resetSteps(); break;
    case 'stepStarted': if (ev.stepId) st.plan.stepEvent(ev.stepId, ev.status ?? 'running'); break;
    // Statuses the core gives between start and end (a step retrying after a failure, or
    // `waiting`), shown as the core says.
    case 'stepRetrying': if (ev.stepId) st.plan.stepEvent(ev.stepId, 'retrying', ev.error); break;
    case 'approvalPending': case 'stepProgress': if (ev.stepId && ev.status) st.plan.stepEvent(ev.stepId, ev.status); break;
    case 'stepFinished': case 'stepSkipped': case 'stepBlocked': case 'stepFailed':
      if (ev.stepId) st.plan.stepEvent(ev.stepId, ev.status ?? ({ stepFinished: 'completed', stepSkipped: 'skipped', stepBlocked: 'blocked', stepFailed: 'failed' } as Record<string, string>)[ev.type], ev.error, ev.reason);
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
      // The daemon names the accepted changes still only in editors (review before): the run
      // is not over on disk until they are saved.
      if (p.unsaved?.length) showUnsaved(st, p.runId, p.unsaved, p.note);
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
  if (!client) {
    const d = state?.down;
    return Promise.reject(d ? new DaemonDown(d.message, d.fix) : new DaemonDown('agentd: the daemon is not running (open a folder, or run "agentd: Restart Daemon").', 'restart'));
  }
  return client.sendRequest<T>(method, params);
}

/** The buffer version of each open document: a change set asked for now is computed on these. */
function versionsNow(): Map<string, number> {
  return new Map(vscode.workspace.textDocuments.map((d) => [d.uri.toString(), d.version]));
}

async function fetchChangeSet(st: State, id: string): Promise<ChangeSet | undefined> {
  const versions = versionsNow();
  const cs = await req<ChangeSet>('agentd/changes/get', { changeId: id }).catch((e) => { st.out.warn(`changes/get ${id}: ${errText(e)}`); return undefined; });
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
async function resyncFile(st: State, uri: string, ids: string[]): Promise<void> {
  st.out.debug(`no notice for the hunks typed into in ${vscode.workspace.asRelativePath(vscode.Uri.parse(uri))}: asking for ${ids.join(', ')}`);
  for (const id of ids) await fetchChangeSet(st, id);
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

async function refreshAll(st: State): Promise<void> {
  const list = await req<ChangeSet[]>('agentd/changes/list', {}).catch(() => [] as ChangeSet[]);
  await Promise.all(list.filter((c) => c.status !== 'accepted' && c.status !== 'rejected').map((c) => fetchChangeSet(st, c.id)));
  await refreshSnapshots(st);
}

async function refreshSnapshots(st: State): Promise<void> {
  const list = await req<SnapshotInfo[]>('agentd/snapshot/list', {}).catch(() => undefined);
  if (!list) return;
  st.snapshots.set(list);
  // Runs are listed by their plan's title, asked for once per run (a title does not change).
  const ids = [...new Set(list.map((s) => s.runId).filter((id): id is string => !!id && !st.snapshots.titles.has(id)))];
  if (!ids.length) return;
  const titles = new Map<string, string>();
  await Promise.all(ids.map(async (id) => {
    const r = await req<RunState & { finalPlan?: Plan; originalPlan?: Plan }>('agentd/run/get', { runId: id }).catch(() => undefined);
    // A run going on has no final plan yet: its plan is the one shown, when it is that run's.
    const shown = st.run?.runId === id && st.plan.plan?.id === r?.planId ? st.plan.plan?.title : undefined;
    const t = r?.finalPlan?.title || r?.originalPlan?.title || shown;
    if (t) titles.set(id, t);
  }));
  if (titles.size) st.snapshots.setTitles(titles);
}

/** restorePlanView: a window opened (or reloaded) shows the workspace's current plan and run,
 *  as the daemon has them: the run going on, else the newest. A new daemon knows the run from
 *  the journal with its plan, which it is given again so the plan can be run or edited. */
async function restorePlanView(st: State): Promise<void> {
  if (st.plan.plan) return;
  const runs = await req<RunState[]>('agentd/run/list', {}).catch(() => [] as RunState[]);
  const r = activeRun(runs) ?? runs[0];
  if (!r) return;
  const full = await req<RunState & { finalPlan?: Plan; originalPlan?: Plan }>('agentd/run/get', { runId: r.runId }).catch(() => undefined);
  if (!full || st.plan.plan) return;
  let plan = await req<Plan>('agentd/plan/get', { planId: full.planId }).catch(() => undefined);
  const kept = full.finalPlan ?? full.originalPlan;
  if (!plan && kept) plan = await req<Plan>('agentd/plan/load', { plan: kept }).catch(() => undefined);
  if (!plan || st.plan.plan) return;
  const { finalPlan: _f, originalPlan: _o, ...run } = full;
  st.plan.setPlan(plan);
  st.run = { ...run, planId: plan.id };
  st.plan.setRun(st.run);
  updateStatus(st);
  st.out.info(`plan view: ${plan.title ?? plan.id} and its ${st.run.status} run ${st.run.runId}, from the daemon`);
}

async function askApproval(st: State, r: ApprovalRequest): Promise<{ outcome: 'selected'; optionId: string; reason?: string } | { outcome: 'cancelled' }> {
  const p = approvalPrompt(r, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  // The first button is the default (Enter): Reject for a high-risk call (approvalPrompt).
  // Dismissing answers this request only, as cancelled (reject once), never another.
  const pick = await vscode.window.showWarningMessage(p.message, { modal: true, detail: p.detail }, ...p.buttons.map((b) => ({ title: b.title, optionId: b.optionId, isCloseAffordance: b.isCloseAffordance })));
  if (!pick) { st.out.info(`approval for step ${r.stepId} dismissed: not allowed this time`); return { outcome: 'cancelled' }; }
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
    if (e instanceof DaemonDown) throw e;
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
    if (e instanceof DaemonDown) throw e;
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
  if (!cs || !asksReason(cs)) return undefined;
  const r = await vscode.window.showInputBox({ title: `agentd: reject step ${cs.stepId ?? cs.id}'s change`, prompt: 'Why? The model reads this (optional; Escape cancels the rejection).', ignoreFocusOut: true });
  return r === undefined ? null : r || undefined;
}

async function resolve(st: State, changeId: string, decisions: Decision[], reason?: string, retried = false): Promise<void> {
  let res: ResolveResult;
  try {
    res = await req<ResolveResult>('agentd/changes/resolve', { changeId, decisions: decisions.map(({ line: _l, ...d }) => d), reason });
  } catch (e) {
    if (e instanceof DaemonDown) throw e;
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
  for (const c of res.conflicts) {
    // The daemon's message may name the file already: not twice.
    const rel = vscode.workspace.asRelativePath(vscode.Uri.parse(c.uri));
    void vscode.window.showWarningMessage(`agentd: ${c.message.startsWith(`${rel}: `) ? c.message : `${rel}: ${c.message}`}`);
  }
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

async function decideAll(st: State, node: ChangeNode | undefined, action: 'accept' | 'reject'): Promise<void> {
  // Every open set as the daemon has it (one not drawn yet included), not only those shown.
  const ids = node?.changeId ? [node.changeId]
    : [...new Set([...(await req<ChangeSet[]>('agentd/changes/list', {})).filter(isOpen).map((c) => c.id), ...[...st.review.sets.values()].filter(isOpen).map((c) => c.id)])];
  if (!ids.length) { void vscode.window.showInformationMessage('agentd: nothing pending review'); return; }
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

interface RestoreResult { restored: string[]; deleted: string[]; created: string[]; conflicts: { uri: string; message: string }[]; leftAlone?: { uri: string; message: string }[]; undoSnapshotId?: string }

async function restore(st: State, id: string, label: string): Promise<void> {
  // The server decides everything: it puts the restored text into open buffers through
  // workspace/applyEdit, saves them through agentd/documents/save, and reports buffers with the
  // user's unsaved edits as conflicts, left alone. This shows what it did. What can be undone is
  // the daemon's journal (agentd/undo/restore), not kept here.
  let res: RestoreResult;
  try {
    res = await req('agentd/snapshot/restore', { id });
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
interface Leftovers { commits?: { sha: string; subject: string }[]; revert?: string; staged?: string[]; bigFiles?: string[]; text: string }

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
      const raw = await req<Record<string, unknown>>(method, params);
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
    const dry = normalizeUndo(await req(method, { ...target, dryRun: true }));
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

/** offerLiveRun: a run of the workspace is running or paused. The user resumes it, cancels it
 *  (then the new run starts) or leaves things as they are; never a second run beside it. Returns
 *  whether to start the new run. */
async function offerLiveRun(st: State, runId: string, status: string): Promise<boolean> {
  const actions = status === 'paused' ? ['Resume', 'Cancel It and Run'] : ['Cancel It and Run'];
  const a = await vscode.window.showWarningMessage(`agentd: run ${runId} is ${status}: resume it or cancel it first. One run at a time per workspace.`, { modal: true }, ...actions);
  if (a === 'Resume') {
    const s = await req<RunState>('agentd/run/resume', { runId });
    st.run = { ...(st.run?.runId === runId ? st.run : {}), ...s } as RunState;
    st.plan.setRun(st.run);
    updateStatus(st);
    st.out.info(`run ${runId} resumed (instead of a new run)`);
    return false;
  }
  if (a === 'Cancel It and Run') {
    await req<RunState>('agentd/run/cancel', { runId });
    st.out.info(`run ${runId} cancelled to start a new one`);
    // The cancel ends the run's steps first: wait until the daemon says it is over.
    for (let i = 0; i < 100; i++) {
      const r = await req<RunState>('agentd/run/get', { runId }).catch(() => undefined);
      if (!r || (r.status !== 'running' && r.status !== 'paused')) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    return true;
  }
  return false;
}

/** repropose computes a stale hunk (or every undecided hunk of its file) again against the text
 *  as it is now (agentd/changes/repropose) and draws the new change set. */
async function repropose(st: State, ref: HunkRef | undefined): Promise<void> {
  const r = refOrCursor(st, ref);
  if (!r?.changeId) { void vscode.window.showInformationMessage('agentd: no stale hunk under the cursor'); return; }
  const versions = versionsNow();
  const cs = await req<ChangeSet>('agentd/changes/repropose', { changeId: r.changeId, uri: r.uri, hunkId: r.hunkId });
  st.review.setChangeSet(cs, versions);
  st.out.info(`${r.changeId}: re-proposed ${r.hunkId ?? r.uri ?? 'the set'} against the current text`);
}

interface Rule { id: string; category?: string; tool?: string; command?: string; path?: string; allow: boolean; createdAt?: string }

/** manageRules lists the remembered approval rules ("always" answers) and revokes the chosen. */
async function manageRules(st: State): Promise<void> {
  const pol = await req<{ rules?: Rule[] }>('agentd/policy/get', {});
  const rules = pol.rules ?? [];
  if (!rules.length) { void vscode.window.showInformationMessage('agentd: no remembered approval rules'); return; }
  const picks = await vscode.window.showQuickPick(rules.map((r) => ({
    label: `${r.allow ? '$(check) allow' : '$(close) reject'} ${r.command ? `\`${r.command}\`` : r.path ?? r.tool ?? r.category ?? ''}`,
    description: r.id, detail: [r.category, r.tool, r.createdAt && new Date(r.createdAt).toLocaleString()].filter(Boolean).join(' · '), rule: r,
  })), { title: 'agentd: Approval Rules (select the rules to revoke)', canPickMany: true, placeHolder: 'remembered "always" answers' });
  if (!picks?.length) return;
  await req('agentd/policy/set', { revoke: picks.map((p) => p.rule.id) });
  st.out.info(`rules revoked: ${picks.map((p) => p.rule.id).join(', ')}`);
  void vscode.window.showInformationMessage(`agentd: revoked ${picks.map((p) => p.rule.id).join(', ')}`);
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
    try { await f(...a); } catch (e) {
      st.out.error(`${id}: ${errText(e)}`);
      // No daemon: said every time a command needs it, with the fix.
      if (e instanceof DaemonDown) { reportDown(st); return; }
      void vscode.window.showErrorMessage(`agentd: ${errText(e)}`);
    }
  }));
  const runId = () => st.run?.runId;
  /** The run a control acts on: the one shown if it is running or paused, else the workspace's
   *  active run from the daemon (another window, a terminal, a run shown before a reload). */
  const liveRun = async (): Promise<RunState | undefined> => {
    if (st.run && (st.run.status === 'running' || st.run.status === 'paused')) return st.run;
    return activeRun(await req<RunState[]>('agentd/run/list', {}));
  };
  const runCtl = async (m: string) => {
    const r = await liveRun();
    if (!r) { void vscode.window.showInformationMessage('agentd: no run is running or paused'); return; }
    st.run = { ...(st.run?.runId === r.runId ? st.run : r), ...(await req<RunState>(m, { runId: r.runId })) };
    st.plan.setRun(st.run);
    updateStatus(st);
  };
  reg('agentd.newPlan', async () => {
    // What a plan from a request needs is checked before the request is asked for.
    const cfg = vscode.workspace.getConfiguration('agentd');
    const hasKey = !!(await readKey(st.context, st.out));
    const missing = missingModel({ model: cfg.get<string>('model', ''), provider: cfg.get<string>('provider', ''), baseUrl: cfg.get<string>('modelBaseUrl', ''), hasKey, env: process.env });
    if (missing.length) {
      const a = await vscode.window.showErrorMessage(`agentd: a plan from a request needs ${missing.join('; and ')}.`, 'Open Settings', 'Set API Key');
      if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'agentd.model');
      else if (a === 'Set API Key') void vscode.commands.executeCommand('agentd.setApiKey');
      return;
    }
    if (!client) throw new DaemonDown(st.down?.message ?? 'agentd: the daemon is not running.', st.down?.fix ?? 'restart');
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
    if (!client) throw new DaemonDown(st.down?.message ?? 'agentd: the daemon is not running.', st.down?.fix ?? 'restart');
    if (!st.plan.plan) { const uri = await pickPlanFile(); if (!uri || !await loadPlan(st, uri)) return; }
    const cfg = vscode.workspace.getConfiguration('agentd');
    // One run at a time per workspace: a run running or paused is offered first (the server
    // refuses a second one with -32010 too, which is answered the same way).
    const live = activeRun(await req<RunState[]>('agentd/run/list', {}).catch(() => [] as RunState[]));
    if (live && !await offerLiveRun(st, live.runId, live.status)) return;
    const start = () => req<{ runId: string; snapshotId: string }>('agentd/run/start', { planId: st.plan.plan!.id, options: { review: cfg.get<string>('review', 'before') } });
    let r: { runId: string; snapshotId: string };
    try {
      r = await start();
    } catch (e) {
      const c = runConflict(e);
      if (!c) throw e;
      if (!await offerLiveRun(st, c.runId, c.status)) return;
      r = await start();
    }
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
  reg('agentd.restart', () => restartDaemon(st, 'asked for'));
  reg('agentd.setApiKey', async () => {
    const cfg = vscode.workspace.getConfiguration('agentd');
    const spec = modelSpec(cfg.get<string>('model', '') || process.env.AGENTD_MODEL || '', cfg.get<string>('provider', ''), '');
    const v = await vscode.window.showInputBox({ title: 'agentd: Set API Key', prompt: `The API key for ${spec?.provider ?? 'the model'}'s server, kept in VS Code's secret storage and given to the daemon as ${keyEnv(spec?.provider ?? 'openai')}. Empty: remove it.`, password: true, ignoreFocusOut: true });
    if (v === undefined) return;
    if (v) await st.context.secrets.store(SECRET_KEY, v); else await st.context.secrets.delete(SECRET_KEY);
    void vscode.window.showInformationMessage(v ? 'agentd: API key saved; the daemon restarts with it.' : 'agentd: API key removed; the daemon restarts without it.');
    await restartDaemon(st, 'the API key changed');
  });
  reg('agentd.undoRun', (a?: { runId?: string }) => undo(st, 'run', a?.runId));
  reg('agentd.undoRestore', () => undo(st, 'restore'));
  reg('agentd.rules', () => manageRules(st));
  reg('agentd.restoreSnapshot', async (n?: SnapNode) => {
    const snap = snapArg(n) ?? await pickSnapshot('agentd: Restore Snapshot');
    if (snap) await restore(st, snap.id, snap.stepId ? `step ${snap.stepId}` : snap.label);
  });
  reg('agentd.compareWithSnapshot', async (n?: SnapNode) => {
    const snap = snapArg(n) ?? await pickSnapshot('agentd: Compare with Snapshot');
    if (snap) await compareWithSnapshot(st, snap);
  });
  reg('agentd.showLog', () => st.out.show(true));
  reg('agentd.refresh', () => refreshAll(st));
}
