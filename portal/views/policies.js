// Policies (#/policies): the policies in force grouped by kind with their key numbers, the
// version in force and the one the running day uses, and an Edit link on the self-service
// kinds the signed-in role may change (the server decides; the link only saves a refusal).
import { h, num, table, fields, fmtTime } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';

const SELF_SERVICE = ['GPUQuotaPolicy', 'InferenceScalingPolicy', 'TidalPolicy', 'CapacityLease'];

export const editLink = (kind, name) => `#/policies/${encodeURIComponent(kind)}/${encodeURIComponent(name)}/edit`;

// The business group an object belongs to: its own, or for a TidalPolicy the one group of
// the inference policies it targets (none when they are several).
function groupOf(item, items) {
  if (item.spec.businessGroup) return item.spec.businessGroup;
  const targets = item.spec.targets?.inferencePolicies || [];
  const groups = new Set(targets.map((t) => items.find((i) => i.kind === 'InferenceScalingPolicy' && i.metadata.name === t)?.spec.businessGroup));
  return groups.size === 1 ? [...groups][0] : undefined;
}

const mayEdit = (session, item, items) => SELF_SERVICE.includes(item.kind)
  && (session.role === 'platform-admin' || (session.role === 'group-admin' && groupOf(item, items) === session.group));

const n = (key, label = key) => ({ label, num: true, cell: (i) => num(i.spec[key], { testid: `policy-${key}-${i.metadata.name}` }) });
const pool = { label: 'Pool', cell: (i) => i.spec.resourcePool ?? i.spec.targets?.resourcePool ?? '' };

// The columns each kind shows after its name and group.
const KIND_COLUMNS = {
  GPUQuotaPolicy: [pool, n('guaranteed'), n('borrowLimit'),
    { label: 'lendingLimit', num: true, cell: (i) => (i.spec.lendingLimit === undefined ? h('span', { class: 'muted', 'data-testid': `policy-lendingLimit-${i.metadata.name}` }, 'lends all') : num(i.spec.lendingLimit, { testid: `policy-lendingLimit-${i.metadata.name}` })) },
    n('maxCapacity'), n('fairShareWeight')],
  InferenceScalingPolicy: [pool, n('minReplicas', 'min replicas'), n('maxReplicas', 'max replicas'),
    { label: 'GPUs per replica', num: true, cell: (i) => num(i.spec.replicaShape?.gpuPerReplica) },
    { label: 'TTFT p95 target', cell: (i) => i.spec.scaleUp?.ttftP95 ?? '' }],
  TidalPolicy: [pool, { label: 'Windows', cell: (i) => (i.spec.windows || []).map((w) => w.name).join(', ') },
    { label: 'Training groups', cell: (i) => (i.spec.targets?.trainingGroups || []).join(', ') }],
  CapacityLease: [pool, { label: 'Type', cell: (i) => i.spec.type }, n('extraGuaranteed'),
    { label: 'From', cell: (i) => fmtTime(i.spec.start) }, { label: 'To', cell: (i) => fmtTime(i.spec.end) },
    { label: 'Approval', cell: (i) => (i.status?.approval ? `approved by ${i.status.approval.approvedBy}` : h('span', { class: 'muted' }, 'not approved')) }],
};

const short = (v) => h('code', { title: v }, String(v).slice(0, 12));

export default function policies(root, ctx) {
  const list = panel('Policies in force', 'policies', async () => {
    const r = await get('policies', null, ctx.opts);
    const kinds = [...new Set(r.items.map((i) => i.kind))]
      .sort((a, b) => (SELF_SERVICE.indexOf(b) >= 0) - (SELF_SERVICE.indexOf(a) >= 0));
    const proposer = ['platform-admin', 'group-admin'].includes(ctx.session.role);
    return [
      fields([['version', 'Version in force', short(r.version)], ['runningVersion', 'The running day uses', short(r.runningVersion)]], 'policies'),
      r.version !== r.runningVersion
        ? h('p', { class: 'note warn', 'data-testid': 'policies-version-note' }, 'Applied changes take effect at the next start: the running day keeps the policies it started with.')
        : null,
      h('p', { class: 'actions' }, h('a', { href: '#/changes' }, 'Proposed changes'),
        proposer ? h('a', { href: '#/policies/new', 'data-testid': 'new-lease' }, 'New CapacityLease') : null),
      kinds.map((kind) => [
        h('h3', {}, kind, SELF_SERVICE.includes(kind) ? null : h('span', { class: 'muted' }, ' (not self-service)')),
        table([
          { label: 'Name', cell: (i) => i.metadata.name },
          { label: 'Group', cell: (i) => i.spec.businessGroup ?? '' },
          ...(KIND_COLUMNS[kind] || []),
          { label: '', cell: (i) => (mayEdit(ctx.session, i, r.items)
            ? h('a', { href: editLink(i.kind, i.metadata.name), 'data-testid': `edit-${i.kind}-${i.metadata.name}` }, 'Edit') : '') },
        ], r.items.filter((i) => i.kind === kind), { testid: `policies-${kind}`, rowAttrs: (i) => ({ 'data-testid': `policy-row-${i.kind}-${i.metadata.name}` }) }),
      ]),
    ];
  });
  root.append(h('h1', {}, 'Policies'), list);
}
