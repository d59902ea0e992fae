// The chat view: a webview view of agentd's own in its sidebar (it works in VS Code, code-server
// and VSCodium, with or without Copilot). The webview is thin: it draws the state this host posts
// (ChatModel.view) and posts the user's actions back; the host talks to the daemon. The chat is
// the daemon's (agentd/chat/*): the view draws it again from agentd/chat/load on
// agentd/chat/changed and after a window reload. Running a plan, deciding a file, opening its
// diff and undoing a run go through the extension's own commands, so they behave as they do
// from the Plan and Changes views.
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { ChangeSet, Plan } from '../model';
import type { ApprovalAnswer } from '../approvals';
import type * as wire from '../protocol.gen';
import { Chip, ChatLoad, ChatModel, ChatStream, ChatSummary, RunDidChange, RunInfo, guidedWords, restorePreview, stoppedWords, restoredWords } from './model';
import { applyPatchText, normalizeUndo, needsChoice } from '../model';
import { PasteImage, imageChip } from './images';

/** What the view needs of the extension besides the daemon: show a plan in the Plan view (the
 *  plan editor; Run Plan runs the plan shown there). */
export interface ChatHooks { showPlan(plan: Plan): void }

/** The message the webview posts (media/chat.js). */
type FromView =
  | { type: 'ready' }
  | { type: 'send'; mode: 'plan' | 'ask'; text: string; guide?: boolean }
  | { type: 'stop' }
  | { type: 'run' | 'edit' | 'undo'; turn: number }
  | { type: 'revise'; turn: number; feedback: string }
  | { type: 'accept' | 'reject' | 'diff'; uri: string; changeId: string; turn: number }
  | { type: 'new' | 'history' | 'closeHistory' }
  | { type: 'open' | 'rename' | 'delete'; chatId: string }
  | { type: 'chipRemove'; key: string }
  | { type: 'addContext'; hash?: boolean }
  | { type: 'approve'; id: string; optionId: string }
  | { type: 'model' }
  | { type: 'restore' | 'unrewind' | 'editMessage'; turn: number }
  | { type: 'previewDiff'; index: number }
  | { type: 'restoreChoice'; onConflict: '' | 'keep' | 'overwrite' | 'cancel' }
  | { type: 'unrestore' | 'cancelEdit' }
  | { type: 'queueEdit' | 'unqueue' | 'queueNow'; queueId: string }
  | PasteImage;

const CURRENT = 'agentd.chat.current';
/** The restored text of a file as a restore's dry run says it (read-only documents for the diff editor). */
const RESTORE_SCHEME = 'agentd-chat-restore';
const restoredTexts = new Map<string, string>();
let provider: ChatViewProvider | undefined;

/** registerChatView registers the chat view (agentd.chat) and its title commands. */
export function registerChatView(context: vscode.ExtensionContext, hooks: ChatHooks): vscode.Disposable {
  provider = new ChatViewProvider(context, hooks);
  return vscode.Disposable.from(
    vscode.window.registerWebviewViewProvider('agentd.chat', provider, { webviewOptions: { retainContextWhenHidden: false } }),
    vscode.workspace.registerTextDocumentContentProvider(RESTORE_SCHEME, { provideTextDocumentContent: (u) => restoredTexts.get(u.toString()) ?? '' }),
    vscode.commands.registerCommand('agentd.chat.new', () => provider?.newChat()),
    vscode.commands.registerCommand('agentd.chat.history', () => provider?.toggleHistory()),
    vscode.window.onDidChangeActiveTextEditor(() => provider?.contextChanged()),
    vscode.window.onDidChangeTextEditorSelection(() => provider?.contextChanged()),
    vscode.workspace.onDidChangeTextDocument((e) => provider?.documentChanged(e.document.uri)),
    { dispose: () => { provider = undefined; } },
  );
}

/** attachChat gives the chat view a started daemon. Call it before the extension installs its
 *  own notification handlers: the client library keeps one handler per method, so the
 *  extension's agentd/run/didChange handler is wrapped to tell the chat view too. */
export function attachChat(c: LanguageClient): void {
  const on = c.onNotification.bind(c) as (m: string, h: (p: any) => void) => vscode.Disposable;
  const alsoChat: Record<string, (p: any) => void> = { 'agentd/run/didChange': (p: RunDidChange) => provider?.onRun(p) };
  (c as { onNotification: unknown }).onNotification = (type: string | { method: string }, handler: (p: any) => void) => {
    const extra = alsoChat[typeof type === 'string' ? type : type.method];
    return on(typeof type === 'string' ? type : type.method, extra ? (p: any) => { try { extra(p); } catch { /* the view's trouble is not the extension's */ } return handler(p); } : handler);
  };
  on('agentd/run/didChange', alsoChat['agentd/run/didChange']);
  on('agentd/chat/changed', (p: { chatId: string }) => provider?.onChanged(p.chatId));
  on('agentd/chat/stream', (p: ChatStream) => provider?.onStream(p));
  provider?.setClient(c);
}

/** chatApproval shows an approval the daemon asks for inline in the chat turn whose run (or plan
 *  being made) asks, and in a quick pick beside it: an answer in either place answers once and
 *  closes the other; closing the quick pick (Escape) answers what the modal's Escape answers,
 *  reject this time. Undefined when no turn of the chat shown asks: the extension's modal then. */
export function chatApproval(r: wire.ApprovalRequestParams, token?: vscode.CancellationToken): Promise<ApprovalAnswer | undefined> {
  return provider ? provider.approval(r, token) : Promise.resolve(undefined);
}

interface RpcError { code: number; message: string }
const isRpcError = (e: unknown): e is RpcError => !!e && typeof e === 'object' && typeof (e as RpcError).code === 'number';
const errText = (e: unknown) => (e instanceof Error || isRpcError(e) ? (e as { message: string }).message : String(e));

class ChatViewProvider implements vscode.WebviewViewProvider {
  private view?: vscode.WebviewView;
  private client?: LanguageClient;
  private readonly model = new ChatModel((u) => vscode.workspace.asRelativePath(vscode.Uri.parse(u), false));
  private inFlight?: vscode.CancellationTokenSource;
  private loading?: Promise<void>;
  private again = false;
  private sizing?: Promise<void>;
  private sizeAgain = false;
  private seq = 0;
  /** The inline answers of the approvals shown: by the view's id. */
  private readonly answers = new Map<string, (optionId: string) => void>();
  /** What comes after the restore shown is chosen (a branch plans its message then). */
  private restoreThen?: () => Promise<void>;

  constructor(private readonly context: vscode.ExtensionContext, private readonly hooks: ChatHooks) {}

  setClient(c: LanguageClient): void {
    this.client = c;
    void this.refresh();
    void this.loadModel();
    void this.resize();
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.context.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = html(view.webview, media);
    view.webview.onDidReceiveMessage((m: FromView) => void this.act(m).catch((e) => this.say(`agentd: ${errText(e)}`, 'error')));
    view.onDidChangeVisibility(() => { if (view.visible) void this.refresh(); });
    view.onDidDispose(() => { if (this.view === view) this.view = undefined; });
  }

  private req<T>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<T> {
    if (!this.client) return Promise.reject(new Error('the daemon is not running (open a folder, or run "agentd: Restart Daemon")'));
    return token ? this.client.sendRequest<T>(method, params, token) : this.client.sendRequest<T>(method, params);
  }

  private post(): void {
    void this.view?.webview.postMessage({ type: 'state', state: this.model.view() });
  }

  private say(text: string, level: 'info' | 'warn' | 'error' = 'info'): void {
    this.model.notice = { text, level };
    this.post();
  }

  contextChanged(): void {
    if (this.model.setAuto(autoChip())) void this.resize();
  }

  /** documentChanged: a chip of that file counts again (what it sends changed). */
  documentChanged(uri: vscode.Uri): void {
    const u = uri.toString();
    if (this.model.sending().some((c) => c.item.uri === u)) void this.resize();
  }

  /** resize asks the daemon the chips' sizes (agentd/context/size); calls that come while one is
   *  asked make one more after it. */
  resize(): Promise<void> {
    this.post();
    if (this.sizing) { this.sizeAgain = true; return this.sizing; }
    this.sizing = (async () => {
      do {
        this.sizeAgain = false;
        const chips = this.model.sending();
        if (!chips.length || !this.client) break;
        try {
          this.model.sized(chips, await this.req<wire.ContextSizeResult>('agentd/context/size', { items: chips.map((c) => c.item) }));
        } catch (e) {
          for (const c of chips) { c.tokens = undefined; c.error = isRpcError(e) && e.code === -32601 ? 'this agentd cannot count context (no agentd/context/size): update agentd' : errText(e); }
        }
        this.post();
      } while (this.sizeAgain);
    })().finally(() => { this.sizing = undefined; });
    return this.sizing;
  }

  private async loadModel(): Promise<void> {
    const info = await this.req<wire.ModelInfo>('agentd/model/get', {}).catch(() => undefined);
    this.model.model = modelWords(info);
    this.post();
  }

  /** pickModel: the model picker of the header (agentd/model/set; the daemon composes and checks). */
  private async pickModel(): Promise<void> {
    const info = await this.req<wire.ModelInfo>('agentd/model/get', {});
    type Item = vscode.QuickPickItem & { set?: Record<string, unknown>; other?: boolean };
    const items: Item[] = [
      ...info.profiles.map((p) => ({ label: p.name, description: `${p.provider}:${p.model}`, set: { model: p.name } })),
      ...(info.model && !info.profiles.some((p) => p.name === info.model) ? [{ label: info.model, description: 'in use', set: { model: info.model } }] : []),
      { label: 'Other model…', description: 'provider:model, e.g. openai:gpt-4o-mini', other: true },
      ...(info.source === 'command' ? [{ label: 'Back to the configured model', description: 'forget what was picked here', set: { reset: true } }] : []),
    ];
    const pick = await vscode.window.showQuickPick(items, { title: 'agentd: Model of the next request', placeHolder: `now: ${modelWords(info)}${info.from ? ` (${info.from})` : ''}` });
    if (!pick) return;
    let set = pick.set;
    if (pick.other) {
      const v = await vscode.window.showInputBox({ title: 'agentd: Model', prompt: `provider:model (providers: ${info.providers.join(', ')}) or a profile name`, value: info.model ?? '' });
      if (!v?.trim()) return;
      set = { model: v.trim() };
    }
    const now = await this.req<wire.ModelInfo>('agentd/model/set', set);
    this.model.model = modelWords(now);
    void this.resize(); // an image chip's "takes no images" depends on the model
    this.say(now.problem ? `Model: ${modelWords(now)}. ${now.problem}` : `Model: ${modelWords(now)} for the next request.`, now.problem ? 'warn' : 'info');
  }

  /** addContext: the context picker (#, #file:, the + button): the selection, the open editors, a
   *  file's Problems, the git diff (read by the daemon), or any file of the workspace. */
  private async addContext(hash: boolean): Promise<boolean> {
    type Item = vscode.QuickPickItem & { chip?: Chip };
    const rel = (u: vscode.Uri) => vscode.workspace.asRelativePath(u, false);
    const items: Item[] = [];
    const ed = vscode.window.activeTextEditor;
    if (ed && ed.document.uri.scheme === 'file' && !ed.selection.isEmpty) {
      const c = autoChip()!;
      items.push({ label: '#selection', description: c.label, chip: { ...c, auto: false } });
    }
    items.push({ label: '#diff', description: 'the workspace\'s changes against HEAD (git diff, read by agentd)', chip: { key: 'diff', label: 'git diff', item: { kind: 'diff' } } });
    for (const [uri, diags] of vscode.languages.getDiagnostics()) {
      if (uri.scheme !== 'file' || !diags.length) continue;
      const r = rel(uri);
      items.push({ label: `#problems`, description: `${r}: ${diags.length} problem${diags.length === 1 ? '' : 's'}`, chip: { key: `problems:${uri}`, label: `problems: ${r}`, item: { title: `Problems of ${r}`, text: problemsText(r, diags) } } });
    }
    const open = new Map<string, vscode.Uri>();
    for (const g of vscode.window.tabGroups.all) for (const t of g.tabs) if (t.input instanceof vscode.TabInputText && t.input.uri.scheme === 'file') open.set(t.input.uri.toString(), t.input.uri);
    if (open.size) items.push({ label: 'open editors', kind: vscode.QuickPickItemKind.Separator });
    for (const u of open.values()) items.push({ label: `$(file) ${rel(u)}`, description: 'open editor', chip: fileChip(u) });
    items.push({ label: 'files', kind: vscode.QuickPickItemKind.Separator });
    const files = await vscode.workspace.findFiles('**/*', '{**/node_modules/**,**/.git/**}', 5000);
    for (const u of files.sort((a, b) => rel(a).localeCompare(rel(b)))) if (!open.has(u.toString())) items.push({ label: `$(file) ${rel(u)}`, chip: fileChip(u) });
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = 'agentd: Add context to the next message';
    qp.placeholder = 'a file, #selection, #problems, #diff (each shows its size in tokens before you send)';
    qp.items = items;
    qp.matchOnDescription = true;
    // "#file:name" as typed in the input: the name filters the files.
    qp.onDidChangeValue((v) => { const m = /^#?file:/.exec(v); if (m) qp.value = v.slice(m[0].length); });
    void hash;
    const pick = await new Promise<Item | undefined>((resolve) => {
      qp.onDidAccept(() => { resolve(qp.selectedItems[0]); qp.hide(); });
      qp.onDidHide(() => resolve(undefined));
      qp.show();
    });
    qp.dispose();
    if (!pick?.chip) return false;
    if (this.model.addChip(pick.chip)) await this.resize();
    return true;
  }

  /** approval: see chatApproval. */
  async approval(r: wire.ApprovalRequestParams, token?: vscode.CancellationToken): Promise<ApprovalAnswer | undefined> {
    let turn = this.model.approvalTurn(r.runId);
    if (turn === undefined && r.runId !== 'plan' && this.model.chat?.turns.some((t) => t.planId)) {
      // A run the view has heard nothing of yet: its plan says whether a turn of this chat runs it.
      const run = await this.req<RunInfo>('agentd/run/get', { runId: r.runId }).catch(() => undefined);
      const i = run ? this.model.turnOfRun(r.runId, run.planId) : -1;
      if (i >= 0) turn = i;
    }
    if (turn === undefined) return undefined;
    const id = `approval-${++this.seq}`;
    this.model.ask(id, turn, r, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
    const view = this.model.approvals.get(id)!.view;
    this.post();
    return new Promise<ApprovalAnswer>((resolve) => {
      let done = false;
      type Item = vscode.QuickPickItem & { optionId: string };
      const qp = vscode.window.createQuickPick<Item>();
      const reject = view.buttons.find((b) => b.kind === 'reject_once');
      const subs: vscode.Disposable[] = [];
      const finish = (a: ApprovalAnswer) => {
        if (done) return;
        done = true;
        this.answers.delete(id);
        this.model.answered(id);
        subs.forEach((d) => d.dispose());
        qp.hide();
        qp.dispose();
        this.post();
        resolve(a);
      };
      this.answers.set(id, (optionId) => finish({ outcome: 'selected', optionId }));
      qp.title = `${view.message} (turn ${turn! + 1} of the chat)`;
      qp.placeholder = view.detail.split('\n').join(' · ');
      qp.items = view.buttons.map((b) => ({ label: b.title, optionId: b.optionId }));
      qp.ignoreFocusOut = true;
      subs.push(qp.onDidAccept(() => { const p = qp.selectedItems[0]; if (p) finish({ outcome: 'selected', optionId: p.optionId }); }));
      // Closed without an answer (Escape): the safe answer, as the modal's Escape.
      subs.push(qp.onDidHide(() => finish(reject ? { outcome: 'selected', optionId: reject.optionId } : { outcome: 'cancelled' })));
      // The daemon withdrew the question (the run was cancelled): both places close.
      if (token) subs.push(token.onCancellationRequested(() => finish({ outcome: 'cancelled' })));
      qp.show();
    });
  }

  /** refresh loads the current chat again with its turns' plans, runs and change sets; calls
   *  that come while one loads make one more load after it. */
  refresh(): Promise<void> {
    if (this.loading) { this.again = true; return this.loading; }
    this.loading = (async () => {
      do {
        this.again = false;
        await this.loadNow().catch((e) => this.say(`agentd: the chat could not be loaded: ${errText(e)}`, 'error'));
      } while (this.again);
    })().finally(() => { this.loading = undefined; });
    return this.loading;
  }

  private async loadNow(): Promise<void> {
    if (this.model.history) { this.model.history = (await this.req<{ chats: ChatSummary[] }>('agentd/chat/list', {})).chats; this.model.setTitles(this.model.history); }
    const id = this.context.workspaceState.get<string>(CURRENT);
    if (!id || !this.client) { this.post(); return; }
    let chat: ChatLoad;
    try {
      chat = await this.req<ChatLoad>('agentd/chat/load', { chatId: id });
    } catch (e) {
      // A chat deleted (here or in another front end): start a new one.
      if (isRpcError(e) && e.code === -32003) { await this.context.workspaceState.update(CURRENT, undefined); this.model.clear(); this.post(); return; }
      throw e;
    }
    this.model.load(chat);
    if (this.model.needsTitles()) {
      const list = await this.req<{ chats: ChatSummary[] }>('agentd/chat/list', {}).catch(() => undefined);
      if (list) this.model.setTitles(list.chats);
    }
    await Promise.all(chat.turns.map(async (t) => {
      if (t.planId) {
        const p = await this.req<Plan>('agentd/plan/get', { planId: t.planId }).catch(() => undefined);
        if (p) this.model.plans.set(t.planId, p);
      }
      if (t.runId) await this.loadRun(t.runId);
    }));
    this.post();
  }

  /** loadRun fetches a run's steps (with their output) and its change sets. */
  private async loadRun(runId: string): Promise<void> {
    const [r, sets] = await Promise.all([
      this.req<RunInfo>('agentd/run/get', { runId }).catch(() => undefined),
      this.req<ChangeSet[]>('agentd/changes/list', { runId }).catch(() => undefined),
    ]);
    if (r) this.model.setRun(r);
    if (sets) this.model.changes.set(runId, sets);
  }

  onChanged(chatId: string): void {
    if (chatId === this.model.chatId || this.model.history) void this.refresh();
  }

  onRun(p: RunDidChange): void {
    if (!this.model.runEvent(p)) return;
    this.post();
    if (['changeProposed', 'stepFinished', 'stepFailed', 'runFinished', 'stepSkipped'].includes(p.event.type)) {
      void this.loadRun(p.runId).then(() => this.post());
    }
  }

  onStream(p: ChatStream): void {
    if (this.model.streamed(p)) this.post();
  }

  newChat(): void {
    if (this.model.pending) { this.say(this.model.busyReason()!, 'warn'); return; }
    void this.context.workspaceState.update(CURRENT, undefined);
    this.model.clear();
    this.model.notice = undefined;
    this.post();
  }

  async toggleHistory(): Promise<void> {
    if (this.model.history) { this.model.history = undefined; this.post(); return; }
    this.model.history = (await this.req<{ chats: ChatSummary[] }>('agentd/chat/list', {})).chats;
    this.model.setTitles(this.model.history);
    this.post();
  }

  private async open(chatId: string): Promise<void> {
    if (this.model.pending) { this.say(this.model.busyReason()!, 'warn'); return; }
    await this.context.workspaceState.update(CURRENT, chatId);
    this.model.history = undefined;
    this.model.notice = undefined;
    await this.refresh();
  }

  private async act(m: FromView): Promise<void> {
    switch (m.type) {
      case 'ready': this.model.setAuto(autoChip()); void this.resize(); void this.refresh(); void this.loadModel(); return;
      case 'send': return m.guide ? this.guide(m.text) : this.send(m.mode, m.text);
      case 'stop': return this.stop();
      case 'run': case 'edit': {
        const planId = this.model.chat?.turns[m.turn]?.planId;
        if (!planId) return;
        // The Plan view shows the plan; Run Plan runs it as the one-shot command does (the
        // review setting, the workspace's approvals, one run at a time).
        const plan = await this.req<Plan>('agentd/plan/get', { planId });
        this.hooks.showPlan(plan);
        if (m.type === 'run') await vscode.commands.executeCommand('agentd.runPlan');
        else await vscode.commands.executeCommand('agentd.plan.focus');
        return;
      }
      case 'revise': return this.revise(m.turn, m.feedback);
      case 'accept': case 'reject':
        // The file in every open change set (no hunk id: the server decides what is open).
        await vscode.commands.executeCommand(m.type === 'accept' ? 'agentd.acceptFile' : 'agentd.rejectFile', { uri: m.uri });
        await this.refreshRun(m.turn);
        return;
      case 'diff': await vscode.commands.executeCommand('agentd.openDiff', { uri: m.uri, changeId: m.changeId }); return;
      case 'undo': {
        const runId = this.model.chat?.turns[m.turn]?.runId;
        if (!runId) return;
        await vscode.commands.executeCommand('agentd.undoRun', { runId });
        await this.refresh();
        return;
      }
      case 'chipRemove': this.model.removeChip(m.key); this.post(); return;
      case 'pasteImage': if (this.model.addChip(imageChip(m))) await this.resize(); return;
      case 'addContext': {
        const added = await this.addContext(!!m.hash);
        if (m.hash) void this.view?.webview.postMessage({ type: 'hashDone', added });
        return;
      }
      case 'approve': this.answers.get(m.id)?.(m.optionId); return;
      case 'model': return this.pickModel();
      case 'new': this.newChat(); return;
      case 'history': return this.toggleHistory();
      case 'closeHistory': this.model.history = undefined; this.post(); return;
      case 'open': return this.open(m.chatId);
      case 'restore': return this.restoreAsk(m.turn);
      case 'restoreChoice': return this.restoreChoose(m.onConflict);
      case 'previewDiff': return this.previewDiff(m.index);
      case 'queueEdit': case 'unqueue': case 'queueNow': return this.queueAct(m.type, m.queueId);
      case 'unrestore': return this.unrestore();
      case 'unrewind': return this.unrewind(m.turn);
      case 'editMessage': {
        const ed = this.model.edit(m.turn);
        if (!ed) return;
        this.post();
        void this.view?.webview.postMessage({ type: 'setInput', text: ed.request, mode: ed.question ? 'ask' : 'plan' });
        return;
      }
      case 'cancelEdit': this.model.editing = undefined; this.post(); void this.view?.webview.postMessage({ type: 'setInput', text: '' }); return;
      case 'rename': {
        const c = this.model.history?.find((x) => x.chatId === m.chatId) ?? (this.model.chatId === m.chatId ? { title: this.model.chat?.title ?? '' } : undefined);
        const title = await vscode.window.showInputBox({ title: 'agentd: Rename Chat', value: c?.title ?? '', prompt: 'The chat\'s new title', validateInput: (v) => (v.trim() ? undefined : 'a title cannot be empty') });
        if (!title) return;
        await this.req('agentd/chat/rename', { chatId: m.chatId, title });
        await this.refresh();
        return;
      }
      case 'delete': {
        const c = this.model.history?.find((x) => x.chatId === m.chatId);
        const a = await vscode.window.showWarningMessage(`Delete the chat "${c?.title || m.chatId}"?`, { modal: true, detail: 'Its record goes; its plans, runs, snapshots and their undo stay.' }, 'Delete');
        if (a !== 'Delete') return;
        await this.req('agentd/chat/delete', { chatId: m.chatId });
        if (this.model.chatId === m.chatId) { await this.context.workspaceState.update(CURRENT, undefined); this.model.clear(); }
        await this.refresh();
        return;
      }
    }
  }

  private async refreshRun(turn: number): Promise<void> {
    const runId = this.model.chat?.turns[turn]?.runId;
    if (runId) await this.loadRun(runId);
    this.post();
  }

  /** send makes a turn: a plan (agentd/plan/create with the chat's id) or a question
   *  (agentd/chat/ask), with the active editor and its selection as context. A message sent
   *  while a turn runs is refused with the reason. */
  private async send(mode: 'plan' | 'ask', text: string): Promise<void> {
    const request = text.trim();
    if (!request) return;
    const busy = this.model.busyReason();
    if (busy && mode === 'plan' && !this.model.editing && this.model.queues()) return this.enqueue(request);
    if (busy) {
      void this.view?.webview.postMessage({ type: 'setInput', text });
      this.say(`Not sent: ${busy}${mode === 'ask' && this.model.queues() ? ' (a question is not queued: send it as Plan to queue it, or wait)' : ''}`, 'warn');
      return;
    }
    if (this.model.editing && this.model.editing.chatId === this.model.chatId) return this.branch(mode, request);
    if (!this.client) { this.say('agentd: the daemon is not running (open a folder, or run "agentd: Restart Daemon").', 'error'); return; }
    let chatId = this.model.chatId;
    if (!chatId) {
      const made = await this.req<ChatSummary>('agentd/chat/new', {});
      chatId = made.chatId;
      await this.context.workspaceState.update(CURRENT, chatId);
      this.model.load({ chatId, title: made.title, turns: [] });
    }
    const chips = this.model.sending();
    const bad = chips.find((c) => c.error);
    if (bad) { this.say(`Not sent: the context "${bad.label}" cannot be sent (${bad.error}). Remove it (×) and send again.`, 'warn'); return; }
    const context = chips.length ? { items: chips.map((c) => c.item) } : undefined;
    this.model.sent();
    this.model.startPending(mode, request);
    this.post();
    const cts = new vscode.CancellationTokenSource();
    this.inFlight = cts;
    try {
      if (mode === 'plan') await this.req<Plan>('agentd/plan/create', { request, chatId, context }, cts.token);
      else await this.req('agentd/chat/ask', { chatId, question: request, context }, cts.token);
    } catch (e) {
      if (isRpcError(e) && e.code === -32800) this.model.notice = { text: mode === 'plan' ? 'Stopped: no plan was made.' : 'Stopped: the answer so far is kept in the turn.', level: 'info' };
      else if (isRpcError(e) && e.code === -32601) this.model.notice = { text: 'This agentd cannot answer questions yet (it has no agentd/chat/ask): update agentd, or send the message as Plan.', level: 'error' };
      else this.model.notice = { text: `agentd: ${mode === 'plan' ? 'no plan was made' : 'no answer'}: ${errText(e)}`, level: 'error' };
    } finally {
      this.inFlight = undefined;
      cts.dispose();
      this.model.endPending();
    }
    await this.refresh();
  }

  /** stop: Stop. A request of this view in flight is cancelled ($/cancelRequest); a turn no
   *  request of this view owns (planned from the queue, or a run) is stopped in the daemon
   *  (agentd/chat/stop), which decides what stopping it means. */
  private async stop(): Promise<void> {
    if (this.inFlight) { this.inFlight.cancel(); return; }
    const chatId = this.model.chatId;
    if (!chatId) return;
    try {
      const r = await this.req<wire.ChatStopResult>('agentd/chat/stop', { chatId });
      this.say(stoppedWords(r.stopped));
    } catch (e) {
      if (isRpcError(e) && (e.code === -32601 || /not built/.test(e.message))) {
        this.say('This agentd cannot stop a turn it runs by itself (no agentd/chat/stop, not built yet): update agentd; a run can be cancelled from the Plan view.', 'warn');
        return;
      }
      this.say(`agentd: not stopped: ${errText(e)}`, 'error');
      return;
    }
    await this.refresh();
  }

  /** guide: the message sent as guidance to the going turn (agentd/chat/queue, when
   *  "guidance"). The daemon delivers it to the running turn's agent steps, or says why not and
   *  queues it as "after"; both are shown as it says them. */
  private async guide(text: string): Promise<void> {
    const request = text.trim();
    const chatId = this.model.chatId;
    if (!request || !chatId) return;
    const chips = this.model.sending();
    const bad = chips.find((c) => c.error);
    if (bad) { this.say(`Not sent: the context "${bad.label}" cannot be sent (${bad.error}). Remove it (×) and send again.`, 'warn'); void this.view?.webview.postMessage({ type: 'setInput', text }); return; }
    const context = chips.length ? { items: chips.map((c) => c.item) } : undefined;
    let r: wire.ChatQueueResult;
    try {
      r = await this.req<wire.ChatQueueResult>('agentd/chat/queue', { chatId, request, when: 'guidance', ...(context ? { context } : {}) });
    } catch (e) {
      void this.view?.webview.postMessage({ type: 'setInput', text });
      if (isRpcError(e) && (e.code === -32601 || e.code === -32602 || /not built/.test(e.message))) {
        this.say(`Not sent: this agentd cannot take guidance yet (${errText(e)}): update agentd, or Queue the message.`, 'warn');
        return;
      }
      this.say(`agentd: the guidance was not sent: ${errText(e)}`, 'error');
      return;
    }
    this.model.sent();
    const w = guidedWords(r);
    this.say(w.text, w.level);
    await this.refresh();
  }

  /** enqueue: a message sent while a turn is going is queued in the core (agentd/chat/queue),
   *  planned when that turn ends; a daemon without the queue refuses it, with the reason. */
  private async enqueue(request: string, when: 'after' | 'now' = 'after', context?: unknown): Promise<void> {
    const chatId = this.model.chatId!;
    let ctx = context;
    if (ctx === undefined) {
      const chips = this.model.sending();
      const bad = chips.find((c) => c.error);
      if (bad) { this.say(`Not queued: the context "${bad.label}" cannot be sent (${bad.error}). Remove it (×) and send again.`, 'warn'); void this.view?.webview.postMessage({ type: 'setInput', text: request }); return; }
      ctx = chips.length ? { items: chips.map((c) => c.item) } : undefined;
    }
    try {
      await this.req('agentd/chat/queue', { chatId, request, when, ...(ctx ? { context: ctx } : {}) });
    } catch (e) {
      if (isRpcError(e) && (e.code === -32601 || /not built/.test(e.message))) {
        this.model.canQueue = false;
        // The text back in the input first, then the reason: it stays for later.
        void this.view?.webview.postMessage({ type: 'setInput', text: request });
        this.say(`Not sent: ${this.model.busyReason() ?? errText(e)}`, 'warn');
        return;
      }
      throw e;
    }
    if (context === undefined) this.model.sent();
    this.say(when === 'now' ? 'Sent now: the going turn is stopped and this message planned next.' : 'Queued: planned when the going turn ends (edit, remove or send it now below).');
    await this.refresh();
  }

  private async queueAct(type: 'queueEdit' | 'unqueue' | 'queueNow', queueId: string): Promise<void> {
    const chatId = this.model.chatId;
    const q = this.model.chat?.queued?.find((x) => x.queueId === queueId);
    if (!chatId || !q) return;
    if (type === 'queueEdit') {
      const request = await vscode.window.showInputBox({ title: 'agentd: Edit the queued message', value: q.request, prompt: 'Planned when the going turn ends', validateInput: (v) => (v.trim() ? undefined : 'a message cannot be empty') });
      if (!request?.trim()) return;
      await this.req('agentd/chat/queue/edit', { chatId, queueId, request: request.trim() });
    } else {
      await this.req('agentd/chat/unqueue', { chatId, queueId });
      // Send now: the same message queued again to go next, the going turn stopped.
      if (type === 'queueNow') return this.enqueue(q.request, 'now', q.context ?? null);
      this.say('Taken out of the queue: it will not be planned.');
    }
    await this.refresh();
  }

  /** restoreAsk: "Restore to before this turn": what (files, conversation or both), then the
   *  dry run shown in the turn before anything changes. */
  private async restoreAsk(turn: number): Promise<void> {
    const chatId = this.model.chatId;
    if (!chatId) return;
    const n = turn + 1;
    type Item = vscode.QuickPickItem & { what: wire.ChatRestoreWhat };
    const items: Item[] = [
      { label: 'Files and conversation', what: 'both', detail: `take back what turn ${n} and later wrote, and do not tell the model those turns` },
      { label: 'Files only', what: 'files', detail: `take back what turn ${n} and later wrote (your own lines stay)` },
      { label: 'Conversation only', what: 'conversation', detail: `do not tell the model turn ${n} and later (kept here; files stay)` },
    ];
    const pick = await vscode.window.showQuickPick(items, { title: `agentd: Restore to before turn ${n}: what?`, placeHolder: 'a dry run shows what changes before anything does' });
    if (pick) await this.restoreDry(chatId, turn, pick.what);
  }

  private async restoreDry(chatId: string, turn: number, what: wire.ChatRestoreWhat, then?: () => Promise<void>): Promise<void> {
    const dry = await this.req<wire.ChatRestoreResult>('agentd/chat/restore', { chatId, turn, what, dryRun: true });
    this.model.preview = restorePreview(chatId, turn, what, dry, this.model.rel);
    this.restoreThen = then;
    this.model.notice = undefined;
    this.post();
  }

  /** previewDiff opens a file of the dry run shown in VS Code's diff editor: the file now against
   *  what the restore would write (the daemon's diff applied to it), read-only. */
  private async previewDiff(index: number): Promise<void> {
    const d = this.model.preview?.diffs[index];
    if (!d) return;
    const file = vscode.Uri.parse(d.uri);
    const now = await vscode.workspace.openTextDocument(file).then((doc) => doc.getText(), () => '');
    const right = vscode.Uri.from({ scheme: RESTORE_SCHEME, path: `/${d.path}`, query: `n=${++this.seq}` });
    restoredTexts.set(right.toString(), applyPatchText(now, d.diff, undefined, 'forward'));
    const name = d.path.split('/').pop();
    await vscode.commands.executeCommand('vscode.diff', file, right, `${name} (now ↔ ${d.conflict ? 'overwritten by the restore' : 'after the restore'})`, { preview: true });
  }

  /** restoreChoose: the user's answer to the dry run shown: restore as shown, keep my lines,
   *  overwrite, or cancel. A conflict new since the dry run shows it again. */
  private async restoreChoose(onConflict: '' | 'keep' | 'overwrite' | 'cancel'): Promise<void> {
    const pv = this.model.preview;
    if (!pv) return;
    const then = this.restoreThen;
    this.model.preview = undefined;
    this.restoreThen = undefined;
    if (onConflict === 'cancel') {
      this.say('Nothing restored.');
      await then?.();
      return;
    }
    const res = await this.req<wire.ChatRestoreResult>('agentd/chat/restore', { chatId: pv.chatId, turn: pv.turn, what: pv.what, ...(onConflict ? { onConflict } : {}) });
    if (!res.applied) {
      await this.restoreDry(pv.chatId, pv.turn, pv.what, then);
      this.say('Not restored: your files changed since the dry run; it is shown again.', 'warn');
      return;
    }
    const w = restoredWords(pv.turn, res, this.model.rel);
    this.model.restored = w.back.files || w.back.conversation ? { chatId: pv.chatId, turn: pv.turn, what: pv.what, ...w.back } : undefined;
    this.say(w.text, w.warn ? 'warn' : 'info');
    await this.refresh();
    await then?.();
  }

  /** unrestore takes the last restore back: the files through its wayBack (agentd/undo/restore;
   *  a conflict asks keep my lines / overwrite / cancel), the conversation through
   *  agentd/chat/unrewind. */
  private async unrestore(): Promise<void> {
    const r = this.model.restored;
    if (!r) return;
    if (r.files) {
      let res = normalizeUndo(await this.req(r.files.method, r.files.params));
      if (needsChoice(res)) {
        const files = res.conflicts.map((c) => (/^file:/.test(c.path) ? this.model.rel(c.path) : c.path)).join(', ');
        const keep = 'Keep my lines there, bring back the rest';
        const over = 'Overwrite my lines';
        const a = await vscode.window.showWarningMessage(`agentd: bringing back what the restore took conflicts with your edits in ${files}. Nothing has been changed yet.`, { modal: true }, keep, over);
        if (!a) { this.say('The restore stays: nothing changed.'); return; }
        res = normalizeUndo(await this.req(r.files.method, { ...r.files.params, onConflict: a === keep ? 'keep' : 'overwrite' }));
      }
      if (!res.applied) { this.say('The restore stays: its files could not be brought back.', 'warn'); return; }
      r.files = undefined;
    }
    if (r.conversation) {
      await this.req(r.conversation.method, r.conversation.params);
      r.conversation = undefined;
    }
    this.model.restored = undefined;
    this.say(`The restore to before turn ${r.turn + 1} is taken back.`);
    await this.refresh();
  }

  /** unrewind: "Bring back" on a rewound turn (agentd/chat/unrewind with its rewindId). */
  private async unrewind(turn: number): Promise<void> {
    const t = this.model.chat?.turns[turn];
    if (!t?.rewindId || !this.model.chatId) return;
    const res = await this.req<wire.ChatUnrewindResult>('agentd/chat/unrewind', { chatId: this.model.chatId, rewindId: t.rewindId });
    const r = this.model.restored;
    if (r?.conversation && (r.conversation.params as { rewindId?: string }).rewindId === t.rewindId) {
      r.conversation = undefined;
      if (!r.files) this.model.restored = undefined;
    }
    this.say(`Turn${res.turns.length === 1 ? '' : 's'} ${res.turns.map((x) => x + 1).join(', ')} told to the model again.`);
    await this.refresh();
  }

  /** branch sends an edited message: agentd/chat/fork at its turn, the view switches to the new
   *  chat, offers the files back to before that turn when later turns wrote (restore "files" on
   *  the original, dry run first), then plans (or asks) the message in the new chat. */
  private async branch(mode: 'plan' | 'ask', request: string): Promise<void> {
    const ed = this.model.editing!;
    const hadRuns = this.model.runsFrom(ed.turn);
    if (this.model.chat) this.model.titles.set(ed.chatId, this.model.chat.title);
    const res = await this.req<wire.ChatForkResult>('agentd/chat/fork', { chatId: ed.chatId, turn: ed.turn, request });
    this.model.editing = undefined;
    this.model.titles.set(res.chatId, res.title);
    await this.context.workspaceState.update(CURRENT, res.chatId);
    await this.refresh();
    this.say(`Branched at turn ${ed.turn + 1}: this is the new chat; the original stays (the link above goes back).`);
    const go = () => this.send(mode, request);
    if (!hadRuns) return go();
    type Item = vscode.QuickPickItem & { files: boolean };
    const pick = await vscode.window.showQuickPick<Item>([
      { label: 'Keep the files as they are now', files: false },
      { label: `Restore the files to before turn ${ed.turn + 1} too`, detail: 'a dry run shows the diff first', files: true },
    ], { title: 'agentd: the branch starts with the files as they are; restore them to before that turn?', ignoreFocusOut: true });
    if (pick?.files) {
      await this.restoreDry(ed.chatId, ed.turn, 'files', go);
      this.model.preview?.lines.push(`Then your edited message is ${mode === 'ask' ? 'asked' : 'planned'} in this branch (Cancel keeps the files as they are).`);
      this.post();
      return;
    }
    return go();
  }

  /** revise makes the turn's plan again with the user's words (agentd/plan/regenerate). */
  private async revise(turn: number, feedback: string): Promise<void> {
    const planId = this.model.chat?.turns[turn]?.planId;
    if (!planId || !feedback.trim()) return;
    const busy = this.model.busyReason();
    if (busy) { this.say(`Not sent: ${busy}`, 'warn'); return; }
    this.model.startPending('revise', feedback, turn);
    this.post();
    const cts = new vscode.CancellationTokenSource();
    this.inFlight = cts;
    try {
      await this.req<Plan>('agentd/plan/regenerate', { planId, feedback: feedback.trim() }, cts.token);
    } catch (e) {
      this.model.notice = isRpcError(e) && e.code === -32800 ? { text: 'Stopped: the plan stays as it was.', level: 'info' } : { text: `agentd: the plan was not revised: ${errText(e)}`, level: 'error' };
    } finally {
      this.inFlight = undefined;
      cts.dispose();
      this.model.endPending();
    }
    await this.refresh();
  }
}

/** fileChip: a whole file as context. */
function fileChip(u: vscode.Uri): Chip {
  return { key: `file:${u.toString()}`, label: vscode.workspace.asRelativePath(u, false), item: { uri: u.toString() } };
}

/** autoChip: the active editor as context (its selection when there is one), as the chat sends it
 *  unless the user removes it. */
function autoChip(): Chip | undefined {
  const ed = vscode.window.activeTextEditor;
  if (!ed || ed.document.uri.scheme !== 'file') return undefined;
  const s = ed.selection;
  if (s.isEmpty) return { ...fileChip(ed.document.uri), auto: true };
  const uri = ed.document.uri.toString();
  const rel = vscode.workspace.asRelativePath(ed.document.uri, false);
  const range = { start: { line: s.start.line, character: s.start.character }, end: { line: s.end.line, character: s.end.character } };
  const last = s.end.character === 0 && s.end.line > s.start.line ? s.end.line : s.end.line + 1;
  return { key: `sel:${uri}:${s.start.line}:${s.start.character}-${s.end.line}:${s.end.character}`, label: `${rel}:${s.start.line + 1}-${last}`, item: { uri, range }, auto: true };
}

/** problemsText: a file's Problems (vscode.languages.getDiagnostics) in words, one a line. */
function problemsText(rel: string, diags: readonly vscode.Diagnostic[]): string {
  const sev = ['error', 'warning', 'info', 'hint'];
  return diags.map((d) => `${rel}:${d.range.start.line + 1}:${d.range.start.character + 1}: ${sev[d.severity] ?? 'problem'}: ${d.message}${d.source ? ` (${d.source})` : ''}`).join('\n');
}

/** modelWords: the model as the header says it. */
function modelWords(info?: wire.ModelInfo): string {
  if (!info) return 'model: ?';
  if (!info.configured) return 'no model';
  return info.profile ?? info.model ?? [info.provider, info.name].filter(Boolean).join(':');
}

function html(webview: vscode.Webview, media: vscode.Uri): string {
  const nonce = Array.from({ length: 32 }, () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(Math.random() * 62)]).join('');
  const css = webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css'));
  const js = webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.js'));
  const images = webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat-images.js'));
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}'; img-src ${webview.cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css}"><title>agentd chat</title></head>
<body>
<header id="head"><span id="title" title="the chat's title"></span>
<button id="model" class="link" title="The model of the next request (agentd/model/set)"></button>
<button id="history" class="link" title="Earlier chats of this workspace">History</button><button id="new" class="link" title="Start a new chat">New chat</button></header>
<div id="branchOf" class="muted" hidden></div>
<div id="branches" class="muted" hidden></div>
<section id="historyList" hidden></section>
<main id="turns" aria-live="polite"></main>
<div id="preview" hidden></div>
<div id="notice" role="status" hidden></div>
<footer id="input">
<div id="condensed" class="muted" hidden></div>
<div id="editing" hidden><span id="editingText"></span><button id="cancelEdit" class="link" title="Stop editing: the input sends a new message again">Cancel</button></div>
<div id="chips" aria-label="Context of the next message"></div>
<textarea id="text" rows="2" placeholder="Ask agentd to change something (Enter sends, Shift+Enter: new line)" aria-label="Message"></textarea>
<div id="row"><span id="modes" role="radiogroup" aria-label="Mode"><button id="modePlan" role="radio" aria-checked="true" title="Make a plan for this request, to read and run">Plan</button><button id="modeAsk" role="radio" aria-checked="false" title="Ask a question: an answer in words, no plan, nothing changed">Ask</button></span>
<button id="addContext" title="Add context: a file, the selection, a file's Problems, the git diff (or type #)">+ Context</button><span id="context"></span><button id="stop" hidden>Stop</button><button id="guide" hidden title="Guide: send this to the going turn's agent as guidance (queued instead when nothing can take it)">Guide</button><button id="send" class="primary">Send</button></div>
</footer>
<script nonce="${nonce}" src="${js}"></script>
<script nonce="${nonce}" src="${images}"></script>
</body></html>`;
}
