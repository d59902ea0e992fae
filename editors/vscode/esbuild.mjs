// Bundles the extension (out/extension.js) and, with --tests, the unit tests (out/test/*.test.js).
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

if (tests) {
  const entries = readdirSync('test/unit').filter((f) => f.endsWith('.test.ts')).map((f) => `test/unit/${f}`);
  await esbuild.build({
    entryPoints: entries, bundle: true, platform: 'node', format: 'cjs', target: 'node20',
    outdir: 'out/test', sourcemap: 'inline', logLevel: 'warning',
  });
} else {
  await esbuild.build({
    entryPoints: ['src/extension.ts'], bundle: true, platform: 'node', format: 'cjs', target: 'node20',
    external: ['vscode'], outfile: 'out/extension.js', minify: production, sourcemap: !production,
    // Activation is measured from here: the bundle's load counts too.
    banner: { js: '"use strict";var __agentdLoadStart = performance.now();' },
    logLevel: 'warning',
  });
}
