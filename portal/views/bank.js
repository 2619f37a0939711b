// Bank (#/bank): the GPU bank's ledger, a page at a time (?after=<seq>), newest first, and a
// chart of GPUs in use and on loan over time, replayed from the ledger.
import { h, num, table, fmtTime, link } from '../dom.js';
import { get, readAll } from '../api.js';
import { panel } from '../panel.js';
import { lineChart } from '../charts.js';

const LIMIT = 50;

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

  root.append(h('h1', {}, 'Bank'), chart, page);
}
