// Group (#/group/<name>): its positions per pool, its queues, its workloads and its alerts.
import { h, num, table, fields, breadcrumb, fmtTime, link } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { positionBar, positionLegend, poolScale, alertsTable } from './common.js';

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
  const positions = panel('Positions', 'positions', async () => {
    const [groups, pools] = await Promise.all([get('groups', null, ctx.opts), get('pools', null, ctx.opts)]);
    const g = groups.find((x) => x.name === name);
    if (!g) throw new Error(`There is no business group named ${name}.`);
    return [fields([
      ['costCenter', 'Cost center', g.costCenter],
      ['namespaces', 'Namespaces', g.namespaces.join(', ')],
    ], 'group'), positionsTable(g, pools), positionLegend()];
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
        { label: 'Workload', cell: (w) => h('a', { href: link.workload(w.workload), 'data-testid': `workload-link-${w.workload}` }, w.workload) },
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

  const alerts = panel('Open low-utilisation alerts', 'alerts', async () => {
    const a = await get('governance/alerts', null, ctx.opts);
    return alertsTable(a.open.filter((x) => x.evidence.businessGroup === name), 'group-alerts');
  });

  root.append(breadcrumb([['Cluster', '#/'], [name]]), h('h1', {}, `Group ${name}`), positions, queues, workloads, alerts);
}
