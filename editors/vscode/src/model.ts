// Pure logic of the extension: protocol shapes, the layout of a hunk in the buffer, how hunks
// follow the user's typing, CodeLens titles and status texts. No `vscode` import here, so the
// unit tests run it under Node alone. Every rule (what is pending, what is stale, what a decision
// does) stays in the server: this file only turns what the server says into what is drawn.

// The wire's types are generated from the protocol's schema (docs/protocol.schema.json,
// `go generate ./protocol`); they are re-exported here under the names the extension uses.
import type * as wire from './protocol.gen';
import type { ApprovalRequestParams as ApprovalRequest, ChangeSet, ChangesDidChangeParams as ChangesDidChange, Counts, FileInfo, HunkInfo, Range } from './protocol.gen';
export type {
  ApprovalOption, ApprovalRequestParams as ApprovalRequest, ChangeSet, ChangesDidChangeParams as ChangesDidChange,
  Counts, FileInfo, HunkInfo, Position, Range, WordDiff,
} from './protocol.gen';

// Where the extension reads a wire type more loosely or more narrowly than the schema, it derives
// it from the generated one (Pick, Partial, Omit), so that a schema change is a type error here.

export type Step = wire.Step;

/** A plan the daemon keeps (agentd/plan/get, load, create, edit): its id and version are set. */
export type Plan = wire.Plan & Required<Pick<wire.Plan, 'id' | 'version'>>;

/** A step's state as the Plan view keeps it: the wire's, of which an event gives only the id and
 *  the status, and with the statuses the view adds between events (retrying, stopped). */
export type StepState = Pick<wire.StepState, 'id'> & Partial<Omit<wire.StepState, 'id' | 'status'>> & { status: wire.StepStatus | string };

/** stepDescription is the text beside a step in the Plan view: what it does, its tool, its
 *  time and attempts, why it did not run (a blocked, skipped or cancelled step's reason, as the
 *  core words it: "dependency x was rejected"), and the rule that allowed it. */
export function stepDescription(step: Pick<Step, 'description' | 'tool' | 'kind'>, st: StepState | undefined): string {
  const parts = [step.description ?? '', step.tool ?? step.kind ?? ''].filter(Boolean);
  if (st?.durationMs !== undefined) parts.push(formatDuration(st.durationMs));
  if (st?.attempts && st.attempts > 1) parts.push(`attempt ${st.attempts}`);
  if (st?.reason && (st.status === 'blocked' || st.status === 'skipped' || st.status === 'cancelled')) parts.push(st.reason);
  if (st?.allowedBy) parts.push(stepNotes({ ...st, reason: undefined }).join(''));
  return parts.join(' · ');
}

/** stepNotes are the notes shown with a step: its reason, and the rule that allowed it. */
export function stepNotes(st: StepState | undefined): string[] {
  if (!st) return [];
  const out: string[] = [];
  if (st.reason) out.push(st.reason);
  if (st.allowedBy) out.push(`allowed by ${st.allowedBy.ruleId}${st.allowedBy.command ? ` (\`${st.allowedBy.command}\`)` : ''}`);
  return out;
}

/** A run's state as the daemon sends it, as far as the extension is sure of it: a state it makes
 *  itself (a run just started, a test's) has the counts alone, and a run of a daemon that died is
 *  marked stopped. */
type RunCounts = 'runId' | 'progress' | 'completedSteps' | 'failedSteps' | 'skippedSteps' | 'totalSteps' | 'currentSteps';
export type RunState = Pick<wire.RunState, RunCounts> & Partial<Omit<wire.RunState, RunCounts | 'status' | 'steps'>>
  & { status: wire.RunStatus | string; steps?: StepState[] };


// ---------------------------------------------------------------------------------------------
// Patches

export type LineKind = ' ' | '-' | '+';
export interface PatchLine { kind: LineKind; text: string }
export interface PatchHunk { oldStart: number; oldLines: number; newStart: number; newLines: number; lines: PatchLine[] }

/** parsePatch reads the hunks of a unified diff of one file, in order. */
export function parsePatch(patch: string): PatchHunk[] {
  const out: PatchHunk[] = [];
  let cur: PatchHunk | undefined;
  const lines = patch.split('\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  for (const l of lines) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(l);
    if (m) {
      cur = { oldStart: +m[1], oldLines: m[2] === undefined ? 1 : +m[2], newStart: +m[3], newLines: m[4] === undefined ? 1 : +m[4], lines: [] };
      out.push(cur);
      continue;
    }
    if (!cur) continue;
    const k = l[0];
    if (k === ' ' || k === '-' || k === '+') cur.lines.push({ kind: k, text: l.slice(1).replace(/\r$/, '') });
    // "\ No newline at end of file" and headers are not lines of the file.
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// A hunk as drawn in the buffer

export type Mode = 'before' | 'after';

/** A mark on a buffer line of a hunk: `offset` is relative to the hunk's first buffer line. */
export interface LineMark { offset: number; kind: 'added' | 'removed' }
/** Lines not in the buffer (inserted lines in before mode, deleted lines in after mode), shown
 *  as ghost text and in a hover. They go before buffer line `offset` of the hunk. */
export interface Ghost { offset: number; kind: 'added' | 'removed'; lines: string[] }
export interface WordMark { offset: number; start: number; end: number; kind: 'insert' | 'delete' }

export interface ViewHunk {
  changeId: string;
  stepId?: string;
  uri: string;
  id: string;
  status: HunkInfo['status'];
  /** First buffer line of the hunk (context included), 0-based, kept current while the user types. */
  start: number;
  /** Buffer lines the hunk spans (context included). */
  length: number;
  /** Offset of the first changed line (where the CodeLens goes). */
  focus: number;
  marks: LineMark[];
  ghosts: Ghost[];
  words: WordMark[];
  oldText: string;
  newText: string;
  /** The hunk's lines as the patch has them (context, removed, added), for the hover. */
  lines: PatchLine[];
  /** The user typed inside the hunk and the server has not answered yet. */
  touched: boolean;
}

/** hunkLines is where a hunk is in the buffer the user sees when nothing tracks it: it starts at the
 *  server's `at` (where it starts in the file as it is now; a decision does not move the other
 *  hunks' ranges, and the editor never works out how it moved them) and spans its side's lines
 *  (the old text in before mode, the new text in after mode). A server without `at` gets the
 *  range. */
export function hunkLines(mode: Mode, h: HunkInfo): { start: number; length: number } {
  const r = mode === 'after' ? h.newRange : h.oldRange;
  return { start: h.at?.line ?? r.start.line, length: r.end.line - r.start.line };
}

/** hunkSpan is the lines a hunk spans in the file as it is now, for its label: from `at`, the
 *  new text where it was written in (accepted in before mode; anything but rejected in after
 *  mode), else the old text. A stale hunk keeps its side's range (its text was changed). */
export function hunkSpan(mode: Mode, h: HunkInfo): { start: number; length: number } {
  const { start, length } = hunkLines(mode, h);
  if (h.status === 'stale') return { start, length };
  const written = mode === 'after' ? h.status !== 'rejected' : h.status === 'accepted';
  const r = written ? h.newRange : h.oldRange;
  return { start, length: r.end.line - r.start.line };
}

/** viewHunks lays out the hunks of one file of a change set in the buffer the user sees:
 *  the old text in before mode, the new text in after mode. */
export function viewHunks(cs: Pick<ChangeSet, 'id' | 'stepId' | 'review'>, file: FileInfo): ViewHunk[] {
  const mode: Mode = cs.review === 'after' ? 'after' : 'before';
  const parsed = file.patch ? parsePatch(file.patch) : [];
  const out: ViewHunk[] = [];
  file.hunks.forEach((h, i) => {
    const p = parsed[i];
    const bufRange = mode === 'before' ? h.oldRange : h.newRange;
    const { start, length } = hunkLines(mode, h);
    const marks: LineMark[] = [];
    const ghosts: Ghost[] = [];
    const words: WordMark[] = [];
    let focus = -1;
    if (p) {
      let off = 0; // buffer offset
      let ghost: Ghost | undefined;
      for (const l of p.lines) {
        const inBuffer = l.kind === ' ' || (mode === 'before' ? l.kind === '-' : l.kind === '+');
        if (inBuffer) {
          ghost = undefined;
          if (l.kind !== ' ') {
            marks.push({ offset: off, kind: l.kind === '+' ? 'added' : 'removed' });
            if (focus < 0) focus = off;
          }
          off++;
        } else {
          if (focus < 0) focus = off;
          if (!ghost) {
            ghost = { offset: off, kind: l.kind === '+' ? 'added' : 'removed', lines: [] };
            ghosts.push(ghost);
          }
          ghost.lines.push(l.text);
        }
      }
      const wordKind = mode === 'before' ? 'delete' : 'insert';
      for (const w of h.wordDiff ?? []) {
        if (w.kind !== wordKind || w.range.start.line !== w.range.end.line) continue;
        words.push({ offset: w.range.start.line - bufRange.start.line, start: w.range.start.character, end: w.range.end.character, kind: w.kind });
      }
    }
    out.push({
      changeId: cs.id, stepId: cs.stepId, uri: file.uri, id: h.id, status: h.status, start, length,
      focus: Math.max(0, Math.min(focus < 0 ? 0 : focus, Math.max(0, length - 1))), marks, ghosts, words,
      oldText: h.oldText ?? '', newText: h.newText ?? '', lines: p ? p.lines : [], touched: false,
    });
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Following the user's typing

/** One content change as VS Code reports it: the replaced range and the new text. */
export interface TextChange { range: Range; text: string }

function countLines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** followEdit moves hunks in place after an edit of their buffer: a hunk below the edit shifts
 *  by the lines added or removed, a hunk the edit touches is marked `touched` until the server's
 *  `agentd/changes/didChange` says where it is now. Only hunks at or below the edit are visited
 *  (they are sorted by start), so a keystroke costs a binary search plus the hunks below it.
 *  Returns whether any hunk moved or changed. */
export function followEdit(hunks: ViewHunk[], ch: TextChange): boolean {
  const delta = countLines(ch.text) - (ch.range.end.line - ch.range.start.line);
  const s = ch.range.start, e = ch.range.end;
  // First hunk whose end is after the edit's start line.
  let lo = 0, hi = hunks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (hunks[mid].start + hunks[mid].length <= s.line) lo = mid + 1; else hi = mid;
  }
  let changed = false;
  for (let i = lo; i < hunks.length; i++) {
    const h = hunks[i];
    // Above: ends on an earlier line, or at the very start of the hunk's first line with whole
    // lines inserted (typing a new line above it).
    const above = e.line < h.start || (e.line === h.start && e.character === 0 && (ch.text === '' || ch.text.endsWith('\n')));
    if (above) {
      if (delta !== 0) { h.start += delta; changed = true; }
      continue;
    }
    if (s.line >= h.start + h.length) continue;
    // The edit is inside the hunk.
    h.length = Math.max(1, h.length + delta);
    if (!h.touched) { h.touched = true; changed = true; }
    if (delta !== 0) changed = true;
  }
  return changed;
}

/** The edits of one didChange of a document (its version after them). */
export interface EditLogEntry { version: number; changes: TextChange[] }

/** replayEdits moves hunks the server laid out on buffer `version` by the edits made since (the
 *  server's notice can be older than the buffer). It returns the entries still newer than
 *  `version`, the only ones a later notice can need. */
export function replayEdits(hunks: ViewHunk[], log: EditLogEntry[], version: number): EditLogEntry[] {
  const newer = log.filter((e) => e.version > version);
  for (const e of newer) for (const c of e.changes) followEdit(hunks, c);
  return newer;
}

export function sortHunks(hunks: ViewHunk[]): ViewHunk[] {
  return hunks.sort((a, b) => a.start - b.start || a.changeId.localeCompare(b.changeId));
}

/** hunkAt returns the hunk whose lines hold `line`, or the hunk of a pure insertion right there. */
export function hunkAt(hunks: ViewHunk[], line: number): ViewHunk | undefined {
  for (const h of hunks) {
    if (h.status !== 'pending' && h.status !== 'stale') continue;
    if (line >= h.start && line < h.start + Math.max(1, h.length)) return h;
  }
  return undefined;
}

/** nextHunkLine is the focus line of the next (dir 1) or previous (dir -1) open hunk, wrapping. */
export function nextHunkLine(hunks: ViewHunk[], line: number, dir: 1 | -1): number | undefined {
  const lines = hunks.filter((h) => h.status === 'pending' || h.status === 'stale').map((h) => h.start + h.focus).sort((a, b) => a - b);
  if (lines.length === 0) return undefined;
  if (dir === 1) return lines.find((l) => l > line) ?? lines[0];
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i] < line) return lines[i];
  return lines[lines.length - 1];
}

// ---------------------------------------------------------------------------------------------
// CodeLens

export interface Lens { line: number; title: string; command: string; args: unknown[] }

/** hunkLenses are the lenses of one hunk: Accept | Reject when pending; a stale hunk says so and
 *  offers Re-propose (the change computed again against the text as it is now) and Reject
 *  (accepting text that no longer fits is not offered). A hunk the user just typed into says
 *  "Updating…" until the server's view of it arrives (asked for if it does not come by itself). */
export function hunkLenses(h: ViewHunk): Lens[] {
  const line = h.start + h.focus;
  const ref = { changeId: h.changeId, uri: h.uri, hunkId: h.id, line };
  if (h.touched) {
    return [
      { line, title: '$(sync) Updating…', command: '', args: [] },
      { line, title: 'Reject', command: 'agentd.rejectHunk', args: [ref] },
    ];
  }
  if (h.status === 'stale') {
    return [
      { line, title: '$(warning) Stale: the file changed here', command: '', args: [] },
      { line, title: 'Re-propose', command: 'agentd.reproposeHunk', args: [ref] },
      { line, title: 'Reject', command: 'agentd.rejectHunk', args: [ref] },
    ];
  }
  if (h.status !== 'pending') return [];
  return [
    { line, title: 'Accept', command: 'agentd.acceptHunk', args: [ref] },
    { line, title: 'Reject', command: 'agentd.rejectHunk', args: [ref] },
  ];
}

/** Lines around what an editor shows that get hunk lenses: one screen above and one below (at
 *  least LENS_MIN_MARGIN lines). Each lens line is a view zone and a content widget that VS Code
 *  lays out again on every keystroke, so a file with hundreds of hunks gets lenses only near the
 *  view, and a page up or down stays within them (the file lenses on top always). */
export const LENS_MIN_MARGIN = 20;

export interface LineWindow { lo: number; hi: number; margin: number }

function span(visible: { start: number; end: number }[]): { lo: number; hi: number } {
  return { lo: Math.min(...visible.map((v) => v.start)), hi: Math.max(...visible.map((v) => v.end)) };
}

/** lensWindow is the lines that get hunk lenses for the visible line ranges of a document's
 *  editors, or undefined (every hunk) when no editor shows it. */
export function lensWindow(visible: { start: number; end: number }[], margin?: number): LineWindow | undefined {
  if (visible.length === 0) return undefined;
  const { lo, hi } = span(visible);
  const m = margin ?? Math.max(LENS_MIN_MARGIN, hi - lo + 1);
  return { lo: Math.max(0, lo - m), hi: hi + m, margin: m };
}

/** lensWindowStale: the view came within half a margin of the window's edge, so the lenses are
 *  asked for again (not on every scroll). */
export function lensWindowStale(win: LineWindow, visible: { start: number; end: number }[]): boolean {
  if (visible.length === 0) return false;
  const { lo, hi } = span(visible);
  return (win.lo > 0 && lo < win.lo + win.margin / 2) || hi > win.hi - win.margin / 2;
}

/** inWindow: whether a hunk's lines meet the window (no window: every hunk). */
export function inWindow(h: Pick<ViewHunk, 'start' | 'length'>, win: LineWindow | undefined): boolean {
  return !win || (h.start + Math.max(1, h.length) > win.lo && h.start <= win.hi);
}

/** fileLenses: Accept All | Reject All | Open Diff at the top of a file with open hunks. */
export function fileLenses(uri: string, hunks: ViewHunk[]): Lens[] {
  const open = hunks.filter((h) => h.status === 'pending' || h.status === 'stale');
  if (open.length === 0) return [];
  const pending = open.filter((h) => h.status === 'pending' && !h.touched).length;
  const out: Lens[] = [];
  if (pending > 0) out.push({ line: 0, title: `Accept All (${pending})`, command: 'agentd.acceptFile', args: [{ uri }] });
  out.push({ line: 0, title: `Reject All (${open.length})`, command: 'agentd.rejectFile', args: [{ uri }] });
  out.push({ line: 0, title: 'Open Diff', command: 'agentd.openDiff', args: [{ uri }] });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Texts

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/** waitingOnUser: every step the run is on waits for the user (an approval, a review, or what
 *  to do about a step that failed: Retry, Skip or Abort), so the run goes on only when the user
 *  acts: no time estimate holds then. */
export function waitingOnUser(run: Pick<RunState, 'status' | 'currentSteps'> | undefined, statusOf: (stepId: string) => string | undefined): boolean {
  return !!run && run.status === 'running' && run.currentSteps.length > 0 && run.currentSteps.every((id) => statusOf(id) === 'waiting' || statusOf(id) === 'failed');
}

/** statusText is the status bar's text: the run's progress and the pending hunk count. While
 *  the run only waits for the user (waitingOnUser) it says so instead of a time left, which
 *  would stand still. */
export function statusText(run: RunState | undefined, pendingHunks: number, waiting = false): string {
  const parts: string[] = [];
  if (run) {
    const done = run.completedSteps + run.failedSteps + run.skippedSteps + (run.blockedSteps ?? 0);
    const icon = run.status === 'running' ? (waiting ? '$(bell)' : '$(sync~spin)') : run.status === 'paused' ? '$(debug-pause)' : run.status === 'completed' ? '$(check)' : '$(error)';
    let t = `${icon} agentd ${done}/${run.totalSteps}`;
    if (run.status !== 'running') t += ` ${run.status}`;
    else if (waiting) t += ' · waiting for you';
    else if (run.etaMs !== undefined) t += ` · ${formatDuration(run.etaMs)} left`;
    parts.push(t);
  } else {
    parts.push('$(hubot) agentd');
  }
  if (pendingHunks > 0) parts.push(`$(diff) ${pendingHunks} pending`);
  return parts.join('  ');
}

export const stepIcons: Record<string, string> = {
  pending: 'circle-large-outline', blocked: 'debug-pause', ready: 'circle-large-outline', running: 'sync~spin',
  completed: 'pass', failed: 'error', skipped: 'debug-step-over', cancelled: 'circle-slash',
  retrying: 'debug-restart', waiting: 'watch', paused: 'debug-pause', stopped: 'circle-slash',
};

/** approvalPrompt is the text of the approval modal: what runs where, or which file goes. */
export function approvalPrompt(r: ApprovalRequest, root?: string): { message: string; detail: string; buttons: { title: string; optionId: string; kind: string; isCloseAffordance: boolean }[] } {
  const lines: string[] = [];
  if (r.command) lines.push(`Command: ${r.command}`);
  if (r.cwd) lines.push(`Folder: ${root && !r.cwd.startsWith('/') ? (r.cwd === '.' ? root : `${root}/${r.cwd.replace(/^\.\//, '')}`) : r.cwd}`);
  if (r.detail) lines.push(r.detail);
  lines.push(`Step ${r.stepId}${r.tool ? ` (${r.tool})` : ''} · ${r.category} · risk ${r.risk}`);
  // The first button is the modal's default (Enter): for a high-risk call it is Reject, so a
  // key pressed by accident never runs it.
  const order = r.risk === 'high' ? ['reject_once', 'allow_once', 'allow_always', 'reject_always'] : ['allow_once', 'allow_always', 'reject_once', 'reject_always'];
  // Escape answers "reject this time". Below high risk, Reject is the modal's close affordance:
  // VS Code then shows no Cancel of its own beside it (a Cancel that did what Reject does).
  // At high risk Enter must press Reject, so Reject is the first button and VS Code's Cancel
  // stays; the detail says it is the same answer.
  const closeReject = r.risk !== 'high';
  const buttons = [...r.options].sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind))
    .map((o) => ({ title: o.name, optionId: o.optionId, kind: o.kind, isCloseAffordance: closeReject && o.kind === 'reject_once' }));
  if (buttons.some((b) => b.kind === 'reject_once')) lines.push(closeReject ? 'Escape rejects it this time.' : 'Enter or Escape rejects it this time (Cancel is the same).');
  return { message: `agentd: ${r.title}`, detail: lines.join('\n'), buttons };
}

/** asksReason says whether rejecting a change of cs asks for a reason: the wire's
 *  `reasonToModel` (a model reads it), whether or not this window has the step's plan. */
export function asksReason(cs: Pick<ChangeSet, 'reasonToModel'> | undefined): boolean {
  return cs?.reasonToModel === true;
}

/** moveEdit is the plan edit that moves a step one place up or down, or undefined at the edge. */
export function moveEdit(plan: Plan, stepId: string, dir: -1 | 1): { op: 'move'; stepId: string; after?: string } | undefined {
  const ids = plan.steps.map((s) => s.id);
  const i = ids.indexOf(stepId);
  if (i < 0) return undefined;
  const j = i + dir;
  if (j < 0 || j >= ids.length) return undefined;
  const rest = ids.filter((id) => id !== stepId);
  const pos = dir === -1 ? i - 1 : i + 1; // index in rest where the step goes
  return pos === 0 ? { op: 'move', stepId } : { op: 'move', stepId, after: rest[pos - 1] };
}

/** A decision unit of a file: the whole file (id: its uri) when the wire says `whole`, whatever
 *  hunks it lists for display, else each hunk. */
export interface Unit { id: string; status: string }

export function fileUnits(f: FileInfo): Unit[] {
  if (f.whole) return [{ id: f.uri, status: f.status }];
  return f.hunks.map((h) => ({ id: h.id, status: h.status }));
}

/** fileCounts: the file's units by status, as the wire's `counts` says. */
export function fileCounts(f: FileInfo): Counts { return f.counts; }

/** setCounts: the set's units by status, as the wire's `counts` says (the server's, never a sum
 *  over the files held here: those may be older than the server's view). */
export function setCounts(cs: ChangeSet): Counts { return cs.counts; }

/** fileOpen: units of a file still to decide (pending or stale), from the wire's counts; a whole
 *  file (create, delete, move, binary) is one unit whatever hunks it lists for display. */
export function fileOpenUnits(f: FileInfo): number {
  const c = fileCounts(f);
  return c.pending + c.stale;
}

/** countPending: units still to decide over the sets (the set's counts). */
export function countPending(sets: Iterable<ChangeSet>): number {
  let n = 0;
  for (const cs of sets) {
    const c = setCounts(cs);
    n += c.pending + c.stale;
  }
  return n;
}

/** agentd/changes/didChange's params: the set's status and counts, and the files the typing
 *  touched, each with its own. */

/** applyFilesChanged applies agentd/changes/didChange to cs: the files it lists replace ours, and
 *  the set's status and counts are the notice's (the server's whole set, including units decided
 *  since we last fetched it), so the status bar and the tree never show old ones. */
export function applyFilesChanged(cs: ChangeSet, p: Pick<ChangesDidChange, 'status' | 'counts' | 'files'>): void {
  cs.status = p.status;
  cs.counts = p.counts;
  for (const f of p.files) {
    const i = cs.files.findIndex((x) => x.uri === f.uri);
    if (i >= 0) cs.files[i] = f; else cs.files.push(f);
  }
}

/** applyPatchText applies the chosen hunks of a one-file unified diff to text (`forward`: old to
 *  new; `reverse`: new to old). A hunk is placed where its lines are found, nearest to where the
 *  header says, so a view stays right after the user typed elsewhere; a hunk whose lines are not
 *  found is left out. Used only to show virtual documents, never to write a file. */
export function applyPatchText(text: string, patch: string, chosen: boolean[] | undefined, dir: 'forward' | 'reverse'): string {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  const finalNewline = lines.length > 0 && lines[lines.length - 1] === '';
  if (finalNewline) lines.pop();
  const hunks = parsePatch(patch);
  const edits: { at: number; del: number; ins: string[] }[] = [];
  let drift = 0;
  hunks.forEach((h, i) => {
    const from = h.lines.filter((l) => l.kind === ' ' || l.kind === (dir === 'forward' ? '-' : '+')).map((l) => l.text);
    const to = h.lines.filter((l) => l.kind === ' ' || l.kind === (dir === 'forward' ? '+' : '-')).map((l) => l.text);
    const start = Math.max(0, (dir === 'forward' ? h.oldStart : h.newStart) - (from.length > 0 ? 1 : 0));
    if (chosen && !chosen[i]) return;
    const at = findLines(lines, from, start + drift);
    if (at < 0) return;
    drift = at - start;
    edits.push({ at, del: from.length, ins: to });
  });
  for (let i = edits.length - 1; i >= 0; i--) lines.splice(edits[i].at, edits[i].del, ...edits[i].ins);
  return lines.join(eol) + (finalNewline || (lines.length > 0 && text === '') ? eol : '');
}

function findLines(lines: string[], want: string[], near: number): number {
  const fits = (at: number) => at >= 0 && at + want.length <= lines.length && want.every((w, k) => lines[at + k] === w);
  for (let d = 0; d <= lines.length; d++) {
    if (fits(near - d)) return near - d;
    if (d > 0 && fits(near + d)) return near + d;
    if (near - d < 0 && near + d > lines.length) break;
  }
  return -1;
}

/** isOpen: the change set still has something to decide (a pending or stale hunk or file). */
export function isOpen(cs: ChangeSet): boolean {
  const c = setCounts(cs);
  return c.pending + c.stale > 0;
}

// ---------------------------------------------------------------------------------------------
// Ghost text and hover

/** ghostText is the after-text of lines not in the buffer: every line, joined by ⏎ (a decoration
 *  holds one line of text; the hover has the block as it is). */
export function ghostText(g: Ghost): string {
  const sign = g.kind === 'added' ? '+ ' : '− ';
  return sign + g.lines.map((l) => l.replace(/\s+$/, '').replace(/\t/g, '  ')).join('  ⏎  ');
}

/** hoverDiff is a hunk as a diff for the hover: context lines as context, only the changed lines
 *  as removed or added (from the patch; the old and new texts when there is none). */
export function hoverDiff(h: Pick<ViewHunk, 'lines' | 'oldText' | 'newText'>): string {
  if (h.lines.length) return h.lines.map((l) => l.kind + l.text).join('\n');
  const split = (t: string) => t.split('\n').filter((_, i, a) => i < a.length - 1 || a[i] !== '');
  const o = split(h.oldText), n = split(h.newText);
  let a = 0;
  while (a < o.length && a < n.length && o[a] === n[a]) a++;
  let b = 0;
  while (b < o.length - a && b < n.length - a && o[o.length - 1 - b] === n[n.length - 1 - b]) b++;
  return [...o.slice(0, a).map((l) => ' ' + l), ...o.slice(a, o.length - b).map((l) => '-' + l), ...n.slice(a, n.length - b).map((l) => '+' + l), ...o.slice(o.length - b).map((l) => ' ' + l)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// After mode: saving what the agent put into an open editor

/** agentOnly says whether an editor's unsaved text differs from the disk by the agent's change
 *  alone: `disk` with the chosen hunks of `patch` applied (forward: proposed; reverse: taken out)
 *  is the editor's text. Such an editor is saved so the change is on disk, as after mode says;
 *  one that also holds the user's own edits is not saved without asking. */
export function agentOnly(disk: string, buffer: string, patch: string, chosen: boolean[] | undefined, dir: 'forward' | 'reverse'): boolean {
  return disk !== buffer && applyPatchText(disk, patch, chosen, dir) === buffer;
}

// ---------------------------------------------------------------------------------------------
// Runs

/** activeRun is the run of the workspace that is running or paused (the newest), if any: only one
 *  runs at a time unless the user asks for another. */
export function activeRun<T extends { runId: string; status: string }>(runs: T[]): T | undefined {
  return runs.find((r) => r.status === 'running' || r.status === 'paused');
}

/** runConflict reads the -32010 error of agentd/run/start: the run that is running or paused. */
export function runConflict(e: unknown): { runId: string; status: string } | undefined {
  if (!e || typeof e !== 'object' || (e as { code?: unknown }).code !== -32010) return undefined;
  const d = (e as { data?: { runId?: unknown; status?: unknown } }).data;
  return d && typeof d.runId === 'string' && typeof d.status === 'string' ? { runId: d.runId, status: d.status } : undefined;
}

// ---------------------------------------------------------------------------------------------
// The daemon's log and setup

/** logLine reads a line of the daemon's stderr (log/slog's text or JSON form) into a level and
 *  a text, so the output channel shows info as info and errors as errors. */
export function logLine(line: string): { level: 'trace' | 'debug' | 'info' | 'warn' | 'error'; text: string } {
  const lv = (s: string) => {
    const u = s.toUpperCase();
    return u.startsWith('ERR') ? 'error' : u.startsWith('WARN') ? 'warn' : u.startsWith('DEBUG') ? 'debug' : u.startsWith('TRACE') ? 'trace' : 'info';
  };
  if (line.startsWith('{')) {
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      const { time: _t, level, msg, ...rest } = o;
      const extra = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
      return { level: lv(String(level ?? 'info')), text: `${msg ?? ''}${extra ? ' ' + extra : ''}` };
    } catch { /* not JSON: as text */ }
  }
  const m = /^(?:time=\S+\s+)?level=(\S+)\s+(.*)$/.exec(line);
  if (!m) return { level: 'info', text: line };
  return { level: lv(m[1]), text: m[2].replace(/^msg=("(?:[^"\\]|\\.)*"|\S+)/, (_a, x: string) => (x.startsWith('"') ? JSON.parse(x) as string : x)) };
}

/** Environment variable that holds the API key of a provider (the daemon reads it). */
export function keyEnv(provider: string): string {
  return provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
}

/** modelSpec reads the editor's model settings (`agentd.model` as provider:model or a model name,
 *  `agentd.provider`, `agentd.modelBaseUrl`) into initializationOptions.model. */
export function modelSpec(model: string, provider: string, baseUrl: string): { provider: string; model: string; baseUrl?: string } | undefined {
  if (!model) return undefined;
  const i = model.indexOf(':');
  const p = i > 0 ? model.slice(0, i) : provider || 'openai';
  return { provider: p, model: i > 0 ? model.slice(i + 1) : model, baseUrl: baseUrl || undefined };
}

/** missingModel says what a plan from a request needs that is not set, with where to set it:
 *  the editor's settings and command first, then the environment. Empty when nothing is missing. */
export function missingModel(o: { model: string; provider: string; baseUrl: string; hasKey: boolean; env: Record<string, string | undefined> }): string[] {
  const out: string[] = [];
  const envModel = o.env.AGENTD_MODEL ?? '';
  const spec = modelSpec(o.model || envModel, o.provider, '');
  if (!spec) {
    out.push('a model: set agentd.model (e.g. openai:gpt-4o-mini) in the settings, or AGENTD_MODEL in the environment VS Code starts from');
    return out;
  }
  const env = keyEnv(spec.provider);
  // A key is needed for the providers' own servers; a local or other base URL may go without.
  const base = o.baseUrl || o.env[spec.provider === 'anthropic' ? 'ANTHROPIC_BASE_URL' : 'OPENAI_BASE_URL'];
  if (!o.hasKey && !o.env[env] && !base && (spec.provider === 'openai' || spec.provider === 'anthropic')) {
    out.push(`an API key for ${spec.provider}: run "agentd: Set API Key" (kept in VS Code's secret storage), or set ${env} in the environment VS Code starts from`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Undo (agentd/undo/run, agentd/undo/restore): undo is a revert of the agent's own edits; where
// the user changed the agent's lines there is a conflict, and a conflicting undo changes nothing
// until the user chooses (docs/protocol.md). The core decides every file; this only words it.

export type UndoConflict = Pick<wire.UndoConflict, 'path' | 'reason' | 'owners' | 'diff'>;
/** agentd/undo/run and agentd/undo/restore's result. `applied` false: nothing was written (a dry
 *  run, or conflicts the caller did not choose for). Paths are the wire's (workspace-relative or
 *  file URIs). */
export type UndoResult = Pick<wire.UndoResult, 'applied' | 'reverted' | 'undoId'> & Partial<Pick<wire.UndoResult, 'overwritten'>>
  & Partial<Pick<wire.UndoRunResult, 'runId'>> & Pick<wire.UndoRunResult, 'created' | 'deleted'> & {
    conflicts: UndoConflict[];
    /** The files left alone, by path (an older daemon's restore names them by uri). */
    leftAlone: (Pick<wire.UndoConflict, 'path'> & Pick<wire.ResolveConflict, 'message'>)[];
  };
export type OnConflict = wire.OnConflict;

/** The choices of the conflict dialog, in the order shown (Cancel is the dialog's own). */
export const UNDO_KEEP = 'Undo the rest, keep these files';
export const UNDO_OVERWRITE = 'Overwrite them';
export const UNDO_SHOW = 'Show the conflicts';

/** normalizeUndo reads a result of either wire: the revert's ({applied, reverted, conflicts:
 *  [{path}]}) or the reset's it replaces ({restore: {restored, conflicts: [{uri, message}]}}), so
 *  that an older daemon is still shown truthfully. */
export function normalizeUndo(raw: unknown): UndoResult {
  const r = (raw ?? {}) as Record<string, unknown>;
  // The revert's fields are at the top (with `applied`); `restore` repeats them in the old shape.
  const inner = (typeof r.applied !== 'boolean' && r.restore && typeof r.restore === 'object' ? r.restore : r) as Record<string, unknown>;
  const strs = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const pathOf = (c: Record<string, unknown>) => String(c.path ?? c.uri ?? '');
  const conflicts = (Array.isArray(inner.conflicts) ? inner.conflicts : []).map((c: Record<string, unknown>) => ({
    path: pathOf(c), reason: String(c.reason ?? c.message ?? ''), owners: strs(c.owners), diff: typeof c.diff === 'string' ? c.diff : undefined,
  }));
  const leftAlone = (Array.isArray(inner.leftAlone) ? inner.leftAlone : []).map((c: Record<string, unknown>) => ({ path: pathOf(c), message: String(c.message ?? c.reason ?? '') }));
  const applied = typeof r.applied === 'boolean' ? r.applied : typeof inner.applied === 'boolean' ? inner.applied as boolean : true;
  return {
    runId: typeof r.runId === 'string' ? r.runId : undefined,
    applied,
    reverted: strs(inner.reverted ?? inner.restored),
    created: strs(inner.created),
    deleted: strs(inner.deleted),
    conflicts,
    overwritten: strs(inner.overwritten),
    leftAlone,
    undoId: typeof r.undoId === 'string' ? r.undoId : typeof inner.undoSnapshotId === 'string' ? inner.undoSnapshotId : undefined,
  };
}

/** needsChoice: the undo wrote nothing because files conflict: the user must choose. */
export function needsChoice(r: UndoResult): boolean {
  return !r.applied && r.conflicts.length > 0;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** conflictDialog words the modal shown before a conflicting undo: what is undone, which files
 *  the user changed since, and what each choice does (no flag the user cannot act on). */
export function conflictDialog(what: string, r: UndoResult, rel: (p: string) => string): { message: string; detail: string } {
  const files = r.conflicts.map((c) => rel(c.path));
  const message = `agentd: undoing ${what} conflicts with your edits in ${files.length === 1 ? files[0] : plural(files.length, 'file')}. Nothing has been changed yet.`;
  // A terminal flag in the reason ("restore with --overwrite") is no choice here: the buttons are.
  const why = (t: string) => t.replace(/\s*\([^)]*\s--[a-z][^)]*\)/g, '');
  const lines = r.conflicts.map((c) => `• ${rel(c.path)}${c.reason ? `: ${why(c.reason)}` : ''}`);
  const rest = r.reverted.length + r.created.length + r.deleted.length;
  const detail = [
    `You changed lines the agent wrote in:`, ...lines, '',
    `${UNDO_KEEP}: ${rest ? `reverts the other ${plural(rest, 'file')} and ` : ''}leaves ${files.length === 1 ? 'this file' : 'these files'} as they are now.`,
    `${UNDO_OVERWRITE}: puts back the text from before ${what} there too; a safety snapshot keeps your version (agentd: Undo Last Restore brings it back).`,
    `${UNDO_SHOW}: opens each file now against what overwriting would write.`,
  ].join('\n');
  return { message, detail };
}

/** undoReport words what an applied undo did: what was reverted and what was kept. */
export function undoReport(what: string, r: UndoResult, choice: OnConflict, rel: (p: string) => string): { message: string; warn: boolean } {
  const names = (xs: string[]) => xs.map(rel).join(', ');
  const parts: string[] = [];
  if (r.reverted.length) parts.push(`reverted ${names(r.reverted)}`);
  if (r.created.length) parts.push(`put back ${names(r.created)}`);
  if (r.deleted.length) parts.push(`removed ${names(r.deleted)}`);
  if (!parts.length) parts.push('no file changed');
  let message = `agentd: undid ${what}: ${parts.join('; ')}`;
  let warn = false;
  if (r.overwritten?.length) message += `; overwrote your edits in ${names(r.overwritten)} (Undo Last Restore brings them back)`;
  // Kept by the user's choice, or (an older daemon's reset) left alone by the daemon.
  if (choice !== 'overwrite' && r.conflicts.length) { message += `; kept your version of ${names(r.conflicts.map((c) => c.path))}`; warn = true; }
  const kept = new Set(choice !== 'overwrite' ? r.conflicts.map((c) => c.path) : []);
  const alone = r.leftAlone.filter((l) => !kept.has(l.path));
  if (alone.length) { message += `; left alone ${alone.map((l) => `${rel(l.path)} (${l.message})`).join(', ')}`; warn = true; }
  return { message, warn };
}

// ---------------------------------------------------------------------------------------------
// Settings that restart the daemon

/** The settings the daemon is started with: a change of one restarts it. */
export const RESTART_SETTINGS = ['path', 'model', 'provider', 'modelBaseUrl', 'logLevel', 'allowBroadWorkspace'];

/** RestartGate coalesces settings-change events: the daemon restarts when the values it is
 *  started with differ from those of its last start, once per such change. VS Code may fire
 *  more than one change event for one edit (the settings editor writes the file, which is read
 *  again); a second event with the same values restarts nothing. */
export class RestartGate {
  constructor(private key: string) {}
  static key(get: (setting: string) => unknown): string {
    return JSON.stringify(RESTART_SETTINGS.map((k) => get(k) ?? null));
  }
  /** changed records the values of a change event; true when the daemon must restart. */
  changed(key: string): boolean {
    if (key === this.key) return false;
    this.key = key;
    return true;
  }
  /** started records the values the daemon was (re)started with for another reason. */
  started(key: string): void { this.key = key; }
}
