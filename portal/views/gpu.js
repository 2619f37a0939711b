// GPU (#/gpu/<uuid>): what it is, where it is, its health and what runs on it (workload,
// pod, the model a replica serves), and its minutes over a time range (?range=1h|6h|24h,
// kept in the links out) with placements, reclaims, stops and XID errors as markers.
import { h, num, table, fields, breadcrumb, link, fmtTime } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { lineChart } from '../charts.js';
import { workloadName, rangeOf, rangeNav, lastHours } from './common.js';

// Markers drawn in the "bad" colour: what takes work or a GPU away.
const BAD = new Set(['Preempted', 'ReclaimVictimStopped', 'Failed', 'Evicted', 'GpuUnhealthy', 'CheckpointFailed']);

export default function gpu(root, ctx) {
  const [uuid] = ctx.params;
  const range = rangeOf(ctx);
  const keep = (href) => `${href}?range=${range}`;  // the time range goes along the drill-down
  const crumbs = breadcrumb([['Cluster', '#/'], [uuid]]);
  const loaded = get(`gpus/${encodeURIComponent(uuid)}`, null, ctx.opts);
  loaded.catch(() => {});

  const details = panel('GPU', 'gpu', async () => {
    const g = await loaded;
    const rows = Array.isArray(g.migSlices)
      ? g.migSlices.flatMap((sl) => (sl.workloads || []).map((w) => ({ ...w, slice: sl.slice })))
      : g.workloads || [];
    // Breadcrumb: Cluster › Pool › Group › Workload › GPU, through the workload we came from
    // (?workload=ns/name) when it runs here, else the first named one.
    const from = ctx.query.get('workload');
    const first = rows.find((w) => from && w.workload === from) || rows.find((w) => workloadName(w));
    crumbs.replaceWith(breadcrumb([['Cluster', '#/'], [g.pool, link.pool(g.pool)],
      ...(first ? [[first.businessGroup, link.group(first.businessGroup)], [first.workload, link.workload(first.workload)]] : []),
      [g.uuid]]));
    return [
      fields([
        ['uuid', 'UUID', g.uuid],
        ['model', 'Model', g.gpuModel],
        ['product', 'Product', g.product],
        ['pool', 'Pool', h('a', { href: link.pool(g.pool) }, g.pool)],
        ['node', 'Node', g.node],
        ['index', 'Index', num(g.index)],
        ['health', 'Health', h('span', { class: g.healthy ? 'ok' : 'bad' }, g.healthy ? 'healthy' : 'unhealthy')],
        ['xid', 'XID errors', num(g.xidErrors)],
        ['lastxid', 'Last XID', num(g.lastXid)],
        ['ecc', 'ECC double-bit errors', num(g.eccDoubleBit)],
        ['used', 'Used (milli-GPU)', g.usedMilli === undefined ? 'per MIG slice, below' : num(g.usedMilli)],
      ], 'gpu'),
      h('h3', {}, 'Workloads on it'),
      table([
        ...(Array.isArray(g.migSlices) ? [{ label: 'MIG slice', num: true, cell: (w) => num(w.slice) }] : []),
        // Viewers and group admins see another group's workload by group and state only.
        { label: 'Workload', cell: (w) => (workloadName(w) ? h('a', { href: keep(link.workload(w.workload)) }, w.workload) : h('span', { class: 'muted' }, 'another group\'s workload')) },
        { label: 'Pod', cell: (w) => h('span', { 'data-testid': 'gpu-pod' }, w.pod || '—') },
        { label: 'Model served', cell: (w) => h('span', { 'data-testid': 'gpu-model-served' }, w.modelName || '—') },
        { label: 'Group', cell: (w) => h('a', { href: link.group(w.businessGroup) }, w.businessGroup) },
        { label: 'State', cell: (w) => w.state },
      ], rows, { testid: 'gpu-workloads', empty: 'Nothing runs on it.' }),
      h('h3', {}, 'XID history'),
      table([
        { label: 'Time', cell: (e) => fmtTime(e.t) },
        { label: 'Event', cell: (e) => h('span', { class: e.kind === 'GpuUnhealthy' ? 'bad' : 'ok' }, e.kind) },
        { label: 'XID', num: true, cell: (e) => num(e.xid) },
        { label: 'What', cell: (e) => e.message },
      ], g.healthEvents || [], { testid: 'gpu-xid-history', empty: 'No XID errors reported.' }),
      Array.isArray(g.migSlices) ? [h('h3', {}, 'MIG slices'), table([
        { label: 'Slice', num: true, cell: (sl) => num(sl.slice) },
        { label: 'UUID', cell: (sl) => sl.uuid },
        { label: 'Profile', cell: (sl) => sl.profile },
        { label: 'In use', cell: (sl) => ((sl.workloads || []).length ? 'yes' : 'free') },
      ], g.migSlices, { testid: 'gpu-slices' })] : null,
    ];
  });

  const history = panel('Utilisation, memory and power', 'gpu-history', async () => {
    const res = await lastHours(`gpus/${encodeURIComponent(uuid)}/history`, range, ctx.opts);
    const ranges = rangeNav(link.gpu(uuid), range, 'gpu');
    const markers = res.markers.map((m) => ({
      x: Date.parse(m.t), cls: BAD.has(m.kind) ? 'bad' : '',
      label: `${fmtTime(m.t)} ${m.kind}${m.object ? ` ${m.object}` : ''}${m.message ? `: ${m.message}` : ''}`,
    }));
    const xFormat = (ms) => fmtTime(new Date(ms).toISOString()).slice(5, 16);
    const charts = res.devices.map((d) => {
      const pick = (field) => d.samples.map((x) => [Date.parse(x.t), x[field]]);
      return [
        d.migSlice ? h('h3', {}, `MIG instance ${d.migSlice}`) : null,
        lineChart({
          series: [{ name: 'GPU utilisation %', points: pick('gpuUtilization') },
            { name: 'memory used %', points: pick('memoryUtilization') },
            { name: 'power % of limit', points: pick('powerPercent') }],
          markers, yMax: 100, xFormat, testid: d.migSlice ? `gpu-history-chart-${d.migSlice}` : 'gpu-history-chart',
          yLabel: `Per virtual minute, ${fmtTime(res.from)} to ${fmtTime(res.to)}; dashed lines: the events below.`,
        }),
      ];
    });
    return [
      ranges, charts,
      h('h3', {}, 'Events on this GPU and its workloads'),
      table([
        { label: 'Time', cell: (m) => fmtTime(m.t) },
        { label: 'Event', cell: (m) => h('span', { class: BAD.has(m.kind) ? 'bad' : '' }, m.kind) },
        { label: 'Object', cell: (m) => (m.object && m.object.startsWith('Workload/')
          ? h('a', { href: keep(link.workload(m.object.slice(9))) }, m.object.slice(9)) : (m.object || h('span', { class: 'muted' }, 'another group\'s workload'))) },
        { label: 'What', cell: (m) => m.message },
      ], [...res.markers].reverse(), { testid: 'gpu-markers', empty: 'No events in this range.' }),
    ];
  });

  root.append(crumbs, h('h1', {}, 'GPU'), details, history);
}
