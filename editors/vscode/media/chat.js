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
    if (last) $('send').textContent = last.queues && m === 'plan' ? 'Queue' : 'Send';
    text.placeholder = m === 'plan'
      ? 'Ask agentd to change something (Enter sends, Shift+Enter: new line)'
      : 'Ask a question about the code: an answer, no plan (Enter sends)';
  }
  function send() {
    const t = text.value;
    if (!t.trim()) return;
    // While a turn is going the message is queued (last.queues); where the daemon has no queue it
    // is refused: the text stays for later, the reason is shown.
    if (last && last.busy && !(last.queues && mode === 'plan')) { showNotice({ text: 'Not sent: ' + last.busy, level: 'warn' }); return; }
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
  // Guide: the message goes to the going turn's agent as guidance (the daemon says whether it took
  // it, or queued it instead, and why).
  $('guide').addEventListener('click', () => {
    const t = text.value;
    if (!t.trim()) return;
    post({ type: 'send', mode, text: t, guide: true });
    text.value = '';
  });
  $('stop').addEventListener('click', () => post({ type: 'stop' }));
  $('modePlan').addEventListener('click', () => setMode('plan'));
  $('modeAsk').addEventListener('click', () => setMode('ask'));
  $('new').addEventListener('click', () => post({ type: 'new' }));
  $('model').addEventListener('click', () => post({ type: 'model' }));
  $('addContext').addEventListener('click', () => post({ type: 'addContext' }));
  $('history').addEventListener('click', () => post({ type: 'history' }));
  $('cancelEdit').addEventListener('click', () => post({ type: 'cancelEdit' }));
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
      row.append(open);
      if (c.forkedFrom) {
        const from = list.find((x) => x.chatId === c.forkedFrom.chatId);
        row.append(el('span', 'branchmark', `branch of ${from ? (from.title || '(untitled)') : c.forkedFrom.chatId} at turn ${c.forkedFrom.turn + 1}`));
      }
      row.append(el('span', 'muted', ` ${c.turns} turn${c.turns === 1 ? '' : 's'}${c.updatedAt ? ' · ' + new Date(c.updatedAt).toLocaleString() : ''}`));
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

  /** A restore's dry run: what it takes back, each file's diff, and the choices. */
  function drawPreview(p) {
    const box = el('section', 'preview');
    box.setAttribute('role', 'alertdialog');
    if (p.otherChat) box.append(el('div', 'muted', `In the chat "${p.otherChat}":`));
    for (const l of p.lines) box.append(el('div', 'pline', l));
    p.diffs.forEach((d, i) => {
      const det = el('details', 'pdiff' + (d.conflict ? ' conflict' : ''));
      det.open = true;
      const sum = el('summary', '', d.conflict ? `${d.path}: conflict, what "overwrite" writes ` : d.path + ' ');
      sum.append(button('Open diff', 'link opendiff', 'The file now against what the restore writes, in the diff editor', (e) => { e.preventDefault(); post({ type: 'previewDiff', index: i }); }));
      det.append(sum);
      const pre = el('pre', 'diff');
      for (const line of d.diff.replace(/\n$/, '').split('\n')) {
        const c = line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : '';
        pre.append(el('div', c, line));
      }
      det.append(pre);
      box.append(det);
    });
    const row = el('div', 'actions');
    for (const c of p.choices) row.append(button(c.title, 'choice' + (c.onConflict === '' ? ' primary' : '') + ' c-' + (c.onConflict || 'go'), '', () => post({ type: 'restoreChoice', onConflict: c.onConflict })));
    box.append(row);
    return box;
  }

  function restoreButton(t) {
    return button('Restore to before this turn…', 'restore', 'Files, conversation or both: a dry run shows what changes first, and the restore can be undone', () => post({ type: 'restore', turn: t.index }));
  }

  function drawTurn(t, busy) {
    const box = el('article', 'turn' + (t.undone ? ' undone' : '') + (t.rewound ? ' rewound' : ''));
    box.dataset.turn = String(t.index);
    const req = el('div', 'request', t.request);
    if (!t.streaming) req.append(button('Edit message', 'link editmsg', 'Edit this message: sending it branches the chat here (this chat stays)', () => post({ type: 'editMessage', turn: t.index })));
    box.append(req);
    if (t.rewound) {
      const r = el('div', 'rewoundline', 'rewound: not told to the model');
      r.append(button('Bring back', 'link unrewind', 'Tell the model this turn again (agentd/chat/unrewind)', () => post({ type: 'unrewind', turn: t.index })));
      box.append(r);
    }
    if (t.wayBack) {
      const w = el('div', 'wayback', t.wayBack);
      w.append(button('Undo the restore', 'unrestore', 'Bring back what the restore took (files and conversation)', () => post({ type: 'unrestore' })));
      box.append(w);
    }
    if (t.preview) box.append(drawPreview(t.preview));
    if (t.tokens) box.append(el('div', 'muted tokens', t.tokens));
    if (t.guidance && t.guidance.length) {
      const ul = el('ul', 'guidance');
      for (const g of t.guidance) ul.append(el('li', '', g));
      box.append(ul);
    }
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
      if (!t.streaming) { const acts = el('div', 'actions'); acts.append(restoreButton(t)); box.append(acts); }
      return box;
    }
    if (!t.plan) {
      box.append(el('div', 'muted working', t.status === 'planning' ? 'making a plan…' : t.status === 'cancelled' ? 'planning stopped: no plan' : 'no plan'));
      if (t.activity && t.activity.length) {
        const ul = el('ul', 'activity');
        for (const a of t.activity) ul.append(el('li', '', a));
        box.append(ul);
      }
      if (t.failure) box.append(el('div', 'error', t.failure));
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
    acts.append(restoreButton(t));
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
    const bo = $('branchOf');
    bo.hidden = !s.branchOf;
    bo.replaceChildren();
    if (s.branchOf) {
      bo.append('branch of ', button(s.branchOf.title || '(untitled)', 'link gotoOrigin', 'Open the chat this one branched from', () => post({ type: 'open', chatId: s.branchOf.chatId })), ` at turn ${s.branchOf.turn}`);
    }
    const br = $('branches');
    br.hidden = !s.branches.length;
    br.replaceChildren();
    if (s.branches.length) {
      br.append(`branch${s.branches.length === 1 ? '' : 'es'}: `);
      for (const b of s.branches) br.append(button(`${b.title || '(untitled)'} (at turn ${b.turn})`, 'link gotoBranch', 'Open this branch', () => post({ type: 'open', chatId: b.chatId })));
    }
    $('editing').hidden = !s.editing;
    $('editingText').textContent = s.editing ? `Editing turn ${s.editing.turn}'s message: sending it branches the chat there (this chat stays).` : '';
    $('preview').hidden = !s.preview;
    $('preview').replaceChildren(...(s.preview ? [drawPreview(s.preview)] : []));
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
    if (s.queued.length) {
      const q = el('section', 'queue');
      q.append(el('div', 'qhead', `Queued (${s.queued.length}): planned in this order when the going turn ends`));
      for (const m of s.queued) {
        const row = el('div', 'queued');
        row.dataset.queue = m.queueId;
        row.append(el('span', 'qtext', m.request));
        if (m.now) row.append(el('span', 'muted', 'next'));
        row.append(button('Edit', 'link qedit', 'Change the words of this queued message', () => post({ type: 'queueEdit', queueId: m.queueId })));
        row.append(button('Send now', 'link qnow', 'Stop the going turn and plan this message next', () => post({ type: 'queueNow', queueId: m.queueId })));
        row.append(button('Remove', 'link danger qremove', 'Take it out of the queue: it is not planned', () => post({ type: 'unqueue', queueId: m.queueId })));
        q.append(row);
      }
      main.append(q);
    }
    if (stick) main.scrollTop = main.scrollHeight;
    showNotice(s.notice);
    $('condensed').hidden = !s.condensed;
    $('condensed').textContent = s.condensed || '';
    $('stop').hidden = !s.stoppable;
    $('stop').title = s.working ? 'Stop ' + s.working.replace(/…$/, '') : 'Stop the going turn of this chat (its planning, or its run)';
    $('guide').hidden = !s.queues;
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
    $('send').title = s.queues ? 'Queue (Enter): planned when the going turn ends' : s.busy ? s.busy : 'Send (Enter)';
    $('send').textContent = s.queues && mode === 'plan' ? 'Queue' : 'Send';
    document.body.classList.toggle('busy', !!s.busy && !s.queues);
  }

  window.addEventListener('message', (e) => {
    const m = e.data;
    if (m && m.type === 'state') draw(m.state);
    if (m && m.type === 'hashDone') hashDone(m.added);
    if (m && m.type === 'setInput') {
      text.value = m.text;
      if (m.mode) setMode(m.mode);
      text.focus();
      text.setSelectionRange(text.value.length, text.value.length);
    }
  });
  post({ type: 'ready' });
})();
