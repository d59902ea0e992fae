// Test harness: runs the fake model server and `agentd acp` as processes
// and connects the official ACP TypeScript SDK's client to the agent.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";
import { Validator } from "./schema.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
export const AGENTD = process.env.AGENTD_BIN || path.resolve(here, "../../bin/agentd");
export const FAKEMODEL = process.env.FAKEMODEL_BIN || path.resolve(here, "../../bin/fakemodel");

for (const [name, p] of [["AGENTD_BIN", AGENTD], ["FAKEMODEL_BIN", FAKEMODEL]]) {
  if (!fs.existsSync(p)) throw new Error(`${name}: ${p} does not exist; build it first (make test-acp does)`);
}

export function tmpdir(t, prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

// startFake runs the fake model server; push(replies) scripts it.
export async function startFake(t) {
  const child = spawn(FAKEMODEL, [], { stdio: ["pipe", "pipe", "inherit"] });
  t.after(() => child.kill());
  const url = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.once("line", (l) => resolve(l.trim()));
    child.once("exit", (c) => reject(new Error(`fakemodel exited with ${c}`)));
  });
  return {
    url,
    async push(...replies) {
      const r = await fetch(url + "/_fake/push", { method: "POST", body: JSON.stringify(replies) });
      if (!r.ok) throw new Error("push: " + (await r.text()));
    },
    async pending() {
      return Number(await (await fetch(url + "/_fake/pending")).text());
    },
    // requests: what the model server received ({path, body, images}).
    async requests() {
      return await (await fetch(url + "/_fake/requests")).json();
    },
  };
}

// A reply with a plan, as the planner expects it.
export function planReply(plan) {
  return { Text: JSON.stringify(plan) };
}

export function agentEnv(fake, stateDir) {
  return {
    PATH: process.env.PATH,
    HOME: stateDir,
    XDG_CONFIG_HOME: path.join(stateDir, "config"),
    AGENTD_STATE_DIR: path.join(stateDir, "state"),
    AGENTD_MODEL: "openai:fake-model",
    OPENAI_BASE_URL: fake.url + "/v1",
    OPENAI_API_KEY: "test-key",
  };
}

// spawnAgent starts `agentd acp`. Every message both ways is validated
// against the SDK's schema (schema.mjs); the test fails at its end if one
// does not match. checkClient false skips what the test writes itself
// (a test that sends malformed input on purpose).
export function spawnAgent(t, env, { checkClient = true } = {}) {
  const child = spawn(AGENTD, ["acp", "--log-level", "debug"], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const wire = new Validator();
  child.stdout.on("data", wire.feeder("agent"));
  {
    const feed = wire.feeder("client", { unchecked: !checkClient });
    const write = child.stdin.write.bind(child.stdin);
    child.stdin.write = (chunk, ...rest) => { feed(Buffer.isBuffer(chunk) || chunk instanceof Uint8Array ? Buffer.from(chunk).toString() : String(chunk)); return write(chunk, ...rest); };
  }
  t.after(() => {
    if (child.exitCode === null) child.kill();
    if (wire.problems.length > 0) throw new Error(`${wire.problems.length} message(s) do not match the ACP schema:\n` + wire.problems.slice(0, 5).join("\n"));
    if (wire.count.agent === 0) throw new Error("the agent sent nothing");
  });
  return { child, stderr: () => stderr, wire };
}

// connect wires the SDK's client side to a spawned agent. caps are the
// client capabilities; answers is a queue of functions deciding
// permission requests.
export function connect(t, agentProc, { caps = {}, files = {}, onPermission } = {}) {
  const rec = {
    updates: [], // session/update params
    permissions: [], // session/request_permission params
    writes: [], // fs/write_text_file params
    reads: [], // fs/read_text_file params
    terminals: [], // terminal/create params
    buffers: files, // path -> text the "editor" holds
    log: [], // updates and permission requests, in the order they arrived
  };
  const terms = new Map();
  let nextTerm = 0;
  const app = acp.client({ name: "agentd-acp-test" })
    .onNotification(acp.methods.client.session.update, ({ params }) => { rec.updates.push(params); rec.log.push({ update: params.update }); })
    .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
      rec.permissions.push(ctx.params);
      rec.log.push({ permission: ctx.params });
      if (!onPermission) return { outcome: { outcome: "cancelled" } };
      return await onPermission(ctx.params, rec);
    });
  if (caps.fs?.writeTextFile) {
    app.onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      rec.writes.push(params);
      rec.buffers[params.path] = params.content;
      fs.writeFileSync(params.path, params.content); // the editor saves
      return {};
    });
  }
  if (caps.fs?.readTextFile) {
    app.onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      rec.reads.push(params);
      if (params.path in rec.buffers) return { content: rec.buffers[params.path] };
      return { content: fs.readFileSync(params.path, "utf8") };
    });
  }
  if (caps.terminal) {
    app.onRequest(acp.methods.client.terminal.create, ({ params }) => {
      rec.terminals.push(params);
      const id = "term-" + ++nextTerm;
      const env = { ...process.env };
      for (const e of params.env || []) env[e.name] = e.value;
      const p = spawn(params.command, params.args || [], { cwd: params.cwd, env });
      const term = { out: "", exit: null };
      term.done = new Promise((resolve) => p.on("exit", (code, signal) => { term.exit = { exitCode: code, signal }; resolve(); }));
      p.stdout.on("data", (d) => { term.out += d; });
      p.stderr.on("data", (d) => { term.out += d; });
      term.proc = p;
      terms.set(id, term);
      return { terminalId: id };
    });
    app.onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
      const term = terms.get(params.terminalId);
      await term.done;
      return term.exit;
    });
    app.onRequest(acp.methods.client.terminal.output, ({ params }) => {
      const term = terms.get(params.terminalId);
      return { output: term.out, truncated: false, exitStatus: term.exit };
    });
    app.onRequest(acp.methods.client.terminal.kill, ({ params }) => { terms.get(params.terminalId).proc.kill(); return {}; });
    app.onRequest(acp.methods.client.terminal.release, ({ params }) => { terms.delete(params.terminalId); return {}; });
  }
  const stream = acp.ndJsonStream(Writable.toWeb(agentProc.child.stdin), Readable.toWeb(agentProc.child.stdout));
  const conn = app.connect(stream);
  t.after(() => conn.close());
  return { agent: conn.agent, rec, caps };
}

export async function initialize(c) {
  return await c.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: c.caps,
    clientInfo: { name: "agentd-acp-test", version: "1" },
  });
}

export async function prompt(c, sessionId, text) {
  return await c.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
}

// updatesOf returns the session/update payloads of one kind.
export function updatesOf(rec, kind, from = 0) {
  return rec.updates.slice(from).map((u) => u.update).filter((u) => u.sessionUpdate === kind);
}

export function agentText(rec, from = 0) {
  return updatesOf(rec, "agent_message_chunk", from).map((u) => u.content.text).join("");
}

export async function waitFor(cond, what, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("timed out waiting for " + what);
}

export { acp };
