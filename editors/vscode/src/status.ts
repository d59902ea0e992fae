// The status bar item and the context keys of the run shown.
import * as vscode from 'vscode';
import { statusText, waitingOnUser } from './model';
import { State } from './state';

export function createStatus(): vscode.StatusBarItem {
  const status = vscode.window.createStatusBarItem('agentd.status', vscode.StatusBarAlignment.Left, 50);
  status.name = 'agentd';
  status.command = { command: 'workbench.view.extension.agentd', title: 'Show agentd' };
  return status;
}

export function updateStatus(st: State): void {
  const n = st.review.pendingCount();
  st.status.text = statusText(st.run, n, waitingOnUser(st.run, (id) => st.plan.stepState(id)?.status));
  st.status.tooltip = st.run ? `agentd run ${st.run.runId}: ${st.run.status}, ${Math.round(st.run.progress * 100)}%` + (n ? `\n${n} hunks pending review` : '') : (n ? `${n} hunks pending review` : 'agentd');
  void vscode.commands.executeCommand('setContext', 'agentd.hasPlan', !!st.plan.plan);
  void vscode.commands.executeCommand('setContext', 'agentd.runActive', st.run?.status === 'running');
  void vscode.commands.executeCommand('setContext', 'agentd.runPaused', st.run?.status === 'paused');
}
