// GPUs (#/gpus) and Pool (#/pool/<name>): each node's GPUs as a grid of cells, each linking
// to the GPU's page. A MIG GPU shows one mark per slice. The pool page also charts its
// devices and who held them over a time range (?range=1h|6h|24h) with quota changes, leases,
// reclaims and XID errors as markers.
import { h, num, fields, breadcrumb, link, table, fmtTime } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { lineChart } from '../charts.js';
import { units, fragmentation, fragLabel, positionBar, positionNumbers, positionLegend, poolScale, workloadName, rangeOf, rangeNav, lastHours } from './common.js';

function cell(g) {
  const us = units(g);
  const busy = us.filter((u) => u.workloads.length).length;
  const cls = !g.healthy ? 'bad' : busy === 0 ? 'free' : busy === us.length ? 'used' : 'partial';
  const who = us.flatMap((u) => u.workloads).map((w) => workloadName(w) || `a ${w.businessGroup} workload`);
  const title = `${g.node} #${g.index} ${g.product}: ${g.healthy ? '' : 'UNHEALTHY, '}${who.length ? who.join(', ') : 'free'}`;
  return h('a', { class: `cell ${cls}`, href: link.gpu(g.uuid), title, 'data-testid': `gpu-cell-${g.uuid}` },
    Array.isArray(g.migSlices)
      ? h('span', { class: 'slices' }, us.map((u) => h('span', { class: u.workloads.length ? 'slice used' : 'slice' })))
      : String(g.index));
}

export function gpuGrid(gpus) {
  const nodes = new Map();
  for (const g of gpus) nodes.set(g.node, [...(nodes.get(g.node) || []), g]);
  return h('div', { class: 'nodes' }, [...nodes].map(([node, list]) =>
    h('div', { class: 'node', 'data-testid': `node-${node}` },
      h('span', { class: 'node-name' }, node),
      h('span', { class: 'cells' }, list.sort((a, b) => a.index - b.index).map(cell)))));
}

const POOL_BAD = new Set(['GpuUnhealthy', 'ReclaimStarted']);

const gridLegend = () => h('ul', { class: 'legend' }, [['free', 'free'], ['used', 'in use'], ['partial', 'MIG, partly in use'], ['bad', 'unhealthy']]
  .map(([cls, label]) => h('li', {}, h('span', { class: `cell-swatch ${cls}` }), label)));

export function gpusView(root, ctx) {
  const grid = panel('GPUs by node', 'gpu-grid', async () => {
    const [pools, gpus] = await Promise.all([get('pools', null, ctx.opts), get('gpus', null, ctx.opts)]);
    const frag = fragmentation(gpus);
    return [gridLegend(), pools.map((p) => h('div', { class: 'pool-grid' },
      h('h3', {}, h('a', { href: link.pool(p.name) }, p.name), ' ',
        h('span', { class: 'muted' }, 'fragmented: '), fragLabel(frag[p.name], `pool-frag-${p.name}`)),
      gpuGrid(gpus.filter((g) => g.pool === p.name))))];
  });
  root.append(h('h1', {}, 'GPUs'), grid);
}

export function poolView(root, ctx) {
  const [name] = ctx.params;
  const summary = panel('Pool', 'pool', async () => {
    const [pools, groups] = await Promise.all([get('pools', null, ctx.opts), get('groups', null, ctx.opts)]);
    const p = pools.find((x) => x.name === name);
    if (!p) throw new Error(`There is no pool named ${name}.`);
    const rows = groups.flatMap((g) => g.positions.filter((x) => x.pool === name).map((x) => ({ g, x })));
    const max = poolScale(p, rows.map((r) => r.x));
    return [
      fields([
        ['model', 'GPU', `${p.gpuModel} ${p.partition}`], ['role', 'Role', p.role],
        ['capacity', 'Capacity', num(p.capacity)], ['guaranteed', 'Guaranteed', num(p.guaranteed)],
        ['used', 'Used', num(p.used)], ['free', 'Free', num(p.free)],
      ], 'pool'),
      h('h3', {}, 'Groups'), positionLegend(),
      rows.map(({ g, x }) => h('div', { class: 'position' },
        h('a', { class: 'position-name', href: link.group(g.name) }, g.name),
        positionBar(x, max, `${g.name} in ${name}`), positionNumbers(x, g.name))),
    ];
  });
  const range = rangeOf(ctx);
  const history = panel('Devices and holders over time', 'pool-history', async () => {
    const res = await lastHours(`pools/${encodeURIComponent(name)}/history`, range, ctx.opts);
    const ranges = rangeNav(link.pool(name), range, 'pool');
    const at = (m) => Date.parse(m.t);
    const groupNames = [...new Set(res.minutes.flatMap((m) => Object.keys(m.groups)))].sort();
    const series = [{ name: 'devices', points: res.minutes.map((m) => [at(m), m.devices]) },
      { name: 'held', points: res.minutes.map((m) => [at(m), m.held]) },
      ...groupNames.map((g) => ({ name: `held by ${g}`, points: res.minutes.map((m) => [at(m), m.groups[g] || 0]) }))];
    const markers = res.markers.map((m) => ({
      x: Date.parse(m.t), cls: POOL_BAD.has(m.kind) ? 'bad' : '', label: `${fmtTime(m.t)} ${m.kind} ${m.object}: ${m.message}`,
    }));
    return [
      ranges,
      lineChart({ series, step: true, markers, testid: 'pool-history-chart',
        xFormat: (ms) => fmtTime(new Date(ms).toISOString()).slice(5, 16),
        yLabel: `Devices per virtual minute, ${fmtTime(res.from)} to ${fmtTime(res.to)}; dashed lines: the events below.` }),
      h('h3', {}, 'Quota changes, leases, reclaims and XID errors'),
      table([
        { label: 'Time', cell: (m) => fmtTime(m.t) },
        { label: 'Event', cell: (m) => h('span', { class: POOL_BAD.has(m.kind) ? 'bad' : '' }, m.kind) },
        { label: 'Group', cell: (m) => m.businessGroup || '' },
        { label: 'Object', cell: (m) => m.object },
        { label: 'What', cell: (m) => m.message },
      ], [...res.markers].reverse(), { testid: 'pool-markers', empty: 'No such events in this range.' }),
    ];
  });
  const grid = panel('GPUs by node', 'gpu-grid', async () => {
    const gpus = await get('gpus', { pool: name }, ctx.opts);
    return [h('p', {}, 'Fragmented: ', fragLabel(fragmentation(gpus)[name], `pool-frag-${name}`),
      h('span', { class: 'muted' }, ' (free GPUs on nodes with some but not all GPUs free)')), gridLegend(), gpuGrid(gpus)];
  });
  root.append(breadcrumb([['Cluster', '#/'], [name]]), h('h1', {}, `Pool ${name}`), summary, history, grid);
}
