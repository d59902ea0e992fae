// Plans: opening one (with its problems in the Problems panel), making one from a request,
// editing it from the Plan view, and showing the workspace's current plan after a reload.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Plan, RunState, activeRun, missingModel, moveEdit } from './model';
import { DaemonDown, errText, isRpcError } from './errors';
import { readKey } from './daemon';
import { PlanNode, Problem } from './views';
import { Reg, State } from './state';
import { updateStatus } from './status';

export async function loadPlan(st: State, uri: vscode.Uri): Promise<Plan | undefined> {
  st.diagnostics.delete(uri);
  try {
    const plan = await st.daemon.req<Plan>('agentd/plan/load', { uri: uri.toString() });
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

export async function reloadPlan(st: State): Promise<void> {
  const id = st.plan.plan?.id;
  if (!id) return;
  const plan = await st.daemon.req<Plan>('agentd/plan/get', { planId: id }).catch(() => undefined);
  if (plan) st.plan.setPlan(plan);
}

export async function editPlan(st: State, edits: unknown[]): Promise<void> {
  const plan = st.plan.plan;
  if (!plan) { void vscode.window.showInformationMessage('agentd: open a plan first (agentd: Open Plan…)'); return; }
  try {
    const next = await st.daemon.req<Plan>('agentd/plan/edit', { planId: plan.id, version: plan.version, edits });
    st.plan.setPlan(next);
  } catch (e) {
    if (e instanceof DaemonDown) throw e;
    const problems = (isRpcError(e) && (e.data as { problems?: Problem[] })?.problems) || undefined;
    if (problems && st.plan.planUri) st.plan.setProblems(problems);
    void vscode.window.showErrorMessage(`agentd: the edit was refused: ${problems ? problems.map((p) => `${p.stepId ?? ''} ${p.message}`).join('; ') : errText(e)}`);
    if (isRpcError(e) && e.code === -32002) void reloadPlan(st);
  }
}

/** toggleSkips: the Plan view's checkboxes skip and unskip steps (plan edits). */
export async function toggleSkips(st: State, items: readonly [PlanNode, vscode.TreeItemCheckboxState][]): Promise<void> {
  const edits = items.filter(([n]) => n.type === 'step').map(([n, s]) => ({ op: s === vscode.TreeItemCheckboxState.Checked ? 'unskip' : 'skip', stepId: (n as { stepId: string }).stepId }));
  if (edits.length) await editPlan(st, edits);
}

/** The step a command is about: the Plan view item it was given, else the one selected. */
export function stepArg(st: State, n: unknown): string | undefined {
  if (n && typeof n === 'object' && 'stepId' in n) return (n as { stepId: string }).stepId;
  const sel = st.planView.selection[0];
  return sel?.type === 'step' ? sel.stepId : undefined;
}

export async function pickPlanFile(): Promise<vscode.Uri | undefined> {
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

/** restorePlanView: a window opened (or reloaded) shows the workspace's current plan and run,
 *  as the daemon has them: the run going on, else the newest. A new daemon knows the run from
 *  the journal with its plan, which it is given again so the plan can be run or edited. */
export async function restorePlanView(st: State): Promise<void> {
  if (st.plan.plan) return;
  const req = st.daemon.req.bind(st.daemon);
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

/** The plan commands: new from a request, open, and the Plan view's edits of a step. */
export function registerPlanCommands(st: State, reg: Reg): void {
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
    st.daemon.need();
    const request = await vscode.window.showInputBox({ title: 'agentd: New Plan from Request', prompt: 'What should agentd do?', ignoreFocusOut: true });
    if (!request) return;
    const ed = vscode.window.activeTextEditor;
    const context = ed ? { uris: [ed.document.uri.toString()], selection: ed.selection.isEmpty ? undefined : { uri: ed.document.uri.toString(), range: { start: ed.selection.start, end: ed.selection.end } } } : undefined;
    const plan = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'agentd: making a plan…', cancellable: false },
      () => st.daemon.req<Plan>('agentd/plan/create', { request, context }));
    st.plan.setPlan(plan);
    updateStatus(st);
  });
  reg('agentd.openPlan', async (u?: vscode.Uri) => {
    const uri = u instanceof vscode.Uri ? u : await pickPlanFile();
    if (uri) await loadPlan(st, uri);
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
}
