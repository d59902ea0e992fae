// The bundled binary's place and order, and the protocol-version refusal (binary.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { bundledPath, downFromStart, exeName, findBinary, PROTOCOL_VERSION, protocolProblem } from '../../src/binary';

test('bundledPath is bin/<platform>-<arch>/agentd[.exe], as vsce names the targets', () => {
  assert.equal(bundledPath('/ext', 'linux', 'x64'), path.join('/ext', 'bin', 'linux-x64', 'agentd'));
  assert.equal(bundledPath('/ext', 'win32', 'arm64'), path.join('/ext', 'bin', 'win32-arm64', 'agentd.exe'));
  assert.equal(bundledPath('/ext', 'darwin', 'arm64'), path.join('/ext', 'bin', 'darwin-arm64', 'agentd'));
  assert.equal(exeName('win32'), 'agentd.exe');
});

test('findBinary: agentd.path first, then the bundled binary, then PATH', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-bundle-'));
  const ext = path.join(dir, 'ext');
  const onPath = path.join(dir, 'path');
  fs.mkdirSync(onPath, { recursive: true });
  const pathBin = path.join(onPath, exeName());
  fs.writeFileSync(pathBin, '#!/bin/sh\n', { mode: 0o755 });
  const setting = path.join(dir, 'setting-agentd');
  fs.writeFileSync(setting, '#!/bin/sh\n', { mode: 0o755 });
  // No bundle: the setting, else PATH.
  assert.equal(findBinary(setting, onPath, ext), setting);
  assert.equal(findBinary('', onPath, ext), pathBin);
  // A bundle wins over PATH; the setting, the user's choice, over the bundle (issue 35 point 6:
  // the bundled binary used to win, and agentd.path was ignored).
  const b = bundledPath(ext);
  fs.mkdirSync(path.dirname(b), { recursive: true });
  fs.writeFileSync(b, '#!/bin/sh\n', { mode: 0o755 });
  assert.equal(findBinary(setting, onPath, ext), setting);
  assert.equal(findBinary('', onPath, ext), b);
  assert.equal(findBinary('', '', ext), b);
  fs.rmSync(dir, { recursive: true });
});

test('protocolProblem refuses any version but 2, naming both and the fix', () => {
  assert.equal(PROTOCOL_VERSION, 2);
  assert.equal(protocolProblem(2, '/x/agentd'), undefined);
  const old = protocolProblem(1, '/x/agentd');
  assert.ok(old, 'protocol 1 is refused');
  assert.match(old, /speaks protocol 2, but \/x\/agentd speaks protocol 1/);
  assert.match(old, /update agentd/);
  assert.match(protocolProblem(undefined, 'agentd') ?? '', /no protocol version/);
  assert.match(protocolProblem(3, 'agentd') ?? '', /protocol 3: update the agentd extension/);
  assert.ok(!(old).includes('\n'));
});

test('downFromStart: a workspace refused as too broad offers the agentd.allowBroadWorkspace setting', () => {
  // The daemon's words for a home-folder workspace (rpc/lifecycle.go), as the client library reports them.
  const refused = "invalid params: rootUri: the workspace /home/me is your home directory: too broad a workspace; agentd would walk and snapshot everything below it, and a plan could change any project in it. Open the project's own folder, or confirm this one in the editor's settings (VS Code: agentd.allowBroadWorkspace; Neovim: allow_broad_workspace = true; initializationOptions.allowBroadWorkspace)";
  const d = downFromStart(refused);
  assert.equal(d.fix, 'setting');
  assert.equal(d.setting, 'agentd.allowBroadWorkspace');
  assert.ok(d.message.startsWith('agentd: the workspace /home/me is your home directory'), d.message);
  assert.doesNotMatch(d.message, /--workspace DIR/);
  // Anything else is offered a restart, and a message already worded by the extension is kept whole.
  assert.deepEqual(downFromStart('spawn ENOENT'), { message: 'agentd: the daemon did not start: spawn ENOENT', fix: 'restart' });
  assert.equal(downFromStart('agentd: protocol 1, want 2').message, 'agentd: protocol 1, want 2');
});
