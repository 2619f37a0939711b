// Inference (#/inference): a card per InferenceScalingPolicy from /api/v1/services: replicas
// by state against the policy's min/max and the floor in force, TTFT p95 against the
// policy's target, the queue, KV cache per replica, and the service's last scale events and
// drains from /api/v1/events. Refreshed every 5 s; events are read on from the last seq.
// Below, each service over a time range (?range=1h|6h|24h): its replicas serving and idle,
// its TTFT p95 against the target, with its scale, replica, tidal and policy events marked.
import { h, num, pct, table, fmtTime, link } from '../dom.js';
import { get, readAll } from '../api.js';
import { panel } from '../panel.js';
import { stackedBar, legend, lineChart } from '../charts.js';
import { seconds, rangeOf, rangeNav, lastHours } from './common.js';

const SHOW_EVENTS = 8;
const BAD_KINDS = new Set(['ScaleUpBlocked', 'ReplicaFailed', 'PrewarmFailed', 'FaultInjected']);
const KEEP_EVENTS = 300; // per pool, of the serving ones
// The kinds of object a service's events name (its workloadRef's kind).
const SERVICE_KINDS = ['InferenceService', 'LLMInferenceService', 'Deployment', 'RayService'];
const STATE_CLS = { ready: 'seg-used', loading: 'seg-lent', draining: 'seg-borrowed' };
const STATES = ['ready', 'loading', 'draining'];

// An event about service s: its workloadRef (Kind/namespace/name), or its policy as the
// object or a related object (floors, prewarm, tidal windows).
function about(e, s) {
  const isp = `InferenceScalingPolicy/${s.policy}`;
  const [kind, , name, extra] = (e.object || '').split('/');
  return e.object === isp || (e.related || []).includes(isp)
    || (SERVICE_KINDS.includes(kind) && name === s.workloadRef && extra === undefined);
}
const serving = (e) => /^(InferenceScalingPolicy|TidalPolicy)\//.test(e.object || '')
  || SERVICE_KINDS.includes((e.object || '').split('/')[0]);

// The figure of one service: testid service-<what>-<policy>.
const fig = (label, value, ...more) => h('div', { class: 'fig' }, h('div', { class: 'fig-label' }, label), h('div', { class: 'big' }, value), more);

function card(s, policy, events) {
  const id = (what) => `service-${what}-${s.policy}`;
  const spec = policy?.spec || {};
  const as = s.autoscaling || {};
  const byState = {};
  for (const r of s.replicas) byState[r.state] = (byState[r.state] || 0) + 1;
  const states = [...STATES, ...Object.keys(byState).filter((k) => !STATES.includes(k))];
  const max = Math.max(spec.maxReplicas || 0, s.replicas.length, as.floorInForce || 0, 1);

  const target = spec.scaleUp?.ttftP95;
  const targetS = target !== undefined ? seconds(target) : as.recommendation?.signals?.ttftP95?.target;
  const ttft = s.ttftP95Seconds;
  const over = ttft !== null && ttft !== undefined && targetS !== undefined && ttft > targetS;
  // The policy's KV cache watermark is a percentage; none: no line and nothing over it.
  const watermark = spec.scaleUp?.kvCacheHighWatermark !== undefined ? spec.scaleUp.kvCacheHighWatermark / 100 : 1;
  const mine = events.filter((e) => about(e, s)).slice(-SHOW_EVENTS).reverse();

  return h('section', { class: 'panel service', 'data-testid': `service-${s.policy}` },
    h('h2', {}, s.policy),
    h('p', { class: 'note' }, `${s.modelName} on ${s.gpuModel} × ${s.tensorParallelSize} (TP) in `,
      spec.resourcePool ? h('a', { href: link.pool(spec.resourcePool) }, spec.resourcePool) : '?',
      spec.businessGroup ? [' for ', h('a', { href: link.group(spec.businessGroup) }, spec.businessGroup)] : null,
      `; control ${as.control || '—'}`),
    h('div', { class: 'figs' },
      fig('Replicas', num(s.replicas.length, { testid: id('replicas') }),
        h('div', { class: 'fig-sub' }, states.map((st, i) => [i ? ' · ' : '', num(byState[st] || 0, { testid: id(`replicas-${st}`) }), ` ${st}`]))),
      fig('TTFT p95', h('span', { class: over ? 'bad' : 'ok' }, num(ttft, { digits: 3, unit: ' s', testid: id('ttft') })),
        h('div', { class: 'fig-sub' }, 'target ', h('span', { 'data-testid': id('ttft-target'), 'data-value': targetS }, target ?? (targetS !== undefined ? `${targetS} s` : '—')),
          `, last ${s.ttftWindowSeconds} s`),
        targetS !== undefined && ttft !== null && ttft !== undefined ? stackedBar({
          max: Math.max(2 * targetS, ttft), label: `TTFT p95 ${ttft} s, target ${targetS} s`, testid: id('ttft-gauge'),
          segments: [{ value: ttft, cls: over ? 'seg-over' : 'seg-used', title: `TTFT p95 ${ttft} s` }],
          marks: [{ value: targetS, cls: 'mark-guarantee', title: `target ${target}` }],
        }) : null),
      fig('Queue', h('span', { 'data-testid': id('queue'), 'data-value': s.waiting + s.routerWaiting }, String(s.waiting + s.routerWaiting)),
        h('div', { class: 'fig-sub' }, num(s.waiting, { testid: id('waiting') }), ' in replicas + ', num(s.routerWaiting, { testid: id('routerWaiting') }), ' at the router'))),
    stackedBar({
      max, label: `${s.replicas.length} replicas; min ${spec.minReplicas}, floor ${as.floorInForce}, max ${spec.maxReplicas}`, testid: id('replica-bar'),
      segments: states.map((st) => ({ value: byState[st] || 0, cls: STATE_CLS[st] || 'seg-idle', title: `${byState[st] || 0} ${st}` })),
      marks: [{ value: spec.minReplicas, cls: 'mark-min', title: `min ${spec.minReplicas}` },
        { value: as.floorInForce, cls: 'mark-guarantee', title: `floor in force ${as.floorInForce}` }],
    }),
    h('p', { class: 'fig-sub' }, 'min ', num(spec.minReplicas, { testid: id('min') }), ' · floor in force ', num(as.floorInForce, { testid: id('floor') }),
      ' (tidal ', num(as.tidalFloor, { testid: id('tidal-floor') }), ') · target ', num(as.target, { testid: id('target') }),
      ' · desired ', num(as.recommendation?.desired, { testid: id('desired') }), ' · max ', num(spec.maxReplicas, { testid: id('max') }),
      ' · requests running ', num(s.running), ', arrived ', num(s.arrived), ', finished ', num(s.finished),
      ', rejected ', num(s.rejected), ', cut ', num(s.cut)),
    table([
      // The replica's name without the service's (in full in the link's title).
      { label: 'Replica', cell: (r) => h('a', { class: 'nowrap', href: link.workload(r.workload), title: `${r.replica} (${r.workload})` },
        r.replica.startsWith(`${s.policy}-`) ? `…${r.replica.slice(s.policy.length)}` : r.replica) },
      { label: 'State', cell: (r) => h('span', { class: `rstate-${r.state}`, 'data-testid': `replica-state-${r.replica}` }, r.state) },
      { label: 'Running', num: true, cell: (r) => num(r.running) },
      { label: 'Waiting', num: true, cell: (r) => num(r.waiting) },
      { label: 'Load', num: true, cell: (r) => num(r.load) },
      { label: 'KV cache', cell: (r) => h('span', { class: 'kv' }, stackedBar({
        max: 1, label: `KV cache ${r.kvCacheUsage}`,
        segments: [{ value: r.kvCacheUsage, cls: r.kvCacheUsage > watermark ? 'seg-over' : 'seg-used', title: `KV cache ${r.kvCacheUsage}` }],
        marks: watermark < 1 ? [{ value: watermark, cls: 'mark-min', title: `scale-up watermark ${spec.scaleUp.kvCacheHighWatermark}%` }] : [],
      }), pct(r.kvCacheUsage, { testid: `replica-kv-${r.replica}` })) },
    ], s.replicas, { testid: id('replica-table'), empty: 'No replicas.' }),
    h('h3', {}, 'Last scale events and drains'),
    mine.length ? h('ol', { class: 'events', 'data-testid': id('events') }, mine.map((e) => h('li', { 'data-seq': e.seq },
      h('time', { datetime: e.time }, fmtTime(e.time)), ' ', h('span', { class: 'kind' }, e.kind), ' ', h('span', { class: 'msg' }, e.message || e.reason || ''))))
      : h('p', { class: 'muted', 'data-testid': id('events') }, 'No scale events you may see.'));
}

export default function inference(root, ctx) {
  const logs = new Map(); // pool -> {after, items}: the serving events read so far
  const poolEvents = async (pool) => {
    const log = logs.get(pool) || { after: 0, items: [] };
    try {
      const r = await readAll('events', { after: log.after, query: { pool }, signal: ctx.signal });
      log.items = log.items.concat(r.items.filter(serving)).slice(-KEEP_EVENTS);
      log.after = r.next;
      logs.set(pool, log);
    } catch (e) {
      if (e.status !== 403) throw e; // a role without the event log still sees the services
    }
    return log.items;
  };
  let inflight = null; // one refresh at a time: the event cursors move on
  const load = async () => {
    const [services, policies] = await Promise.all([get('services', null, ctx.opts),
      // Without the policies (a 403) the cards lack min/max, target and events, not the rest.
      get('policies', null, ctx.opts).catch((e) => (e.status === 403 ? { items: [] } : Promise.reject(e)))]);
    const byName = new Map(policies.items.filter((i) => i.kind === 'InferenceScalingPolicy').map((i) => [i.metadata.name, i]));
    const pools = [...new Set(services.map((s) => byName.get(s.policy)?.spec.resourcePool).filter(Boolean))];
    const events = (await Promise.all(pools.map(poolEvents))).flat();
    return { services, byName, events };
  };

  const list = panel('Services', 'services', async () => {
    const { services, byName, events } = await (inflight ||= load().finally(() => { inflight = null; }));
    return [
      h('p', { class: 'note' }, `${services.length} services, refreshed every 5 s. TTFT p95 over the last window against the policy's scaleUp.ttftP95; `,
        'queue = requests waiting in replicas + at the router; KV cache per replica (its share in use).'),
      legend([['seg-used', 'ready / within target'], ['seg-lent', 'loading'], ['seg-borrowed', 'draining'], ['seg-over', 'over target'],
        ['mark-swatch', 'floor in force / TTFT target (line)'], ['mark-min-swatch', 'min replicas (line)']]),
      services.length ? h('div', { class: 'services' }, services.map((s) => card(s, byName.get(s.policy), events)))
        : h('p', { class: 'muted' }, 'No services: no InferenceScalingPolicy serves yet.'),
    ];
  });
  list.classList.add('bare');

  const range = rangeOf(ctx);
  const history = panel('Over time', 'service-history', async () => {
    const services = await get('services', null, ctx.opts);
    const ranges = rangeNav('#/inference', range, 'service');
    const xFormat = (ms) => fmtTime(new Date(ms).toISOString()).slice(5, 16);
    const charts = await Promise.all(services.map(async (s) => {
      const res = await lastHours(`services/${encodeURIComponent(s.policy)}/history`, range, ctx.opts);
      const at = (m) => Date.parse(m.t);
      const markers = res.markers.map((m) => ({
        x: Date.parse(m.t), cls: BAD_KINDS.has(m.kind) ? 'bad' : '', label: `${fmtTime(m.t)} ${m.kind}: ${m.message}`,
      }));
      const ttft = res.minutes.filter((m) => m.ttftP95Seconds !== null).map((m) => [at(m), m.ttftP95Seconds]);
      const target = res.ttftP95TargetSeconds;
      return [
        h('h3', {}, s.policy),
        lineChart({
          series: [{ name: 'replicas serving', points: res.minutes.map((m) => [at(m), m.replicas]) },
            { name: 'idle replicas', points: res.minutes.map((m) => [at(m), m.idleReplicas]) }],
          step: true, markers, xFormat, testid: `service-history-replicas-${s.policy}`,
          yLabel: `Replicas with vLLM series per virtual minute, ${fmtTime(res.from)} to ${fmtTime(res.to)}; dashed lines: its events.`,
        }),
        lineChart({
          series: [{ name: 'TTFT p95 (s)', points: ttft },
            ...(target !== null && ttft.length ? [{ name: 'target (s)', points: [[ttft[0][0], target], [ttft[ttft.length - 1][0], target]] }] : [])],
          markers, xFormat, testid: `service-history-ttft-${s.policy}`,
          yLabel: 'TTFT p95 over the last two minutes, at each minute with requests.',
        }),
      ];
    }));
    return [ranges, charts.length ? charts : h('p', { class: 'muted' }, 'No services.')];
  });
  root.append(h('h1', {}, 'Inference'), list, history);
  ctx.every(5000, () => list.reload());
}
