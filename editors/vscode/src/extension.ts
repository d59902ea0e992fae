// agentd for VS Code: hosts `agentd serve` through vscode-languageclient and adds agentd's
// views, decorations, CodeLens and commands. Rules live in the server; this renders what the
// server says and sends the user's decisions.
//
// activate only wires: it starts the daemon (daemon.ts), creates the views, and registers what
// each module does: plans (plans.ts), runs (runs.ts), changes under review (changes.ts, by the
// client recipe of decide.ts), approvals (approvals.ts), snapshots and undo (snapshots.ts), the
// status bar (status.ts).
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { ApprovalRequest, ChangesDidChange } from './model';
import { DIFF_SCHEME, Review } from './review';
import { ChangesTree, PlanTree, SnapshotsTree } from './views';
import { DaemonDown, errText } from './errors';
import { Daemon, binaryNow, noBinary, readKey, registerDaemonCommands } from './daemon';
import { FileMetrics, Reg, State } from './state';
import { createStatus, updateStatus } from './status';
import { registerPlanCommands, restorePlanView, toggleSkips } from './plans';
import { RunDidChange, onRunEvent, registerRunCommands, runsDied, showRunProgress } from './runs';
import { SaveRequest, refreshAll, registerChangeCommands, resyncFile, saveDocuments } from './changes';
import { askApproval, registerApprovalCommands } from './approvals';
import { registerSnapshotCommands } from './snapshots';
import { attachChat, chatApproval, registerChatView } from './chat/view';

let daemon: Daemon | undefined;

/** When the bundle began to load (esbuild.mjs puts it first in out/extension.js). */
declare const __agentdLoadStart: number | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const t0 = typeof __agentdLoadStart === 'number' ? __agentdLoadStart : performance.now();
  const tActivate = performance.now();
  const out = vscode.window.createOutputChannel('agentd', { log: true });
  // The daemon first: it starts (a process and an initialize round trip) while the views,
  // decorations and commands are set up, and nothing waits for the views.
  const d = daemon = new Daemon(context, out);
  const bin = binaryNow(context.extensionPath);
  const folder = vscode.workspace.workspaceFolders?.[0];
  const key = await readKey(context, out);
  const starting = bin && folder ? d.start(bin, folder.uri.fsPath, key) : undefined;
  starting?.catch(() => undefined); // reported below, once the views exist
  const metrics = new FileMetrics();
  const review = new Review(metrics);
  const plan = new PlanTree();
  const changes = new ChangesTree(review.sets);
  const snapshots = new SnapshotsTree();
  const planView = vscode.window.createTreeView('agentd.plan', { treeDataProvider: plan });
  const status = createStatus();
  const diagnostics = vscode.languages.createDiagnosticCollection('agentd');
  const st: State = { context, out, daemon: d, review, plan, planView, changes, snapshots, status, diagnostics, metrics };
  d.hooks = {
    attach: (c) => attachClient(st, c),
    reset: () => { review.clear(); st.run = undefined; updateStatus(st); },
    restarted: () => refreshAll(st),
    died: () => { review.clear(); runsDied(st); updateStatus(st); },
  };
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
    vscode.workspace.onDidChangeConfiguration((e) => void d.onSettings(e)),
  );
  const reg = registrar(st);
  registerPlanCommands(st, reg);
  registerRunCommands(st, reg);
  registerChangeCommands(st, reg);
  registerApprovalCommands(st, reg);
  registerSnapshotCommands(st, reg);
  registerDaemonCommands(d, context, out, reg);
  reg('agentd.refresh', () => refreshAll(st));
  context.subscriptions.push(registerChatView(context, { showPlan: (p) => { plan.setPlan(p); updateStatus(st); } }));
  updateStatus(st);
  status.show();
  const tSetup = performance.now();

  if (!bin) {
    d.down = noBinary();
    out.error(d.down.message);
    d.reportDown();
    return;
  }
  if (!folder || !starting) { out.info('no workspace folder open: agentd starts when a folder is opened'); return; }
  try {
    const c = await starting;
    attachClient(st, c);
    void d.sendPolicy();
    metrics.record('activationToDaemonMs', performance.now() - t0, { loadMs: tActivate - t0, setupMs: tSetup - tActivate, ...d.startTimes });
    out.info(`daemon started in ${Math.round(performance.now() - t0)} ms (${bin})`);
    void refreshAll(st);
    void restorePlanView(st);
  } catch (e) {
    d.failed(e);
  }
}

export async function deactivate(): Promise<void> {
  await daemon?.stop();
}

/** registrar: every command runs through here; a failure is logged and said, a missing daemon
 *  every time a command needs it, with the fix. */
function registrar(st: State): Reg {
  return (id, f) => st.context.subscriptions.push(vscode.commands.registerCommand(id, async (...a: any[]) => {
    try { await f(...a); } catch (e) {
      st.out.error(`${id}: ${errText(e)}`);
      if (e instanceof DaemonDown) { st.daemon.reportDown(); return; }
      void vscode.window.showErrorMessage(`agentd: ${errText(e)}`);
    }
  }));
}

/** attachClient installs the handlers of the daemon's notifications and requests. */
function attachClient(st: State, c: LanguageClient): void {
  attachChat(c); // first: it wraps onNotification so the chat view sees agentd/run/didChange too
  c.onNotification('agentd/run/didChange', (p: RunDidChange) => onRunEvent(st, p));
  c.onNotification('agentd/changes/didChange', (p: ChangesDidChange) => {
    const t0 = performance.now();
    st.review.updateFiles(p);
    st.metrics.record('changesDidChangeMs', performance.now() - t0, { hunks: p.files.reduce((a, f) => a + f.hunks.length, 0) });
  });
  // A run (or a plan being made) of the chat shown asks in its turn, with a quick pick beside it;
  // any other in the modal.
  c.onRequest('agentd/approval/request', async (p: ApprovalRequest, token) => (await chatApproval(p, token)) ?? askApproval(st, p));
  c.onRequest('agentd/documents/save', (p: SaveRequest) => saveDocuments(st, p));
  c.onRequest('window/workDoneProgress/create', (p: { token: string | number }) => {
    showRunProgress(st, c, p.token);
    return null;
  });
}
