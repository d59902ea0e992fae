// Runs: starting one (one at a time per workspace), its controls, its events drawn on the Plan
// view, its progress notification, and what its end leaves unsaved.
import * as vscode from 'vscode';
import type { LanguageClient, WorkDoneProgressBegin, WorkDoneProgressReport, WorkDoneProgressEnd } from 'vscode-languageclient/node';
import { ChangeSet, RunState, activeRun, isOpen, runConflict } from './model';
import { PlanNode } from './views';
import { Reg, State } from './state';
import { updateStatus } from './status';
import { editPlan, loadPlan, pickPlanFile, reloadPlan, stepArg } from './plans';
import { fetchChangeSet } from './changes';
import { refreshSnapshots } from './snapshots';
import type * as wire from './protocol.gen';

export type RunEvent = wire.Event;
export type RunDidChange = wire.RunEventParams;

/** Ends the progress notifications of a daemon that died (no `end` will come). */
const progressEnds = new Set<() => void>();

/** runsDied: the daemon died; its progress notifications end and its run is shown stopped. */
export function runsDied(st: State): void {
  for (const end of [...progressEnds]) end();
  if (st.run && (st.run.status === 'running' || st.run.status === 'paused')) st.run = { ...st.run, status: 'stopped' };
  st.plan.stopRunning();
}

/** Run progress as a cancellable notification: cancelling it sends
 *  window/workDoneProgress/cancel, which cancels the run (the server's rule). */
export function showRunProgress(st: State, c: LanguageClient, token: string | number): void {
  const lc = st.daemon.lc!;
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'agentd', cancellable: true }, (progress, cancel) =>
    new Promise<void>((resolve) => {
      const end = () => { progressEnds.delete(end); resolve(); };
      progressEnds.add(end);
      let last = 0;
      const sub = c.onProgress(lc.WorkDoneProgress.type, token, (v: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd) => {
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

/** onRunEvent draws agentd/run/didChange: step states on the Plan view, change sets proposed,
 *  snapshots taken, and the run's end. */
export async function onRunEvent(st: State, p: RunDidChange): Promise<void> {
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
    const list = await st.daemon.req<ChangeSet[]>('agentd/changes/list', { runId: p.runId }).catch(() => [] as ChangeSet[]);
    for (const c of list) if (!st.review.sets.has(c.id) && isOpen(c)) await fetchChangeSet(st, c.id);
  }
  if (ev.type === 'runFinished' || ev.type === 'stepFailed') {
    const full = await st.daemon.req<RunState>('agentd/run/get', { runId: p.runId }).catch(() => undefined);
    if (full) { st.run = full; st.plan.setRun(full); }
  } else if (p.state) st.plan.setRun(st.run);
  updateStatus(st);
}

/** offerLiveRun: a run of the workspace is running or paused. The user resumes it, cancels it
 *  (then the new run starts) or leaves things as they are; never a second run beside it. Returns
 *  whether to start the new run. */
async function offerLiveRun(st: State, runId: string, status: string): Promise<boolean> {
  const req = st.daemon.req.bind(st.daemon);
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

/** The run commands: run the plan, pause, resume, cancel, retry and skip a step. */
export function registerRunCommands(st: State, reg: Reg): void {
  const req = st.daemon.req.bind(st.daemon);
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
  reg('agentd.runPlan', async () => {
    st.daemon.need();
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
}
