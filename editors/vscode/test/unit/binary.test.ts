import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findBinary, missingBinaryMessage } from '../../src/binary';

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

test('missingBinaryMessage names the setting or PATH, one line, no stack', () => {
  assert.equal(missingBinaryMessage('/opt/agentd'), 'agentd: the agentd binary was not found (agentd.path ("/opt/agentd") is not an executable file).');
  assert.match(missingBinaryMessage(''), /no agentd on PATH and agentd\.path is not set/);
  assert.ok(!missingBinaryMessage('').includes('\n'));
});
