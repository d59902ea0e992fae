// Finding the agentd binary: agentd.path, else `agentd` on PATH. No vscode import (unit-tested).
import * as fs from 'node:fs';
import * as path from 'node:path';

const executable = (p: string) => { try { fs.accessSync(p, fs.constants.X_OK); return fs.statSync(p).isFile(); } catch { return false; } };

/** findBinary resolves the agentd.path setting, else `agentd` on PATH; undefined when missing. */
export function findBinary(setting: string, envPath = process.env.PATH ?? ''): string | undefined {
  if (setting) return executable(setting) ? setting : undefined;
  for (const dir of envPath.split(path.delimiter)) if (dir && executable(path.join(dir, 'agentd'))) return path.join(dir, 'agentd');
  return undefined;
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
  const where = setting ? `agentd.path ("${setting}") is not an executable file` : 'no agentd on PATH and agentd.path is not set';
  return `agentd: the agentd binary was not found (${where}).`;
}
