// Hand-written SVG charts. Colours come from CSS classes (the theme's variables), never from
// inline styles, so they follow the light/dark theme and pass the Content-Security-Policy.
import { h, s } from './dom.js';

const clamp = (v) => (Number.isFinite(v) && v > 0 ? v : 0);

// A horizontal stacked bar on a 0..max scale.
//   segments: [{value, cls, title}] laid end to end from 0
//   marks:    [{value, cls, title}] vertical lines at a value (e.g. the guarantee)
// The SVG stretches to its container's width (preserveAspectRatio none); the marks keep a
// constant stroke width thanks to vector-effect.
export function stackedBar({ max, segments, marks = [], label = '', testid }) {
  const W = 1000, H = 20;
  const scale = max > 0 ? W / max : 0;
  let x = 0;
  const rects = segments.map((seg) => {
    const w = clamp(seg.value) * scale;
    const r = s('rect', { x: x.toFixed(1), y: 0, width: w.toFixed(1), height: H, class: seg.cls },
      s('title', {}, seg.title || ''));
    x += w;
    return r;
  });
  const lines = marks.map((m) => {
    const mx = Math.min(W, clamp(m.value) * scale).toFixed(1);
    return s('line', { x1: mx, x2: mx, y1: -2, y2: H + 2, class: `mark ${m.cls || ''}`, 'vector-effect': 'non-scaling-stroke' },
      s('title', {}, m.title || ''));
  });
  return s('svg', { class: 'bar', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label, 'data-testid': testid },
    s('rect', { x: 0, y: 0, width: W, height: H, class: 'bar-bg' }), rects, lines);
}

// A legend for the classes used by a chart: [[cls, label], ...]
export function legend(items) {
  return h('ul', { class: 'legend' }, items.map(([cls, label]) =>
    h('li', {}, s('svg', { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': 'true' },
      s('rect', { width: 12, height: 12, class: cls })), label)));
}

// Rounds a maximum up to 1, 2 or 5 times a power of ten, for tidy axis labels.
function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v);
}

// A time series line chart. series: [{name, points: [[x, y], ...]}] with x ascending (e.g.
// epoch ms); step: draw each value until the next point (right for counts that change at
// events). xFormat turns an x into an axis label. Series i is drawn with class series-i.
// markers: [{x, label, cls}] drawn as vertical lines (the label is their tooltip), e.g.
// reclaims, XID errors and placements on a GPU's chart; yMax fixes the scale (100 for %).
export function lineChart({ series, step = false, xFormat = String, yLabel = '', testid, markers = [], yMax: fixedMax }) {
  const W = 640, H = 220, L = 44, R = 12, T = 12, B = 26;
  const all = series.flatMap((se) => se.points);
  if (all.length < 2) return h('p', { class: 'muted', 'data-testid': testid }, 'Not enough data for a chart yet.');
  const x0 = Math.min(...all.map((p) => p[0])), x1 = Math.max(...all.map((p) => p[0]));
  const yMax = fixedMax || niceMax(Math.max(...all.map((p) => p[1])));
  const px = (x) => L + (x1 > x0 ? ((x - x0) / (x1 - x0)) * (W - L - R) : 0);
  const py = (y) => T + (1 - y / yMax) * (H - T - B);

  const grid = [0, yMax / 2, yMax].map((y) => [
    s('line', { x1: L, x2: W - R, y1: py(y), y2: py(y), class: 'grid' }),
    s('text', { x: L - 6, y: py(y) + 4, 'text-anchor': 'end', class: 'axis' }, String(y)),
  ]);
  const ticks = [x0, (x0 + x1) / 2, x1].map((x, i) =>
    s('text', { x: px(x), y: H - 8, 'text-anchor': ['start', 'middle', 'end'][i], class: 'axis' }, xFormat(x)));
  const paths = series.map((se, i) => {
    let d = '';
    se.points.forEach(([x, y], j) => {
      if (j === 0) d += `M${px(x).toFixed(1)},${py(y).toFixed(1)}`;
      else if (step) d += `H${px(x).toFixed(1)}V${py(y).toFixed(1)}`;
      else d += `L${px(x).toFixed(1)},${py(y).toFixed(1)}`;
    });
    if (step && se.points.length) d += `H${px(x1).toFixed(1)}`; // hold the last value
    return s('path', { d, class: `line series-${i % 6}` }, s('title', {}, se.name));
  });
  const marks = markers.filter((m) => m.x >= x0 && m.x <= x1).map((m) =>
    s('line', { x1: px(m.x), x2: px(m.x), y1: T, y2: H - B, class: `marker ${m.cls || ''}`, 'data-testid': testid ? `${testid}-marker` : null },
      s('title', {}, m.label)));
  return h('figure', { class: 'chart', 'data-testid': testid },
    s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': yLabel },
      grid, ticks, paths, marks),
    yLabel ? h('figcaption', { class: 'muted' }, yLabel) : null,
    h('ul', { class: 'legend' }, series.map((se, i) =>
      h('li', {}, s('svg', { width: 14, height: 4, viewBox: '0 0 14 4', 'aria-hidden': 'true' },
        s('rect', { width: 14, height: 4, class: `swatch series-${i % 6}` })), se.name))));
}

// Horizontal grouped bars on one 0..max scale, a row of bars per group, each bar labelled
// with its value (none for 0). groups: [{label, bars: [{value, cls, title}]}].
export function groupedBars({ groups, label = '', testid }) {
  const W = 520, L = 120, R = 48, BAR = 12, GAP = 14;
  const max = niceMax(Math.max(0, ...groups.flatMap((g) => g.bars.map((b) => clamp(b.value)))));
  const px = (v) => (clamp(v) / max) * (W - L - R);
  let y = 4;
  const rows = groups.map((g) => {
    const top = y;
    const bars = g.bars.map((b, i) => {
      const by = top + i * BAR;
      return [
        s('rect', { x: L, y: by, width: px(b.value).toFixed(1), height: BAR - 2, class: b.cls }, s('title', {}, b.title || '')),
        b.value ? s('text', { x: L + px(b.value) + 4, y: by + BAR - 3, class: 'axis' }, String(Number(b.value.toFixed(1)))) : null,
      ];
    });
    y += g.bars.length * BAR + GAP;
    return [s('text', { x: L - 8, y: top + (g.bars.length * BAR) / 2 + 4, 'text-anchor': 'end', class: 'label' }, g.label), bars];
  });
  return h('figure', { class: 'chart', 'data-testid': testid },
    s('svg', { viewBox: `0 0 ${W} ${y}`, role: 'img', 'aria-label': label },
      s('line', { x1: L, x2: L, y1: 0, y2: y - GAP + 4, class: 'grid' }), rows));
}
