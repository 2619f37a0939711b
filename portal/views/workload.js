// Workload (#/workload/<ns>/<name>): its fields, the GPUs it runs on, its devices' minutes
// over a time range (?range=1h|6h|24h, kept in the links to its GPUs) with its events as
// markers, and its events.
import { h, num, table, fields, breadcrumb, fmtTime, link } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { lineChart } from '../charts.js';
import { units, eventItem, rangeOf, rangeNav, lastHours } from './common.js';

const BAD = new Set(['Preempted', 'ReclaimVictimStopped', 'Failed', 'Evicted', 'CheckpointFailed']);

export default function workload(root, ctx) {
  const [ns, name] = ctx.params;
  const id = `${ns}/${name}`;
  const range = rangeOf(ctx);
  const crumbs = breadcrumb([['Cluster', '#/'], [id]]);
  // The workload is fetched once and shared by the panels that need its pool.
  const loaded = get(`workloads/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, null, ctx.opts);
  loaded.catch(() => {}); // each panel reports the error itself

  const details = panel('Workload', 'workload', async () => {
    const w = await loaded;
    crumbs.replaceWith(breadcrumb([['Cluster', '#/'], [w.pool, link.pool(w.pool)],
      [w.businessGroup, link.group(w.businessGroup)], [id]]));
    return fields([
      ['name', 'Workload', w.workload],
      ['group', 'Business group', h('a', { href: link.group(w.businessGroup) }, w.businessGroup)],
      ['pool', 'Pool', h('a', { href: link.pool(w.pool) }, w.pool)],
      ['state', 'State', w.state],
      ['gpus', 'GPUs requested', num(w.gpus)],
      ['type', 'Type', w.workloadType],
      ['priority', 'Priority class', w.priorityClass],
      ['arrival', 'Arrived', fmtTime(w.arrival)],
      ['admitted', 'First admitted', fmtTime(w.firstAdmitted)],
      ['finished', 'Finished', fmtTime(w.finished)],
      ['admissions', 'Admissions', num(w.admissions)],
      ['stops', 'Stops', num(w.stops)],
      ['recompute', 'Recompute loss (GPU-hours)', num(w.recomputeLossGpuHours)],
    ], 'workload');
  });

  // The workload JSON does not list GPUs: find the units of its pool that name it.
  const gpus = panel('GPUs', 'gpus', async () => {
    const w = await loaded;
    const all = await get('gpus', { pool: w.pool }, ctx.opts);
    const mine = all.flatMap(units).filter((u) => u.workloads.some((x) => x.workload === id));
    return table([
      { label: 'GPU', cell: (u) => h('a', { href: `${link.gpu(u.gpu.uuid)}?workload=${encodeURIComponent(id)}&range=${range}`, 'data-testid': 'workload-gpu-link' }, u.gpu.uuid) },
      { label: 'MIG slice', cell: (u) => (u.slice === null ? '—' : `${u.slice} (${u.uuid})`) },
      { label: 'Node', cell: (u) => u.gpu.node },
      { label: 'Index', num: true, cell: (u) => num(u.gpu.index) },
      { label: 'Model', cell: (u) => u.gpu.product },
    ], mine, { testid: 'workload-gpus', empty: 'It holds no GPU now.' });
  });

  const events = panel('Events', 'events', async () => {
    const page = await get('events', { object: `Workload/${id}`, limit: 1000 }, ctx.opts);
    if (!page.items.length) return h('p', { class: 'muted' }, 'No events.');
    return [page.more ? h('p', { class: 'note' }, 'The first 1000 events.') : null,
      h('ol', { class: 'events', 'data-testid': 'workload-events' }, [...page.items].reverse().map(eventItem))];
  });

  const history = panel('Its GPUs over time', 'workload-history', async () => {
    const res = await lastHours(`workloads/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/history`, range, ctx.opts);
    const ranges = rangeNav(link.workload(id), range, 'workload');
    const pick = (field) => res.mean.map((x) => [Date.parse(x.t), x[field]]);
    return [
      ranges,
      lineChart({
        series: [{ name: 'GPU utilisation %', points: pick('gpuUtilization') },
          { name: 'memory used %', points: pick('memoryUtilization') },
          { name: 'power % of limit', points: pick('powerPercent') }],
        markers: res.markers.map((m) => ({ x: Date.parse(m.t), cls: BAD.has(m.kind) ? 'bad' : '', label: `${fmtTime(m.t)} ${m.kind}: ${m.message}` })),
        yMax: 100, testid: 'workload-history-chart',
        xFormat: (ms) => fmtTime(new Date(ms).toISOString()).slice(5, 16),
        yLabel: `Mean over the ${res.devices.length} device(s) it held, per virtual minute, ${fmtTime(res.from)} to ${fmtTime(res.to)}; dashed lines: its events.`,
      }),
    ];
  });

  root.append(crumbs, h('h1', {}, `Workload ${id}`), details, gpus, history, events);
}
