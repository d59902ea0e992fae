import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { bundledPath, findBinary, missingBinaryMessage, serverCommand } from '../../src/binary';

test('findBinary: the setting, else agentd on PATH, else undefined', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-bin-'));
  const bin = path.join(dir, 'agentd');
  fs.writeFileSync(bin, '#!/bin/sh\n', { mode: 0o755 });
  const plain = path.join(dir, 'notexec');
  fs.writeFileSync(plain, '', { mode: 0o644 });
  assert.equal(findBinary(bin, ''), bin);
  assert.equal(findBinary(plain, dir), undefined, 'a setting naming a non-executable file is missing, PATH is not tried');
  assert.equal(findBinary('', `/nonexistent${path.delimiter}${dir}`), bin);
  assert.equal(findBinary('', '/nonexistent'), undefined);
  assert.equal(findBinary('', dir + '/sub'), undefined);
  fs.rmSync(dir, { recursive: true });
});

test('findBinary: agentd.path wins over the binary a platform .vsix bundles (issue 35 point 6)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-bin-'));
  const extDir = path.join(dir, 'ext');
  const bundled = bundledPath(extDir);
  fs.mkdirSync(path.dirname(bundled), { recursive: true });
  fs.writeFileSync(bundled, '#!/bin/sh\n', { mode: 0o755 });
  const mine = path.join(dir, 'my-agentd');
  fs.writeFileSync(mine, '#!/bin/sh\n', { mode: 0o755 });
  assert.equal(findBinary(mine, '', extDir), mine, 'the setting, not the bundled binary');
  assert.equal(findBinary('', '', extDir), bundled, 'no setting: the bundled binary');
  assert.equal(findBinary(path.join(dir, 'missing'), '', extDir), undefined, 'a setting naming nothing is reported, not replaced by the bundled binary');
  fs.rmSync(dir, { recursive: true });
});

test('missingBinaryMessage names the setting or PATH, one line, no stack', () => {
  assert.equal(missingBinaryMessage('/opt/agentd'), 'agentd: the agentd binary was not found (agentd.path ("/opt/agentd") is not an executable file).');
  assert.match(missingBinaryMessage(''), /none on PATH, and agentd\.path is not set/);
  assert.ok(!missingBinaryMessage('').includes('\n'));
});

test('serverCommand starts `agentd serve` over stdio: it answers initialize, with no --stdio added', async () => {
  const bin = process.env.AGENTD_BIN;
  assert.ok(bin && fs.existsSync(bin), `AGENTD_BIN (${bin}) must name the built agentd binary (scripts/test.sh builds it)`);
  const cmd = serverCommand(bin, 'info');
  assert.equal(cmd.transport, undefined, 'a transport makes vscode-languageclient append --stdio');
  assert.deepEqual(cmd.args, ['serve', '--log-level', 'info']);
  const { spawn } = await import('node:child_process');
  const rpc = await import('vscode-jsonrpc/node');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-serve-'));
  // The state dir is never inside the workspace (agentd refuses it at initialize).
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-state-'));
  const p = spawn(cmd.command, [...cmd.args, '--state-dir', state], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  p.stderr.on('data', (b) => { stderr += b; });
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(p.stdout), new rpc.StreamMessageWriter(p.stdin));
  conn.listen();
  try {
    const res = await conn.sendRequest<{ serverInfo?: { name: string } }>('initialize', { processId: process.pid, rootUri: `file://${root}`, capabilities: {} });
    assert.equal(res.serverInfo?.name, 'agentd', `initialize answer: ${JSON.stringify(res)}; stderr: ${stderr}`);
  } finally {
    conn.dispose();
    p.kill();
  }
});
