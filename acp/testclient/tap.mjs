// tap: runs `agentd acp` between a client that spawns it (acpx here) and
// the agent, passing every line through unchanged and validating each
// against the SDK's schema (schema.mjs). Problems and the message counts
// are appended to $ACP_WIRE_LOG as JSON lines when the agent exits (after
// a line saying the tap started, so a reader knows what to wait for).
// Usage: node tap.mjs AGENTD_BIN [args...]
import { spawn } from "node:child_process";
import fs from "node:fs";
import { Validator } from "./schema.mjs";

const [bin, ...args] = process.argv.slice(2);
const wire = new Validator();
const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });
const log = (x) => { if (process.env.ACP_WIRE_LOG) fs.appendFileSync(process.env.ACP_WIRE_LOG, JSON.stringify({ tap: process.pid, ...x }) + "\n"); };
log({ started: true });
const fromClient = wire.feeder("client");
const fromAgent = wire.feeder("agent");
process.stdin.on("data", (d) => { fromClient(String(d)); child.stdin.write(d); });
process.stdin.on("end", () => child.stdin.end());
child.stdout.on("data", (d) => { fromAgent(String(d)); process.stdout.write(d); });
child.on("exit", (code, signal) => {
  log({ problems: wire.problems, count: wire.count });
  process.exit(code ?? (signal ? 1 : 0));
});
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => child.kill(s));
