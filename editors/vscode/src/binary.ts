// Finding the agentd binary: agentd.path when set, else the one bundled in the extension, else
// `agentd` on PATH. No vscode import (unit-tested).
import * as fs from 'node:fs';
import * as path from 'node:path';

const executable = (p: string) => {
  try {
    if (process.platform !== 'win32') fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch { return false; }
};

/** exeName is agentd's file name on this OS. */
export const exeName = (platform = process.platform) => (platform === 'win32' ? 'agentd.exe' : 'agentd');

/** bundledPath is where a platform .vsix (scripts/package-platform.sh) puts its agentd:
 *  bin/<platform>-<arch>/agentd[.exe] inside the extension, named like vsce's targets. */
export function bundledPath(extensionDir: string, platform = process.platform, arch = process.arch): string {
  return path.join(extensionDir, 'bin', `${platform}-${arch}`, exeName(platform));
}

/** findBinary: the agentd.path setting when set (the user's choice wins over the binary a
 *  platform .vsix bundles; a setting naming no executable is missing, nothing else is tried),
 *  else the bundled binary, else `agentd` on PATH; undefined when none is there. */
export function findBinary(setting: string, envPath = process.env.PATH ?? '', extensionDir?: string): string | undefined {
  if (setting) return executable(setting) ? setting : undefined;
  if (extensionDir) {
    const b = bundledPath(extensionDir);
    if (executable(b)) return b;
  }
  for (const dir of envPath.split(path.delimiter)) if (dir && executable(path.join(dir, exeName()))) return path.join(dir, exeName());
  return undefined;
}

/** PROTOCOL_VERSION is the agentd protocol this extension speaks (initialize result,
 *  capabilities.experimental.agentd.protocolVersion). */
export const PROTOCOL_VERSION = 2;

/** protocolProblem says why a daemon whose initialize result carries `got` cannot be used,
 *  naming both versions and the fix; undefined when it matches. */
export function protocolProblem(got: unknown, bin: string): string | undefined {
  if (got === PROTOCOL_VERSION) return undefined;
  const theirs = typeof got === 'number' ? `protocol ${got}` : 'no protocol version (an agentd older than protocol 2)';
  const fix = typeof got === 'number' && got > PROTOCOL_VERSION
    ? 'update the agentd extension, or set agentd.path to an agentd that speaks protocol ' + PROTOCOL_VERSION
    : 'update agentd (or use the agentd bundled with the extension: clear agentd.path), or install the extension version that matches it';
  return `agentd: the extension speaks protocol ${PROTOCOL_VERSION}, but ${bin} speaks ${theirs}: ${fix}.`;
}

/** serverCommand is how `agentd serve` is started: over stdio, with no `transport` set, because
 *  vscode-languageclient appends `--stdio` to the arguments when one is. */
export function serverCommand(bin: string, logLevel: string, stateDir?: string): { command: string; args: string[]; transport?: undefined } {
  const args = ['serve', '--log-level', logLevel];
  if (stateDir) args.push('--state-dir', stateDir);
  return { command: bin, args };
}

/** missingBinaryMessage is the one message shown when there is no binary (with an Open Setting button). */
export function missingBinaryMessage(setting: string): string {
  const where = setting ? `agentd.path ("${setting}") is not an executable file` : 'no agentd bundled for this platform, none on PATH, and agentd.path is not set';
  return `agentd: the agentd binary was not found (${where}).`;
}

/** Down is why there is no daemon, and the fix its button offers: a setting to open
 *  (`setting`, default agentd.path) or a restart. */
export type Down = { message: string; fix: 'setting' | 'restart'; setting?: string };

/** downFromStart words a daemon that did not start. A workspace the daemon refuses as too broad
 *  (your home folder, or /) is confirmed with agentd.allowBroadWorkspace, which the daemon's
 *  message names: the button opens that setting. */
export function downFromStart(m: string): Down {
  if (m.includes('agentd.allowBroadWorkspace')) {
    // The daemon's whole sentence, without the wire's "invalid params: rootUri: ".
    return { message: `agentd: ${m.replace(/^invalid params: rootUri: /, '')}`, fix: 'setting', setting: 'agentd.allowBroadWorkspace' };
  }
  return { message: m.startsWith('agentd: ') ? m : `agentd: the daemon did not start: ${m}`, fix: 'restart' };
}
