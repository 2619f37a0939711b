// Small DOM helpers shared by the views. Everything is built with createElement and
// textContent (never innerHTML), so API text can never become markup, and nothing sets
// inline styles or handler attributes: the server's Content-Security-Policy forbids both.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Sets attributes on an element: `class`, `text`, on<event> functions (added as listeners,
// not attributes), and everything else with setAttribute (null/undefined/false are skipped).
function applyAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h('a', {href: '#/', class: 'x'}, 'text', child, [more, children])
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  return append(el, children);
}

// The same for SVG elements.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  applyAttrs(el, attrs);
  return append(el, children);
}

// A number from the API, shown as is (integers) or to at most `digits` decimals; the exact
// value stays in data-value so tests can compare it with the REST API.
export function num(value, { digits = 2, unit = '', testid } = {}) {
  if (value === null || value === undefined) return h('span', { class: 'num muted', 'data-testid': testid }, '—');
  if (typeof value !== 'number') return h('span', { class: 'num', 'data-testid': testid }, String(value));
  const shown = Number.isInteger(value) ? String(value) : String(Number(value.toFixed(digits)));
  return h('span', { class: 'num', 'data-value': value, 'data-testid': testid }, shown + unit);
}

// A ratio from the API (0..1) shown as a percentage; data-value keeps the ratio.
export function pct(ratio, { testid } = {}) {
  if (ratio === null || ratio === undefined) return num(null, { testid });
  return h('span', { class: 'num', 'data-value': ratio, 'data-testid': testid }, `${(ratio * 100).toFixed(1)}%`);
}

// "2026-11-30T16:04:31.108Z" -> "2026-11-30 16:04:31"
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().slice(0, 19).replace('T', ' ');
}

// Links of the drill-down. Names go through encodeURIComponent; namespace/name keeps its slash.
export const link = {
  group: (g) => `#/group/${encodeURIComponent(g)}`,
  pool: (p) => `#/pool/${encodeURIComponent(p)}`,
  gpu: (uuid) => `#/gpu/${encodeURIComponent(uuid)}`,
  workload: (nsName) => '#/workload/' + nsName.split('/').map(encodeURIComponent).join('/'),
};

// A table: columns [{label, cell: row => node|string, num?: true}], rows, and attributes
// for each row (e.g. a data-testid). Empty tables say so.
// A falsy entry among `columns` is left out (a column a server cannot fill).
export function table(allColumns, rows, { testid, rowAttrs, empty = 'Nothing to show.' } = {}) {
  const columns = allColumns.filter(Boolean);
  if (!rows.length) return h('p', { class: 'muted', 'data-testid': testid }, empty);
  return h('div', { class: 'table-wrap' },
    h('table', { 'data-testid': testid },
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.num ? 'n' : null }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {},
        columns.map((c) => h('td', { class: c.num ? 'n' : null }, c.cell(r))))))));
}

// Label/value pairs as a definition list; each value gets data-testid=<prefix>-<key>.
export function fields(pairs, prefix) {
  return h('dl', { class: 'fields' }, pairs.map(([key, label, value]) => [
    h('dt', {}, label),
    h('dd', { 'data-testid': `${prefix}-${key}` }, value ?? '—'),
  ]));
}

// Breadcrumbs: [[label, href], ..., [label]] (the last one is the current page).
export function breadcrumb(items) {
  return h('nav', { class: 'breadcrumb', 'aria-label': 'Breadcrumb', 'data-testid': 'breadcrumb' },
    items.map(([label, href], i) => [
      i ? h('span', { class: 'sep', 'aria-hidden': 'true' }, '›') : null,
      href ? h('a', { href }, label) : h('span', { 'aria-current': 'page' }, label),
    ]));
}
