// Overview (#/): the pools, every group's position in each pool, the open low-utilisation
// alerts and a live event timeline. Pools and groups refresh every 5 s.
import { h, num, table, link } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { stackedBar, legend } from '../charts.js';
import { fragmentation, fragLabel, positionBar, positionNumbers, positionLegend, poolScale, alertsTable, eventItem } from './common.js';

const KEEP_EVENTS = 200;

export default function overview(root, ctx) {
  // On a cluster (the controller's portal) there is no GPU list (that is the exporter's, in
  // Prometheus) and no event log: no fragmentation column and no timeline.
  const cluster = ctx.session.server?.kind === 'controller';
  const pools = panel('Pools', 'pools', async () => {
    const [list, gpus] = await Promise.all([get('pools', null, ctx.opts), cluster ? null : get('gpus', null, ctx.opts)]);
    const frag = cluster ? null : fragmentation(gpus);
    return [
      table([
        { label: 'Pool', cell: (p) => h('a', { href: link.pool(p.name) }, p.name) },
        { label: 'GPU', cell: (p) => `${p.gpuModel} ${p.partition}` },
        { label: 'Role', cell: (p) => p.role },
        { label: 'Capacity', num: true, cell: (p) => num(p.capacity, { testid: `pool-capacity-${p.name}` }) },
        { label: 'Guaranteed', num: true, cell: (p) => num(p.guaranteed, { testid: `pool-guaranteed-${p.name}` }) },
        { label: 'Used', num: true, cell: (p) => num(p.used, { testid: `pool-used-${p.name}` }) },
        { label: 'Free', num: true, cell: (p) => num(p.free, { testid: `pool-free-${p.name}` }) },
        cluster ? null : { label: 'Fragmented free GPUs', cell: (p) => fragLabel(frag[p.name], `pool-frag-${p.name}`) },
        { label: 'Used / free', cell: (p) => stackedBar({
          max: p.capacity,
          label: `${p.name}: ${p.used} used, ${p.free} free of ${p.capacity}`,
          segments: [{ value: p.used, cls: 'seg-used', title: `used ${p.used}` },
            { value: p.free, cls: 'seg-free', title: `free ${p.free}` }],
          marks: [{ value: p.guaranteed, cls: 'mark-guarantee', title: `guaranteed ${p.guaranteed}` }],
        }) },
      ], list, { testid: 'pool-table', rowAttrs: (p) => ({ 'data-testid': `pool-row-${p.name}` }) }),
      legend([['seg-used', 'used'], ['seg-free', 'free'], ['mark-swatch', 'guaranteed (line)']]),
      cluster ? h('p', { class: 'note', 'data-testid': 'pools-source' }, 'Used and guaranteed as the bank\'s ledger counts them from Kueue\'s admitted Workloads.')
        : h('p', { class: 'note' }, 'Cluster: ', fragLabel(frag['*'], 'cluster-frag'),
          ' GPUs are fragmented. Fragmented = free GPUs on nodes that have some but not all of their GPUs free, ',
          'as a share of all free GPUs (from /api/v1/gpus; a MIG slice counts as one GPU, an unhealthy GPU is not free).'),
    ];
  });

  const groups = panel('Groups by pool', 'groups', async () => {
    const [poolList, groupList] = await Promise.all([get('pools', null, ctx.opts), get('groups', null, ctx.opts)]);
    return [positionLegend(), poolList.map((pool) => {
      const rows = groupList.flatMap((g) => g.positions.filter((p) => p.pool === pool.name).map((p) => ({ g, p })));
      const max = poolScale(pool, rows.map((r) => r.p));
      return h('div', { class: 'pool-groups', 'data-testid': `pool-groups-${pool.name}` },
        h('h3', {}, h('a', { href: link.pool(pool.name) }, pool.name), h('span', { class: 'muted' }, ` capacity ${pool.capacity}`)),
        rows.length ? rows.map(({ g, p }) => h('div', { class: 'position' },
          h('a', { class: 'position-name', href: link.group(g.name), 'data-testid': `group-link-${g.name}` }, g.name),
          positionBar(p, max, `${g.name} in ${pool.name}`),
          positionNumbers(p, g.name)))
          : h('p', { class: 'muted' }, 'No group has a position here.'));
    })];
  });

  const alerts = panel('Low-utilisation alerts', 'alerts', async () => {
    const a = await get('governance/alerts', null, ctx.opts);
    // The top few: the most GPUs first, then the longest low.
    const top = [...a.open].sort((x, y) => y.evidence.gpus - x.evidence.gpus || y.evidence.lowSeconds - x.evidence.lowSeconds).slice(0, 5);
    return [
      h('p', {}, h('strong', { class: 'big', 'data-testid': 'alerts-open-count' }, String(a.open.length)), ' open. ',
        h('a', { href: '#/governance' }, 'All alerts and evidence')),
      alertsTable(top, 'alerts-top', { compact: true }),
    ];
  });

  const events = cluster
    ? h('section', { class: 'panel', 'data-testid': 'panel-events-elsewhere' }, h('h2', {}, 'Events'),
      h('p', { class: 'muted' }, 'On a cluster the controller records its steps as Kubernetes Events on the objects they concern (kubectl get events -A) and in the store\'s audit log (gpubank audit).'))
    : timeline(ctx);
  root.append(h('h1', {}, 'Overview'), pools, h('div', { class: 'two-col' }, groups, h('div', {}, alerts, events)));
  ctx.every(5000, () => { pools.reload(); groups.reload(); alerts.reload(); });
}

// The live timeline: reads the log to its end once (keeping the last 200), then asks for
// what came after the last seq every 2 s. Newest first.
function timeline(ctx) {
  const list = h('ol', { class: 'events', 'data-testid': 'event-list' });
  const status = h('p', { class: 'muted', 'data-testid': 'event-status' }, 'Loading…');
  let after = 0;
  let busy = false;
  let denied = false; // a 403 will not change by asking again

  const add = (items) => {
    for (const e of items.slice(-KEEP_EVENTS)) list.prepend(eventItem(e));
    while (list.children.length > KEEP_EVENTS) list.lastElementChild.remove();
  };
  const poll = async (first) => {
    if (busy || denied) return;
    busy = true;
    try {
      let more = true;
      // The first read catches up in pages of 1000; later polls read 100 at a time (a few
      // pages when the log ran ahead).
      for (let i = 0; more && i < (first ? 50 : 10); i++) {
        const page = await get('events', { after, limit: first ? 1000 : 100 }, ctx.opts);
        add(page.items);
        after = page.next;
        more = page.more;
      }
      status.textContent = `Live: polled every 2 s, the newest ${KEEP_EVENTS} kept. Last seq ${after}.`;
      sec.dataset.state = 'ready';
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e.status === 403) { denied = true; sec.dataset.state = 'forbidden'; status.textContent = `You do not have access to this (role ${ctx.session.role})`; }
      else status.textContent = `Event poll failed: ${e.message}`;
    } finally {
      busy = false;
    }
  };
  const sec = h('section', { class: 'panel', 'data-testid': 'panel-events', 'data-state': 'loading' },
    h('h2', {}, 'Events'), status, list);
  poll(true);
  ctx.every(2000, () => poll(false));
  return sec;
}
