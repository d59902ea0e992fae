// The daemon: finding its binary, starting `agentd serve` through vscode-languageclient,
// restarting it when its settings change, and saying why it is not there. Nothing here draws the
// review or the plan: what a (re)started or dead daemon means for them is the hooks' business
// (DaemonHooks, set by activate).
import * as vscode from 'vscode';
import { ChildProcess, spawn } from 'node:child_process';
// Types only: the client library is loaded when the daemon starts (start), after the daemon's
// process is spawned, so that neither waits for the other.
import type { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { RestartGate, keyEnv, logLine, modelSpec } from './model';
import { DaemonDown, errText } from './errors';
import { Down, downFromStart, findBinary, missingBinaryMessage, protocolProblem, serverCommand } from './binary';


export const SECRET_KEY = 'agentd.apiKey';

/** The API key from the editor's secret storage. A secret store that does not answer (a locked
 *  keychain, a browser's storage still opening) must not leave a command silently waiting: after
 *  3 s it is read as no key, and the output channel says so. */
export async function readKey(context: vscode.ExtensionContext, out?: vscode.LogOutputChannel): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => { out?.warn('the secret storage did not answer in 3 s: going on without the API key'); resolve(undefined); }, 3000);
  });
  try {
    return await Promise.race([context.secrets.get(SECRET_KEY).then((k) => k, () => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

const settings = () => vscode.workspace.getConfiguration('agentd');

/** The binary agentd.path (else PATH, else the one bundled in the .vsix) names, if any. */
export function binaryNow(extensionPath: string): string | undefined {
  return findBinary(settings().get<string>('path', ''), process.env.PATH ?? '', extensionPath);
}

/** The "no binary" state: what is missing and where to set it. */
export function noBinary(): Down {
  return { message: missingBinaryMessage(settings().get<string>('path', '')) + ' Set agentd.path to the agentd binary, or put agentd on PATH.', fix: 'setting' };
}

/** What the rest of the extension does when the daemon comes and goes. */
export interface DaemonHooks {
  /** A client started: install the handlers of its notifications and requests. */
  attach(c: LanguageClient): void;
  /** A restart stops the daemon: what it drew goes. */
  reset(): void;
  /** A restart started it again: fetch what it has. */
  restarted(): Promise<void>;
  /** It ended without being asked: what it drew goes, runs stop. */
  died(): void;
}

/** The daemon settings whose change restarts it. */
const RESTART_ON = ['agentd.path', 'agentd.model', 'agentd.provider', 'agentd.modelBaseUrl', 'agentd.logLevel', 'agentd.allowBroadWorkspace'];

export class Daemon {
  client?: LanguageClient;
  lc?: typeof import('vscode-languageclient/node');
  /** Why there is no daemon (no binary, it died, it did not start): said again by every command
   *  that needs it, with the fix. */
  down?: Down;
  /** Where the time to a started daemon goes (the e2e figures): loading the client library, and
   *  from start to the answer of initialize. */
  readonly startTimes: { libMs?: number; startMs?: number } = {};
  /** The settings the daemon was started with: a change event restarts it once (RestartGate). */
  private readonly gate = new RestartGate(RestartGate.key((k) => settings().get(k)));
  /** The daemon's process, spawned here (its stderr is read here, line by line). */
  private proc?: ChildProcess;
  private stopping = false;
  /** The restart under way: a restart asked for meanwhile waits for it, never runs beside it. */
  private restarting?: Promise<void>;
  /** Set by activate once the views exist; a daemon that dies before reports nothing. */
  hooks?: DaemonHooks;

  constructor(private readonly context: vscode.ExtensionContext, private readonly out: vscode.LogOutputChannel) {}

  /** A request to the daemon; without one, a DaemonDown saying why and what to do. */
  req<T>(method: string, params: unknown): Promise<T> {
    if (!this.client) {
      const d = this.down;
      return Promise.reject(d ? new DaemonDown(d.message, d.fix) : new DaemonDown('agentd: the daemon is not running (open a folder, or run "agentd: Restart Daemon").', 'restart'));
    }
    return this.client.sendRequest<T>(method, params);
  }

  /** Throws the DaemonDown of a missing daemon (for commands that need it before asking anything). */
  need(): void {
    if (!this.client) throw new DaemonDown(this.down?.message ?? 'agentd: the daemon is not running.', this.down?.fix ?? 'restart');
  }

  /** reportDown says why there is no daemon, with the fix as a button. */
  reportDown(): void {
    const d = this.down;
    if (!d) return;
    const actions = d.fix === 'setting' ? ['Open Setting', 'Show Log'] : ['Restart agentd', 'Show Log'];
    void vscode.window.showErrorMessage(d.message, ...actions).then((a) => {
      if (a === 'Open Setting') void vscode.commands.executeCommand('workbench.action.openSettings', d.setting ?? 'agentd.path');
      else if (a === 'Restart agentd') void vscode.commands.executeCommand('agentd.restart');
      else if (a === 'Show Log') this.out.show(true);
    });
  }

  /** The daemon did not start: why, said once with the fix. */
  failed(e: unknown): void {
    this.client = undefined;
    // A refused protocol version is its own whole message (binary.ts, protocolProblem).
    this.down = downFromStart(errText(e));
    this.out.error(this.down.message);
    this.reportDown();
  }

  async stop(): Promise<void> {
    const c = this.client, p = this.proc;
    this.client = undefined;
    // Not the current daemon any more: its exit, whenever it comes, is not a death to report.
    this.proc = undefined;
    this.stopping = true;
    try {
      await c?.stop(2000).catch(() => undefined);
    } finally {
      this.stopping = false;
    }
    if (p && p.exitCode === null && p.signalCode === null) p.kill();
  }

  /** restart stops the daemon (if any) and starts it again with the current settings:
   *  agentd.path, the model, the key and the log level apply without a window reload. */
  restart(why: string): Promise<void> {
    const next = (this.restarting ?? Promise.resolve()).then(() => this.restartNow(why));
    this.restarting = next.finally(() => { if (this.restarting === next) this.restarting = undefined; });
    return next;
  }

  private async restartNow(why: string): Promise<void> {
    this.out.info(`restarting the daemon: ${why}`);
    this.gate.started(RestartGate.key((k) => settings().get(k)));
    await this.stop();
    this.hooks?.reset();
    const folder = vscode.workspace.workspaceFolders?.[0];
    const bin = binaryNow(this.context.extensionPath);
    if (!bin) {
      this.down = noBinary();
      this.out.error(this.down.message);
      this.reportDown();
      return;
    }
    if (!folder) return;
    try {
      const key = await readKey(this.context, this.out);
      const c = await this.start(bin, folder.uri.fsPath, key);
      this.down = undefined;
      this.hooks?.attach(c);
      this.out.info(`daemon started (${bin})`);
      await this.hooks?.restarted();
      await this.sendPolicy();
    } catch (e) {
      this.failed(e);
    }
  }

  /** onSettings applies a settings change at once: the binary, model, key and log level restart
   *  the daemon; approval settings go to the daemon's policy (agentd/policy/set). */
  async onSettings(e: vscode.ConfigurationChangeEvent): Promise<void> {
    const restart = RESTART_ON.filter((k) => e.affectsConfiguration(k));
    // Once per change of the values: an event that brings the values the daemon runs with
    // already (VS Code may send two for one edit) restarts nothing.
    if (restart.length && this.gate.changed(RestartGate.key((k) => settings().get(k)))) {
      await this.restart(`${restart.join(', ')} changed`);
      return;
    }
    if (restart.length) { this.out.debug(`${restart.join(', ')}: the daemon already runs with these values`); return; }
    if (e.affectsConfiguration('agentd.approval') && this.client) await this.sendPolicy();
  }

  /** sendPolicy sends the editor's approval settings that the user set (not the defaults) to the
   *  daemon's policy, which keeps it for the workspace. */
  async sendPolicy(): Promise<void> {
    const p = approvalPolicy(settings());
    if (!Object.keys(p).length || !this.client) return;
    try {
      await this.req('agentd/policy/set', p);
      this.out.info(`approval policy sent: ${JSON.stringify(p)}`);
    } catch (e) {
      this.out.error(`agentd/policy/set: ${errText(e)}`);
      void vscode.window.showErrorMessage(`agentd: the approval settings were refused: ${errText(e)}`);
    }
  }

  async start(bin: string, cwd: string, apiKey?: string): Promise<LanguageClient> {
    const cfg = settings();
    const out = this.out;
    const cmd = serverCommand(bin, cfg.get<string>('logLevel', 'info'), process.env.AGENTD_STATE_DIR);
    const model = modelSpec(cfg.get<string>('model', ''), cfg.get<string>('provider', ''), cfg.get<string>('modelBaseUrl', ''));
    // The key from VS Code's secret storage goes to the daemon in its environment, under the
    // variable its provider reads; never in a file or a setting.
    const env = { ...process.env };
    if (apiKey) env[keyEnv(model?.provider ?? modelSpec(env.AGENTD_MODEL ?? '', '', '')?.provider ?? 'openai')] = apiKey;
    // The daemon's process starts first, then the client library loads while it starts. Over
    // stdio, with no `--stdio` argument (serverCommand). Its stderr (log/slog lines) is read here
    // so the output channel shows each line at its level.
    const p = spawn(cmd.command, cmd.args, { cwd, stdio: 'pipe', env });
    this.proc = p;
    const spawnError = new Promise<never>((_, rej) => p.once('error', (e) => rej(new Error(`cannot start ${bin}: ${e.message}`))));
    spawnError.catch(() => undefined);
    let buf = '';
    p.stderr?.setEncoding('utf8');
    p.stderr?.on('data', (d: string) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = logLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
        out[l.level](l.text);
      }
    });
    const t0 = performance.now();
    const lc = this.lc = await import('vscode-languageclient/node');
    this.startTimes.libMs = performance.now() - t0;
    let used = false;
    const serverOptions: ServerOptions = async () => {
      if (used) throw new Error('the daemon is restarted by the extension, not by the client library');
      used = true;
      return { reader: p.stdout!, writer: p.stdin!, detached: false };
    };
    const init: Record<string, unknown> = {
      review: cfg.get<string>('review', 'before'),
      // No approval here: the policy is the workspace's, kept by the daemon; the editor's settings
      // go through agentd/policy/set (sendPolicy) when set and when they change.
      // hunksFollowEdits: Review moves hunks with the typing itself, so the server stays silent
      // about rebases that only moved them (docs/protocol.md, agentd/changes/didChange).
      clientFeatures: { approvalRequest: true, changeReview: true, hunksFollowEdits: true },
    };
    if (model) init.model = model;
    // A workspace that is your home folder or / is refused unless confirmed (the daemon's rule).
    if (cfg.get<boolean>('allowBroadWorkspace', false)) init.allowBroadWorkspace = true;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: out,
      revealOutputChannelOn: lc.RevealOutputChannelOn.Never,
      initializationOptions: init,
      // The extension reports a dead daemon itself (every command says so, with Restart) and
      // clears what it drew; the library does not restart it behind the user's back.
      errorHandler: {
        error: () => ({ action: lc.ErrorAction.Continue, handled: true }),
        closed: () => ({ action: lc.CloseAction.DoNotRestart, handled: true }),
      },
      // A refused initialize is said once, by the extension (reportDown, with the fix as a
      // button), not also by the library's own toasts: no retry offered, and its "couldn't create
      // connection" notice goes to the log only (below).
      initializationFailedHandler: () => false,
    };
    const c = new lc.LanguageClient('agentd', 'agentd', serverOptions, clientOptions);
    const libError = c.error.bind(c);
    c.error = (message: string, data?: unknown, show?: boolean | 'force') => libError(message, data, show === 'force' ? false : show);
    this.client = c;
    p.once('exit', (code, signal) => { if (this.proc === p) this.exited(code, signal); });
    this.context.subscriptions.push({ dispose: () => { void c.stop().catch(() => undefined); if (p.exitCode === null) p.kill(); } });
    const t1 = performance.now();
    try {
      await Promise.race([c.start(), spawnError]);
    } catch (e) {
      // A refused initialize (the daemon's rules on where it works) leaves no daemon behind; its
      // exit is not a death to report.
      if (this.proc === p) this.proc = undefined;
      this.client = undefined;
      if (p.exitCode === null) p.kill();
      throw e;
    }
    this.startTimes.startMs = performance.now() - t1;
    // A daemon of another protocol version would misread requests: refuse it, saying which
    // versions and what to do.
    const problem = protocolProblem(c.initializeResult?.capabilities?.experimental?.agentd?.protocolVersion, bin);
    if (problem) {
      await c.stop().catch(() => undefined);
      this.client = undefined;
      throw new Error(problem);
    }
    return c;
  }

  /** The daemon ended without being asked. What it drew is taken away (nobody can decide those
   *  hunks now), and the user is told, with Restart. */
  private exited(code: number | null, signal: NodeJS.Signals | null): void {
    this.proc = undefined;
    if (this.stopping || !this.hooks) return;
    this.client = undefined;
    this.down = { message: `agentd: the daemon stopped (${signal ? `signal ${signal}` : `exit code ${code}`}); its pending changes are no longer shown. Restart it to go on (pending changes come back from its state).`, fix: 'restart' };
    this.out.error(this.down.message);
    this.hooks.died();
    this.reportDown();
  }
}

/** approvalPolicy is the approval settings the user set (workspace, folder or user), not the
 *  defaults: the daemon's policy is the workspace's, and a default must not override it. */
function approvalPolicy(cfg: vscode.WorkspaceConfiguration): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ['write', 'delete', 'command', 'git', 'requireApprovalForRisk', 'allowCommands', 'denyCommands']) {
    const i = cfg.inspect(`approval.${k}`);
    const v = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
    if (v !== undefined && v !== '') out[k] = v;
  }
  return out;
}

/** The daemon's commands: restart it, set the API key it is started with (it restarts), its log. */
export function registerDaemonCommands(d: Daemon, context: vscode.ExtensionContext, out: vscode.LogOutputChannel, reg: (id: string, f: (...a: any[]) => unknown) => void): void {
  reg('agentd.restart', () => d.restart('asked for'));
  reg('agentd.setApiKey', async () => {
    const cfg = settings();
    const spec = modelSpec(cfg.get<string>('model', '') || process.env.AGENTD_MODEL || '', cfg.get<string>('provider', ''), '');
    const v = await vscode.window.showInputBox({ title: 'agentd: Set API Key', prompt: `The API key for ${spec?.provider ?? 'the model'}'s server, kept in VS Code's secret storage and given to the daemon as ${keyEnv(spec?.provider ?? 'openai')}. Empty: remove it.`, password: true, ignoreFocusOut: true });
    if (v === undefined) return;
    if (v) await context.secrets.store(SECRET_KEY, v); else await context.secrets.delete(SECRET_KEY);
    void vscode.window.showInformationMessage(v ? 'agentd: API key saved; the daemon restarts with it.' : 'agentd: API key removed; the daemon restarts without it.');
    await d.restart('the API key changed');
  });
  reg('agentd.showLog', () => out.show(true));
}
