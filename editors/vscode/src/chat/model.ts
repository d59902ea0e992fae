// The chat view's model: what the daemon says about a chat (agentd/chat/load, the turns' plans,
// runs and change sets) turned into what the webview draws, and the view's own state (a request
// in flight, an answer streaming in, why a new message is refused now). No `vscode` import: the
// unit tests run it under Node. Every rule stays the daemon's: this only words what it says.
import { ChangeSet, Plan, Step, approvalPrompt } from '../model';
import type * as wire from '../protocol.gen';

/** A turn as agentd/chat/load returns it (docs/protocol.md, "Chats"). */
export type ChatTurn = wire.Turn;

/** `condensed`: the turns (1-based) the chat's next request will condense (docs/protocol.md,
 *  "Condensing"). The view reads neither time, so a chat without them is one too. */
export type ChatLoad = Omit<wire.Chat, 'createdAt' | 'updatedAt'> & Partial<Pick<wire.Chat, 'createdAt' | 'updatedAt'>>;
export type ChatSummary = wire.ChatSummary;

/** A step of a run as agentd/run/get (or the events) tell it: its output is the text the events
 *  streamed, its status also the view's own (retrying). */
export type RunStep = Pick<wire.StepState, 'id' | 'error' | 'reason'> & { status: wire.StepStatus | string; output?: string };
/** The run of a turn, as far as the chat view needs it. */
export type RunInfo = Pick<wire.RunState, 'runId' | 'planId' | 'error'> & { status: wire.RunStatus | string; steps?: RunStep[] };

/** agentd/run/didChange's params (the fields the chat reads). */
export type RunDidChange = Pick<wire.RunEventParams, 'runId'> & {
  event: Pick<wire.Event, 'type' | 'stepId' | 'status' | 'error' | 'reason' | 'text'>;
  state?: Pick<wire.RunState, 'runId' | 'planId' | 'status' | 'error'>;
};

/** agentd/chat/stream's params: the next piece of the answer to the question that will be turn
 *  `turn` (0-based) of the chat. */
export type ChatStream = wire.ChatStreamParams;

/** A context item as the daemon reads and counts it (agentd/context/size, docs/protocol.md "Context"). */
export type ContextEntry = wire.ContextEntry;

/** A context chip of the input: what it sends and its size as the daemon counted it. `auto`: the
 *  active editor (or its selection), which follows the editor until the user removes it. */
export interface Chip { key: string; label: string; item: ContextEntry; auto?: boolean; tokens?: number; clipped?: boolean; note?: string; error?: string; thumb?: string }

// What the webview draws --------------------------------------------------------------------

export interface ChipView { key: string; label: string; size: string; title: string; auto: boolean; bad: boolean; thumb?: string }
/** An approval the daemon asks for, shown in its turn: the modal's words and options, in its order. */
export interface ApprovalView { id: string; message: string; detail: string; buttons: { title: string; optionId: string; kind: string }[] }

export interface StepView { id: string; tool: string; words: string; status?: string; error?: string; output?: string }
export interface FileView { uri: string; rel: string; op: string; changeId: string; status: string; open: number; words: string }
export interface TurnView {
  index: number;
  request: string;
  kind: 'plan' | 'question';
  answer?: string;
  read?: string[];
  /** The answer is still coming. */
  streaming?: boolean;
  plan?: { id: string; title: string; request: string; version?: number };
  steps: StepView[];
  runId?: string;
  /** The run's status, or "not run" for a plan not run yet. */
  status: string;
  failure?: string;
  review?: string[];
  changes: FileView[];
  undone: boolean;
  canRun: boolean;
  canRevise: boolean;
  canUndo: boolean;
  /** An approval the run (or the plan being made) waits for. */
  approval?: ApprovalView;
  /** The turn's tokens as the daemon tells them (turn.tokens), in words. */
  tokens?: string;
  /** Rewound (agentd/chat/restore, conversation): kept and shown, not told to the model. */
  rewound: boolean;
  rewindId?: string;
  /** The last restore went to before this turn: its way back is offered here. */
  wayBack?: string;
  /** The dry run of a restore to before this turn, shown before it acts. */
  preview?: RestorePreview;
  /** What the planner did for a turn without a plan yet (agentd/chat/stream activity). */
  activity?: string[];
  /** The guidance the user sent the turn while it ran (turn.guidance), in words. */
  guidance?: string[];
}
/** A restore's dry run in words (agentd/chat/restore with dryRun): what it takes back, each file's
 *  diff, the conflicts, and the choices (the wire's onConflict). */
export interface RestorePreview {
  chatId: string;
  turn: number;
  what: wire.ChatRestoreWhat;
  lines: string[];
  diffs: { uri: string; path: string; diff: string; conflict?: boolean }[];
  /** The choices, in order: "" restores as shown; "keep"/"overwrite" answer a conflict. */
  choices: { onConflict: '' | 'keep' | 'overwrite' | 'cancel'; title: string }[];
  /** Another chat's turn (a branch restoring the files of the chat it came from). */
  otherChat?: string;
}
/** A restore's way back (its result's wayBack parts), kept until used. */
export interface Restored { chatId: string; turn: number; what: wire.ChatRestoreWhat; files?: wire.WayBack; conversation?: wire.WayBack }
/** A message being edited: sending it branches the chat at its turn (agentd/chat/fork). */
export interface Editing { chatId: string; turn: number; request: string; question: boolean }
export interface Notice { text: string; level: 'info' | 'warn' | 'error' }
export interface ViewState {
  chatId?: string;
  title: string;
  turns: TurnView[];
  /** A request in flight (making a plan, answering, revising): shown, with Stop where it can be cancelled. */
  working?: string;
  /** Why a new message is refused now; undefined when one can be sent. */
  busy?: string;
  notice?: Notice;
  history?: ChatSummary[];
  context?: string;
  /** Said before sending: which turns the next request condenses. */
  condensed?: string;
  /** The chips the next message sends, with their sizes. */
  chips: ChipView[];
  /** The model the next request uses, as agentd/model/get says it. */
  model?: string;
  /** This chat is a branch: of which chat (its title) and at which turn (1-based in words). */
  branchOf?: { chatId: string; title: string; turn: number };
  /** The chats branched from this one, oldest first. */
  branches: { chatId: string; title: string; turn: number }[];
  /** A message being edited (its turn, 1-based): sending branches the chat there. */
  editing?: { turn: number; chatId: string };
  /** A restore's dry run of another chat (the branch's offer to restore the files). */
  preview?: RestorePreview;
  /** The messages queued in the core for the next turns, in the order they will be planned. */
  queued: { queueId: string; request: string; now: boolean }[];
  /** A message sent now is queued (a turn is going and the daemon has the queue); it can also go
   *  as guidance to the going turn (the daemon says whether it took it). */
  queues: boolean;
  /** Stop shows: a request of this view in flight, or a turn of the chat going (planned from
   *  the queue, or a run), which agentd/chat/stop stops. */
  stoppable: boolean;
}

const LIVE = new Set(['running', 'paused']);

/** target says what a step acts on, from its args: a file, a move, a command, a search. */
export function stepTarget(step: Step): string {
  const a = (step.args && typeof step.args === 'object' ? step.args : {}) as Record<string, unknown>;
  const s = (k: string) => (typeof a[k] === 'string' ? (a[k] as string) : undefined);
  if (s('from') && s('to')) return `${s('from')} → ${s('to')}`;
  if (s('command')) return `$ ${s('command')}`;
  if (s('path')) return s('path')!;
  if (s('pattern') || s('query')) return `“${s('pattern') ?? s('query')}”`;
  if (typeof step.prompt === 'string') return step.prompt as string;
  return '';
}

/** stepWords is a plan step in words: the daemon's own words for it (the turn's planSteps,
 *  "w [write_file] writes a.txt") when it has them, else its description or target. */
export function stepWords(step: Step, daemonWords?: string[]): { id: string; tool: string; words: string } {
  const tool = step.tool ?? step.kind ?? '';
  const said = daemonWords?.find((w) => w.startsWith(`${step.id} [`));
  const words = said ? said.slice(said.indexOf('] ') + 2) : [step.description, stepTarget(step)].filter(Boolean).join(': ');
  return { id: step.id, tool, words };
}

/** fileWords: a file of a change set, as the summary says it. */
export function fileWords(op: string, c: { pending: number; accepted: number; rejected: number; stale: number; total: number }): string {
  const what = { create: 'created', delete: 'deleted', move: 'moved', modify: 'modified' }[op] ?? op;
  const parts: string[] = [];
  if (c.pending) parts.push(`${c.pending} pending`);
  if (c.stale) parts.push(`${c.stale} stale`);
  if (c.accepted) parts.push(`${c.accepted} accepted`);
  if (c.rejected) parts.push(`${c.rejected} rejected`);
  return parts.length ? `${what} · ${parts.join(', ')}` : what;
}

/** chipView: a chip with its size in tokens as the daemon counted it (or why it cannot be sent). */
export function chipView(c: Chip): ChipView {
  const size = c.error ? 'cannot be sent' : c.tokens === undefined ? '… tokens' : `${c.tokens.toLocaleString('en-US')} token${c.tokens === 1 ? '' : 's'}${c.clipped ? ' (clipped)' : ''}`;
  const title = [c.error ?? (c.tokens === undefined ? 'counting…' : `${c.tokens} tokens as the request carries it`), c.note, c.auto ? 'the active editor: follows it until removed' : undefined].filter(Boolean).join('\n');
  return { key: c.key, label: c.label, size, title, auto: !!c.auto, bad: !!c.error, thumb: c.thumb };
}

/** costWords: a cost in USD as the chat shows it (Neovim's the same): cents from $0.10, else up
 *  to four decimals without trailing zeros; a cost too small for that is "<$0.0001". */
export function costWords(c: number): string {
  if (c >= 0.1) return `$${c.toFixed(2)}`;
  const s = c.toFixed(4).replace(/0+$/, '').replace(/\.$/, '');
  return s === '0' && c > 0 ? '<$0.0001' : `$${s}`;
}

/** tokenWords: a turn's `tokens` as the daemon tells them (input and output, and the cost when
 *  the daemon knows it), in words. */
export function tokenWords(t: wire.TurnTokens | undefined): string | undefined {
  if (!t) return undefined;
  const n = (x: number) => x.toLocaleString('en-US');
  return `${n(t.input)} in · ${n(t.output)} out tokens${typeof t.cost === 'number' ? ` · ${costWords(t.cost)}` : ''}`;
}

/** guidanceWords: a turn's guidance (turn.guidance: the words the user gave it while it was going),
 *  as the chat shows them (Neovim's the same). */
export function guidanceWords(g: string[] | undefined): string[] | undefined {
  return g?.length ? g.map((w) => `guidance: ${w}`) : undefined;
}

/** stoppedWords: agentd/chat/stop's answer in words (Neovim's the same). */
export function stoppedWords(stopped: string[] | undefined): string {
  return stopped?.length ? `Stopped: ${stopped.map((w) => `the ${w}`).join(' and ')}.` : 'Nothing of this chat was going in agentd: nothing to stop.';
}

/** guidedWords: agentd/chat/queue's answer to a message sent as guidance, in words: delivered to
 *  the going turn, or queued (as "after") with the daemon's reason. */
export function guidedWords(r: Pick<wire.ChatQueueResult, 'delivered' | 'deliveredTo' | 'reason'>): { text: string; level: 'info' | 'warn' } {
  if (r.delivered) {
    const to = (r.deliveredTo ?? []).map((d) => `the ${d}`).join(' and ') || 'the going turn';
    return { text: `Guidance delivered to ${to}: its agent reads it before its next model call.`, level: 'info' };
  }
  return { text: `Not delivered as guidance${r.reason ? `: ${r.reason}` : ''}. Queued instead: planned when the going turn ends.`, level: 'warn' };
}

/** turnView draws one turn from what the daemon said: the turn, its plan, its run (live or
 *  fetched) and its change sets. */
export function turnView(index: number, t: ChatTurn, plan: Plan | undefined, run: RunInfo | undefined, sets: ChangeSet[], rel: (uri: string) => string): TurnView {
  if (t.question) {
    return { index, request: t.request, kind: 'question', answer: t.answer ?? '', read: t.read, status: t.status ?? 'answered', steps: [], changes: [], undone: false, canRun: false, canRevise: false, canUndo: false, tokens: tokenWords(t.tokens), rewound: !!t.rewound, rewindId: t.rewindId, guidance: guidanceWords(t.guidance) };
  }
  const runSteps = new Map((run?.steps ?? []).map((s) => [s.id, s]));
  const steps: StepView[] = plan
    ? plan.steps.map((s) => {
      const r = runSteps.get(s.id);
      return { ...stepWords(s, t.planSteps), status: r?.status, error: r?.error ?? r?.reason, output: r?.output || undefined };
    })
    // No plan from the daemon (it was forgotten): the turn's own words.
    : (t.planSteps ?? []).map((w) => {
      const m = /^(\S+) \[([^\]]*)\] ?(.*)$/.exec(w);
      const id = m ? m[1] : w;
      const r = runSteps.get(id);
      return { id, tool: m ? m[2] : '', words: m ? m[3] : '', status: r?.status, error: r?.error ?? r?.reason, output: r?.output || undefined };
    });
  const runId = t.runId ?? run?.runId;
  const status = (run && runId === run.runId ? run.status : undefined) ?? t.status ?? (runId ? 'running' : 'not run');
  const changes: FileView[] = [];
  for (const cs of sets) {
    for (const f of cs.files) {
      changes.push({ uri: f.uri, rel: rel(f.uri), op: f.op, changeId: cs.id, status: f.status, open: f.counts.pending + f.counts.stale, words: fileWords(f.op, f.counts) });
    }
  }
  const planId = t.planId ?? plan?.id;
  const undone = !!t.undone;
  return {
    index, request: t.request, kind: 'plan',
    plan: planId ? { id: planId, title: plan?.title ?? t.planTitle ?? '(untitled plan)', request: plan?.request ?? t.request, version: plan?.version } : undefined,
    steps, runId, status, failure: t.failure, review: t.review, changes, undone,
    canRun: !!planId && !runId,
    canRevise: !!planId && !runId,
    canUndo: !!runId && !LIVE.has(status) && !undone,
    tokens: tokenWords(t.tokens),
    rewound: !!t.rewound, rewindId: t.rewindId,
    guidance: guidanceWords(t.guidance),
  };
}

const turnsText = (list: number[]) => `${list.length === 1 ? 'turn' : 'turns'} ${list.map((n) => n + 1).join(', ')}`;
const shortPath = (p: string, rel: (u: string) => string) => (/^file:/.test(p) ? rel(p) : p);

/** restorePreview: a restore's dry run in words, as Neovim's preview says it: what would be taken
 *  back (the daemon's runs and turns), each file's diff, the conflicts with what "overwrite"
 *  writes, the turns rewound; and the choices: restore as shown, or on a conflict keep my lines /
 *  overwrite / cancel. */
export function restorePreview(chatId: string, turn: number, what: wire.ChatRestoreWhat, dry: wire.ChatRestoreResult, rel: (u: string) => string = (u) => u): RestorePreview {
  const lines = [`Restore to before turn ${turn + 1} (${what === 'both' ? 'files and conversation' : what}): nothing has changed yet.`];
  const diffs: RestorePreview['diffs'] = [];
  const f = dry.files;
  if (f) {
    if (!f.runs.length) lines.push('Files: no run of these turns to take back.');
    else lines.push(`Files: takes back run${f.runs.length === 1 ? '' : 's'} ${f.runs.join(', ')} (${turnsText(f.turns)}) as one undo; your own lines stay.`);
    if (f.created?.length) lines.push(`Deletes what they created: ${f.created.map((p) => shortPath(p, rel)).join(', ')}`);
    if (f.deleted?.length) lines.push(`Brings back what they deleted: ${f.deleted.map((p) => shortPath(p, rel)).join(', ')}`);
    for (const c of f.conflicts) lines.push(`Conflict: ${shortPath(c.path || c.uri, rel)}: ${c.message || c.reason}`);
    for (const d of f.diffs ?? []) if (d.diff) diffs.push({ uri: d.uri, path: shortPath(d.path || d.uri, rel), diff: d.diff });
    for (const c of f.conflicts) if (c.diff) diffs.push({ uri: c.uri, path: shortPath(c.path || c.uri, rel), diff: c.diff, conflict: true });
  }
  const cv = dry.conversation;
  if (cv) lines.push(cv.turns.length ? `Conversation: ${turnsText(cv.turns)} rewound: kept in the chat, not told to the model.` : 'Conversation: every one of these turns is rewound already.');
  const conflicted = (f?.conflicts ?? []).map((c) => shortPath(c.path || c.uri, rel)).join(', ');
  const choices: RestorePreview['choices'] = dry.applied
    ? [{ onConflict: '', title: `Restore to before turn ${turn + 1}` }, { onConflict: 'cancel', title: 'Cancel' }]
    : [{ onConflict: 'keep', title: `Keep my lines in ${conflicted}, restore the rest` }, { onConflict: 'overwrite', title: `Overwrite my lines in ${conflicted}` }, { onConflict: 'cancel', title: 'Cancel' }];
  return { chatId, turn, what, lines, diffs, choices };
}

/** restoredWords: what an applied restore did, and its way back. */
export function restoredWords(turn: number, r: wire.ChatRestoreResult, rel: (u: string) => string = (u) => u): { text: string; warn: boolean; back: Omit<Restored, 'chatId' | 'turn' | 'what'> } {
  const parts = [`Restored to before turn ${turn + 1}`];
  let warn = false;
  const back: Omit<Restored, 'chatId' | 'turn' | 'what'> = {};
  const f = r.files;
  if (f) {
    const n = f.reverted.length + (f.created?.length ?? 0) + (f.deleted?.length ?? 0);
    parts.push(`${n} file${n === 1 ? '' : 's'} taken back`);
    const kept = f.kept?.length ? f.kept : f.conflicts.map((c) => c.path || c.uri);
    if (kept.length) { warn = true; parts.push(`kept as you have them: ${kept.map((p) => shortPath(p, rel)).join(', ')}`); }
    if (f.overwritten?.length) parts.push(`overwritten: ${f.overwritten.map((p) => shortPath(p, rel)).join(', ')}`);
    back.files = f.wayBack;
  }
  const cv = r.conversation;
  if (cv) {
    parts.push(cv.turns.length ? `${turnsText(cv.turns)} rewound (not told to the model)` : 'no turn to rewind');
    back.conversation = cv.wayBack;
  }
  if (back.files || back.conversation) parts.push('"Undo the restore" on the turn takes it back');
  return { text: parts.join('; ') + '.', warn, back };
}

/** ChatModel is the chat view's state: the chat as last loaded, the plans, runs and change sets
 *  of its turns, the request in flight and the answer streaming in. */
export class ChatModel {
  chat?: ChatLoad;
  plans = new Map<string, Plan>();
  runs = new Map<string, RunInfo>();
  changes = new Map<string, ChangeSet[]>();
  history?: ChatSummary[];
  notice?: Notice;
  context?: string;
  /** A request in flight: its words, and for a question the answer so far. */
  pending?: { kind: 'plan' | 'ask' | 'revise'; text: string; turn?: number; answer: string; revising?: number };
  /** The chips the user added (the active editor's is `auto`). */
  chips: Chip[] = [];
  auto?: Chip;
  /** The key of the active editor's chip the user removed: not sent until the editor changes. */
  autoOff?: string;
  /** Approvals waiting, by the view's id: in which turn, and what the daemon asks. */
  approvals = new Map<string, { turn: number; view: ApprovalView }>();
  model?: string;
  /** The last restore's way back (as Neovim keeps it: until used, or another restore). */
  restored?: Restored;
  /** A message being edited for a branch. */
  editing?: Editing;
  /** A restore's dry run shown, waiting for the user's choice. */
  preview?: RestorePreview;
  /** Chats' titles (agentd/chat/list), for the branch lines. */
  titles = new Map<string, string>();
  /** What the planner of each turn of this chat did (agentd/chat/stream activity), by turn. */
  activity = new Map<number, string[]>();
  /** Whether the daemon queues messages (agentd/chat/queue); false once it said it cannot. */
  canQueue = true;

  constructor(readonly rel: (uri: string) => string = (u) => u) {}

  get chatId(): string | undefined { return this.chat?.chatId; }

  /** load takes a chat as agentd/chat/load returns it; another chat forgets the last one's. */
  load(c: ChatLoad): void {
    if (this.chat?.chatId !== c.chatId) { this.plans.clear(); this.runs.clear(); this.changes.clear(); this.activity.clear(); }
    this.chat = c;
  }

  /** clear shows no chat (New chat: the next message starts one). */
  clear(): void {
    this.chat = undefined;
    this.editing = undefined;
    this.activity.clear();
    this.plans.clear(); this.runs.clear(); this.changes.clear();
    this.pending = undefined;
  }

  /** turnOfRun: the turn a run belongs to (its runId, else a live run of the turn's plan). */
  turnOfRun(runId: string, planId?: string): number {
    const turns = this.chat?.turns ?? [];
    const i = turns.findIndex((t) => t.runId === runId);
    if (i >= 0) return i;
    if (!planId) return -1;
    for (let j = turns.length - 1; j >= 0; j--) if (turns[j].planId === planId && !turns[j].runId) return j;
    return -1;
  }

  /** runEvent applies agentd/run/didChange; returns whether a turn of this chat shows that run. */
  runEvent(p: RunDidChange): boolean {
    const planId = p.state?.planId ?? this.runs.get(p.runId)?.planId;
    const i = this.turnOfRun(p.runId, planId);
    if (i < 0) return false;
    const r: RunInfo = this.runs.get(p.runId) ?? { runId: p.runId, planId, status: 'running', steps: [] };
    if (p.state) { r.status = p.state.status; r.error = p.state.error; r.planId = p.state.planId ?? r.planId; }
    const ev = p.event;
    if (ev.stepId) {
      r.steps = r.steps ?? [];
      let s = r.steps.find((x) => x.id === ev.stepId);
      if (!s) { s = { id: ev.stepId, status: 'pending' }; r.steps.push(s); }
      const ended: Record<string, string> = { stepFinished: 'completed', stepSkipped: 'skipped', stepBlocked: 'blocked', stepFailed: 'failed', stepStarted: 'running', stepRetrying: 'retrying' };
      if (ev.type === 'stepOutput' && ev.text) s.output = (s.output ?? '') + ev.text;
      else if (ended[ev.type] || ev.status) s.status = ev.status ?? ended[ev.type];
      if (ev.error) s.error = ev.error;
      if (ev.reason) s.reason = ev.reason;
    }
    if (ev.type === 'runFinished' && p.state) r.status = p.state.status;
    this.runs.set(p.runId, r);
    return true;
  }

  /** setRun takes a run as agentd/run/get returns it (its steps with their output). */
  setRun(r: RunInfo): void {
    const live = this.runs.get(r.runId);
    // A fetched state never takes back what a newer event said about the run's end.
    if (live && !LIVE.has(live.status) && LIVE.has(r.status)) r = { ...r, status: live.status };
    this.runs.set(r.runId, r);
  }

  /** setAuto: the active editor's chip (undefined: no file editor). A chip the user removed
   *  stays off while the editor shows the same thing. */
  setAuto(c: Chip | undefined): boolean {
    if (c) c.auto = true;
    if (c?.key === this.auto?.key) return false;
    if (c?.key !== this.autoOff) this.autoOff = undefined;
    this.auto = c;
    return true;
  }

  /** addChip adds a chip (one per key: the same file twice is one chip). */
  addChip(c: Chip): boolean {
    if (this.chips.some((x) => x.key === c.key) || (this.auto?.key === c.key && this.autoOff !== c.key)) return false;
    this.chips.push(c);
    return true;
  }

  removeChip(key: string): void {
    if (this.auto?.key === key) this.autoOff = key;
    this.chips = this.chips.filter((c) => c.key !== key);
  }

  /** sending: the chips the next message sends, the active editor's first. */
  sending(): Chip[] {
    const a = this.auto && this.auto.key !== this.autoOff && !this.chips.some((c) => c.key === this.auto!.key) ? [this.auto] : [];
    return [...a, ...this.chips];
  }

  /** sized takes agentd/context/size's answer for `chips` (the daemon's count, in order). */
  sized(chips: Chip[], r: wire.ContextSizeResult): void {
    chips.forEach((c, i) => {
      const z = r.items[i];
      if (!z) return;
      c.tokens = z.error ? undefined : z.tokens; c.error = z.error || undefined; c.note = z.note || undefined; c.clipped = z.clipped || undefined;
    });
  }

  /** sent: the chips went with a message; the next one starts with the active editor's only. */
  sent(): void { this.chips = []; }

  /** approvalTurn: the turn of this chat an approval is for: the turn whose run asks, or for the
   *  planner's reads (runId "plan") the plan or question being made (or revised) now. */
  approvalTurn(runId: string): number | undefined {
    if (runId === 'plan') {
      const p = this.pending;
      if (!p) return undefined;
      return p.kind === 'revise' ? p.revising : p.turn;
    }
    const i = this.turnOfRun(runId, this.runs.get(runId)?.planId);
    return i >= 0 ? i : undefined;
  }

  /** ask shows an approval in turn `turn`, in the words and the order of the modal. */
  ask(id: string, turn: number, r: wire.ApprovalRequestParams, root?: string): void {
    const p = approvalPrompt(r, root);
    this.approvals.set(id, { turn, view: { id, message: p.message, detail: p.detail, buttons: p.buttons.map(({ title, optionId, kind }) => ({ title, optionId, kind })) } });
  }

  answered(id: string): boolean { return this.approvals.delete(id); }

  /** startPending: a request went out (a plan being made, a question, a revision). For a
   *  question, `turn` is the index its turn will have (the stream names it). */
  startPending(kind: 'plan' | 'ask' | 'revise', text: string, revising?: number): void {
    this.pending = { kind, text, turn: kind === 'revise' ? undefined : this.chat?.turns.length ?? 0, answer: '', revising };
    this.notice = undefined;
  }

  /** streamed appends a piece of the answer (agentd/chat/stream); false when it is not this
   *  chat's question in flight. */
  streamed(p: ChatStream): boolean {
    if (p.activity !== undefined) {
      // The planner's work on a plan turn of this chat (recorded when its planning started).
      if (p.chatId !== this.chatId) return false;
      const a = this.activity.get(p.turn) ?? [];
      a.push(p.activity);
      this.activity.set(p.turn, a);
      return true;
    }
    if (p.text === undefined) return false;
    if (!this.pending || this.pending.kind !== 'ask' || p.chatId !== this.chatId) return false;
    if (this.pending.turn !== undefined && p.turn !== this.pending.turn) return false;
    this.pending.turn = p.turn;
    this.pending.answer += p.text;
    return true;
  }

  endPending(): void { this.pending = undefined; }

  /** edit: turn `turn`'s message goes in the input to be edited; sending it branches there. */
  edit(turn: number): Editing | undefined {
    const t = this.chat?.turns[turn];
    if (!t || !this.chatId) return undefined;
    this.editing = { chatId: this.chatId, turn, request: t.request, question: !!t.question };
    return this.editing;
  }

  /** runsFrom: whether turn `turn` (0-based) or a later one has a run not undone, so a branch
   *  there may want the files back as they were (the daemon's restore decides what that is). */
  runsFrom(turn: number): boolean {
    return (this.chat?.turns ?? []).some((t, i) => i >= turn && !!t.runId && !t.undone);
  }

  /** setTitles takes agentd/chat/list's chats (for the lines of a branch and its origin). */
  setTitles(chats: ChatSummary[]): void {
    for (const c of chats) this.titles.set(c.chatId, c.title);
  }

  /** needsTitles: chats named by this chat's branch lines whose title is not known yet. */
  needsTitles(): boolean {
    const ids = [this.chat?.forkedFrom?.chatId, ...(this.chat?.branches ?? []).map((b) => b.chatId)].filter(Boolean) as string[];
    return ids.some((id) => !this.titles.has(id));
  }

  /** busyReason: why a message cannot be sent now (a turn runs, a request is in flight);
   *  undefined when it can. The view queues it in the core then (agentd/chat/queue), or, with a
   *  daemon that has no queue, shows this reason. */
  busyReason(): string | undefined {
    const tail = this.canQueue ? '' : ' Messages are not queued by this agentd.';
    if (this.pending) {
      const what = { plan: 'agentd is still making the plan of your last message', ask: 'agentd is still answering your question', revise: 'agentd is still revising a plan' }[this.pending.kind];
      return `${what}: wait for it, or press Stop.${tail}`;
    }
    const turns = this.chat?.turns ?? [];
    for (let i = turns.length - 1; i >= 0; i--) {
      const v = this.turn(i);
      if (v && v.status === 'planning') return `turn ${i + 1} is still being planned: wait for it, or press Stop.${tail}`;
      if (v && LIVE.has(v.status)) return `turn ${i + 1} is still ${v.status} (run ${v.runId}): decide its changes or cancel the run, then send.${tail}`;
    }
    return undefined;
  }

  /** going: a turn of this chat is being planned or its run runs (no request of this view owns
   *  it: agentd/chat/stop stops it). */
  going(): boolean {
    return (this.chat?.turns ?? []).some((_, i) => { const v = this.turn(i); return !!v && (v.status === 'planning' || LIVE.has(v.status)); });
  }

  /** queues: a message sent now goes to the core's queue (a turn is going, the daemon has one). */
  queues(): boolean {
    return this.canQueue && !!this.chatId && this.pending?.kind !== 'revise' && !!this.busyReason();
  }

  turn(i: number): TurnView | undefined {
    const t = this.chat?.turns[i];
    if (!t) return undefined;
    const run = t.runId ? this.runs.get(t.runId) : [...this.runs.values()].find((r) => t.planId && r.planId === t.planId && LIVE.has(r.status));
    return turnView(i, t, t.planId ? this.plans.get(t.planId) : undefined, run, t.runId ? this.changes.get(t.runId) ?? [] : [], this.rel);
  }

  /** view is everything the webview draws. */
  view(): ViewState {
    const turns = (this.chat?.turns ?? []).map((_, i) => this.turn(i)!);
    const p = this.pending;
    // The turn being made is shown before the daemon records it: the question with its answer so
    // far, or the request with "making a plan".
    if (p && p.kind !== 'revise' && p.turn !== undefined && p.turn >= turns.length) {
      turns.push({ index: turns.length, request: p.text, kind: p.kind === 'ask' ? 'question' : 'plan', answer: p.kind === 'ask' ? p.answer : undefined, streaming: true,
        status: p.kind === 'ask' ? 'answering' : 'planning', steps: [], changes: [], undone: false, canRun: false, canRevise: false, canUndo: false, rewound: false });
    }
    for (const a of this.approvals.values()) if (turns[a.turn]) turns[a.turn] = { ...turns[a.turn], approval: turns[a.turn].approval ?? a.view };
    const r = this.restored;
    if (r && r.chatId === this.chatId && turns[r.turn] && (r.files || r.conversation)) {
      turns[r.turn] = { ...turns[r.turn], wayBack: `Restored to before this turn (${[r.files && 'files', r.conversation && 'conversation'].filter(Boolean).join(' and ')}).` };
    }
    // The planner's work, under a plan turn without a plan: while it is planned, and after its
    // planning was stopped or failed (what it did until then).
    for (const [i, a] of this.activity) if (turns[i] && turns[i].kind === 'plan' && !turns[i].plan) turns[i] = { ...turns[i], activity: a };
    const pv = this.preview;
    let preview: RestorePreview | undefined;
    if (pv && pv.chatId === this.chatId && turns[pv.turn]) turns[pv.turn] = { ...turns[pv.turn], preview: pv };
    else if (pv) preview = { ...pv, otherChat: this.titles.get(pv.chatId) || pv.chatId };
    const title = (id: string) => this.titles.get(id) || id;
    const f = this.chat?.forkedFrom;
    const working = p ? { plan: 'making a plan…', ask: 'answering…', revise: 'revising the plan…' }[p.kind] : undefined;
    const c = this.chat?.condensed ?? [];
    const condensed = c.length ? `The next message condenses turn${c.length === 1 ? '' : 's'} ${c.join(', ')} (the chat is long): their requests, plans, outcomes and your decisions stay; command output goes.` : undefined;
    return { condensed, chatId: this.chatId, title: this.chat?.title || (this.chat ? 'Untitled chat' : 'New chat'), turns, working, busy: this.busyReason(), notice: this.notice, history: this.history, context: this.context, chips: this.sending().map(chipView), model: this.model,
      branchOf: f ? { chatId: f.chatId, title: title(f.chatId), turn: f.turn + 1 } : undefined,
      branches: (this.chat?.branches ?? []).map((b) => ({ chatId: b.chatId, title: title(b.chatId), turn: b.turn + 1 })),
      editing: this.editing && this.editing.chatId === this.chatId ? { turn: this.editing.turn + 1, chatId: this.editing.chatId } : undefined,
      preview,
      queued: (this.chat?.queued ?? []).map((q) => ({ queueId: q.queueId, request: q.request, now: q.when === 'now' })),
      queues: this.queues(), stoppable: !!p || this.going() };
  }
}
