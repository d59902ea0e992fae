// Drives `agentd serve` with vscode-languageserver-protocol (the library VS
// Code's language client is built on): initialize, open a document, load
// and run a plan, answer an approval, accept a change through
// workspace/applyEdit, save before the command step, and shut down.
// Prints "N passed, N failed"; exits 1 if anything failed.
//
// usage: node client-test.js AGENTD_BINARY
'use strict';

const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { pathToFileURL } = require('url');
const lsp = require('vscode-languageserver-protocol/node');

let lastStderr = () => '';
let lastEvents = () => [];
let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
    console.log('ok   ' + name);
  } else {
    failed++;
    console.log('FAIL ' + name + (detail !== undefined ? ': ' + JSON.stringify(detail) : ''));
  }
}

function waitFor(pred, what, ms) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      const v = pred();
      if (v) return resolve(v);
      if (Date.now() - t0 > ms) return reject(new Error('timed out waiting for ' + what));
      setTimeout(tick, 10);
    };
    tick();
  });
}

async function main() {
  const bin = process.argv[2];
  if (!bin) throw new Error('usage: node client-test.js AGENTD_BINARY');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentd-node-'));
  const root = path.join(tmp, 'ws');
  const stateDir = path.join(tmp, 'state');
  fs.mkdirSync(root);
  const file = path.join(root, 'greeting.txt');
  fs.writeFileSync(file, 'hello world\nsecond line\n');
  const uri = pathToFileURL(file).href;

  const child = cp.spawn(bin, ['serve', '--state-dir', stateDir, '--log-level', 'debug', '--log-file', path.join(tmp, 'agentd.log')],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  lastStderr = () => stderr.slice(-6000);
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));

  const conn = lsp.createProtocolConnection(new lsp.StreamMessageReader(child.stdout), new lsp.StreamMessageWriter(child.stdin));
  const events = [];
  lastEvents = () => events;
  const approvals = [];
  let buffer = fs.readFileSync(file, 'utf8');
  let version = 1;
  let applyEdits = 0;
  let saves = 0;

  conn.onNotification('agentd/run/didChange', (p) => events.push(p));
  conn.onNotification('$/progress', () => {});
  conn.onRequest('window/workDoneProgress/create', () => null);
  conn.onRequest('agentd/approval/request', (p) => {
    approvals.push(p);
    return { outcome: 'selected', optionId: 'allow_once' };
  });
  conn.onRequest('window/showMessageRequest', (p) => {
    console.log('showMessageRequest: ' + p.message);
    return { title: 'Abort' };
  });
  conn.onRequest('workspace/applyEdit', async (p) => {
    applyEdits++;
    const dc = p.edit.documentChanges[0];
    for (const e of dc.edits) {
      const lines = buffer.split('\n');
      const off = (pos) => lines.slice(0, pos.line).reduce((n, l) => n + l.length + 1, 0) + pos.character;
      buffer = buffer.slice(0, off(e.range.start)) + e.newText + buffer.slice(off(e.range.end));
      version++;
      conn.sendNotification('textDocument/didChange', {
        textDocument: { uri, version },
        contentChanges: [{ range: e.range, text: e.newText }],
      });
    }
    return { applied: true };
  });
  conn.onRequest('agentd/documents/save', (p) => {
    saves++;
    fs.writeFileSync(file, buffer);
    conn.sendNotification('textDocument/didSave', { textDocument: { uri } });
    return { saved: p.uris };
  });
  conn.listen();

  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(root).href,
    capabilities: { window: { workDoneProgress: true }, workspace: { applyEdit: true } },
    initializationOptions: { review: 'before', clientFeatures: { approvalRequest: true, changeReview: true } },
  });
  check('initialize answers with serverInfo agentd', init.serverInfo && init.serverInfo.name === 'agentd', init.serverInfo);
  check('initialize announces incremental sync', init.capabilities.textDocumentSync.change === 2, init.capabilities);
  conn.sendNotification('initialized', {});
  conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'plaintext', version, text: buffer } });

  // An unsaved edit in the editor: the plan must see it.
  const unsaved = { range: { start: { line: 1, character: 0 }, end: { line: 1, character: 6 } }, text: 'unsaved' };
  buffer = 'hello world\nunsaved line\n';
  version++;
  conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [unsaved] });

  const plan = await conn.sendRequest('agentd/plan/load', {
    plan: {
      title: 'node client test',
      steps: [
        { id: 'edit', tool: 'edit_file', args: { path: 'greeting.txt', edits: [{ oldText: 'hello world', newText: 'hello agentd' }] } },
        { id: 'show', tool: 'run_command', args: { command: 'cat greeting.txt' }, dependsOn: ['edit'] },
      ],
    },
  });
  check('plan/load returns an id and version 1', typeof plan.id === 'string' && plan.version === 1, plan);

  const started = await conn.sendRequest('agentd/run/start', { planId: plan.id, options: { review: 'before' } });
  check('run/start returns a runId', typeof started.runId === 'string', started);

  const proposed = await waitFor(() => events.find((e) => e.event.type === 'changeProposed'), 'changeProposed', 20000);
  const cs = await conn.sendRequest('agentd/changes/get', { changeId: proposed.event.changeId });
  check('the change set has one pending hunk', cs.files.length === 1 && cs.files[0].hunks.length === 1 && cs.status === 'pending', cs);
  check('the change was computed against the unsaved buffer', (cs.files[0].hunks[0].oldText || '').includes('unsaved line'), cs.files[0].hunks[0]);

  const res = await conn.sendRequest('agentd/changes/resolve', {
    changeId: cs.id,
    decisions: [{ uri: cs.files[0].uri, hunkId: cs.files[0].hunks[0].id, action: 'accept' }],
  });
  check('resolve applies the hunk', res.applied.length === 1 && res.conflicts.length === 0 && res.status === 'accepted', res);
  check('the accepted hunk went through workspace/applyEdit', applyEdits === 1 && buffer === 'hello agentd\nunsaved line\n', buffer);

  const finished = await waitFor(() => events.find((e) => e.event.type === 'runFinished'), 'runFinished', 60000);
  check('the command step asked for approval', approvals.length === 1 && approvals[0].stepId === 'show' && approvals[0].options.length === 4, approvals);
  check('buffers were saved before the command ran', saves >= 1, saves);
  check('the run completed', finished.state.status === 'completed', finished.state);
  const st = await conn.sendRequest('agentd/run/get', { runId: started.runId });
  const show = (st.steps || []).find((s) => s.id === 'show');
  check('the command saw the saved file', show && JSON.stringify(show.output || '').includes('hello agentd'), show);
  check('the file on disk has the change', fs.readFileSync(file, 'utf8') === 'hello agentd\nunsaved line\n', fs.readFileSync(file, 'utf8'));

  await conn.sendRequest('shutdown');
  conn.sendNotification('exit');
  const code = await exited;
  check('agentd exits with 0 after shutdown and exit', code === 0, code);
  conn.dispose();
  if (failed > 0) {
    console.log('--- agentd stderr ---\n' + stderr.slice(-4000));
  }
  if (failed === 0) fs.rmSync(tmp, { recursive: true, force: true });
}

main()
  .catch((err) => {
    failed++;
    console.log('FAIL ' + (err && err.message ? err.message : String(err)));
    if (lastStderr()) console.log('--- agentd stderr ---\n' + lastStderr());
    console.log('events: ' + JSON.stringify(lastEvents().map((e) => [e.event.type, e.event.stepId, e.event.error || e.event.text || ''])));
  })
  .finally(() => {
    console.log(passed + ' passed, ' + failed + ' failed');
    process.exit(failed > 0 ? 1 : 0);
  });
