// Validates every message of the ACP wire, both ways, against the JSON
// schema that ships with the official TypeScript SDK
// (@agentclientprotocol/sdk/schema/v1/schema.json). The schema's top-level
// union lets any method through as an extension, so each message is
// checked by its method: a request's params against the method's request
// type, its response against the method's response type (matched by id),
// an error against Error. A method outside ACP v1 is a problem too.
import { createRequire } from "node:module";
import Ajv2020 from "ajv/dist/2020.js";

const require = createRequire(import.meta.url);
const schema = require("@agentclientprotocol/sdk/schema/v1/schema.json");

const ajv = new Ajv2020({ strict: false, allErrors: false, logger: false });
// The numeric formats of the Rust-generated schema, checked as ranges.
const ranges = { int32: [-(2 ** 31), 2 ** 31 - 1], uint16: [0, 65535], uint32: [0, 2 ** 32 - 1], int64: [-(2 ** 63), 2 ** 63], uint64: [0, 2 ** 64] };
for (const [f, [lo, hi]] of Object.entries(ranges)) ajv.addFormat(f, { type: "number", validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
ajv.addFormat("double", { type: "number", validate: () => true });
ajv.addFormat("uri", { type: "string", validate: (s) => { try { new URL(s); return true; } catch { return false; } } });
ajv.addSchema({ $id: "acp", $schema: schema.$schema, $defs: schema.$defs });
const def = (name) => {
  if (!schema.$defs[name]) throw new Error(`the SDK's schema has no ${name}`);
  return ajv.compile({ $ref: `acp#/$defs/${name}` });
};

// method -> [sender, params type, result type (none for notifications)]
const methods = {
  "initialize": ["client", "InitializeRequest", "InitializeResponse"],
  "authenticate": ["client", "AuthenticateRequest", "AuthenticateResponse"],
  "session/new": ["client", "NewSessionRequest", "NewSessionResponse"],
  "session/load": ["client", "LoadSessionRequest", "LoadSessionResponse"],
  "session/prompt": ["client", "PromptRequest", "PromptResponse"],
  "session/set_mode": ["client", "SetSessionModeRequest", "SetSessionModeResponse"],
  "session/set_config_option": ["client", "SetSessionConfigOptionRequest", "SetSessionConfigOptionResponse"],
  "session/close": ["client", "CloseSessionRequest", "CloseSessionResponse"],
  "session/cancel": ["client", "CancelNotification"],
  "$/cancel_request": ["either", "CancelRequestNotification"],
  "session/update": ["agent", "SessionNotification"],
  "session/request_permission": ["agent", "RequestPermissionRequest", "RequestPermissionResponse"],
  "fs/read_text_file": ["agent", "ReadTextFileRequest", "ReadTextFileResponse"],
  "fs/write_text_file": ["agent", "WriteTextFileRequest", "WriteTextFileResponse"],
  "terminal/create": ["agent", "CreateTerminalRequest", "CreateTerminalResponse"],
  "terminal/output": ["agent", "TerminalOutputRequest", "TerminalOutputResponse"],
  "terminal/wait_for_exit": ["agent", "WaitForTerminalExitRequest", "WaitForTerminalExitResponse"],
  "terminal/kill": ["agent", "KillTerminalRequest", "KillTerminalResponse"],
  "terminal/release": ["agent", "ReleaseTerminalRequest", "ReleaseTerminalResponse"],
};
const compiled = {};
for (const [m, [, p, r]] of Object.entries(methods)) compiled[m] = { params: def(p), result: r ? def(r) : null };
const errorType = def("Error");

// Validator checks the lines of both directions; problems lists what did
// not match, count how many messages each side sent.
export class Validator {
  constructor() {
    this.problems = [];
    this.count = { agent: 0, client: 0 };
    this.pending = { agent: new Map(), client: new Map() }; // sender -> id -> method
  }

  check(from, line) {
    this.count[from]++;
    const bad = (why, errors) => this.problems.push(`${from} sent ${why}: ${line.slice(0, 300)}${errors ? "\n  " + ajv.errorsText(errors.slice(0, 3)) : ""}`);
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return bad("a line that is not JSON");
    }
    if (msg.jsonrpc !== "2.0") return bad('a message without "jsonrpc": "2.0"');
    if (typeof msg.method === "string") {
      const m = methods[msg.method];
      if (!m) return bad(`a method outside ACP v1 (${msg.method})`);
      if (m[0] !== "either" && m[0] !== from) return bad(`${msg.method}, which only the ${m[0]} sends`);
      const v = compiled[msg.method].params;
      if (!v(msg.params)) return bad(`${msg.method} params that do not match the schema`, v.errors);
      if ("id" in msg) {
        if (!compiled[msg.method].result) return bad(`${msg.method} as a request (it is a notification)`);
        this.pending[from].set(JSON.stringify(msg.id), msg.method);
      }
      return;
    }
    // A response answers a request of the other side.
    const other = from === "agent" ? "client" : "agent";
    const key = JSON.stringify(msg.id);
    const method = this.pending[other].get(key);
    this.pending[other].delete(key);
    if (msg.error !== undefined) {
      if (!errorType(msg.error)) bad("an error that does not match the schema", errorType.errors);
      return;
    }
    if (!method) return bad("a response to no request it was sent");
    const v = compiled[method].result;
    if (!v(msg.result)) bad(`a ${method} result that does not match the schema`, v.errors);
  }

  // note only remembers the requests of a side whose messages are not
  // checked (a test sending malformed input on purpose), so the answers to
  // them are still checked.
  note(line) {
    try {
      const msg = JSON.parse(line);
      if (typeof msg.method === "string" && "id" in msg && methods[msg.method]) this.pending.client.set(JSON.stringify(msg.id), msg.method);
    } catch {
      // not JSON: nothing to remember
    }
  }

  feeder(from, { unchecked = false } = {}) {
    let buf = "";
    return (chunk) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line && unchecked) this.note(line);
        else if (line) this.check(from, line);
      }
    };
  }
}
