// Bank (#/bank): the reclaims (in progress first) with each victim's timeline, the capacity
// leases with their approval, the GPU bank's ledger, a page at a time (?after=<seq>), newest
// first, and a chart of GPUs in use and on loan over time, replayed from the ledger.
import { h, num, table, fmtTime, link } from '../dom.js';
import { get, readAll } from '../api.js';
import { panel } from '../panel.js';
import { lineChart } from '../charts.js';

const LIMIT = 50;
const RECLAIMS = 100; // the most reclaims the page asks for

// A victim's steps, in order; each is shown when the API gives its time.
const STEPS = [['notice', 'notice'], ['checkpointRequested', 'checkpoint requested'], ['checkpointCompleted', 'checkpoint completed'],
  ['checkpointFailed', 'checkpoint failed'], ['stopped', 'stopped'], ['finished', 'finished'], ['released', 'released']];

// A span of virtual time: "2d 3h", "1h 5m", "3m 0s", "12s".
function dur(ms) {
  const t = Math.max(0, Math.round(ms / 1000));
  const [hh, mm, ss] = [Math.floor(t / 3600), Math.floor((t % 3600) / 60), t % 60];
  const [dd, hr] = [Math.floor(hh / 24), hh % 24];
  return dd ? `${dd}d ${hr}h` : hh ? `${hh}h ${mm}m` : mm ? `${mm}m ${ss}s` : `${ss}s`;
}
const inProgress = (r) => r.result === 'InProgress' || !r.ended;

// A victim: who, what it loses, and its timeline from the notice (times after it as +span);
// one not stopped, finished or released yet says how long since its notice (now: clock ms).
function victim(r, v, i, now) {
  const t0 = Date.parse(v.notice);
  const over = v.stopped || v.finished || v.released;
  return h('li', { 'data-testid': `reclaim-victim-${r.id}-${i}` },
    v.workload ? h('a', { href: link.workload(v.workload) }, v.workload) : h('span', { class: 'muted' }, `a workload of ${v.businessGroup || 'another group'}`),
    ` · ${v.businessGroup || '?'} · `, num(v.gpus), ` GPUs · ${v.class} · recompute loss `,
    num(v.recomputeLossGpuHours, { testid: `reclaim-loss-${r.id}-${i}` }), ' GPU-h',
    h('ol', { class: 'steps' }, STEPS.filter(([k]) => v[k]).map(([k, label], j) => h('li', { class: `step-${k}` }, `${label} `,
      h('time', { datetime: v[k], title: fmtTime(v[k]) }, j ? `+${dur(Date.parse(v[k]) - t0)}` : fmtTime(v[k]).slice(11)))),
    over ? null : h('li', { class: 'step-wait', 'data-testid': `reclaim-waiting-${r.id}-${i}` }, `waiting, ${dur(now - t0)} since the notice`)));
}

function reclaim(r, now) {
  const notice = Math.min(Date.parse(r.started), ...r.victims.map((v) => Date.parse(v.notice)));
  return h('article', { class: inProgress(r) ? 'reclaim open' : 'reclaim', 'data-testid': `reclaim-${r.id}` },
    h('div', {}, h('strong', {}, r.id), ' ', h('span', { class: `result-${r.result}`, 'data-testid': `reclaim-result-${r.id}` }, r.result),
      ' · lender ', h('a', { href: link.group(r.lender), 'data-testid': `reclaim-lender-${r.id}` }, r.lender),
      ' in ', h('a', { href: link.pool(r.pool), 'data-testid': `reclaim-pool-${r.id}` }, r.pool),
      ' needs ', num(r.demandGpus, { testid: `reclaim-demand-${r.id}` }), ' GPUs'),
    h('div', { class: 'note' }, fmtTime(r.started), ' → ', r.ended ? `${fmtTime(r.ended)} (${dur(Date.parse(r.ended) - Date.parse(r.started))})`
      : h('strong', { 'data-testid': `reclaim-since-${r.id}` }, `not over, ${dur(now - notice)} since the notice`)),
    h('ul', { class: 'victims' }, r.victims.map((v, i) => victim(r, v, i, now))));
}

// Where a lease's window stands at virtual time now.
function windowNow(l, now) {
  const start = l.spec.start ? Date.parse(l.spec.start) : null;
  const end = l.spec.end ? Date.parse(l.spec.end) : null;
  if (end !== null && now >= end) return 'over';
  if (start !== null && now < start) return `starts in ${dur(start - now)}`;
  return start === null ? 'from its approval' : 'open now';
}

// Step series from the ledger: GPUs in use per pool (UsageStarted/UsageEnded) and GPUs on
// loan in all pools (BorrowOpened/BorrowClosed), as [timeMs, total] after each change.
function replay(items) {
  const series = new Map();
  const bump = (name, t, d) => {
    const se = series.get(name) || { name, points: [], total: 0 };
    se.total += d;
    // Entries at the same instant (a loan closed and another opened) make one step.
    const last = se.points[se.points.length - 1];
    if (last && last[0] === t) last[1] = se.total;
    else se.points.push([t, se.total]);
    series.set(name, se);
  };
  for (const e of items) {
    if (e.kind === 'UsageStarted') bump(e.pool, e.timeMs, e.gpus);
    else if (e.kind === 'UsageEnded') bump(e.pool, e.timeMs, -e.gpus);
    else if (e.kind === 'BorrowOpened') bump('on loan (all pools)', e.timeMs, e.gpus);
    else if (e.kind === 'BorrowClosed') bump('on loan (all pools)', e.timeMs, -e.gpus);
  }
  return [...series.values()];
}

export default function bank(root, ctx) {
  // The whole ledger (for the chart and its newest seq) and the clock (ledger times are
  // virtual milliseconds since the clock's start).
  const whole = readAll('ledger', { signal: ctx.signal });
  const clock = get('clock', null, ctx.opts);
  whole.catch(() => {});
  clock.catch(() => {});
  const at = (start, ms) => fmtTime(new Date(start + ms).toISOString());

  const page = panel('Ledger', 'ledger', async () => {
    const q = ctx.query.get('after');
    const after = q !== null && /^\d+$/.test(q) ? Number(q) : Math.max(0, (await whole).next - LIMIT);
    const [res, c] = await Promise.all([get('ledger', { after, limit: LIMIT }, ctx.opts), clock]);
    const start = Date.parse(c.start);
    const nav = h('p', { class: 'pager' },
      h('a', { href: '#/bank' }, 'Newest'), ' ',
      res.more ? h('a', { href: `#/bank?after=${after + LIMIT}`, 'data-testid': 'ledger-newer' }, '‹ Newer') : null, ' ',
      after > 0 ? h('a', { href: `#/bank?after=${Math.max(0, after - LIMIT)}`, 'data-testid': 'ledger-older' }, 'Older ›') : null,
      h('span', { class: 'muted' }, ` Entries after seq ${after}, at most ${LIMIT}, newest first.`));
    return [nav, table([
      { label: 'Seq', num: true, cell: (e) => num(e.seq, { testid: 'ledger-seq' }) },
      { label: 'Time', cell: (e) => h('span', { 'data-value': e.timeMs }, at(start, e.timeMs)) },
      { label: 'Kind', cell: (e) => e.kind },
      { label: 'Pool', cell: (e) => e.pool },
      { label: 'Group', cell: (e) => (e.businessGroup ? h('a', { href: link.group(e.businessGroup) }, e.businessGroup) : '') },
      { label: 'Lender', cell: (e) => e.lender },
      { label: 'Workload', cell: (e) => (e.workload ? h('a', { href: link.workload(e.workload) }, e.workload) : '') },
      { label: 'GPUs', num: true, cell: (e) => num(e.gpus) },
      { label: 'Reason', cell: (e) => e.reason },
      { label: 'Record', cell: (e) => e.record },
    ], [...res.items].reverse(), { testid: 'ledger-table', rowAttrs: (e) => ({ 'data-testid': `ledger-row-${e.seq}` }), empty: 'No entries here.' })];
  });

  const chart = panel('GPUs in use and on loan', 'ledger-chart', async () => {
    const [{ items }, c] = await Promise.all([whole, clock]);
    const start = Date.parse(c.start);
    return lineChart({
      series: replay(items), step: true, testid: 'ledger-chart',
      xFormat: (ms) => at(start, ms).slice(5, 16),
      yLabel: 'GPUs, replayed from the ledger entries you may see (UsageStarted/UsageEnded per pool, BorrowOpened/BorrowClosed on loan).',
    });
  });

  const reclaims = panel('Reclaims', 'reclaims', async () => {
    const [r, c] = await Promise.all([get('reclaims', { limit: RECLAIMS }, ctx.opts), get('clock', null, ctx.opts)]);
    const items = [...r.items.filter(inProgress), ...r.items.filter((x) => !inProgress(x))];
    return [
      h('p', { class: 'note' }, `The newest ${RECLAIMS} at most, those in progress first (refreshed every 5 s); virtual time, each victim's steps after its notice.`),
      items.length ? h('div', { class: 'reclaims', 'data-testid': 'reclaim-list' }, items.map((x) => reclaim(x, Date.parse(c.time))))
        : h('p', { class: 'muted', 'data-testid': 'reclaim-list' }, 'No reclaims yet.'),
    ];
  });

  const leases = panel('Capacity leases', 'leases', async () => {
    const [r, c] = await Promise.all([get('policies', null, ctx.opts), clock]);
    const now = Date.parse(c.time);
    const items = r.items.filter((i) => i.kind === 'CapacityLease');
    if (!items.length) return h('p', { class: 'muted', 'data-testid': 'lease-list' }, 'No capacity leases.');
    return h('ul', { class: 'leases', 'data-testid': 'lease-list' }, items.map((l) => h('li', { 'data-testid': `lease-row-${l.metadata.name}` },
      h('div', {}, h('strong', { title: l.spec.reason || '' }, l.metadata.name), ` ${l.spec.type} `,
        l.status?.approval
          ? h('span', { class: 'ok', 'data-testid': `lease-approval-${l.metadata.name}` }, `approved by ${l.status.approval.approvedBy}`,
            l.status.approval.approvedAt ? ` at ${fmtTime(l.status.approval.approvedAt)}` : '')
          : h('span', { class: 'warn', 'data-testid': `lease-approval-${l.metadata.name}` }, 'not approved')),
      h('div', {}, h('a', { href: link.group(l.spec.businessGroup) }, l.spec.businessGroup), ' in ', h('a', { href: link.pool(l.spec.resourcePool) }, l.spec.resourcePool),
        l.spec.extraGuaranteed !== undefined ? [' · ', num(l.spec.extraGuaranteed, { testid: `lease-extra-${l.metadata.name}` }), ' extra guaranteed GPUs'] : null),
      h('div', { class: 'muted' }, l.spec.start ? fmtTime(l.spec.start) : 'its approval', ' → ', fmtTime(l.spec.end), ` · ${windowNow(l, now)}`),
      l.spec.reason ? h('div', { class: 'muted' }, l.spec.reason) : null)));
  });

  root.append(h('h1', {}, 'Bank'), h('div', { class: 'two-col' }, reclaims, h('div', {}, leases, chart)), page);
  ctx.every(5000, () => reclaims.reload()); // those in progress move on
}
