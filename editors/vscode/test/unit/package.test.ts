// The packaged .vsix keeps every file package.json points at: .vscodeignore drops everything
// but what it names, so an icon added to package.json and not to .vscodeignore is a blank
// square in the activity bar (seen walking the chat view's own container).
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ext = process.cwd();

test('every media file package.json names is kept by .vscodeignore', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8'));
  const kept = new Set(fs.readFileSync(path.join(ext, '.vscodeignore'), 'utf8').split('\n')
    .filter((l) => l.startsWith('!')).map((l) => l.slice(1).trim()));
  const named: string[] = [];
  if (typeof pkg.icon === 'string') named.push(pkg.icon);
  for (const list of Object.values(pkg.contributes?.viewsContainers ?? {}) as { icon?: string }[][]) {
    for (const c of list) if (c.icon && !c.icon.startsWith('$(')) named.push(c.icon);
  }
  assert.ok(named.length >= 2, `found the icons: ${named.join(', ')}`);
  for (const f of named) {
    assert.ok(fs.existsSync(path.join(ext, f)), `${f} exists`);
    assert.ok(kept.has(f), `${f} is named in .vscodeignore (else the .vsix leaves it out)`);
  }
});
