// Approvals: the daemon asks (agentd/approval/request) and the user answers in a modal; the
// remembered "always" answers can be listed and revoked. The policy itself is the daemon's (the
// editor's approval settings go to it: Daemon.sendPolicy).
import * as vscode from 'vscode';
import { ApprovalRequest, approvalPrompt } from './model';
import { Reg, State } from './state';
import type * as wire from './protocol.gen';

/** agentd/approval/request's result (wire.ApprovalResult), narrowed: a selected answer names its
 *  option; a cancelled one carries nothing else. */
export type ApprovalAnswer =
  | (wire.ApprovalResult & Required<Pick<wire.ApprovalResult, 'optionId'>> & { outcome: 'selected' })
  | (Pick<wire.ApprovalResult, 'outcome'> & { outcome: 'cancelled' });

export async function askApproval(st: State, r: ApprovalRequest): Promise<ApprovalAnswer> {
  const p = approvalPrompt(r, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  // The first button is the default (Enter): Reject for a high-risk call (approvalPrompt).
  // Below high risk Reject is the close affordance (Escape answers it, no Cancel). At high risk
  // VS Code adds its own Cancel: it, Escape and the close button answer exactly what Reject
  // answers (reject once, this request only), so the run records the same as for Reject.
  const pick = await vscode.window.showWarningMessage(p.message, { modal: true, detail: p.detail }, ...p.buttons.map((b) => ({ title: b.title, optionId: b.optionId, isCloseAffordance: b.isCloseAffordance })));
  if (!pick) {
    const reject = p.buttons.find((b) => b.kind === 'reject_once');
    st.out.info(`approval for step ${r.stepId} dismissed (Cancel, Escape or close): ${reject ? `${reject.title}, this time` : 'not allowed this time'}`);
    return reject ? { outcome: 'selected', optionId: reject.optionId } : { outcome: 'cancelled' };
  }
  st.out.info(`approval for step ${r.stepId}: ${pick.title}`);
  return { outcome: 'selected', optionId: pick.optionId };
}

/** manageRules lists the remembered approval rules ("always" answers) and revokes the chosen. */
async function manageRules(st: State): Promise<void> {
  const pol = await st.daemon.req<Partial<Pick<wire.PolicyState, 'rules'>>>('agentd/policy/get', {});
  const rules = pol.rules ?? [];
  if (!rules.length) { void vscode.window.showInformationMessage('agentd: no remembered approval rules'); return; }
  const picks = await vscode.window.showQuickPick(rules.map((r) => ({
    label: `${r.allow ? '$(check) allow' : '$(close) reject'} ${r.command ? `\`${r.command}\`` : r.tool ?? r.category ?? ''}`,
    description: r.id, detail: [r.category, r.tool, r.createdAt && new Date(r.createdAt).toLocaleString()].filter(Boolean).join(' · '), rule: r,
  })), { title: 'agentd: Approval Rules (select the rules to revoke)', canPickMany: true, placeHolder: 'remembered "always" answers' });
  if (!picks?.length) return;
  await st.daemon.req('agentd/policy/set', { revoke: picks.map((p) => p.rule.id) });
  st.out.info(`rules revoked: ${picks.map((p) => p.rule.id).join(', ')}`);
  void vscode.window.showInformationMessage(`agentd: revoked ${picks.map((p) => p.rule.id).join(', ')}`);
}

export function registerApprovalCommands(st: State, reg: Reg): void {
  reg('agentd.rules', () => manageRules(st));
}
