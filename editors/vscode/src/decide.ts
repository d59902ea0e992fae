// Deciding hunks, files and sets by the client recipe of docs/protocol.md ("Client recipe:
// decide all and a hunk id that went stale"): the server decides what is open, and a decision on
// a hunk id that went stale is never sent again on a guessed hunk. No vscode here: the unit
// tests hold the recipe (test/unit/decide.test.ts).
import { ChangeSet, isOpen } from './model';
import { errText, isRpcError } from './errors';
import type * as wire from './protocol.gen';

export type Decision = wire.Decision;

export type ResolveResult = wire.ResolveResult;

/** The one line said when a decision was refused because what the user saw changed. */
export const REDRAWN = 'agentd: the change was redrawn; decide again.';

/** redrawFor: what a refused decision calls for. A hunk id the server no longer has (-32602
 *  naming `decisions[N].hunkId`, or `hunkId`) or a unit another process decided since (-32005):
 *  the set again ('get'); a set that is gone (-32003): the list of sets ('list'). Any other error
 *  is not about what was drawn (undefined). */
export function redrawFor(e: unknown): 'get' | 'list' | undefined {
  if (!isRpcError(e)) return undefined;
  if (e.code === -32005) return 'get';
  if (e.code === -32003) return 'list';
  const field = (e.data as { field?: unknown } | undefined)?.field;
  if (e.code === -32602 && typeof field === 'string' && /(^|\.)hunkId$/.test(field)) return 'get';
  return undefined;
}

/** What deciding needs from the editor. */
export interface DecideIO {
  /** agentd/changes/resolve. */
  resolve(changeId: string, decisions: Decision[], reason?: string): Promise<ResolveResult>;
  /** agentd/changes/get of the set, drawn. */
  refetch(changeId: string): Promise<void>;
  /** agentd/changes/list, drawn: a set it no longer lists is taken away. */
  relist(changeId: string): Promise<void>;
  /** One line to the user (why goes to the log). */
  redrawn(line: string, why: string): void;
}

/** decide sends the decisions of one set once. Refused because what the user saw changed
 *  (redrawFor), it draws the set as the server has it now, says so in one line and decides
 *  nothing (undefined): the user decides again on what is drawn. Other errors are thrown. */
export async function decide(io: DecideIO, changeId: string, decisions: Decision[], reason?: string): Promise<ResolveResult | undefined> {
  try {
    return await io.resolve(changeId, decisions, reason);
  } catch (e) {
    const how = redrawFor(e);
    if (!how) throw e;
    if (how === 'list') await io.relist(changeId);
    else await io.refetch(changeId);
    io.redrawn(REDRAWN, errText(e));
    return undefined;
  }
}

/** openSetIds: the sets "decide all" resolves (from agentd/changes/list {}), one resolve each, in
 *  the server's order (oldest first), by the server's counts of open units. Not `{status:
 *  "pending"}`: that filter is the set's status exactly, so it leaves out a `partial` set (one
 *  hunk accepted, others pending) and a `stale` one, which still have units to decide. */
export function openSetIds(list: ChangeSet[]): string[] {
  return list.filter(isOpen).map((c) => c.id);
}
