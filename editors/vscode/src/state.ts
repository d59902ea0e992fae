// What the extension's modules share: the daemon, the views and the run shown. Created once by
// activate (extension.ts) and passed to every module.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { RunState } from './model';
import { Metrics, Review } from './review';
import { ChangesTree, PlanNode, PlanTree, SnapshotsTree } from './views';
import { Daemon } from './daemon';

export class FileMetrics implements Metrics {
  private readonly file = process.env.AGENTD_VSCODE_METRICS;
  record(name: string, value: number, extra?: Record<string, unknown>): void {
    if (!this.file) return;
    try { fs.appendFileSync(this.file, JSON.stringify({ name, value, ...extra }) + '\n'); } catch { /* metrics are best effort */ }
  }
}

export interface State {
  context: vscode.ExtensionContext;
  out: vscode.LogOutputChannel;
  daemon: Daemon;
  review: Review;
  plan: PlanTree;
  planView: vscode.TreeView<PlanNode>;
  changes: ChangesTree;
  snapshots: SnapshotsTree;
  status: vscode.StatusBarItem;
  diagnostics: vscode.DiagnosticCollection;
  metrics: FileMetrics;
  run?: RunState;
}

/** Registers a command (activate's wrapper: a failure is logged and said, a missing daemon with
 *  its fix). */
export type Reg = (id: string, f: (...a: any[]) => unknown) => void;
