// End-to-end tests of `agentd acp`, driven by the official ACP TypeScript
// SDK's client side against the project's fake model server.
import { test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import {
  acp, agentEnv, agentText, connect, initialize, planReply, prompt, spawnAgent, startFake, tmpdir, updatesOf, waitFor,
} from "./harness.mjs";

function pick(kind) {
  return (params) => {
    const ids = params.options.map((o) => o.optionId);
    // Review requests offer apply/reject; approvals offer the four kinds.
    const id = ids.includes("apply") ? "apply" : params.options.find((o) => o.kind === kind).optionId;
    return { outcome: { outcome: "selected", optionId: id } };
  };
}

test("one session: prompt, plan, permission, diff, cancel, /restore, /undo, restart", async (t) => {
  const fake = await startFake(t);
  const ws = tmpdir(t, "acp-ws-");
  const state = tmpdir(t, "acp-state-");
  const file = path.join(ws, "a.txt");
  fs.writeFileSync(file, "hello\n");
  const env = agentEnv(fake, state);
  let agentProc = spawnAgent(t, env);
  let answer = pick("allow_always");
  let c = connect(t, agentProc, { onPermission: (p, rec) => answer(p, rec) });

  const init = await initialize(c);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);

  const sess = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  const sid = sess.sessionId;
  assert.deepEqual(sess.modes.availableModes.map((m) => m.id), ["plan-only", "ask", "auto"]);
  assert.equal(sess.modes.currentModeId, "ask");
  await waitFor(() => updatesOf(c.rec, "available_commands_update").length > 0, "available commands");
  const cmds = updatesOf(c.rec, "available_commands_update")[0].availableCommands.map((x) => x.name);
  assert.deepEqual(cmds, ["plan", "run", "snapshots", "restore", "undo", "undo-restore", "rules", "revoke"]);

  // 1. A request becomes a plan, runs with a review and an approval.
  await fake.push(
    planReply({
      title: "Greet the world",
      steps: [
        { id: "edit", tool: "write_file", description: "Greet the world", args: { path: "a.txt", content: "hello world\n" } },
        { id: "show", tool: "run_command", description: "Show the file", args: { command: "cat a.txt && echo shown" }, dependsOn: ["edit"] },
        { id: "sum", kind: "llm", description: "Summarize", prompt: "Summarize what changed", dependsOn: ["show"] },
      ],
    }),
    { Text: "The greeting now says hello world." },
  );
  let mark = c.rec.updates.length;
  let res = await prompt(c, sid, "greet the world");
  assert.equal(res.stopReason, "end_turn", agentText(c.rec, mark));
  assert.equal(fs.readFileSync(file, "utf8"), "hello world\n");

  const plans = updatesOf(c.rec, "plan", mark);
  assert.ok(plans.length >= 3, "plan updates each time");
  for (const p of plans) assert.equal(p.entries.length, 3, "the whole list each time");
  assert.deepEqual(plans.at(-1).entries.map((e) => e.status), ["completed", "completed", "completed"]);
  assert.ok(plans.some((p) => p.entries[0].status === "in_progress"), "a step shown in progress");

  const calls = updatesOf(c.rec, "tool_call", mark);
  const kindOf = Object.fromEntries(calls.map((x) => [x.toolCallId.split("/").at(-1), x.kind]));
  assert.deepEqual(kindOf, { edit: "edit", show: "execute", sum: "think" });
  const upd = updatesOf(c.rec, "tool_call_update", mark);
  const diffs = upd.flatMap((u) => u.content || []).filter((x) => x.type === "diff");
  assert.ok(diffs.some((d) => d.path === file && d.oldText === "hello\n" && d.newText === "hello world\n"), JSON.stringify(diffs));
  const showId = calls.find((x) => x.toolCallId.endsWith("/show")).toolCallId;
  const streamed = upd.filter((u) => u.toolCallId === showId && !u.status && (u.content || []).some((x) => x.content?.text?.includes("shown")));
  assert.ok(streamed.length > 0, "command output streamed before the step ended");
  const finals = upd.filter((u) => u.status === "completed").map((u) => u.toolCallId.split("/").at(-1));
  assert.deepEqual(finals.sort(), ["edit", "show", "sum"]);
  assert.match(agentText(c.rec, mark), /The greeting now says hello world\./);
  const usage = updatesOf(c.rec, "usage_update", mark);
  assert.ok(usage.length > 0 && usage.at(-1).used > 0 && usage.at(-1).cost.currency === "USD", JSON.stringify(usage));
  assert.equal(c.rec.permissions.length, 2, "a review of the edit and an approval of the command");
  const review = c.rec.permissions[0];
  assert.ok(review.toolCall.content.some((x) => x.type === "diff" && x.newText === "hello world\n"));
  assert.deepEqual(c.rec.permissions[1].options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once", "reject_always"]);
  // The run's start snapshot, as /snapshots lists it (its id's prefix).
  const runId = agentText(c.rec, mark).match(/Run (\S+): \*\*completed/)[1];
  let m0 = c.rec.updates.length;
  await prompt(c, sid, "/snapshots");
  const startSnap = agentText(c.rec, m0).match(new RegExp("`([0-9a-f]{12})` \\S+ — run start run " + runId))[1];

  // 2. "Always allow" was remembered: the same command runs without asking.
  await fake.push(planReply({ steps: [{ id: "again", tool: "run_command", args: { command: "cat a.txt && echo shown" } }] }));
  res = await prompt(c, sid, "show it again");
  assert.equal(res.stopReason, "end_turn");
  assert.equal(c.rec.permissions.length, 2, "no new question");

  // 2b. A rejected command: its tool call ends failed with the reason, and
  // the run goes on without it.
  await fake.push(planReply({ steps: [{ id: "nope", tool: "run_command", args: { command: "echo nope > nope.txt" } }] }));
  answer = pick("reject_once");
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "write nope");
  assert.equal(res.stopReason, "end_turn");
  assert.ok(!fs.existsSync(path.join(ws, "nope.txt")), "a rejected command does not run");
  const nope = updatesOf(c.rec, "tool_call_update", mark).filter((u) => u.toolCallId.endsWith("/nope") && u.status);
  assert.equal(nope.at(-1).status, "failed", JSON.stringify(nope));
  assert.match(nope.at(-1).content.at(-1).content.text, /rejected in the editor/);
  const asked = c.rec.permissions.at(-1);
  assert.equal(asked.toolCall.title, `Run \`echo nope > nope.txt\` in ${ws}`, "the request names the command and its folder");
  answer = pick("allow_always");

  // 3. Cancel while a permission request is pending: the client answers it
  // cancelled (as the spec says) and the prompt ends with "cancelled".
  await fake.push(planReply({ steps: [{ id: "never", tool: "run_command", args: { command: "echo never > never.txt" } }] }));
  answer = async (p) => {
    await c.agent.notify(acp.methods.agent.session.cancel, { sessionId: sid });
    return { outcome: { outcome: "cancelled" } };
  };
  res = await prompt(c, sid, "write never");
  assert.equal(res.stopReason, "cancelled");
  assert.ok(!fs.existsSync(path.join(ws, "never.txt")));

  // 4. Cancel a running command (auto mode: nothing asks).
  await c.agent.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "auto" });
  await waitFor(() => updatesOf(c.rec, "current_mode_update").some((u) => u.currentModeId === "auto"), "mode update");
  await fake.push(planReply({ steps: [{ id: "slow", tool: "run_command", args: { command: "sleep 30" } }] }));
  mark = c.rec.updates.length;
  const slow = prompt(c, sid, "wait a long time");
  await waitFor(() => updatesOf(c.rec, "tool_call", mark).some((x) => x.toolCallId.endsWith("/slow")), "the slow step");
  const t0 = Date.now();
  await c.agent.notify(acp.methods.agent.session.cancel, { sessionId: sid });
  res = await slow;
  assert.equal(res.stopReason, "cancelled");
  assert.ok(Date.now() - t0 < 15000, "cancel stops the command");

  // 5. Plan-only: the plan is shown and nothing runs; /run runs it.
  await c.agent.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "plan-only" });
  await fake.push(planReply({ steps: [{ id: "b", tool: "write_file", args: { path: "b.txt", content: "b\n" } }] }));
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "add b");
  assert.equal(res.stopReason, "end_turn");
  assert.ok(!fs.existsSync(path.join(ws, "b.txt")), "plan-only runs nothing");
  assert.equal(updatesOf(c.rec, "plan", mark).at(-1).entries.length, 1);
  answer = pick("allow_once");
  res = await prompt(c, sid, "/run");
  assert.equal(res.stopReason, "end_turn");
  assert.equal(fs.readFileSync(path.join(ws, "b.txt"), "utf8"), "b\n");

  // 6. /snapshots, /restore to the first run's start, /undo-restore, then
  // /undo (the last prompt's run: the /run that created b.txt).
  mark = c.rec.updates.length;
  await prompt(c, sid, "/snapshots");
  assert.ok(agentText(c.rec, mark).includes(startSnap.slice(0, 12)), agentText(c.rec, mark));
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "/restore " + startSnap);
  assert.equal(res.stopReason, "end_turn");
  assert.equal(fs.readFileSync(file, "utf8"), "hello\n");
  assert.ok(!fs.existsSync(path.join(ws, "b.txt")), "the restore removes what the runs created");
  assert.match(agentText(c.rec, mark), /\/undo-restore/);
  res = await prompt(c, sid, "/undo-restore");
  assert.equal(fs.readFileSync(file, "utf8"), "hello world\n");
  assert.equal(fs.readFileSync(path.join(ws, "b.txt"), "utf8"), "b\n");
  res = await prompt(c, sid, "/undo");
  assert.equal(res.stopReason, "end_turn");
  assert.ok(!fs.existsSync(path.join(ws, "b.txt")), "/undo undid the run that created b.txt");
  assert.equal(fs.readFileSync(file, "utf8"), "hello world\n");

  // 7. Restart the agent: session/load brings back the conversation, the
  // plan and the snapshots.
  agentProc.child.stdin.end();
  await new Promise((r) => agentProc.child.once("exit", r));
  agentProc = spawnAgent(t, env);
  c = connect(t, agentProc, { onPermission: pick("allow_once") });
  await initialize(c);
  await c.agent.request(acp.methods.agent.session.load, { sessionId: sid, cwd: ws, mcpServers: [] });
  assert.ok(updatesOf(c.rec, "user_message_chunk").some((u) => u.content.text === "greet the world"), "history replayed");
  assert.ok(updatesOf(c.rec, "plan").length > 0, "plan replayed");
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "/restore " + startSnap);
  assert.equal(res.stopReason, "end_turn");
  assert.equal(fs.readFileSync(file, "utf8"), "hello\n");
  res = await prompt(c, sid, "/undo-restore");
  assert.equal(fs.readFileSync(file, "utf8"), "hello world\n");
  assert.equal(await fake.pending(), 0, "every scripted reply was used");
  assert.doesNotMatch(agentProc.stderr(), /panic/);
});

test("a client with fs and terminal: edits arrive as fs/write_text_file, commands run in its terminal", async (t) => {
  const fake = await startFake(t);
  const ws = tmpdir(t, "acp-ws-");
  const state = tmpdir(t, "acp-state-");
  const file = path.join(ws, "a.txt");
  fs.writeFileSync(file, "hello\n");
  const caps = { fs: { readTextFile: true, writeTextFile: true }, terminal: true };
  const agentProc = spawnAgent(t, agentEnv(fake, state));
  // The editor holds unsaved text that differs from the disk.
  const c = connect(t, agentProc, { caps, files: { [file]: "buffer text\n" }, onPermission: pick("allow_once") });
  await initialize(c);
  const { sessionId } = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  await fake.push(planReply({
    steps: [
      { id: "edit", tool: "edit_file", args: { path: "a.txt", edits: [{ oldText: "buffer", newText: "edited" }] } },
      { id: "run", tool: "run_command", args: { command: "echo from-terminal" }, dependsOn: ["edit"] },
    ],
  }));
  const res = await prompt(c, sessionId, "edit the buffer");
  assert.equal(res.stopReason, "end_turn", agentText(c.rec));
  assert.ok(c.rec.reads.some((r) => r.path === file), "the file was read through the editor");
  assert.equal(c.rec.writes.length, 1);
  assert.equal(c.rec.writes[0].path, file);
  assert.equal(c.rec.writes[0].content, "edited text\n", "the edit was computed on the unsaved buffer");
  assert.equal(c.rec.terminals.length, 1);
  assert.deepEqual(c.rec.terminals[0].args, ["-c", "echo from-terminal"]);
  const upd = updatesOf(c.rec, "tool_call_update");
  assert.ok(upd.some((u) => (u.content || []).some((x) => x.type === "terminal")), "the tool call shows the terminal");
  const diffs = upd.flatMap((u) => u.content || []).filter((x) => x.type === "diff");
  assert.ok(diffs.some((d) => d.path === file && d.oldText === "buffer text\n" && d.newText === "edited text\n"));
  const run = updatesOf(c.rec, "tool_call_update").filter((u) => u.toolCallId.endsWith("/run") && u.status === "completed");
  assert.equal(run.length, 1);
  assert.match(JSON.stringify(run[0].rawOutput), /from-terminal/);
});

test("a client that writes files: /restore, /undo-restore and /undo put the restored text into the editor with fs/write_text_file", async (t) => {
  const fake = await startFake(t);
  const ws = tmpdir(t, "acp-ws-");
  const state = tmpdir(t, "acp-state-");
  const file = path.join(ws, "a.txt");
  const other = path.join(ws, "other.txt");
  fs.writeFileSync(file, "hello\n");
  fs.writeFileSync(other, "untouched by the editor\n");
  fs.writeFileSync(path.join(ws, "blob.bin"), Buffer.from([0, 1, 2, 3]));
  const caps = { fs: { readTextFile: true, writeTextFile: true } };
  const agentProc = spawnAgent(t, agentEnv(fake, state));
  // This client's "editor" keeps buffers; a restore that wrote the disk
  // only would leave them holding the agent's text.
  const c = connect(t, agentProc, { caps, onPermission: pick("allow_once") });
  await initialize(c);
  const { sessionId: sid } = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  await fake.push(planReply({ steps: [
    { id: "edit", tool: "write_file", args: { path: "a.txt", content: "hello world\n" } },
    { id: "more", tool: "write_file", args: { path: "other.txt", content: "changed\n" } },
    { id: "bin", tool: "delete_file", args: { path: "blob.bin" } },
  ] }));
  let mark = c.rec.updates.length;
  let res = await prompt(c, sid, "greet the world");
  assert.equal(res.stopReason, "end_turn", agentText(c.rec, mark));
  assert.equal(c.rec.buffers[file], "hello world\n");
  const runId = agentText(c.rec, mark).match(/Run (\S+): \*\*completed/)[1];
  mark = c.rec.updates.length;
  await prompt(c, sid, "/snapshots");
  const startSnap = agentText(c.rec, mark).match(new RegExp("`([0-9a-f]{12})` \\S+ — run start run " + runId))[1];

  // /restore to the run's start: each restored text file reaches the
  // editor, and the editor's buffer and the disk agree.
  let w = c.rec.writes.length;
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "/restore " + startSnap);
  assert.equal(res.stopReason, "end_turn", agentText(c.rec, mark));
  let got = Object.fromEntries(c.rec.writes.slice(w).map((x) => [x.path, x.content]));
  assert.equal(got[file], "hello\n", "a.txt's restored text went through fs/write_text_file: " + JSON.stringify(got));
  assert.equal(got[other], "untouched by the editor\n");
  assert.ok(!(path.join(ws, "blob.bin") in got), "a binary file is restored on disk only");
  assert.deepEqual(fs.readFileSync(path.join(ws, "blob.bin")), Buffer.from([0, 1, 2, 3]));
  assert.equal(c.rec.buffers[file], fs.readFileSync(file, "utf8"));
  assert.equal(fs.readFileSync(file, "utf8"), "hello\n");

  // /undo-restore: the same way back.
  w = c.rec.writes.length;
  res = await prompt(c, sid, "/undo-restore");
  got = Object.fromEntries(c.rec.writes.slice(w).map((x) => [x.path, x.content]));
  assert.equal(got[file], "hello world\n", JSON.stringify(got));
  assert.equal(c.rec.buffers[file], fs.readFileSync(file, "utf8"));
  assert.ok(!fs.existsSync(path.join(ws, "blob.bin")));

  // /undo of the run: its files back to the start, in the editor too.
  w = c.rec.writes.length;
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "/undo");
  assert.equal(res.stopReason, "end_turn", agentText(c.rec, mark));
  got = Object.fromEntries(c.rec.writes.slice(w).map((x) => [x.path, x.content]));
  assert.equal(got[file], "hello\n", JSON.stringify(got));
  assert.equal(c.rec.buffers[file], "hello\n");
  assert.equal(c.rec.buffers[other], fs.readFileSync(other, "utf8"));
  // A later edit is computed on that text (the buffer agentd reads).
  await fake.push(planReply({ steps: [{ id: "again", tool: "edit_file", args: { path: "a.txt", edits: [{ oldText: "hello", newText: "bye" }] } }] }));
  res = await prompt(c, sid, "say bye");
  assert.equal(fs.readFileSync(file, "utf8"), "bye\n");

  // A buffer agentd never read, holding the user's unsaved edits: the
  // restore reads it through the editor first and leaves the file alone,
  // in the editor and on disk.
  const cfile = path.join(ws, "c.txt");
  fs.writeFileSync(cfile, "one\n");
  await fake.push(planReply({ steps: [{ id: "two", tool: "run_command", args: { command: "echo two > c.txt" } }] }));
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "make c two");
  const run2 = agentText(c.rec, mark).match(/Run (\S+): \*\*completed/)[1];
  mark = c.rec.updates.length;
  await prompt(c, sid, "/snapshots");
  const start2 = agentText(c.rec, mark).match(new RegExp("`([0-9a-f]{12})` \\S+ — run start run " + run2))[1];
  c.rec.buffers[cfile] = "two\nmine\n";
  w = c.rec.writes.length;
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "/restore " + start2);
  assert.equal(res.stopReason, "end_turn");
  assert.ok(!c.rec.writes.slice(w).some((x) => x.path === cfile), "the user's unsaved buffer was not overwritten");
  assert.equal(c.rec.buffers[cfile], "two\nmine\n");
  assert.equal(fs.readFileSync(cfile, "utf8"), "two\n", "left alone on disk too");
  assert.match(agentText(c.rec, mark), /c\.txt — the file has unsaved edits in the editor/);
  assert.equal(await fake.pending(), 0);
});

test("images: a model configured with vision gets the prompt's image; another model refuses it clearly", async (t) => {
  const fake = await startFake(t);
  const ws = tmpdir(t, "acp-ws-");
  const state = tmpdir(t, "acp-state-");
  fs.mkdirSync(path.join(state, "config", "agentd"), { recursive: true });
  fs.writeFileSync(path.join(state, "config", "agentd", "config.json"), JSON.stringify({
    profiles: { eyes: { provider: "openai", model: "fake-vision", vision: true } },
  }));
  // A 1x1 red PNG.
  const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");
  const image = { type: "image", mimeType: "image/png", data: png.toString("base64") };
  const env = { ...agentEnv(fake, state), AGENTD_MODEL: "eyes" };
  let agentProc = spawnAgent(t, env);
  let c = connect(t, agentProc);
  let init = await initialize(c);
  assert.equal(init.agentCapabilities.promptCapabilities.image, true, "a vision model: images advertised");
  const { sessionId: sid } = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  await c.agent.request(acp.methods.agent.session.setMode, { sessionId: sid, modeId: "plan-only" });
  await fake.push(planReply({ title: "Note the colour", steps: [{ id: "w", tool: "write_file", args: { path: "colour.txt", content: "red\n" } }] }));
  const res = await c.agent.request(acp.methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "write down the colour of this" }, image] });
  assert.equal(res.stopReason, "end_turn");
  const reqs = await fake.requests();
  assert.equal(reqs.length, 1);
  assert.deepEqual(reqs[0].images, [{ role: "user", mimeType: "image/png", size: png.length, sha256: crypto.createHash("sha256").update(png).digest("hex") }]);
  const parts = reqs[0].body.messages.at(-1).content;
  assert.equal(parts[0].type, "text");
  assert.match(parts[0].text, /write down the colour of this/);
  assert.equal(parts[1].image_url.url, "data:image/png;base64," + png.toString("base64"));

  // The same agent with a model that has no vision: nothing advertised,
  // and an image is refused naming the model and the setting.
  agentProc.child.stdin.end();
  await new Promise((r) => agentProc.child.once("exit", r));
  agentProc = spawnAgent(t, agentEnv(fake, state));
  c = connect(t, agentProc);
  init = await initialize(c);
  assert.ok(!init.agentCapabilities.promptCapabilities.image);
  const s2 = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  await assert.rejects(
    c.agent.request(acp.methods.agent.session.prompt, { sessionId: s2.sessionId, prompt: [{ type: "text", text: "what is this" }, image] }),
    (e) => e.code === -32602 && /the model openai:fake-model is not configured to take images/.test(e.data["prompt[1]"]) && /"vision": true/.test(e.data["prompt[1]"]) &&
      /choose a model that takes images in the model selector: eyes$/.test(e.data["prompt[1]"]),
  );
  assert.equal((await fake.requests()).length, 1, "no model call for the refused prompt");
});

test("errors: malformed lines, unknown methods, wrong params, requests before initialize", async (t) => {
  const fake = await startFake(t);
  const ws = tmpdir(t, "acp-ws-");
  const state = tmpdir(t, "acp-state-");
  const { child } = spawnAgent(t, agentEnv(fake, state), { checkClient: false });
  const lines = [];
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) { lines.push(buf.slice(0, i)); buf = buf.slice(i + 1); }
  });
  const send = (x) => child.stdin.write((typeof x === "string" ? x : JSON.stringify(x)) + "\n");
  const msgs = () => lines.map((l) => JSON.parse(l));
  const answer = async (id) => {
    await waitFor(() => msgs().some((m) => m.id === id), "answer " + id);
    return msgs().find((m) => m.id === id);
  };

  send("this is not json");
  await waitFor(() => msgs().some((m) => m.error?.code === -32700), "parse error");
  send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: ws, mcpServers: [] } });
  assert.equal((await answer(1)).error.code, -32600, "before initialize");
  // Version negotiation: a client asking for a newer version gets the
  // latest the agent speaks.
  send({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: 99, clientCapabilities: {} } });
  assert.equal((await answer(2)).result.protocolVersion, 1);
  send({ jsonrpc: "2.0", id: 3, method: "no/such/method", params: {} });
  assert.equal((await answer(3)).error.code, -32601);
  send({ jsonrpc: "2.0", id: 4, method: "session/new", params: { cwd: 42 } });
  assert.equal((await answer(4)).error.code, -32602);
  send({ jsonrpc: "2.0", id: 5, method: "session/new", params: { cwd: "relative/dir", mcpServers: [] } });
  assert.equal((await answer(5)).error.code, -32602);
  send("[1,2]");
  send({ jsonrpc: "1.0", id: 6, method: "initialize" });
  assert.equal((await answer(6)).error.code, -32600);
  send({ jsonrpc: "2.0", id: 7, method: "session/prompt", params: { sessionId: "nope", prompt: [{ type: "text", text: "hi" }] } });
  assert.equal((await answer(7)).error.code, -32002);
  send({ jsonrpc: "2.0", id: 8, method: "session/new", params: { cwd: ws, mcpServers: [] } });
  const sid = (await answer(8)).result.sessionId;
  send({ jsonrpc: "2.0", id: 9, method: "session/set_mode", params: { sessionId: sid, modeId: "bogus" } });
  assert.equal((await answer(9)).error.code, -32602);
  send({ jsonrpc: "2.0", id: 10, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "/nonsense" }] } });
  assert.equal((await answer(10)).error.code, -32602);
  // $/cancel_request on a prompt waiting for the model ends it.
  await fake.push({ Fault: "hang" });
  send({ jsonrpc: "2.0", id: 11, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "plan something" }] } });
  await new Promise((r) => setTimeout(r, 300));
  send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 11 } });
  const a11 = await answer(11);
  assert.ok(a11.result?.stopReason === "cancelled" || a11.error?.code === -32800, JSON.stringify(a11));
  // Still serving, and every stdout line was JSON-RPC.
  send({ jsonrpc: "2.0", id: 12, method: "session/set_mode", params: { sessionId: sid, modeId: "auto" } });
  assert.ok((await answer(12)).result);
  assert.ok(msgs().some((m) => m.id === null && m.error?.code === -32600), "the batch got an invalid request error");
  for (const m of msgs()) assert.equal(m.jsonrpc, "2.0");
  child.stdin.end();
});

test("what the editor shows is what happens: order, cancel on a permission, one prompt at a time, usage, models, big messages", async (t) => {
  const fake = await startFake(t);
  const ws = tmpdir(t, "acp-ws-");
  const state = tmpdir(t, "acp-state-");
  const agentProc = spawnAgent(t, agentEnv(fake, state));
  let answer = (p) => ({ outcome: { outcome: "selected", optionId: "allow_once" } });
  const c = connect(t, agentProc, { onPermission: (p, rec) => answer(p, rec) });
  await initialize(c);
  const sess = await c.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
  const sid = sess.sessionId;

  // The model is a config option (category model) listing what is configured.
  const model = sess.configOptions.find((o) => o.id === "model");
  assert.equal(model.category, "model");
  assert.equal(model.currentValue, "openai:fake-model");
  const set = await c.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: sid, configId: "model", value: "openai:fake-model" });
  assert.equal(set.configOptions[0].currentValue, "openai:fake-model");

  // Parallel commands that each ask: every permission request comes after
  // its tool call, in the order the client received them.
  for (let i = 0; i < 5; i++) {
    await fake.push(planReply({ steps: ["a", "b", "c"].map((id) => ({ id, tool: "run_command", args: { command: `echo ${id}${i}` } })) }));
    const res = await prompt(c, sid, "echo " + i);
    assert.equal(res.stopReason, "end_turn");
  }
  const shown = new Set();
  let asked = 0;
  for (const e of c.rec.log) {
    if (e.update?.sessionUpdate === "tool_call") shown.add(e.update.toolCallId);
    if (e.permission) {
      asked++;
      assert.ok(shown.has(e.permission.toolCall.toolCallId), `permission for ${e.permission.toolCall.toolCallId} before its tool call`);
      assert.match(e.permission.toolCall.title, /^Run `echo [abc]\d` in /);
    }
  }
  assert.equal(asked, 15);

  // Cancel on a permission ends the turn: the later step never runs.
  await fake.push(planReply({ steps: [
    { id: "one", tool: "run_command", args: { command: "echo 1 > one.txt" } },
    { id: "two", tool: "run_command", args: { command: "echo 2 > two.txt" }, dependsOn: ["one"] },
  ] }));
  answer = () => ({ outcome: { outcome: "cancelled" } });
  let mark = c.rec.updates.length;
  let res = await prompt(c, sid, "one then two");
  assert.equal(res.stopReason, "cancelled");
  assert.ok(!fs.existsSync(path.join(ws, "one.txt")) && !fs.existsSync(path.join(ws, "two.txt")));
  const one = updatesOf(c.rec, "tool_call_update", mark).filter((u) => u.toolCallId.endsWith("/one") && u.status);
  assert.equal(one.at(-1).status, "failed");
  answer = () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });

  // A prompt while another runs is refused; the running one goes on.
  await fake.push({ Fault: "hang" });
  const first = prompt(c, sid, "hang");
  await new Promise((r) => setTimeout(r, 300));
  await assert.rejects(prompt(c, sid, "second"), (e) => e.code === -32010 && /already running/.test(e.message));
  await c.agent.notify(acp.methods.agent.session.cancel, { sessionId: sid });
  assert.equal((await first).stopReason, "cancelled");

  // Usage adds up; the plan, the model's text and the outcome are paragraphs.
  await fake.push(
    { Text: JSON.stringify({ steps: [{ id: "say", kind: "llm", prompt: "say hi" }] }), InputTokens: 40, OutputTokens: 8 },
    { Text: "Hi.", InputTokens: 6, OutputTokens: 2 },
  );
  mark = c.rec.updates.length;
  res = await prompt(c, sid, "say hi");
  assert.deepEqual(res.usage, { inputTokens: 46, outputTokens: 10, totalTokens: 56 });
  assert.match(agentText(c.rec, mark), /\n\nHi\.\n\nRun /);

  // A message over 10 MiB gets an error and the connection stays up.
  const big = JSON.stringify({ jsonrpc: "2.0", id: 9999, method: "session/prompt", params: { sessionId: sid, prompt: [{ type: "text", text: "x".repeat(11 << 20) }] } });
  const lines = [];
  agentProc.child.stdout.on("data", (d) => lines.push(String(d)));
  agentProc.child.stdin.write(big + "\n");
  await waitFor(() => lines.join("").includes('"id":9999'), "the answer to the big message");
  assert.match(lines.join(""), /"code":-32600.*over the limit/);
  res = await prompt(c, sid, "/snapshots");
  assert.equal(res.stopReason, "end_turn", "still serving");
  assert.equal(await fake.pending(), 0);
});
