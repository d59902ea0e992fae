// CPU time of the processes of an end-to-end run, by role (Chromium's renderer, its other
// processes, code-server's extension host and its other processes, the agentd daemon), read from
// /proc: where the machine's time goes while the user types.
import * as fs from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

function procs() {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      // pid (comm) state ppid ... utime(14) stime(15): fields after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ');
      out.push({ pid: +d, ppid: +rest[1], ticks: +rest[11] + +rest[12], cmd });
    } catch { /* gone */ }
  }
  return out;
}

function role(p) {
  if (/agentd(\s|$)/.test(p.cmd) && / serve\b/.test(p.cmd) || /\/agentd serve/.test(p.cmd)) return 'agentd';
  if (/fakemodel/.test(p.cmd)) return 'fakemodel';
  if (/chrom/.test(p.cmd)) return /--type=renderer/.test(p.cmd) ? 'renderer' : 'browserOther';
  if (/extensionHost|--type=extensionHost/.test(p.cmd)) return 'extensionHost';
  return 'codeServerOther';
}

/** sample returns the CPU ticks of the given roots (the test's own process: `driver`) and of
 *  every descendant, by role. */
export function sample(roots) {
  const all = procs();
  const kids = new Map();
  for (const p of all) { if (!kids.has(p.ppid)) kids.set(p.ppid, []); kids.get(p.ppid).push(p); }
  const byRole = {};
  const seen = new Set();
  const walk = (pid) => {
    for (const c of kids.get(pid) ?? []) {
      if (seen.has(c.pid)) continue;
      seen.add(c.pid);
      const r = role(c);
      byRole[r] = (byRole[r] ?? 0) + c.ticks;
      walk(c.pid);
    }
  };
  for (const r of roots) {
    const me = all.find((p) => p.pid === r);
    if (me && !seen.has(me.pid)) { seen.add(me.pid); byRole.driver = (byRole.driver ?? 0) + me.ticks; }
    walk(r);
  }
  return byRole;
}

/** diff is the CPU milliseconds by role between two samples. */
export function diff(a, b) {
  const out = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out[k] = ((b[k] ?? 0) - (a[k] ?? 0)) * TICK_MS;
  return out;
}
