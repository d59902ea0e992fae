// Inline review: decorations, CodeLens, the hunk-under-cursor context key, virtual documents
// for diffs, and the hunks following the user's typing. What a hunk is and what a decision does
// is the server's business; this draws what the server says.
import * as vscode from 'vscode';
import {
  ChangeSet, EditLogEntry, LineWindow, ViewHunk, inWindow, lensWindow, lensWindowStale, replayEdits, fileLenses, followEdit, hunkAt, hunkLenses, sortHunks, viewHunks, countPending, applyPatchText,
  fileOpenUnits, applyFilesChanged, ChangesDidChange, ghostText, hoverDiff,
} from './model';

/** How long a hunk the user typed into waits for the server's notice before the extension asks
 *  for the change set itself. The server rebases 150 ms after the typing pauses (at most 1 s after
 *  the first key) and sends a notice only when a hunk changed: typing again into a hunk that is
 *  already stale changes nothing, and no notice comes. */
export const RESYNC_MS = 1500;

export const DIFF_SCHEME = 'agentd-diff';

export interface Metrics { record(name: string, value: number, extra?: Record<string, unknown>): void }

export class Review implements vscode.CodeLensProvider, vscode.TextDocumentContentProvider, vscode.HoverProvider, vscode.Disposable {
  readonly sets = new Map<string, ChangeSet>();
  private byUri = new Map<string, ViewHunk[]>();
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensEmitter.event;
  private readonly contentEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.contentEmitter.event;
  private readonly changedEmitter = new vscode.EventEmitter<void>();
  /** Fires when the change sets changed (views and status bar listen). */
  readonly onDidChangeSets = this.changedEmitter.event;
  private disposables: vscode.Disposable[] = [];
  private readonly types = {
    added: vscode.window.createTextEditorDecorationType({
      isWholeLine: true, backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'), overviewRulerLane: vscode.OverviewRulerLane.Left,
    }),
    removed: vscode.window.createTextEditorDecorationType({
      isWholeLine: true, backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'), overviewRulerLane: vscode.OverviewRulerLane.Left,
    }),
    wordInsert: vscode.window.createTextEditorDecorationType({ backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground') }),
    wordDelete: vscode.window.createTextEditorDecorationType({ backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'), textDecoration: 'line-through' }),
    ghostAdded: vscode.window.createTextEditorDecorationType({
      after: { color: new vscode.ThemeColor('gitDecoration.addedResourceForeground'), fontStyle: 'italic', margin: '0 0 0 2em' },
    }),
    ghostRemoved: vscode.window.createTextEditorDecorationType({
      after: { color: new vscode.ThemeColor('gitDecoration.deletedResourceForeground'), fontStyle: 'italic', margin: '0 0 0 2em', textDecoration: 'line-through' },
    }),
    stale: vscode.window.createTextEditorDecorationType({
      isWholeLine: true, backgroundColor: new vscode.ThemeColor('editorWarning.background'),
      border: '1px dashed', borderColor: new vscode.ThemeColor('editorWarning.foreground'),
    }),
  };

  constructor(private readonly metrics: Metrics) {
    this.disposables.push(
      vscode.workspace.onDidChangeTextDocument((e) => this.onTyping(e)),
      vscode.window.onDidChangeVisibleTextEditors((eds) => eds.forEach((ed) => this.draw(ed))),
      vscode.window.onDidChangeTextEditorSelection((e) => this.updateContext(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((ed) => this.updateContext(ed)),
      vscode.window.onDidChangeTextEditorVisibleRanges((e) => this.onScroll(e.textEditor)),
      vscode.window.tabGroups.onDidChangeTabs(() => this.updateActivePending()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.updateActivePending()),
    );
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    Object.values(this.types).forEach((t) => t.dispose());
  }

  hunks(uri: string): ViewHunk[] { return this.byUri.get(uri) ?? []; }
  pendingCount(): number { return countPending(this.sets.values()); }

  /** resync asks the server for change sets again (set by the extension): used when a hunk the
   *  user typed into got no notice from the server in RESYNC_MS. */
  resync: ((uri: string, changeIds: string[]) => Promise<void>) | undefined;
  private resyncTimers = new Map<string, ReturnType<typeof setTimeout>>();

  private scheduleResync(uri: string): void {
    const t = this.resyncTimers.get(uri);
    if (t) clearTimeout(t);
    this.resyncTimers.set(uri, setTimeout(() => {
      this.resyncTimers.delete(uri);
      const ids = [...new Set(this.hunks(uri).filter((h) => h.touched).map((h) => h.changeId))];
      if (ids.length && this.resync) void this.resync(uri, ids);
    }, RESYNC_MS));
  }

  /** setChangeSet takes a change set as the server sent it (with texts) and redraws its files.
   *  `versions`: the buffer version of each document when the request was sent (the server
   *  answers on that text); edits made since are replayed on its ranges. */
  setChangeSet(cs: ChangeSet, versions?: Map<string, number>): void {
    const old = this.sets.get(cs.id);
    this.sets.set(cs.id, cs);
    const uris = new Set(cs.files.map((f) => f.uri));
    old?.files.forEach((f) => uris.add(f.uri));
    for (const u of uris) {
      this.rebuild(u);
      const v = versions?.get(u);
      const list = this.byUri.get(u);
      if (v !== undefined && list) {
        this.edits.set(u, replayEdits(list, this.edits.get(u) ?? [], v));
        if (list.some((h) => h.touched)) this.scheduleResync(u);
      }
    }
    this.changed(uris);
  }

  /** updateFiles applies agentd/changes/didChange: new hunk ids and ranges for some files,
   *  computed on buffer `version`. The server sends it only when a hunk changed other than by
   *  moving with the typing (clientFeatures.hunksFollowEdits); edits made since `version` are
   *  replayed on its ranges. */
  updateFiles({ changeId, status, counts, files, version }: ChangesDidChange): void {
    const cs = this.sets.get(changeId);
    if (!cs) return;
    applyFilesChanged(cs, { status, counts, files });
    const redraw = new Set<string>();
    for (const f of files) {
      // When the server's hunks sit where ours already are (only ids changed), nothing is redrawn.
      if (!this.renameOnly(f.uri, version)) { redraw.add(f.uri); }
    }
    if (redraw.size) this.changed(redraw); else this.changedEmitter.fire();
  }

  /** Edits of each open document since the last server notice, to replay on older ranges. */
  private edits = new Map<string, EditLogEntry[]>();

  private renameOnly(uri: string, version: number | undefined): boolean {
    const cur = this.byUri.get(uri);
    const next = this.layout(uri);
    const log = this.edits.get(uri) ?? [];
    if (version !== undefined) this.edits.set(uri, replayEdits(next, log, version));
    if (!next.length) this.byUri.delete(uri); else this.byUri.set(uri, next);
    // Edits replayed on the server's layout can touch a hunk again: it waits for the next notice,
    // or asks.
    if (next.some((h) => h.touched)) this.scheduleResync(uri);
    if (!cur || next.length !== cur.length) return false;
    const key = (h: ViewHunk) => `${h.changeId}|${h.status}|${h.touched}|${h.start}|${h.length}|${h.focus}|${JSON.stringify(h.marks)}|${JSON.stringify(h.ghosts)}|${JSON.stringify(h.words)}`;
    for (let i = 0; i < next.length; i++) if (key(next[i]) !== key(cur[i])) return false;
    return true;
  }

  removeChangeSet(id: string): void {
    const cs = this.sets.get(id);
    if (!cs) return;
    this.sets.delete(id);
    const uris = new Set(cs.files.map((f) => f.uri));
    for (const u of uris) this.rebuild(u);
    this.changed(uris);
  }

  /** clear forgets every change set and takes every decoration and lens away (the daemon died:
   *  what it would have said is unknown). */
  clear(): void {
    const uris = new Set(this.byUri.keys());
    for (const cs of this.sets.values()) for (const f of cs.files) uris.add(f.uri);
    this.sets.clear();
    this.byUri.clear();
    for (const t of this.resyncTimers.values()) clearTimeout(t);
    this.resyncTimers.clear();
    this.changed(uris);
  }

  private layout(uri: string): ViewHunk[] {
    const list: ViewHunk[] = [];
    for (const cs of this.sets.values()) {
      for (const f of cs.files) {
        if (f.uri !== uri) continue;
        for (const h of viewHunks(cs, f)) if (h.status === 'pending' || h.status === 'stale') list.push(h);
      }
    }
    return sortHunks(list);
  }

  private rebuild(uri: string): void {
    const list = this.layout(uri);
    if (list.length) this.byUri.set(uri, list); else this.byUri.delete(uri);
  }

  private pendingPaths = '';

  private changed(uris: Set<string>): void {
    for (const ed of vscode.window.visibleTextEditors) if (uris.has(ed.document.uri.toString())) this.draw(ed);
    // The paths with something to decide: the multi-file diff's Accept / Reject All show while
    // there is one (agentd.hasPending); a file's diff asks agentd.activePending.
    const paths = new Set<string>();
    for (const cs of this.sets.values()) for (const f of cs.files) if (fileOpenUnits(f) > 0) paths.add(vscode.Uri.parse(f.uri).fsPath);
    const key = [...paths].sort().join('\n');
    if (key !== this.pendingPaths) {
      this.pendingPaths = key;
      void vscode.commands.executeCommand('setContext', 'agentd.hasPending', paths.size > 0);
    }
    this.updateActivePending();
    for (const u of uris) this.contentEmitter.fire(vscode.Uri.parse(u).with({ scheme: DIFF_SCHEME, query: 'side=proposed' }));
    this.lensEmitter.fire();
    this.changedEmitter.fire();
    this.updateContext(vscode.window.activeTextEditor);
  }

  /** draw sets every decoration of one editor from the hunks of its document. */
  draw(ed: vscode.TextEditor): void {
    const t0 = performance.now();
    const hs = this.hunks(ed.document.uri.toString());
    const added: vscode.Range[] = [], removed: vscode.Range[] = [], stale: vscode.Range[] = [];
    const wi: vscode.Range[] = [], wd: vscode.Range[] = [];
    const ga: vscode.DecorationOptions[] = [], gr: vscode.DecorationOptions[] = [];
    const last = Math.max(0, ed.document.lineCount - 1);
    const line = (n: number) => Math.min(Math.max(0, n), last);
    for (const h of hs) {
      if (h.status === 'stale' || h.touched) {
        stale.push(new vscode.Range(line(h.start), 0, line(h.start + h.length - 1), 0));
        continue;
      }
      for (const m of h.marks) (m.kind === 'added' ? added : removed).push(new vscode.Range(line(h.start + m.offset), 0, line(h.start + m.offset), 0));
      for (const w of h.words) {
        const l = line(h.start + w.offset);
        (w.kind === 'insert' ? wi : wd).push(new vscode.Range(l, w.start, l, w.end));
      }
      for (const g of h.ghosts) {
        // Lines that are not in the buffer: shown after the line above where they go (or on the
        // first line when they go at the top), with the whole text in the hover.
        const at = line(h.start + g.offset - (g.offset > 0 || h.start > 0 ? 1 : 0));
        const md = new vscode.MarkdownString();
        md.appendMarkdown(g.kind === 'added' ? '**agentd proposes:**' : '**agentd removes:**');
        md.appendCodeblock(g.lines.map((l) => (g.kind === 'added' ? '+' : '-') + l).join('\n'), 'diff');
        const opt: vscode.DecorationOptions = {
          range: new vscode.Range(at, Number.MAX_SAFE_INTEGER, at, Number.MAX_SAFE_INTEGER),
          hoverMessage: md,
          renderOptions: { after: { contentText: ghostText(g) } },
        };
        (g.kind === 'added' ? ga : gr).push(opt);
      }
    }
    ed.setDecorations(this.types.added, added);
    ed.setDecorations(this.types.removed, removed);
    ed.setDecorations(this.types.wordInsert, wi);
    ed.setDecorations(this.types.wordDelete, wd);
    ed.setDecorations(this.types.ghostAdded, ga);
    ed.setDecorations(this.types.ghostRemoved, gr);
    ed.setDecorations(this.types.stale, stale);
    // The e2e typing figure counts these: a keystroke that touches no hunk sets none again.
    if (hs.length) this.metrics.record('decorationsDrawn', performance.now() - t0, { hunks: hs.length });
  }

  /** onTyping moves the hunks of the edited document with the edit (decorations move by
   *  themselves in VS Code; our anchors are kept in step for CodeLens and commands). Work is
   *  proportional to the hunks below the edit, never a recomputation of the file. */
  private onTyping(e: vscode.TextDocumentChangeEvent): void {
    if (e.contentChanges.length === 0) return;
    const uri = e.document.uri.toString();
    const hs = this.byUri.get(uri);
    if (!hs || hs.length === 0) return;
    const t0 = performance.now();
    let touched = false;
    const changes = e.contentChanges.map((c) => ({ range: c.range, text: c.text }));
    const log = this.edits.get(uri) ?? [];
    log.push({ version: e.document.version, changes });
    // The server answers every edit that reaches into a hunk; a log longer than this means it
    // has not for a while, and older entries cannot matter to a notice still on its way.
    if (log.length > 500) log.splice(0, log.length - 500);
    this.edits.set(uri, log);
    for (const c of changes) {
      const before = hs.map((h) => h.touched);
      followEdit(hs, c);
      if (hs.some((h, i) => h.touched !== before[i])) touched = true;
    }
    if (touched) {
      for (const ed of vscode.window.visibleTextEditors) if (ed.document === e.document) this.draw(ed);
      this.lensEmitter.fire();
    }
    if (hs.some((h) => h.touched)) this.scheduleResync(uri);
    this.typingStats(performance.now() - t0, hs.length);
  }

  /** The handler's time per keystroke, written once a second (count, mean, max) rather than on
   *  each key: the metrics file is written synchronously, and only in the e2e tests. */
  private typingAgg: { n: number; sum: number; max: number; hunks: number } | undefined;
  private typingStats(ms: number, hunks: number): void {
    if (!this.typingAgg) {
      this.typingAgg = { n: 0, sum: 0, max: 0, hunks };
      setTimeout(() => {
        const a = this.typingAgg!;
        this.typingAgg = undefined;
        this.metrics.record('typingHandlerMs', a.sum / a.n, { keys: a.n, max: a.max, hunks: a.hunks });
      }, 1000);
    }
    const a = this.typingAgg;
    a.n++; a.sum += ms; a.max = Math.max(a.max, ms); a.hunks = Math.max(a.hunks, hunks);
  }

  /** agentd.activePending: the active tab (a file, or a diff of it, either side) has something to
   *  decide. The editor title's Accept File / Reject File show on it only, and go as soon as the
   *  file is decided (a when-clause on a list of paths was not re-read by the title). */
  private updateActivePending(): void {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const uris: vscode.Uri[] = [];
    if (input instanceof vscode.TabInputTextDiff) uris.push(input.original, input.modified);
    else if (input instanceof vscode.TabInputText) uris.push(input.uri);
    const paths = new Set(uris.map((u) => u.path));
    let pending = false;
    for (const cs of this.sets.values()) for (const f of cs.files) {
      if (fileOpenUnits(f) > 0 && (paths.has(vscode.Uri.parse(f.uri).path) || (f.oldUri && paths.has(vscode.Uri.parse(f.oldUri).path)))) pending = true;
    }
    this.setContext('agentd.activePending', pending);
  }

  private context = new Map<string, boolean>();

  /** updateContext sets agentd.hunkUnderCursor (the keybindings' condition) and
   *  agentd.fileHasHunks on a selection change; only a value that changed goes to the window. */
  private updateContext(ed: vscode.TextEditor | undefined): void {
    const hs = ed ? this.hunks(ed.document.uri.toString()) : [];
    const h = ed && hs.length ? hunkAt(hs, ed.selection.active.line) : undefined;
    this.setContext('agentd.hunkUnderCursor', !!h);
    this.setContext('agentd.fileHasHunks', hs.length > 0);
  }

  private setContext(key: string, value: boolean): void {
    if (this.context.get(key) === value) return;
    this.context.set(key, value);
    void vscode.commands.executeCommand('setContext', key, value);
  }

  hunkUnderCursor(): ViewHunk | undefined {
    const ed = vscode.window.activeTextEditor;
    if (!ed) return undefined;
    return hunkAt(this.hunks(ed.document.uri.toString()), ed.selection.active.line);
  }

  // CodeLens ---------------------------------------------------------------------------------

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const t0 = performance.now();
    const uri = doc.uri.toString();
    const hs = this.hunks(uri);
    if (hs.length === 0) return [];
    const last = Math.max(0, doc.lineCount - 1);
    const out: vscode.CodeLens[] = [];
    const mk = (l: { line: number; title: string; command: string; args: unknown[] }) => {
      const r = new vscode.Range(Math.min(l.line, last), 0, Math.min(l.line, last), 0);
      out.push(new vscode.CodeLens(r, { title: l.title, command: l.command, arguments: l.args }));
    };
    fileLenses(uri, hs).forEach(mk);
    const win = lensWindow(this.visibleLines(uri));
    if (win) this.lensWindows.set(uri, win); else this.lensWindows.delete(uri);
    for (const h of hs) if (inWindow(h, win)) hunkLenses(h).forEach(mk);
    this.metrics.record('provideCodeLensesMs', performance.now() - t0, { hunks: hs.length, lenses: out.length });
    return out;
  }

  private lensWindows = new Map<string, LineWindow>();

  private visibleLines(uri: string): { start: number; end: number }[] {
    return vscode.window.visibleTextEditors.filter((ed) => ed.document.uri.toString() === uri)
      .flatMap((ed) => ed.visibleRanges.map((r) => ({ start: r.start.line, end: r.end.line })));
  }

  /** onScroll asks for lenses again only when the view nears the edge of the lines that have them. */
  private onScroll(ed: vscode.TextEditor): void {
    const uri = ed.document.uri.toString();
    const win = this.lensWindows.get(uri);
    if (win && lensWindowStale(win, this.visibleLines(uri))) this.lensEmitter.fire();
  }

  // Hover over a hunk: the old and new sides as a diff -------------------------------------

  provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    const h = hunkAt(this.hunks(doc.uri.toString()), pos.line);
    if (!h || !h.oldText && !h.newText) return undefined;
    // Only on the hunk's first changed line, so it does not hide the code the user reads.
    if (pos.line !== h.start + h.focus) return undefined;
    const md = new vscode.MarkdownString();
    md.appendMarkdown(`**agentd** · step \`${h.stepId ?? '?'}\` · ${h.status}${h.touched ? ' (updating)' : ''}\n`);
    md.appendCodeblock(hoverDiff(h), 'diff');
    return new vscode.Hover(md);
  }

  // Virtual documents: the file as proposed, or as in a snapshot ---------------------------

  private snapshotTexts = new Map<string, string>();

  /** proposedUri names the file with every open hunk applied (before mode) or taken out (after). */
  static proposedUri(uri: string): vscode.Uri {
    return vscode.Uri.parse(uri).with({ scheme: DIFF_SCHEME, query: 'side=proposed' });
  }

  setSnapshotText(key: string, text: string): vscode.Uri {
    this.snapshotTexts.set(key, text);
    const u = vscode.Uri.parse(`${DIFF_SCHEME}:/${key}`).with({ query: 'side=snapshot' });
    this.contentEmitter.fire(u);
    return u;
  }

  async provideTextDocumentContent(u: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(u.query);
    if (q.get('side') === 'snapshot') return this.snapshotTexts.get(u.path.replace(/^\//, '')) ?? '';
    // The side of a file that does not exist (before a create, after a delete).
    if (q.get('side') === 'empty') return '';
    const file = u.with({ scheme: 'file', query: '' });
    // A pending move's new path is not there yet: its text is the old path's.
    const move = [...this.sets.values()].flatMap((cs) => cs.files).find((f) => f.uri === file.toString() && f.op === 'move' && f.oldUri);
    const doc = await vscode.workspace.openTextDocument(file).then((d) => d, () =>
      move?.oldUri ? vscode.workspace.openTextDocument(vscode.Uri.parse(move.oldUri)).then((d) => d, () => undefined) : undefined);
    const text = doc ? doc.getText() : '';
    let out = text;
    for (const cs of this.sets.values()) {
      for (const f of cs.files) {
        if (f.uri !== file.toString() || !f.patch) continue;
        const open = new Set(f.hunks.filter((h) => h.status === 'pending').map((h) => h.id));
        out = applyPatchText(out, f.patch, f.hunks.map((h) => open.has(h.id)), cs.review === 'after' ? 'reverse' : 'forward');
      }
    }
    return out;
  }

  /** diffTitle names the two sides the way the diff editor shows them. */
  static diffSides(cs: ChangeSet | undefined, uri: string): { left: vscode.Uri; right: vscode.Uri; title: string } {
    const file = vscode.Uri.parse(uri);
    const name = file.path.split('/').pop() ?? uri;
    const proposed = Review.proposedUri(uri);
    const f = cs?.files.find((x) => x.uri === uri);
    const op = f?.op;
    // A file that is not there on one side (a create before it is accepted, a delete after it
    // is) is an empty document, not an error.
    const empty = file.with({ scheme: DIFF_SCHEME, query: 'side=empty' });
    if (cs?.review === 'after') return { left: op === 'create' ? empty : proposed, right: op === 'delete' ? empty : file, title: `${name} (before agentd ↔ now)` };
    // A move: the file at its old path against what lands at the new one.
    const now = op === 'create' ? empty : op === 'move' && f?.oldUri ? vscode.Uri.parse(f.oldUri) : file;
    return { left: now, right: op === 'delete' ? empty : proposed, title: `${name} (now ↔ proposed by agentd)` };
  }
}
