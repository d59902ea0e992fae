// The errors the extension tells apart: a JSON-RPC error answer and a missing daemon. No vscode
// here, so the unit tests can use them.

/** A JSON-RPC error answer (vscode-languageclient's ResponseError), told apart without loading
 *  the library: a numeric code and a message. */
export interface RpcError { code: number; message: string; data?: unknown }
export function isRpcError(e: unknown): e is RpcError {
  return !!e && typeof e === 'object' && typeof (e as RpcError).code === 'number' && typeof (e as RpcError).message === 'string';
}

export function errText(e: unknown): string {
  if (isRpcError(e)) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** The daemon is not there: the message says why and what to do. */
export class DaemonDown extends Error {
  constructor(message: string, readonly fix: 'setting' | 'restart') { super(message); }
}
