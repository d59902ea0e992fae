// End-to-end test of `agentd acp` with acpx (npm "acpx", pinned in
// package-lock.json), a headless ACP client nobody here wrote, run as its
// command-line user would: a persistent session, a turn whose edit and
// command are approved, /undo of it, a rejected command, a cancel,
// /restore and /undo-restore (whose text reaches acpx through
// fs/write_text_file); and a prompt with an image (acpx's structured
// prompt), for a model with vision and one without.
// tap.mjs sits between acpx and agentd and checks every message both ways
// against the TypeScript SDK's schema.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { AGENTD, agentEnv, planReply, startFake, tmpdir, waitFor } from "./harness.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const ACPX = path.join(here, "node_modules", ".bin", "acpx");

// runner returns a function running acpx as its user would, against
// agentd behind tap.mjs, in workspace ws; it resolves to what acpx printed
// (with --format json, the JSON-RPC messages) and what they say.
function runner(t, fake, ws, state, extraEnv = {}) {
  const wireLog = path.join(state, "wire.jsonl");
  // acpx takes the agent as one command: a wrapper runs agentd behind the tap.
  const agentCmd = path.join(state, "agentd-acp");
  fs.writeFileSync(agentCmd, `#!/bin/sh\nexec "${process.execPath}" "${path.join(here, "tap.mjs")}" "${AGENTD}" acp "$@"\n`, { mode: 0o755 });
  const env = { ...agentEnv(fake, state), ACP_WIRE_LOG: wireLog, ...extraEnv };
  const acpx = (args) => new Promise((resolve) => {
    const p = spawn(ACPX, ["--agent", agentCmd, "--cwd", ws, "--ttl", "5", "--format", "json", ...args], { env });
    let out = "";
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { out += d; });
    p.on("exit", (code) => {
      // With --format json acpx prints the JSON-RPC messages, one a line.
      const msgs = out.split("\n").filter((l) => l.startsWith("{")).map((l) => { try { return JSON.parse(l); } catch { return {}; } });
      const stop = msgs.find((m) => m.result?.stopReason)?.result.stopReason;
      const asked = msgs.filter((m) => m.method === "session/request_permission").map((m) => m.params.toolCall.title);
      const statuses = msgs.filter((m) => m.params?.update?.sessionUpdate === "tool_call_update" && m.params.update.status)
        .map((m) => [m.params.update.toolCallId.split("/").at(-1), m.params.update.status, m.params.update.content?.at(-1)?.content?.text]);
      const text = msgs.filter((m) => m.params?.update?.sessionUpdate === "agent_message_chunk").map((m) => m.params.update.content.text).join("");
      const writes = msgs.filter((m) => m.method === "fs/write_text_file").map((m) => m.params);
      resolve({ code, out, stop, asked, statuses, text, writes, msgs });
    });
    t.after(() => { if (p.exitCode === null) p.kill(); });
  });
  // wireReports waits for every agent acpx started to exit and report.
  acpx.wireReports = async () => {
    const lines = () => (fs.existsSync(wireLog) ? fs.readFileSync(wireLog, "utf8").trim().split("\n").map((l) => JSON.parse(l)) : []);
    await waitFor(() => { const l = lines(); return l.length > 0 && l.filter((x) => x.started).length === l.filter((x) => x.count).length; }, "every agent's wire report", 40000);
    return lines().filter((x) => x.count);
  };
  return acpx;
}

test("acpx: approval, /undo, rejection, cancel, /restore, /undo-restore", async (t) => {
  assert.ok(fs.existsSync(ACPX), `acpx is not installed in ${ACPX}; make test-acp installs it (npm ci)`);
  const fake = await startFake(t);
  const ws = tmpdir(t, "acpx-ws-");
  const state = tmpdir(t, "acpx-state-");
  const file = path.join(ws, "a.txt");
  fs.writeFileSync(file, "hello\n");
  const acpx = runner(t, fake, ws, state);
  let r = await acpx(["sessions", "new"]);
  assert.equal(r.code, 0, r.out);

  // 1. A turn: the edit's review and the command's approval are granted.
  await fake.push(planReply({ steps: [
    { id: "edit", tool: "write_file", args: { path: "a.txt", content: "hello world\n" } },
    { id: "show", tool: "run_command", args: { command: "cat a.txt && echo shown" }, dependsOn: ["edit"] },
  ] }));
  r = await acpx(["--approve-all", "prompt", "greet the world"]);
  assert.equal(r.code, 0, r.out);
  assert.equal(r.stop, "end_turn", r.out);
  assert.ok(r.asked.includes(`Run \`cat a.txt && echo shown\` in ${ws}`), "the approval names the command: " + JSON.stringify(r.asked));
  assert.equal(fs.readFileSync(file, "utf8"), "hello world\n");
  const runId = r.text.match(/Run (\S+): \*\*completed/)[1];
  r = await acpx(["prompt", "/snapshots"]);
  const afterEdit = r.text.match(new RegExp("`([0-9a-f]{12})` \\S+ — after edit run " + runId + " step edit"))[1];

  // 2. /undo undoes the last prompt's run.
  r = await acpx(["prompt", "/undo"]);
  assert.equal(r.stop, "end_turn", r.out);
  assert.equal(fs.readFileSync(file, "utf8"), "hello\n");

  // 3. A rejected command does not run, and its step is failed.
  await fake.push(planReply({ steps: [{ id: "nope", tool: "run_command", args: { command: "echo no > no.txt" } }] }));
  r = await acpx(["--deny-all", "prompt", "write no"]);
  assert.ok(!fs.existsSync(path.join(ws, "no.txt")), r.out);
  const nope = r.statuses.filter((x) => x[0] === "nope").at(-1);
  assert.equal(nope?.[1], "failed", JSON.stringify(r.statuses));
  assert.match(nope[2], /approval denied/);

  // 4. Cancel a running command.
  await fake.push(planReply({ steps: [{ id: "slow", tool: "run_command", args: { command: "sleep 30" } }] }));
  const slow = acpx(["--approve-all", "prompt", "wait"]);
  // The plan was taken; give the command a moment to start.
  for (const end = Date.now() + 15000; (await fake.pending()) > 0;) {
    assert.ok(Date.now() < end, "the slow prompt never reached the model");
    await new Promise((res) => setTimeout(res, 50));
  }
  await new Promise((res) => setTimeout(res, 1500));
  r = await acpx(["cancel"]);
  assert.equal(r.code, 0, r.out);
  r = await slow;
  assert.equal(r.stop, "cancelled", r.out);

  // 5. /restore to the first run's edit, then /undo-restore. acpx
  // offers fs.writeTextFile, so the restored text reaches it through
  // fs/write_text_file (acpx writes it to the disk).
  r = await acpx(["prompt", "/restore " + afterEdit]);
  assert.equal(r.code, 0, r.out);
  assert.equal(fs.readFileSync(file, "utf8"), "hello world\n");
  assert.deepEqual(r.writes.map((x) => [x.path, x.content]), [[file, "hello world\n"]], r.out);
  r = await acpx(["prompt", "/undo-restore"]);
  assert.equal(r.code, 0, r.out);
  assert.equal(fs.readFileSync(file, "utf8"), "hello\n");
  assert.deepEqual(r.writes.map((x) => [x.path, x.content]), [[file, "hello\n"]], r.out);

  r = await acpx(["sessions", "close"]);
  // Every agent acpx started has exited and reported.
  const reports = await acpx.wireReports();
  const problems = reports.flatMap((x) => x.problems);
  assert.deepEqual(problems, [], "every message matches the SDK's schema");
  assert.ok(reports.reduce((n, x) => n + x.count.agent, 0) > 20, JSON.stringify(reports.map((x) => x.count)));
});

test("acpx: an image prompt reaches a vision model, and acpx itself holds one back from a model without vision", async (t) => {
  assert.ok(fs.existsSync(ACPX), `acpx is not installed in ${ACPX}; make test-acp installs it (npm ci)`);
  const fake = await startFake(t);
  const ws = tmpdir(t, "acpx-ws-");
  const state = tmpdir(t, "acpx-state-");
  fs.mkdirSync(path.join(state, "config", "agentd"), { recursive: true });
  fs.writeFileSync(path.join(state, "config", "agentd", "config.json"), JSON.stringify({
    profiles: { eyes: { provider: "openai", model: "fake-vision", vision: true } },
  }));
  // A 1x1 red PNG, in acpx's structured prompt (a JSON array of blocks).
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
  const promptFile = path.join(state, "prompt.json");
  fs.writeFileSync(promptFile, JSON.stringify([{ type: "text", text: "write down the colour of this" }, { type: "image", mimeType: "image/png", data: png }]));

  const acpx = runner(t, fake, ws, state, { AGENTD_MODEL: "eyes" });
  let r = await acpx(["sessions", "new"]);
  assert.equal(r.code, 0, r.out);
  await fake.push(planReply({ steps: [{ id: "w", tool: "write_file", args: { path: "colour.txt", content: "red\n" } }] }));
  r = await acpx(["--approve-all", "prompt", "-f", promptFile]);
  assert.equal(r.stop, "end_turn", r.out);
  assert.equal(fs.readFileSync(path.join(ws, "colour.txt"), "utf8"), "red\n");
  const reqs = await fake.requests();
  assert.equal(reqs[0].images.length, 1, JSON.stringify(reqs[0].images));
  assert.equal(reqs[0].images[0].mimeType, "image/png");
  assert.equal(reqs[0].images[0].size, Buffer.from(png, "base64").length);
  await acpx(["sessions", "close"]);

  // A model without vision: agentd does not advertise images, and acpx
  // does not send the prompt.
  const ws2 = tmpdir(t, "acpx-ws-");
  const state2 = tmpdir(t, "acpx-state-");
  const plain = runner(t, fake, ws2, state2);
  r = await plain(["sessions", "new"]);
  assert.equal(r.code, 0, r.out);
  r = await plain(["prompt", "-f", promptFile]);
  assert.notEqual(r.code, 0, r.out);
  assert.match(r.out, /requires agentCapabilities\.promptCapabilities\.image/);
  assert.equal((await fake.requests()).length, 1, "no model call");
  await plain(["sessions", "close"]);
  for (const reports of [await acpx.wireReports(), await plain.wireReports()]) {
    assert.deepEqual(reports.flatMap((x) => x.problems), [], "every message matches the SDK's schema");
  }
});
