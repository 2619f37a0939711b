// GPU (#/gpu/<uuid>): what it is, where it is, its health and what runs on it.
import { h, num, table, fields, breadcrumb, link } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { workloadName } from './common.js';

export default function gpu(root, ctx) {
  const [uuid] = ctx.params;
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
        { label: 'Workload', cell: (w) => (workloadName(w) ? h('a', { href: link.workload(w.workload) }, w.workload) : h('span', { class: 'muted' }, 'another group\'s workload')) },
        { label: 'Group', cell: (w) => h('a', { href: link.group(w.businessGroup) }, w.businessGroup) },
        { label: 'State', cell: (w) => w.state },
      ], rows, { testid: 'gpu-workloads', empty: 'Nothing runs on it.' }),
      Array.isArray(g.migSlices) ? [h('h3', {}, 'MIG slices'), table([
        { label: 'Slice', num: true, cell: (sl) => num(sl.slice) },
        { label: 'UUID', cell: (sl) => sl.uuid },
        { label: 'Profile', cell: (sl) => sl.profile },
        { label: 'In use', cell: (sl) => ((sl.workloads || []).length ? 'yes' : 'free') },
      ], g.migSlices, { testid: 'gpu-slices' })] : null,
    ];
  });

  root.append(crumbs, h('h1', {}, 'GPU'), details);
}
