// Group (#/group/<name>): its positions per pool now and over a time range (?range=1h|6h|24h)
// with quota changes, leases and reclaims as markers, its queues, its workloads and its alerts.
import { h, num, table, fields, breadcrumb, fmtTime, link } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { lineChart } from '../charts.js';
import { positionBar, positionLegend, poolScale, alertsTable, rangeOf, rangeNav, lastHours } from './common.js';

// Markers drawn in the "bad" colour: what takes GPUs from the group.
const BAD = new Set(['ReclaimNoticeSent', 'ReclaimVictimStopped', 'Preempted']);

// The order workloads are listed in: what holds or waits for GPUs first.
const STATE_ORDER = { Running: 0, Admitted: 1, Pending: 2 };
const MAX_ROWS = 100;

// The positions table, shared with the Groups list.
export function positionsTable(g, pools) {
  const byName = new Map(pools.map((p) => [p.name, p]));
  return table([
    { label: 'Pool', cell: (p) => h('a', { href: link.pool(p.pool) }, p.pool) },
    ...['guaranteed', 'used', 'borrowed', 'lent', 'borrowable', 'lendingFloor'].map((k) => ({
      label: k === 'lendingFloor' ? 'lending floor' : k, num: true,
      cell: (p) => num(p[k], { testid: `position-${k}-${g.name}-${p.pool}` }),
    })),
    { label: '', cell: (p) => positionBar(p, poolScale(byName.get(p.pool), [p]), `${g.name} in ${p.pool}`) },
  ], g.positions, { testid: `positions-${g.name}` });
}

export default function group(root, ctx) {
  const [name] = ctx.params;
  // The controller's portal has the positions, queues and workloads of the cluster; the
  // history, the workload pages and the alerts are the twin's.
  const cluster = ctx.session.server?.kind === 'controller';
  const positions = panel('Positions', 'positions', async () => {
    const [groups, pools] = await Promise.all([get('groups', null, ctx.opts), get('pools', null, ctx.opts)]);
    const g = groups.find((x) => x.name === name);
    if (!g) throw new Error(`There is no business group named ${name}.`);
    return [fields([
      ['costCenter', 'Cost center', g.costCenter],
      ['namespaces', 'Namespaces', g.namespaces.join(', ')],
    ], 'group'), positionsTable(g, pools), positionLegend()];
  });

  const range = rangeOf(ctx);
  const history = cluster ? null : panel('Position over time', 'group-history', async () => {
    const res = await lastHours(`groups/${encodeURIComponent(name)}/history`, range, ctx.opts);
    const ranges = rangeNav(link.group(name), range, 'group');
    const xFormat = (ms) => fmtTime(new Date(ms).toISOString()).slice(5, 16);
    const charts = res.pools.map((p) => {
      const pick = (field) => p.minutes.map((m) => [Date.parse(m.t), m[field]]);
      const markers = res.markers.filter((m) => !m.pool || m.pool === p.pool).map((m) => ({
        x: Date.parse(m.t), cls: BAD.has(m.kind) ? 'bad' : '', label: `${fmtTime(m.t)} ${m.kind} ${m.object}: ${m.message}`,
      }));
      return [
        h('h3', {}, h('a', { href: link.pool(p.pool) }, p.pool)),
        lineChart({
          series: [{ name: 'guaranteed', points: pick('guaranteed') }, { name: 'GPUs held', points: pick('held') },
            { name: 'borrowed', points: pick('borrowed') }, { name: 'lent', points: pick('lent') }],
          step: true, markers, xFormat, testid: `group-history-chart-${p.pool}`,
          yLabel: `GPUs per virtual minute, ${fmtTime(res.from)} to ${fmtTime(res.to)}; dashed lines: the events below.`,
        }),
      ];
    });
    return [
      ranges,
      charts.length ? charts : h('p', { class: 'muted' }, 'No positions in this range.'),
      h('h3', {}, 'Quota changes, leases and reclaims'),
      table([
        { label: 'Time', cell: (m) => fmtTime(m.t) },
        { label: 'Event', cell: (m) => h('span', { class: BAD.has(m.kind) ? 'bad' : '' }, m.kind) },
        { label: 'Pool', cell: (m) => m.pool || '' },
        { label: 'Object', cell: (m) => (m.object && m.object.startsWith('Workload/')
          ? h('a', { href: link.workload(m.object.slice(9)) }, m.object.slice(9)) : m.object) },
        { label: 'What', cell: (m) => m.message },
      ], [...res.markers].reverse(), { testid: 'group-markers', empty: 'No such events in this range.' }),
    ];
  });

  const queues = panel('Queues', 'queues', async () => {
    const list = (await get('queues', null, ctx.opts)).filter((q) => q.businessGroup === name);
    return table([
      { label: 'ClusterQueue', cell: (q) => q.clusterQueue },
      { label: 'Pool', cell: (q) => q.pool },
      { label: 'Resource', cell: (q) => q.resource },
      ...[['nominalQuota', 'nominal'], ['borrowingLimit', 'borrowing limit'], ['lendingLimit', 'lending limit'],
        ['used', 'used'], ['pendingWorkloads', 'pending'], ['admittedWorkloads', 'admitted']].map(([k, label]) => ({
        label, num: true, cell: (q) => num(q[k], { testid: `queue-${k}-${q.clusterQueue}` }),
      })),
    ], list, { testid: 'group-queues', empty: 'No queues.' });
  });

  const workloads = panel('Workloads', 'workloads', async () => {
    const list = await get('workloads', { businessGroup: name }, ctx.opts);
    const sorted = [...list].sort((a, b) => (STATE_ORDER[a.state] ?? 9) - (STATE_ORDER[b.state] ?? 9)
      || String(b.arrival).localeCompare(String(a.arrival)));
    return [
      list.length > MAX_ROWS ? h('p', { class: 'note' }, `Showing ${MAX_ROWS} of ${list.length}: running, admitted and pending first, then the newest.`) : null,
      table([
        { label: 'Workload', cell: (w) => (cluster ? h('span', { 'data-testid': `workload-${w.workload}` }, w.workload)
          : h('a', { href: link.workload(w.workload), 'data-testid': `workload-link-${w.workload}` }, w.workload)) },
        { label: 'Pool', cell: (w) => w.pool },
        { label: 'State', cell: (w) => h('span', { class: `state state-${w.state}` }, w.state) },
        { label: 'GPUs', num: true, cell: (w) => num(w.gpus) },
        { label: 'Type', cell: (w) => w.workloadType },
        { label: 'Priority', cell: (w) => w.priorityClass },
        { label: 'Arrival', cell: (w) => fmtTime(w.arrival) },
        { label: 'Finished', cell: (w) => fmtTime(w.finished) },
      ], sorted.slice(0, MAX_ROWS), { testid: 'group-workloads', empty: 'No workloads.' }),
    ];
  });

  const alerts = cluster ? null : panel('Open low-utilisation alerts', 'alerts', async () => {
    const a = await get('governance/alerts', null, ctx.opts);
    return alertsTable(a.open.filter((x) => x.evidence.businessGroup === name), 'group-alerts');
  });

  root.append(...[breadcrumb([['Cluster', '#/'], [name]]), h('h1', {}, `Group ${name}`), positions, history, queues, workloads, alerts]
    .filter(Boolean));
}
