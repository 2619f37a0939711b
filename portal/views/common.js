// Pieces several views share: GPU units and fragmentation, a group's position bar, the
// alerts table and an event line.
import { h, num, table, fmtTime, link } from '../dom.js';
import { get } from '../api.js';
import { stackedBar, legend } from '../charts.js';

// --- time ranges of the history charts ------------------------------------------------------

// The ranges in hours, and the one the address asks for (?range=, 6h by default).
export const RANGES = { '1h': 1, '6h': 6, '24h': 24 };
export const rangeOf = (ctx) => (RANGES[ctx.query.get('range')] ? ctx.query.get('range') : '6h');

// The links to each range of page `here` (testid <prefix>-range-<r>).
export function rangeNav(here, range, prefix) {
  return h('nav', { class: 'ranges', 'aria-label': 'Time range' }, Object.keys(RANGES).map((r) =>
    h('a', { href: `${here}?range=${r}`, 'aria-current': r === range ? 'true' : 'false', 'data-testid': `${prefix}-range-${r}` }, `last ${r}`)));
}

// A history endpoint's answer for the `range` up to its newest minute (asked for once
// without a range to learn where the day stands).
export async function lastHours(path, range, opts) {
  const last = await get(path, null, opts);
  const to = Date.parse(last.to);
  return get(path, { from: new Date(to - RANGES[range] * 3600e3).toISOString(), to: last.to }, opts);
}

// --- GPUs ---------------------------------------------------------------------------------

// The schedulable units of one GPU from /api/v1/gpus: the GPU itself, or each MIG slice of
// a partitioned one (a MIG pool's capacity counts slices).
export function units(gpu) {
  if (Array.isArray(gpu.migSlices)) {
    return gpu.migSlices.map((sl) => ({ uuid: sl.uuid, gpu, slice: sl.slice, workloads: sl.workloads || [] }));
  }
  return [{ uuid: gpu.uuid, gpu, slice: null, workloads: gpu.workloads || [] }];
}

// Free: healthy and running nothing.
export const isFree = (u) => u.gpu.healthy && u.workloads.length === 0;

// Fragmentation from /api/v1/gpus: of the free units, how many sit on nodes that have some
// but not all of their units free (such GPUs cannot host a job that wants a whole node).
// Returns {pool -> {free, fragmented}} with the whole cluster under the key '*'.
export function fragmentation(gpus) {
  const nodes = new Map(); // node -> {pool, total, free}
  for (const g of gpus) {
    const n = nodes.get(g.node) || { pool: g.pool, total: 0, free: 0 };
    for (const u of units(g)) { n.total++; if (isFree(u)) n.free++; }
    nodes.set(g.node, n);
  }
  const out = { '*': { free: 0, fragmented: 0 } };
  for (const n of nodes.values()) {
    const p = (out[n.pool] ||= { free: 0, fragmented: 0 });
    const fragmented = n.free > 0 && n.free < n.total ? n.free : 0;
    for (const o of [p, out['*']]) { o.free += n.free; o.fragmented += fragmented; }
  }
  return out;
}

// "12 of 40 free (30.0%)", the ratio in data-value.
export function fragLabel(f, testid) {
  if (!f || !f.free) return h('span', { class: 'muted', 'data-testid': testid, 'data-value': 0 }, 'no free GPUs');
  const r = f.fragmented / f.free;
  return h('span', { 'data-testid': testid, 'data-value': r },
    `${f.fragmented} of ${f.free} free (${(r * 100).toFixed(1)}%)`);
}

// The name of a workload on a GPU, or null where the API cut it (another group's workload).
export const workloadName = (w) => (w && typeof w.workload === 'string' && w.workload ? w.workload : null);

// --- Groups -------------------------------------------------------------------------------

export const positionLegend = () => legend([
  ['seg-used', 'used within guarantee'], ['seg-lent', 'lent'], ['seg-idle', 'unused guarantee'], ['seg-borrowed', 'borrowed'],
  ['seg-borrowable', 'borrowable headroom'], ['mark-swatch', 'guaranteed (line)'],
]);

// A position ({pool, guaranteed, used, borrowed, lent, borrowable}) as a bar: the guarantee
// holds what the group uses of its own (used - borrowed) and what it lends; past the
// guarantee line come the borrowed GPUs and the headroom it may still borrow.
export function positionBar(p, max, label) {
  const own = Math.max(0, p.used - p.borrowed);
  const idle = Math.max(0, p.guaranteed - own - p.lent);
  return stackedBar({
    max,
    label,
    segments: [
      { value: own, cls: 'seg-used', title: `used ${p.used} (of which borrowed ${p.borrowed})` },
      { value: p.lent, cls: 'seg-lent', title: `lent ${p.lent}` },
      { value: idle, cls: 'seg-idle', title: `guaranteed ${p.guaranteed}` },
      { value: p.borrowed, cls: 'seg-borrowed', title: `borrowed ${p.borrowed}` },
      { value: p.borrowable, cls: 'seg-borrowable', title: `may borrow ${p.borrowable} more` },
    ],
    marks: [{ value: p.guaranteed, cls: 'mark-guarantee', title: `guaranteed ${p.guaranteed}` }],
  });
}

// The numbers of a group's position, each with data-testid=group-<field>-<group>-<pool>.
export function positionNumbers(p, group) {
  return h('span', { class: 'position-numbers' },
    ['used', 'borrowed', 'lent', 'borrowable', 'guaranteed'].map((k) =>
      h('span', {}, `${k} `, num(p[k], { testid: `group-${k}-${group}-${p.pool}` }))));
}

// The scale for bars in a pool: its capacity, or more where a guarantee plus what may be
// borrowed reaches past it.
export const poolScale = (pool, positions) =>
  Math.max(pool ? pool.capacity : 0, ...positions.map((p) => p.guaranteed + p.borrowed + p.borrowable), 1);

// --- Alerts and events --------------------------------------------------------------------

// Open alerts with their evidence; compact: the few columns that fit a side panel.
// decision: a cell for the Decision column (the governance page's approve/reject), none: no column.
export function alertsTable(alerts, testid, { compact = false, decision = null } = {}) {
  const columns = [
    { label: 'Workload', cell: (a) => h('a', { href: link.workload(`${a.evidence.namespace}/${a.evidence.workload}`) }, `${a.evidence.namespace}/${a.evidence.workload}`) },
    { label: 'Group', cell: (a) => h('a', { href: link.group(a.evidence.businessGroup) }, a.evidence.businessGroup) },
    { label: 'Owner', full: true, cell: (a) => a.evidence.ownerId },
    { label: 'Pool', full: true, cell: (a) => a.evidence.pool },
    { label: 'State', full: true, cell: (a) => a.state },
    { label: 'GPUs', num: true, cell: (a) => num(a.evidence.gpus) },
    { label: 'GPU util %', num: true, cell: (a) => num(a.evidence.averageGpuUtilization, { digits: 1 }) },
    { label: 'Power %', num: true, full: true, cell: (a) => num(a.evidence.averagePowerFraction, { digits: 1 }) },
    { label: 'Low for (s)', num: true, cell: (a) => num(a.evidence.lowSeconds, { digits: 0 }) },
    { label: 'Evidence', full: true, cell: (a) => a.evidence.reason },
  ];
  if (decision) columns.push({ label: 'Decision', cell: decision });
  return table(compact ? columns.filter((c) => !c.full) : columns, alerts, { testid, rowAttrs: (a) => ({ 'data-testid': `alert-${a.id}` }), empty: 'No open low-utilisation alerts.' });
}

// The link for an event's object: workloads and business groups have pages.
function objectLink(object) {
  const [kind, ...rest] = object.split('/');
  const name = rest.join('/');
  if (kind === 'Workload' && rest.length === 2) return h('a', { href: link.workload(name) }, object);
  if (kind === 'BusinessGroup' && !name.startsWith('cohort:')) return h('a', { href: link.group(name) }, object);
  return object;
}

export function eventItem(e) {
  return h('li', { 'data-seq': e.seq },
    h('time', { datetime: e.time }, fmtTime(e.time)), ' ',
    h('span', { class: 'kind' }, e.kind), ' ',
    objectLink(e.object || ''), ' ',
    h('span', { class: 'msg' }, e.message || e.reason || ''));
}

// --- Policy changes -----------------------------------------------------------------------

const shown = (v) => (v === undefined ? '(none)' : typeof v === 'object' ? JSON.stringify(v) : String(v));

// The value at an RFC 6902 path ("/reclaimPolicy/gracePeriod") in obj; undefined if none.
const at = (obj, path) => path.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  .reduce((o, k) => (o === undefined || o === null ? undefined : o[k]), obj);

// A change's RFC 6902 patch (of the spec) as "spec.path: old → new" lines, the old values
// from base (the spec in force) when given, else "spec.path → new". A new object has no patch.
export function patchList(patch, base, testid) {
  if (!patch) return h('p', { class: 'note', 'data-testid': testid }, 'A new object.');
  return h('ul', { class: 'patch', 'data-testid': testid }, patch.map((op) => h('li', {},
    h('code', {}, `spec${op.path.replace(/\//g, '.')}`), base ? [': ', shown(at(base, op.path))] : null, ' → ',
    op.op === 'remove' ? '(removed)' : shown(op.value))));
}

// A policy's duration ("1s500ms", "200ms", "1m30s", "2h") in seconds; a number is seconds.
export function seconds(d) {
  if (typeof d === 'number') return d;
  const unit = { h: 3600, m: 60, s: 1, ms: 0.001 };
  let total = 0;
  for (const [, v, u] of String(d).matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) total += Number(v) * unit[u];
  return total;
}

// A decision's text field and buttons ([verb, label] pairs; the first is the primary one):
// submit(verb, text) posts it; a refusal shows under the buttons, which come back.
// `extra`: more inputs shown before the buttons (a select the submit reads), or null.
export function decideForm(testid, placeholder, verbs, submit, extra = null) {
  const text = h('input', { type: 'text', placeholder, 'aria-label': `${placeholder} (${testid})`, 'data-testid': `${testid}-text` });
  const error = h('p', { class: 'error', role: 'alert', 'data-testid': `${testid}-error` });
  const buttons = verbs.map(([verb, label], i) => h('button', { type: 'button', class: i === 0 ? 'primary' : null, 'data-testid': `${testid}-${verb}`, async onclick() {
    error.textContent = '';
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await submit(verb, text.value);
    } catch (e) {
      error.textContent = e.rule && !e.message.startsWith(e.rule) ? `${e.rule}: ${e.message}` : e.message;
      buttons.forEach((b) => { b.disabled = false; });
    }
  } }, label));
  return h('div', { class: 'decide' }, text, extra, buttons, error);
}
