// The chat view's webview: draws the state the extension posts ({type: 'state', state}, see
// src/chat/model.ts ViewState) and posts the user's actions back. No framework, no innerHTML of
// the daemon's text: every text goes in through textContent.
(function () {
  const vscode = acquireVsCodeApi();
  const $ = (id) => document.getElementById(id);
  const text = $('text');
  let mode = (vscode.getState() || {}).mode || 'plan';
  /** What the user typed in the Revise boxes and which outputs are unfolded: kept across redraws. */
  const revise = new Map();
  const unfolded = new Set();
  let last;

  function el(tag, cls, content) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined) e.textContent = content;
    return e;
  }
  function button(label, cls, title, onClick) {
    const b = el('button', cls, label);
    if (title) b.title = title;
    b.addEventListener('click', onClick);
    return b;
  }
  const post = (m) => vscode.postMessage(m);
  window.agentdChat = { post }; // for media/chat-images.js (pasted images)

  function setMode(m) {
    mode = m;
    vscode.setState({ ...(vscode.getState() || {}), mode });
    $('modePlan').setAttribute('aria-checked', String(m === 'plan'));
    $('modeAsk').setAttribute('aria-checked', String(m === 'ask'));
    text.placeholder = m === 'plan'
      ? 'Ask agentd to change something (Enter sends, Shift+Enter: new line)'
      : 'Ask a question about the code: an answer, no plan (Enter sends)';
  }
  function send() {
    const t = text.value;
    if (!t.trim()) return;
    // Refused while a turn runs: the text stays for later, the reason is shown.
    if (last && last.busy) { showNotice({ text: 'Not sent: ' + last.busy, level: 'warn' }); return; }
    post({ type: 'send', mode, text: t });
    text.value = '';
  }
  // "#" typed at the start of a word (or "#file:") opens the context picker; the "#…" typed is
  // taken out of the message once a chip is added from it.
  let hashPending = false;
  text.addEventListener('input', (e) => {
    if (hashPending || e.inputType !== 'insertText' || e.data !== '#') return;
    const before = text.value.slice(0, text.selectionStart);
    if (!/(^|\s)#$/.test(before)) return;
    hashPending = true;
    post({ type: 'addContext', hash: true });
  });
  function hashDone(added) {
    hashPending = false;
    if (!added) return;
    const at = text.selectionStart;
    const before = text.value.slice(0, at).replace(/(^|\s)#[\w:./-]*$/, '$1');
    text.value = before + text.value.slice(at);
    text.setSelectionRange(before.length, before.length);
    text.focus();
  }
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  $('send').addEventListener('click', send);
  $('stop').addEventListener('click', () => post({ type: 'stop' }));
  $('modePlan').addEventListener('click', () => setMode('plan'));
  $('modeAsk').addEventListener('click', () => setMode('ask'));
  $('new').addEventListener('click', () => post({ type: 'new' }));
  $('model').addEventListener('click', () => post({ type: 'model' }));
  $('addContext').addEventListener('click', () => post({ type: 'addContext' }));
  $('history').addEventListener('click', () => post({ type: 'history' }));
  setMode(mode);

  function showNotice(n) {
    const box = $('notice');
    box.hidden = !n;
    if (!n) return;
    box.textContent = n.text;
    box.className = 'notice ' + n.level;
  }

  const statusClass = (s) => 'status s-' + String(s || '').replace(/[^a-z]/g, '');

  function drawHistory(list) {
    const box = $('historyList');
    box.hidden = !list;
    box.replaceChildren();
    if (!list) return;
    const head = el('div', 'hhead', 'Chats of this workspace');
    head.append(button('Close', 'link', 'Close the list', () => post({ type: 'closeHistory' })));
    box.append(head);
    if (!list.length) box.append(el('div', 'muted', 'No chats yet.'));
    for (const c of list) {
      const row = el('div', 'chat' + (last && c.chatId === last.chatId ? ' current' : ''));
      row.dataset.chat = c.chatId;
      const open = button(c.title || '(untitled)', 'link open', 'Open this chat', () => post({ type: 'open', chatId: c.chatId }));
      row.append(open, el('span', 'muted', ` ${c.turns} turn${c.turns === 1 ? '' : 's'}${c.updatedAt ? ' · ' + new Date(c.updatedAt).toLocaleString() : ''}`));
      row.append(button('Rename', 'link', 'Rename this chat', () => post({ type: 'rename', chatId: c.chatId })));
      row.append(button('Delete', 'link danger', 'Delete this chat (asks first)', () => post({ type: 'delete', chatId: c.chatId })));
      box.append(row);
    }
  }

  function drawStep(t, s) {
    const li = el('li', 'step');
    li.dataset.step = s.id;
    const line = el('div', 'stepline');
    if (s.status) line.append(el('span', statusClass(s.status), s.status));
    line.append(el('code', 'sid', s.id), el('span', 'tool', s.tool ? `[${s.tool}]` : ''), el('span', 'words', s.words));
    li.append(line);
    if (s.error) li.append(el('div', 'error', s.error));
    if (s.output) {
      const key = `${t.index}/${s.id}`;
      const d = el('details', 'output');
      d.open = unfolded.has(key);
      d.addEventListener('toggle', () => { if (d.open) unfolded.add(key); else unfolded.delete(key); });
      d.append(el('summary', '', 'output'), el('pre', '', s.output));
      li.append(d);
    }
    return li;
  }

  /** The approval a turn waits for: what runs, the options in the modal's order; nothing is
   *  chosen for the user (no default here: a click answers). */
  function drawApproval(a) {
    const box = el('section', 'approval');
    box.dataset.approval = a.id;
    box.setAttribute('role', 'alertdialog');
    box.append(el('div', 'amsg', a.message.replace(/^agentd: /, '')), el('pre', 'adetail', a.detail));
    const row = el('div', 'actions');
    for (const b of a.buttons) {
      const allow = b.kind.startsWith('allow');
      row.append(button(b.title, (allow ? 'allow' : 'reject') + ' opt-' + b.kind, allow ? 'Let it run' : 'It does not run', () => post({ type: 'approve', id: a.id, optionId: b.optionId })));
    }
    box.append(row);
    return box;
  }

  function drawTurn(t, busy) {
    const box = el('article', 'turn' + (t.undone ? ' undone' : ''));
    box.dataset.turn = String(t.index);
    box.append(el('div', 'request', t.request));
    if (t.tokens) box.append(el('div', 'muted tokens', t.tokens));
    if (t.kind === 'question') {
      const a = el('div', 'answer', t.answer || (t.streaming ? '…' : ''));
      box.append(a);
      if (t.read && t.read.length) {
        const d = el('details', 'read');
        d.append(el('summary', '', `read ${t.read.length} item${t.read.length === 1 ? '' : 's'}`));
        const ul = el('ul');
        for (const r of t.read) ul.append(el('li', '', r));
        d.append(ul);
        box.append(d);
      }
      if (t.status && t.status !== 'answered' && t.status !== 'completed') box.append(el('div', statusClass(t.status), t.status));
      if (t.approval) box.append(drawApproval(t.approval));
      return box;
    }
    if (!t.plan) {
      box.append(el('div', 'muted working', t.status === 'planning' ? 'making a plan…' : 'no plan'));
      if (t.approval) box.append(drawApproval(t.approval));
      return box;
    }
    const card = el('section', 'plan');
    const head = el('div', 'planhead');
    head.append(el('span', 'ptitle', t.plan.title));
    head.append(el('span', statusClass(t.undone ? 'undone' : t.status), t.undone ? 'undone' : t.status));
    card.append(head);
    if (t.plan.request && t.plan.request !== t.request) card.append(el('div', 'muted', 'Request: ' + t.plan.request));
    const ol = el('ol', 'steps');
    for (const s of t.steps) ol.append(drawStep(t, s));
    card.append(ol);
    const acts = el('div', 'actions');
    if (t.canRun) acts.append(button('Run', 'primary run', 'Run this plan (your review and approval settings)', () => post({ type: 'run', turn: t.index })));
    if (t.plan) acts.append(button('Edit', 'edit', 'Open the plan in the Plan view to edit its steps', () => post({ type: 'edit', turn: t.index })));
    if (t.canUndo) acts.append(button('Undo this turn', 'undo', 'Take back what this turn\'s run wrote (your own lines stay)', () => post({ type: 'undo', turn: t.index })));
    card.append(acts);
    if (t.canRevise) {
      const form = el('form', 'revise');
      const input = el('input');
      input.type = 'text';
      input.placeholder = 'Revise: say what to change in the plan';
      input.setAttribute('aria-label', 'Revise the plan');
      input.value = revise.get(t.index) || '';
      input.addEventListener('input', () => revise.set(t.index, input.value));
      form.append(input, button('Revise', 'revisebtn', 'Make the plan again with these words (agentd/plan/regenerate)', () => {}));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        if (!input.value.trim()) return;
        if (busy) { showNotice({ text: 'Not sent: ' + busy, level: 'warn' }); return; }
        post({ type: 'revise', turn: t.index, feedback: input.value });
        revise.delete(t.index);
        input.value = '';
      });
      card.append(form);
    }
    box.append(card);
    if (t.approval) box.append(drawApproval(t.approval));
    if (t.failure) {
      const d = el('details', 'failure');
      d.append(el('summary', '', 'what failed'), el('pre', '', t.failure));
      box.append(d);
    }
    if (t.changes.length) {
      const ch = el('section', 'changes');
      ch.append(el('div', 'chead', `${t.changes.length} file${t.changes.length === 1 ? '' : 's'} changed`));
      for (const f of t.changes) {
        const row = el('div', 'file');
        row.dataset.uri = f.uri;
        row.append(button(f.rel, 'link diff', 'Open the inline diff of this file', () => post({ type: 'diff', uri: f.uri, changeId: f.changeId, turn: t.index })));
        row.append(el('span', 'muted', f.words));
        if (f.open > 0) {
          row.append(button('Accept', 'accept', 'Accept this file\'s open changes', () => post({ type: 'accept', uri: f.uri, changeId: f.changeId, turn: t.index })));
          row.append(button('Reject', 'reject', 'Reject this file\'s open changes', () => post({ type: 'reject', uri: f.uri, changeId: f.changeId, turn: t.index })));
        }
        ch.append(row);
      }
      box.append(ch);
    }
    if (t.review && t.review.length) {
      const d = el('details', 'reviewed');
      d.append(el('summary', '', 'review'));
      for (const r of t.review) d.append(el('div', '', r));
      box.append(d);
    }
    return box;
  }

  function draw(s) {
    last = s;
    $('title').textContent = s.title;
    drawHistory(s.history);
    const main = $('turns');
    const stick = main.scrollHeight - main.scrollTop - main.clientHeight < 40;
    main.replaceChildren();
    if (!s.turns.length) {
      const empty = el('div', 'empty');
      empty.append(el('p', '', 'Say what to change: agentd makes a plan you can read, revise and run, then shows what changed, file by file, with undo per turn.'),
        el('p', 'muted', 'Ask answers a question about the code without a plan. Earlier chats: History.'));
      main.append(empty);
    }
    for (const t of s.turns) main.append(drawTurn(t, s.busy));
    if (stick) main.scrollTop = main.scrollHeight;
    showNotice(s.notice);
    $('condensed').hidden = !s.condensed;
    $('condensed').textContent = s.condensed || '';
    $('stop').hidden = !s.working;
    $('model').textContent = s.model || '';
    const chips = $('chips');
    chips.replaceChildren();
    for (const c of s.chips) {
      const chip = el('span', 'chip' + (c.auto ? ' auto' : '') + (c.bad ? ' bad' : ''));
      chip.dataset.chip = c.key;
      chip.title = c.title;
      if (c.thumb) { const img = el('img', 'cthumb'); img.src = c.thumb; img.height = 20; img.alt = ''; chip.append(img); }
      chip.append(el('span', 'clabel', c.label), el('span', 'csize', c.size));
      chip.append(button('×', 'link cremove', 'Do not send this', () => post({ type: 'chipRemove', key: c.key })));
      chips.append(chip);
    }
    $('context').textContent = s.chips.length ? '' : 'no context';
    $('send').title = s.busy ? s.busy : 'Send (Enter)';
    document.body.classList.toggle('busy', !!s.busy);
  }

  window.addEventListener('message', (e) => {
    const m = e.data;
    if (m && m.type === 'state') draw(m.state);
    if (m && m.type === 'hashDone') hashDone(m.added);
  });
  post({ type: 'ready' });
})();
