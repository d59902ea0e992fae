// A by-hand walk of images and restores: `agentd acp` with a vision profile
// (WALK_MODEL chooses another model), a client that reads and writes files,
// one prompt with an image, then /restore and /undo-restore, printing what
// the model server saw and each fs/write_text_file.
// Usage: AGENTD_BIN=... FAKEMODEL_BIN=... [WALK_MODEL=openai:fake-model] node walk-image.mjs
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { acp, agentEnv, agentText, connect, initialize, planReply, prompt, spawnAgent, startFake } from "./harness.mjs";
const t = { afters: [], after(f) { this.afters.push(f); } };
const show = (label, x) => console.log(label, typeof x === "string" ? x : JSON.stringify(x));
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "walk-ws-"));
const state = fs.mkdtempSync(path.join(os.tmpdir(), "walk-state-"));
fs.writeFileSync(path.join(ws, "a.txt"), "hello\n");
fs.mkdirSync(path.join(state, "config", "agentd"), { recursive: true });
fs.writeFileSync(path.join(state, "config", "agentd", "config.json"), JSON.stringify({ profiles: { eyes: { provider: "openai", model: "fake-vision", vision: true } } }));
const fake = await startFake(t);
const agentProc = spawnAgent(t, { ...agentEnv(fake, state), AGENTD_MODEL: process.env.WALK_MODEL || "eyes" });
const file = path.join(ws, "a.txt");
const c = connect(t, agentProc, { caps: { fs: { readTextFile: true, writeTextFile: true } }, files: { },
  onPermission: (p) => { show("  <- PERMISSION", { title: p.toolCall.title }); return { outcome: { outcome: "selected", optionId: p.options.some((o) => o.optionId === "apply") ? "apply" : "allow_once" } }; } });
const origW = c.rec.writes.push.bind(c.rec.writes);
c.rec.writes.push = (w) => { show("  <- fs/write_text_file", { path: w.path, content: w.content }); return origW(w); };
const init = await initialize(c);
show("initialize -> promptCapabilities", init.agentCapabilities.promptCapabilities);
const s = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
show("models", s.models?.availableModels);
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
await fake.push(planReply({ title: "Write the colour", steps: [{ id: "edit", tool: "write_file", args: { path: "a.txt", content: "red\n" } }] }));
let mark = c.rec.updates.length;
try {
  const res = await c.agent.request(acp.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "write the colour of this into a.txt" }, { type: "image", mimeType: "image/png", data: png }] });
  show("prompt ->", res);
  console.log(agentText(c.rec, mark));
  const reqs = await fake.requests();
  show("model server saw images", reqs.map((r) => r.images));
  show("last user message content types", reqs[0].body.messages.at(-1).content.map((p) => p.type + (p.image_url ? ":" + p.image_url.url.slice(0, 40) + "…" : "")));
  mark = c.rec.updates.length;
  await prompt(c, s.sessionId, "/snapshots");
  const snap = agentText(c.rec, mark).match(/`([0-9a-f]{12})` \S+ — run start/)[1];
  mark = c.rec.updates.length;
  show("-> prompt", "/restore " + snap);
  await prompt(c, s.sessionId, "/restore " + snap);
  console.log(agentText(c.rec, mark));
  show("disk / editor buffer", [fs.readFileSync(file, "utf8"), c.rec.buffers[file]]);
  mark = c.rec.updates.length;
  await prompt(c, s.sessionId, "/undo-restore");
  console.log(agentText(c.rec, mark));
  show("disk / editor buffer", [fs.readFileSync(file, "utf8"), c.rec.buffers[file]]);
} catch (e) { show("prompt error ->", { code: e.code, message: e.message, data: e.data }); }
agentProc.child.stdin.end();
await new Promise((r) => agentProc.child.once("exit", r));
console.log("agentd exited with", agentProc.child.exitCode, "; schema problems:", agentProc.wire.problems.length, "of", agentProc.wire.count);
for (const f of t.afters.reverse()) { try { await f(); } catch (e) { console.log("after:", e.message); } }
process.exit(0);
