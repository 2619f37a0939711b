// Changes (#/changes, ?state=Pending for the open ones): proposed policy changes, newest
// first (viewers and group admins see their group's), with their patch and decision. A
// platform-admin approves or rejects the pending ones here; a refusal (proposal.stale, ...)
// shows under its buttons.
import { h, table, fmtTime } from '../dom.js';
import { get, post } from '../api.js';
import { panel } from '../panel.js';
import { decideForm, patchList } from './common.js';
import { editLink } from './policies.js';

function decide(p, reload) {
  return decideForm(`proposal-${p.id}`, 'Comment', [['approve', 'Approve'], ['reject', 'Reject']], async (verb, comment) => {
    await post(`proposals/${encodeURIComponent(p.id)}/${verb}`, { comment });
    reload();
  });
}

// On a cluster an applied change is in force once the controller server-side applied it.
function onCluster(p, cluster) {
  if (!cluster || p.state !== 'Applied') return null;
  return p.enacted
    ? h('div', { class: 'ok', 'data-testid': `proposal-enacted-${p.id}` }, `on the cluster since ${fmtTime(p.enacted.at)} (resourceVersion ${p.enacted.resourceVersion})`)
    : h('div', { class: 'warn', 'data-testid': `proposal-enacted-${p.id}` }, 'not on the cluster yet: the controller applies it at its next pass');
}

function decision(p, admin, reload, cluster) {
  if (p.state === 'Pending') return admin ? decide(p, reload) : h('span', { class: 'muted' }, 'waits for a platform administrator');
  return [`by ${p.decidedBy ?? '—'} at ${fmtTime(p.decidedAt)}`, p.decisionComment ? h('div', { class: 'muted' }, `“${p.decisionComment}”`) : null,
    onCluster(p, cluster)];
}

export default function changes(root, ctx) {
  const state = ctx.query.get('state') || '';
  const admin = ctx.session.role === 'platform-admin';
  const cluster = ctx.session.server?.kind === 'controller';
  const list = panel('Proposed policy changes', 'proposals', async () => {
    const [r, force] = await Promise.all([get('proposals', { state }, ctx.opts), get('policies', null, ctx.opts)]);
    const inForce = new Map(force.items.map((i) => [`${i.kind}/${i.metadata.name}`, i.spec]));
    return [
      h('p', { class: 'actions' }, [['', 'All'], ['Pending', 'Pending']].map(([s, label]) =>
        h('a', { href: s ? `#/changes?state=${s}` : '#/changes', 'aria-current': s === state ? 'page' : null }, label)),
      h('span', { class: 'muted' }, 'Pending changes show their values in force now → proposed.')),
      table([
        { label: 'State', cell: (p) => h('strong', { class: `state-${p.state}`, 'data-testid': `proposal-state-${p.id}` }, p.state) },
        { label: 'Object', cell: (p) => {
          const [kind, name] = p.object.split('/');
          return [inForce.has(p.object) ? h('a', { href: editLink(kind, name) }, p.object) : p.object, h('div', { class: 'muted' }, h('code', {}, p.id))];
        } },
        { label: 'Author', cell: (p) => [p.author, h('div', { class: 'muted nowrap' }, p.authorRole)] },
        { label: 'Submitted', cell: (p) => h('span', { class: 'nowrap' }, fmtTime(p.submittedAt)) },
        { label: 'Why', cell: (p) => [p.approvalReason, p.comment ? h('div', { class: 'muted' }, `“${p.comment}”`) : null] },
        { label: 'Change', cell: (p) => patchList(p.patch, p.state === 'Pending' ? inForce.get(p.object) : null, `proposal-patch-${p.id}`) },
        { label: 'Decision', cell: (p) => decision(p, admin, list.reload, cluster) },
      ], r.items, { testid: 'proposals-table', rowAttrs: (p) => ({ 'data-testid': `proposal-${p.id}` }), empty: 'No proposed changes.' }),
    ];
  });
  root.append(h('h1', {}, 'Changes'), list);
}
