// The Plan, Changes and Snapshots views.
import * as vscode from 'vscode';
import { ChangeSet, Plan, RunState, StepState, fileCounts, fileOpenUnits, hunkSpan, setCounts, isOpen, stepDescription, stepIcons, stepNotes } from './model';
import type * as wire from './protocol.gen';

export type Problem = wire.Problem;

export type PlanNode = { type: 'step'; stepId: string } | { type: 'problem'; problem: Problem };

export class PlanTree implements vscode.TreeDataProvider<PlanNode> {
  plan: Plan | undefined;
  planUri: vscode.Uri | undefined;
  run: RunState | undefined;
  problems: Problem[] = [];
  private steps = new Map<string, StepState>();
  private started = new Map<string, number>();
  private readonly emitter = new vscode.EventEmitter<PlanNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  setPlan(plan: Plan | undefined, uri?: vscode.Uri): void {
    // Another plan: the step states shown are those of a run of the plan before, whose step
    // ids may be the same; they go (a new version of the same plan keeps them).
    if (plan?.id !== this.plan?.id) { this.resetSteps(); this.run = undefined; }
    this.plan = plan;
    if (uri) this.planUri = uri;
    this.problems = [];
    this.emitter.fire(undefined);
  }
  setProblems(p: Problem[]): void { this.problems = p; this.emitter.fire(undefined); }
  setRun(run: RunState | undefined): void {
    // A run of another plan (a terminal's, or the plan before) is not drawn on this one's steps.
    if (run && this.plan && run.planId && run.planId !== this.plan.id) return;
    this.run = run;
    if (run?.steps) for (const s of run.steps) this.steps.set(s.id, s);
    this.emitter.fire(undefined);
  }
  resetSteps(): void { this.steps.clear(); this.started.clear(); }
  stepEvent(stepId: string, status: string, error?: string, reason?: string): void {
    const cur = this.steps.get(stepId) ?? { id: stepId, status };
    cur.status = status;
    if (error) cur.error = error;
    if (reason) cur.reason = reason;
    if (status === 'running') this.started.set(stepId, Date.now());
    else if (this.started.has(stepId) && cur.durationMs === undefined) cur.durationMs = Date.now() - this.started.get(stepId)!;
    this.steps.set(stepId, cur);
    this.emitter.fire(undefined);
  }
  stepState(id: string): StepState | undefined { return this.steps.get(id); }
  /** stopRunning: the daemon died; steps it was running or waiting on are shown stopped. */
  stopRunning(): void {
    for (const s of this.steps.values()) if (s.status === 'running' || s.status === 'waiting' || s.status === 'retrying') s.status = 'stopped';
    this.emitter.fire(undefined);
  }

  getChildren(el?: PlanNode): PlanNode[] {
    if (el) return [];
    const out: PlanNode[] = [];
    for (const p of this.problems) if (!p.stepId || !this.plan?.steps.some((s) => s.id === p.stepId)) out.push({ type: 'problem', problem: p });
    for (const s of this.plan?.steps ?? []) out.push({ type: 'step', stepId: s.id });
    return out;
  }

  getTreeItem(n: PlanNode): vscode.TreeItem {
    if (n.type === 'problem') {
      // A plan that does not load has no step rows: the problem names its step.
      const it = new vscode.TreeItem(`${n.problem.stepId ? `${n.problem.stepId}: ` : ''}${n.problem.message}`);
      it.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground'));
      it.contextValue = 'problem';
      return it;
    }
    const step = this.plan!.steps.find((s) => s.id === n.stepId)!;
    const st = this.steps.get(step.id);
    const status = st?.status ?? (step.skip ? 'skipped' : 'pending');
    const it = new vscode.TreeItem(step.id);
    const problems = this.problems.filter((p) => p.stepId === step.id);
    it.description = stepDescription(step, st);
    it.tooltip = new vscode.MarkdownString([`**${step.id}** — ${status}`, step.description ?? '', st?.error ? `Error: ${st.error}` : '', ...stepNotes(st),
      ...problems.map((p) => `⚠ ${p.field ? p.field + ': ' : ''}${p.message}`)].filter(Boolean).join('\n\n'));
    it.iconPath = problems.length
      ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'))
      : new vscode.ThemeIcon(stepIcons[status] ?? 'circle-large-outline',
        status === 'failed' ? new vscode.ThemeColor('testing.iconFailed') : status === 'completed' ? new vscode.ThemeColor('testing.iconPassed') : undefined);
    it.contextValue = `step ${status}`;
    it.id = step.id;
    // Checkbox: checked = will run; unchecking skips the step (a plan edit in the server).
    it.checkboxState = step.skip ? vscode.TreeItemCheckboxState.Unchecked : vscode.TreeItemCheckboxState.Checked;
    it.accessibilityInformation = { label: `${step.id} ${status}` };
    return it;
  }
}

export type ChangeNode =
  | { type: 'changeset'; changeId: string }
  | { type: 'file'; changeId: string; uri: string }
  | { type: 'hunk'; changeId: string; uri: string; hunkId: string; index: number };

export class ChangesTree implements vscode.TreeDataProvider<ChangeNode> {
  private readonly emitter = new vscode.EventEmitter<ChangeNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  constructor(private readonly sets: Map<string, ChangeSet>) {}
  refresh(): void { this.emitter.fire(undefined); }

  getChildren(n?: ChangeNode): ChangeNode[] {
    if (!n) return [...this.sets.values()].filter(isOpen).map((c) => ({ type: 'changeset', changeId: c.id }));
    const cs = this.sets.get(n.changeId);
    if (!cs) return [];
    if (n.type === 'changeset') return cs.files.map((f) => ({ type: 'file', changeId: cs.id, uri: f.uri }));
    if (n.type === 'file') {
      const f = cs.files.find((x) => x.uri === n.uri);
      if (f?.whole) return [];
      return (f?.hunks ?? []).map((h, i) => ({ type: 'hunk', changeId: cs.id, uri: n.uri, hunkId: h.id, index: i }));
    }
    return [];
  }

  getTreeItem(n: ChangeNode): vscode.TreeItem {
    const cs = this.sets.get(n.changeId)!;
    if (n.type === 'changeset') {
      // Units from the wire's counts (a whole file is one).
      const c = setCounts(cs);
      const pending = c.pending + c.stale, total = c.total;
      const it = new vscode.TreeItem(`step ${cs.stepId ?? '?'}`, vscode.TreeItemCollapsibleState.Expanded);
      it.description = `${cs.files.length} file${cs.files.length === 1 ? '' : 's'}, ${pending} of ${total} to review · ${cs.status}`;
      it.contextValue = 'changeset';
      it.iconPath = new vscode.ThemeIcon('git-pull-request-draft');
      return it;
    }
    const f = cs.files.find((x) => x.uri === n.uri)!;
    if (n.type === 'file') {
      const it = new vscode.TreeItem(vscode.Uri.parse(f.uri), f.hunks.length && !f.whole ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
      const open = fileOpenUnits(f);
      const c = fileCounts(f);
      it.description = `${f.op} · ${f.whole ? f.status : `${open}/${c.total} hunks open`}${c.stale ? ` · ${c.stale} stale` : ''}`;
      it.contextValue = 'file';
      it.command = { command: 'agentd.openDiff', title: 'Open Diff', arguments: [{ uri: f.uri, changeId: cs.id }] };
      return it;
    }
    const h = f.hunks[n.index];
    const { start, length } = hunkSpan(cs.review === 'after' ? 'after' : 'before', h);
    const it = new vscode.TreeItem(`lines ${start + 1}–${Math.max(start + 1, start + length)}`);
    it.description = h.status;
    it.contextValue = h.status === 'pending' ? 'hunk' : h.status === 'stale' ? 'hunk-stale' : 'hunk-done';
    it.iconPath = new vscode.ThemeIcon(h.status === 'accepted' ? 'check' : h.status === 'rejected' ? 'close' : h.status === 'stale' ? 'warning' : 'diff');
    it.command = { command: 'vscode.open', title: 'Go to hunk', arguments: [vscode.Uri.parse(f.uri), { selection: new vscode.Range(start, 0, start, 0), preserveFocus: false }] };
    return it;
  }
}

export type SnapshotInfo = wire.SnapshotInfo;
export type SnapNode = { type: 'run'; runId: string } | { type: 'snapshot'; snap: SnapshotInfo };

export class SnapshotsTree implements vscode.TreeDataProvider<SnapNode> {
  private readonly emitter = new vscode.EventEmitter<SnapNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  snaps: SnapshotInfo[] = [];
  /** Each run's title (its plan's), by run id: a run is listed by what it did, its id in the
   *  tooltip. */
  readonly titles = new Map<string, string>();
  set(list: SnapshotInfo[]): void { this.snaps = list; this.emitter.fire(undefined); }
  setTitles(t: Map<string, string>): void { for (const [k, v] of t) this.titles.set(k, v); this.emitter.fire(undefined); }

  getChildren(n?: SnapNode): SnapNode[] {
    if (!n) {
      const runs: string[] = [];
      const out: SnapNode[] = [];
      for (const s of this.snaps) {
        if (s.runId) { if (!runs.includes(s.runId)) { runs.push(s.runId); out.push({ type: 'run', runId: s.runId }); } }
        else out.push({ type: 'snapshot', snap: s });
      }
      return out;
    }
    if (n.type === 'run') return this.snaps.filter((s) => s.runId === n.runId).map((s) => ({ type: 'snapshot', snap: s }));
    return [];
  }

  getTreeItem(n: SnapNode): vscode.TreeItem {
    if (n.type === 'run') {
      const title = this.titles.get(n.runId);
      const it = new vscode.TreeItem(title ?? `run ${n.runId}`, vscode.TreeItemCollapsibleState.Expanded);
      const first = this.snaps.filter((s) => s.runId === n.runId).map((s) => s.createdAt).sort()[0];
      if (first) it.description = new Date(first).toLocaleString();
      it.tooltip = `${title ? `${title}\n` : ''}run ${n.runId}`;
      it.iconPath = new vscode.ThemeIcon('run-all');
      return it;
    }
    const s = n.snap;
    const it = new vscode.TreeItem(s.stepId ? `step ${s.stepId}` : s.label);
    it.description = `${s.label} · ${new Date(s.createdAt).toLocaleTimeString()} · ${s.filesChanged} file${s.filesChanged === 1 ? '' : 's'}`;
    it.tooltip = `${s.label}\n${s.id}`;
    it.contextValue = 'snapshot';
    it.iconPath = new vscode.ThemeIcon('history');
    return it;
  }
}
