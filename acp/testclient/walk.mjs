// A by-hand walk: drives `agentd acp` with the official TypeScript SDK
// against the fake model server and prints the stream as a reader sees it
// (updates, permission requests and their answers, the prompt's answers).
// Usage: AGENTD_BIN=... FAKEMODEL_BIN=... node walk.mjs
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { acp, agentEnv, connect, initialize, planReply, prompt, spawnAgent, startFake } from "./harness.mjs";

const t = { afters: [], after(f) { this.afters.push(f); } };
const show = (label, x) => console.log(label, typeof x === "string" ? x : JSON.stringify(x));
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "walk-ws-"));
const state = fs.mkdtempSync(path.join(os.tmpdir(), "walk-state-"));
fs.writeFileSync(path.join(ws, "a.txt"), "hello\n");
const fake = await startFake(t);
const agentProc = spawnAgent(t, agentEnv(fake, state));
const answers = ["allow_once", "reject_once", "apply"];
const c = connect(t, agentProc, {
  onPermission: (p) => {
    const pick = p.options.some((o) => o.optionId === "apply") ? "apply" : answers.shift() || "allow_once";
    show("  <- PERMISSION", { title: p.toolCall.title, content: p.toolCall.content, answer: pick });
    return { outcome: { outcome: "selected", optionId: pick } };
  },
});
const seen = c.rec.updates.length;
const origPush = c.rec.updates.push.bind(c.rec.updates);
c.rec.updates.push = (u) => {
  const x = u.update;
  const brief = { ...x };
  if (brief.content && Array.isArray(brief.content)) brief.content = brief.content.map((k) => k.type === "diff" ? { diff: k.path } : k.content?.text ?? k.type);
  show("  <- " + x.sessionUpdate, x.sessionUpdate === "agent_message_chunk" ? JSON.stringify(x.content.text) : brief);
  return origPush(u);
};
await initialize(c);
const s = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
show("session/new ->", { sessionId: s.sessionId, configOptions: s.configOptions.map((o) => [o.id, o.currentValue]) });
await fake.push(
  planReply({ title: "Greet", steps: [
    { id: "edit", tool: "write_file", description: "Greet the world", args: { path: "a.txt", content: "hello world\n" } },
    { id: "show", tool: "run_command", description: "Show it", args: { command: "cat a.txt" }, dependsOn: ["edit"] },
    { id: "rm", tool: "run_command", description: "Remove it", args: { command: "rm a.txt" }, dependsOn: ["show"], critical: false },
    { id: "sum", kind: "llm", prompt: "Summarize", dependsOn: ["show"] },
  ] }),
  { Text: "Greeted the world." },
);
console.log("-> prompt: greet the world");
const res = await prompt(c, s.sessionId, "greet the world");
show("prompt ->", res);
console.log("a.txt:", JSON.stringify(fs.readFileSync(path.join(ws, "a.txt"), "utf8")));
agentProc.child.stdin.end();
await new Promise((r) => agentProc.child.once("exit", r));
console.log("agentd exited with", agentProc.child.exitCode, "; schema problems:", agentProc.wire.problems.length, "of", agentProc.wire.count);
for (const f of t.afters.reverse()) { try { await f(); } catch (e) { console.log("after:", e.message); } }
fs.rmSync(ws, { recursive: true, force: true });
fs.rmSync(state, { recursive: true, force: true });
process.exit(0);
