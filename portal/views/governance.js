// Governance (#/governance): low-utilisation alerts with their evidence, the leaderboard,
// the KPIs and showback by group. Each panel degrades on its own (403: no access).
import { h, num, pct, table, fmtTime, link } from '../dom.js';
import { get, post } from '../api.js';
import { panel } from '../panel.js';
import { alertsTable, decideForm } from './common.js';

const window_ = (r) => h('p', { class: 'note' }, `From ${fmtTime(r.from)} to ${fmtTime(r.to)} (virtual time).`);
const msTime = (ms) => (ms === undefined || ms === null ? '—' : fmtTime(new Date(ms).toISOString()));

// Approve or reject a ReclaimCandidate (platform-admin, or group-admin of its group): an
// approved workload is stopped after its checkpoint or grace; an approved downgrade keeps it
// running at a lower, preemptible priority class (the server lists the classes it may take).
function decide(a, reload) {
  const testid = `reclaim-${a.workloadUid}`;
  const options = a.downgradeOptions || [];
  const verbs = [['approve', 'Approve reclaim'], ['reject', 'Reject']];
  let select = null;
  if (options.length) {
    select = h('select', { 'aria-label': `Downgrade to (${testid})`, 'data-testid': `${testid}-class` },
      options.map((c) => h('option', { value: c }, c)));
    verbs.push(['downgrade', 'Approve downgrade']);
  }
  return decideForm(testid, 'Reason', verbs, async (verb, reason) => {
    const body = verb === 'downgrade' ? { decision: 'approve', reason, downgradeTo: select.value } : { decision: verb, reason };
    await post(`governance/alerts/${encodeURIComponent(a.workloadUid)}/decision`, body);
    reload();
  }, select);
}

const decisionText = (d) => `${d.verdict}${d.downgradeTo ? ` (downgrade to ${d.downgradeTo})` : ''} by ${d.by}`;

export default function governance(root, ctx) {
  const s = ctx.session;
  const mayDecide = (a) => s.role === 'platform-admin' || (s.role === 'group-admin' && s.group === a.evidence.businessGroup);
  const decisionCell = (a, reload) => {
    if (a.decision) return decisionText(a.decision);
    if (a.state !== 'ReclaimCandidate') return '';
    return mayDecide(a) ? decide(a, reload) : h('span', { class: 'muted' }, 'waits for a group or platform admin');
  };
  // On a cluster the alerts are what `gpubank scan --store` recorded; its reports read
  // Prometheus, which the controller does not: those panels are the twin's.
  const cluster = ctx.session.server?.kind === 'controller';
  const alerts = panel('Low-utilisation alerts', 'governance-alerts', async () => {
    const a = await get('governance/alerts', null, ctx.opts);
    const verdicts = Object.entries(a.verdicts || {});
    return [
      cluster
        ? h('p', { class: 'note', 'data-testid': 'alerts-source' }, 'As gpubank scan --store recorded them; a decision here is recorded as gpubank scan approve records it, and the controller carries it out.')
        : h('p', { class: 'note' }, `Last scan ${fmtTime(a.scannedAt)}, every ${a.scanEverySeconds} s, ${a.scans} scans. Verdicts of the last scan: `,
          verdicts.length ? verdicts.map(([k, v], i) => [i ? ', ' : '', `${k} `, num(v, { testid: `verdict-${k}` })]) : 'none'),
      h('h3', {}, 'Open (', h('span', { 'data-testid': 'alerts-open-count' }, String(a.open.length)), ')'),
      alertsTable(a.open, 'alerts-open', { decision: (x) => decisionCell(x, () => alerts.reload()) }),
      h('h3', {}, 'Recently resolved'),
      table([
        { label: 'Workload', cell: (x) => h('a', { href: link.workload(`${x.evidence.namespace}/${x.evidence.workload}`) }, `${x.evidence.namespace}/${x.evidence.workload}`) },
        { label: 'Group', cell: (x) => x.evidence.businessGroup },
        { label: 'Policy', cell: (x) => x.policy },
        { label: 'Detected', cell: (x) => msTime(x.detectedMs) },
        { label: 'Resolved', cell: (x) => msTime(x.resolvedMs) },
        { label: 'Resolution', cell: (x) => x.resolution || '' },
        { label: 'Decision', cell: (x) => (x.decision ? decisionText(x.decision) : '') },
      ], [...a.resolved].reverse().slice(0, 20), { testid: 'alerts-resolved', empty: 'None resolved yet.' }),
    ];
  });

  if (cluster) {
    root.append(h('h1', {}, 'Governance'), alerts,
      h('p', { class: 'muted', 'data-testid': 'reports-elsewhere' }, 'The leaderboard, KPIs and showback read Prometheus: gpubank report --prometheus URL shows them for this cluster.'));
    return;
  }
  const leaderboard = panel('Leaderboard (least idle waste first)', 'leaderboard', async () => {
    const r = await get('governance/leaderboard', null, ctx.opts);
    return [window_(r), h('p', { class: 'note' }, `Ranked with at least ${r.minGpuHours} allocated GPU-hours; others are listed unranked.`),
      table([
        { label: 'Device class', cell: (x) => x.deviceClass },
        { label: 'Rank', num: true, cell: (x) => num(x.rank) },
        { label: 'Group', cell: (x) => h('a', { href: link.group(x.businessGroup) }, x.businessGroup) },
        { label: 'Allocated GPU-h', num: true, cell: (x) => num(x.allocatedGpuHours) },
        { label: 'Low-util GPU-h', num: true, cell: (x) => num(x.lowUtilizationGpuHours) },
        { label: 'Idle waste', num: true, cell: (x) => pct(x.idleWasteShare) },
        { label: 'Serving floor GPU-h', num: true, cell: (x) => num(x.servingFloorGpuHours) },
        { label: 'Low-util cost', num: true, cell: (x) => num(x.lowUtilizationCost) },
      ], r.leaderboard, { testid: 'leaderboard-table' })];
  });

  const kpis = panel('KPIs', 'kpis', async () => {
    const r = await get('governance/kpis', null, ctx.opts);
    return [window_(r), table([
      { label: 'Pool', cell: (x) => x.pool },
      { label: 'Group', cell: (x) => (x.businessGroup === undefined ? h('strong', {}, 'whole pool') : x.businessGroup) },
      { label: 'Allocated GPU-h', num: true, cell: (x) => num(x.allocatedGpuHours) },
      { label: 'Available GPU-h', num: true, cell: (x) => num(x.availableGpuHours) },
      { label: 'Allocation', num: true, cell: (x) => pct(x.allocationRate) },
      { label: 'Borrowing', num: true, cell: (x) => pct(x.borrowRate) },
      { label: 'Effective util.', num: true, cell: (x) => pct(x.effectiveUtilization) },
      { label: 'Idle waste', num: true, cell: (x) => pct(x.idleWasteShare) },
      { label: 'Recompute loss GPU-h', num: true, cell: (x) => num(x.recomputeLossGpuHours) },
      { label: '$ per M tokens', num: true, cell: (x) => num(x.inferenceUnitCostPerMillionTokens, { digits: 3 }) },
    ], r.kpis, { testid: 'kpi-table', rowAttrs: (x) => ({ class: x.businessGroup === undefined ? 'total' : null }) })];
  });

  const showback = panel('Showback by group', 'showback', async () => {
    const r = await get('governance/showback', { level: 'group' }, ctx.opts);
    return [window_(r), table([
      { label: 'Pool', cell: (x) => x.pool },
      { label: 'Group', cell: (x) => x.businessGroup },
      { label: 'GPU', cell: (x) => `${x.gpuModel} ${x.partition}` },
      { label: 'Allocated GPU-h', num: true, cell: (x) => num(x.allocatedGpuHours) },
      { label: 'Effective GPU-h', num: true, cell: (x) => num(x.effectiveGpuHours) },
      { label: 'Low-util GPU-h', num: true, cell: (x) => num(x.lowUtilizationGpuHours) },
      { label: `Cost (${r.currency})`, num: true, cell: (x) => num(x.cost) },
      { label: `Low-util cost (${r.currency})`, num: true, cell: (x) => num(x.lowUtilizationCost) },
    ], r.rows, { testid: 'showback-table' })];
  });

  root.append(h('h1', {}, 'Governance'), alerts, h('div', { class: 'two-col' }, leaderboard, showback), kpis);
}
