// Policy editor (#/policies/<Kind>/<name>/edit; #/policies/new for a new CapacityLease). The
// YAML text is what is previewed and submitted; for a GPUQuotaPolicy a form edits its numbers
// by rewriting those lines of the YAML's spec (and reads them back when the YAML is edited).
// "Preview impact" runs the day under the policies in force and with the change (a few
// seconds); "Submit" proposes it. A refused document lists its findings under the buttons.
import { h, num, pct, breadcrumb } from '../dom.js';
import { get, post } from '../api.js';
import { panel } from '../panel.js';
import { groupedBars, legend } from '../charts.js';
import { patchList } from './common.js';

const QUOTA_FIELDS = [ // spec key, label, step
  ['guaranteed', 'Guaranteed', '1'], ['borrowLimit', 'Borrow limit', '1'],
  ['lendingLimit', 'Lending limit', '1'], ['maxCapacity', 'Max capacity', '1'],
  ['fairShareWeight', 'Fair-share weight', 'any'],
];

// --- The spec's own lines in block-style YAML ("spec:" then "  key: value") -----------------

function specBlock(lines) {
  const start = lines.findIndex((l) => /^spec:\s*$/.test(l));
  if (start < 0) return null;
  let end = start + 1;
  while (end < lines.length && (lines[end] === '' || /^\s/.test(lines[end]))) end++;
  while (end > start + 1 && lines[end - 1].trim() === '') end--;
  return [start, end];
}

const keyLine = (lines, [start, end], key) =>
  lines.findIndex((l, i) => i > start && i < end && l.startsWith(`  ${key}:`));

function readSpec(text, key) {
  const lines = text.split('\n');
  const block = specBlock(lines);
  const i = block ? keyLine(lines, block, key) : -1;
  return i < 0 ? '' : lines[i].slice(key.length + 3).replace(/\s+#.*$/, '').trim();
}

// Sets (or with '' removes) "  key: value" in the spec, a new line going after the fields
// that come before it in the form.
function writeSpec(text, key, value) {
  const lines = text.split('\n');
  const block = specBlock(lines);
  if (!block) return text;
  const i = keyLine(lines, block, key);
  if (value === '') {
    if (i >= 0) lines.splice(i, 1);
  } else if (i >= 0) {
    lines[i] = `  ${key}: ${value}`;
  } else {
    const before = ['businessGroup', 'resourcePool', ...QUOTA_FIELDS.map(([k]) => k).slice(0, QUOTA_FIELDS.findIndex(([k]) => k === key))];
    const after = Math.max(block[0], ...before.map((k) => keyLine(lines, block, k)));
    lines.splice(after + 1, 0, `  ${key}: ${value}`);
  }
  return lines.join('\n');
}

// A new CapacityLease to start from: the signed-in group, the first pool, eight hours from
// the next full hour of the virtual clock.
// On a cluster (the controller's portal) there is no virtual clock and no pool list: the
// lease starts at the next wall-clock hour, in the pool of the first GPUQuotaPolicy in force.
async function leaseTemplate(ctx) {
  let now = Date.now();
  let pool = 'pool';
  if (onCluster(ctx)) {
    const force = await get('policies', null, ctx.opts);
    pool = force.items.find((i) => i.kind === 'GPUQuotaPolicy')?.spec?.resourcePool ?? pool;
  } else {
    const [clock, pools] = await Promise.all([get('clock', null, ctx.opts), get('pools', null, ctx.opts)]);
    now = Date.parse(clock.time);
    pool = pools[0]?.name ?? pool;
  }
  const start = new Date(now + 3600e3);
  start.setUTCMinutes(0, 0, 0);
  const iso = (d) => d.toISOString().replace('.000Z', 'Z');
  const group = ctx.session.group || 'my-group';
  return ['apiVersion: platform.gpubank.dev/v1alpha1', 'kind: CapacityLease', 'metadata:', `  name: ${group}-lease`,
    'spec:', `  businessGroup: ${group}`, `  resourcePool: ${pool}`, '  type: TemporaryQuota',
    '  extraGuaranteed: 4', `  start: ${iso(start)}`, `  end: ${iso(new Date(start.getTime() + 8 * 3600e3))}`,
    '  reason: Why the group needs these GPUs', ''].join('\n');
}

// --- Findings, the preview and the proposal -----------------------------------------------

function findingsTable(list) {
  return h('div', { class: 'table-wrap' }, h('table', { 'data-testid': 'findings' },
    h('thead', {}, h('tr', {}, ['Severity', 'Rule', 'Object', 'Field', 'Line', 'Message'].map((c) => h('th', {}, c)))),
    h('tbody', {}, list.map((f) => h('tr', { 'data-testid': 'finding', 'data-rule': f.rule },
      h('td', { class: f.severity === 'error' ? 'bad' : null }, f.severity), h('td', {}, h('code', {}, f.rule)),
      h('td', {}, f.object || ''), h('td', {}, f.field || ''), h('td', { class: 'n' }, f.line ?? ''), h('td', {}, f.message))))));
}

// A difference with its sign.
function delta(v, fmt, testid) {
  const el = fmt(v, { testid });
  if (v > 0) el.textContent = `+${el.textContent}`;
  if (v) el.classList.add('changed');
  return el;
}

// Rows side by side: lead columns [[label, row => cell]], then per metric [key, label, fmt]
// the current, proposed and difference (the API's, else proposed - current) columns.
function sideBySide(rows, lead, metrics, testid, id) {
  const diff = (r, k) => r.difference?.[k] ?? r.proposed[k] - r.current[k];
  return h('div', { class: 'table-wrap' }, h('table', { class: 'side-by-side', 'data-testid': testid },
    h('thead', {},
      h('tr', {}, lead.map(([label]) => h('th', { rowspan: 2 }, label)), metrics.map(([, label]) => h('th', { colspan: 3, class: 'span start' }, label))),
      h('tr', {}, metrics.map(() => ['current', 'proposed', 'Δ'].map((x, i) => h('th', { class: i ? 'n' : 'n start' }, x))))),
    h('tbody', {}, rows.map((r) => h('tr', { 'data-testid': `${testid}-${id(r)}`, class: metrics.some(([k]) => diff(r, k)) ? 'changed' : null },
      lead.map(([, cell]) => h('td', {}, cell(r))),
      metrics.map(([k, , fmt = num]) => [
        h('td', { class: 'n start' }, fmt(r.current[k], { testid: `preview-current-${k}-${id(r)}` })),
        h('td', { class: 'n' }, fmt(r.proposed[k], { testid: `preview-proposed-${k}-${id(r)}` })),
        h('td', { class: 'n' }, delta(diff(r, k), fmt, `preview-difference-${k}-${id(r)}`)),
      ]))))));
}

function borrowChart(groups) {
  const sums = new Map();
  for (const g of groups) {
    const t = sums.get(g.businessGroup) || [0, 0, 0, 0];
    [g.current.borrowedGpuHours, g.proposed.borrowedGpuHours, g.current.lentGpuHours, g.proposed.lentGpuHours].forEach((v, i) => { t[i] += v; });
    sums.set(g.businessGroup, t);
  }
  const kinds = [['seg-borrowed now', 'borrowed, current'], ['seg-borrowed', 'borrowed, proposed'], ['seg-lent now', 'lent, current'], ['seg-lent', 'lent, proposed']];
  return [groupedBars({
    testid: 'preview-chart', label: 'Borrowed and lent GPU-hours per group, current and proposed',
    groups: [...sums].map(([label, t]) => ({ label, bars: t.map((v, i) => ({ value: v, cls: kinds[i][0], title: `${label} ${kinds[i][1]}: ${v.toFixed(2)} GPU-h` })) })),
  }), legend(kinds)];
}

function previewBody(r, objectName, base) {
  const gp = [['Group', (g) => g.businessGroup], ['Pool', (g) => g.pool]];
  const id = (g) => `${g.businessGroup}-${g.pool}`;
  return [
    h('p', { class: 'note', 'data-testid': 'preview-work' }, `${r.work}: the same work under the policies in force and with the change.`),
    r.findings.length ? findingsTable(r.findings) : null,
    h('div', { class: 'two-col' },
      h('div', {},
        h('h3', {}, 'Changes'),
        r.changes.length ? r.changes.map((c) => [h('p', {}, h('strong', {}, c.object), ` (${c.change})`), patchList(c.patch, c.object === objectName ? base : null, 'preview-patch')])
          : h('p', { class: 'muted', 'data-testid': 'preview-patch' }, 'None: the document is the policy in force.'),
        h('p', { 'data-testid': 'preview-approval', class: r.needsApproval ? 'warn' : 'ok' },
          r.needsApproval ? 'Needs a platform administrator\'s approval: ' : 'Applies at once: ', r.approvalReason)),
      h('div', {}, h('h3', {}, 'Borrowed and lent GPU-hours per group'), borrowChart(r.groups))),
    h('h3', {}, 'GPU-hours per group and pool'),
    sideBySide(r.groups, gp, [['usedGpuHours', 'used'], ['borrowedGpuHours', 'borrowed'], ['lentGpuHours', 'lent'], ['recomputeLossGpuHours', 'recompute loss']], 'preview-hours', id),
    h('h3', {}, 'Queue wait (seconds, arrival to admission) and reclaims'),
    sideBySide(r.groups, gp, [['queueWaitP50Seconds', 'p50'], ['queueWaitP90Seconds', 'p90'], ['queueWaitP99Seconds', 'p99'], ['reclaims', 'reclaims started as lender']], 'preview-wait', id),
    h('h3', {}, 'Inference services (TTFT p95 SLO attainment: share of minutes within the target)'),
    sideBySide(r.services, [['Service', (x) => x.policy], ['Group', (x) => x.businessGroup], ['Pool', (x) => x.pool], ['TTFT target', (x) => `${x.ttftTargetSeconds} s`]],
      [['sloAttainment', 'SLO attainment', pct], ['gpuHours', 'GPU-hours']], 'preview-services', (x) => x.policy),
  ];
}

const onCluster = (ctx) => ctx.session.server?.kind === 'controller';

function proposalResult(p, ctx) {
  const applied = onCluster(ctx)
    ? 'It is approved; the controller server-side applies it to the cluster at its next pass (the Changes page shows when).'
    : 'It is in force now; applied changes take effect at the next start.';
  return h('div', { class: 'result', 'data-testid': 'proposal-result', 'data-id': p.id },
    h('p', {}, 'Proposal ', h('code', { 'data-testid': 'proposal-id' }, p.id), ': ',
      h('strong', { class: `state-${p.state}`, 'data-testid': 'proposal-state' }, p.state), ` (${p.approvalReason}).`),
    h('p', { class: 'note' }, p.state === 'Pending' ? 'It waits for a platform administrator on the Changes page.' : applied,
      ' ', h('a', { href: '#/changes' }, 'All changes')));
}

// --- The page -----------------------------------------------------------------------------

export default function editor(root, ctx) {
  const [kind = 'CapacityLease', name] = ctx.params;
  const objectName = name ? `${kind}/${name}` : null;
  const path = name ? `policies/${encodeURIComponent(kind)}/${encodeURIComponent(name)}` : null;
  let base = null; // the spec in force: the old values of the patch lines

  const yaml = h('textarea', { id: 'editor-yaml', class: 'yaml', rows: 20, spellcheck: 'false', 'data-testid': 'editor-yaml' });
  const inputs = QUOTA_FIELDS.map(([key, label, step]) => [key, label,
    h('input', { id: `field-${key}`, type: 'number', min: 0, step, 'data-testid': `field-${key}`, placeholder: key === 'lendingLimit' ? 'empty: lends all' : null,
      oninput: (e) => { yaml.value = writeSpec(yaml.value, key, e.target.value.trim()); } })]);
  const readForm = () => { for (const [key, , input] of inputs) input.value = readSpec(yaml.value, key); };
  yaml.addEventListener('input', readForm);

  // The twin previews the first hours of its day; the controller replays the cluster's
  // recorded work of the last hours (when it has an inventory to replay it on).
  const cluster = onCluster(ctx);
  const canPreview = !cluster || ctx.session.server.preview;
  const hourChoices = cluster ? [6, 24, 72, 168] : [1, 2, 3, 4, 5, 6];
  const hours = h('select', { id: 'preview-hours', 'data-testid': 'preview-hours' },
    hourChoices.map((n) => h('option', { value: n, selected: n === (cluster ? 24 : 6) }, `${n} h`)));
  const comment = h('input', { id: 'submit-comment', type: 'text', placeholder: 'Why (the approver reads it)', 'data-testid': 'submit-comment' });
  const findings = h('div', { class: 'findings', 'data-testid': 'editor-findings' });
  const result = h('div', { 'data-testid': 'editor-result' });
  const refused = (e) => findings.replaceChildren(h('p', { class: 'error', role: 'alert', 'data-testid': 'editor-error' },
    e.rule && !e.message.startsWith(e.rule) ? `${e.rule}: ${e.message}` : e.message), e.body?.findings?.length ? findingsTable(e.body.findings) : null);

  let preview = h('section', { class: 'panel' }, h('h2', {}, 'Impact'),
    h('p', { class: 'muted', 'data-testid': 'preview-note' }, !canPreview
      ? 'This controller runs no impact preview (it has no --preview-inventory): preview this document with gpubank up or gpubank twin preview before you submit it.'
      : cluster
        ? 'Preview impact replays the cluster\'s recorded work of the last hours twice, under the policies in force and with this document, and compares them here.'
        : 'Preview impact runs the platform\'s day twice, under the policies in force and with this document, and compares them here.'));

  const previewBtn = h('button', { type: 'button', class: 'primary', 'data-testid': 'preview-button', onclick() {
    findings.replaceChildren();
    previewBtn.disabled = true;
    previewBtn.textContent = 'Previewing…';
    const body = { document: yaml.value, hours: Number(hours.value) };
    const next = panel('Impact', 'preview', async () => {
      try {
        return previewBody(await post('proposals/preview', body, ctx.opts), objectName, base);
      } catch (e) {
        if (!e.body?.refused) throw e;
        refused(e);
        return h('p', { class: 'error' }, 'Refused: nothing was run. See the findings above.');
      } finally {
        previewBtn.disabled = false;
        previewBtn.textContent = 'Preview impact';
      }
    });
    preview.replaceWith(next);
    preview = next;
  } }, 'Preview impact');

  const submitBtn = h('button', { type: 'button', 'data-testid': 'submit-button', async onclick() {
    findings.replaceChildren();
    result.replaceChildren();
    submitBtn.disabled = true;
    try {
      const p = await post('proposals', { document: yaml.value, comment: comment.value }, ctx.opts);
      result.replaceChildren(proposalResult(p, ctx));
      if (p.state === 'Applied' && path) base = (await get(path, null, ctx.opts)).object.spec;
    } catch (e) {
      if (e.name !== 'AbortError') refused(e);
    } finally {
      submitBtn.disabled = false;
    }
  } }, 'Submit');

  const edit = panel('The change', 'editor', async () => {
    if (path) {
      const r = await get(path, null, ctx.opts);
      base = r.object.spec;
      yaml.value = r.yaml;
    } else {
      yaml.value = await leaseTemplate(ctx);
    }
    readForm();
    return [
      h('div', { class: 'editor' },
        h('div', {}, h('label', { for: 'editor-yaml', class: 'muted' }, 'The document (YAML): what is previewed and submitted'), yaml),
        h('div', {},
          kind === 'GPUQuotaPolicy' ? h('div', { class: 'policy-form', 'data-testid': 'quota-form' },
            inputs.map(([key, label, input]) => h('label', { for: `field-${key}` }, label, input))) : null,
          canPreview ? h('h3', {}, 'Impact') : null,
          canPreview ? h('div', { class: 'actions' }, h('label', { for: 'preview-hours' }, cluster ? 'Replay the last' : 'Run the first'), hours,
            cluster ? 'of the cluster\'s work' : 'of the day', previewBtn) : null,
          h('h3', {}, 'Propose'),
          h('div', { class: 'actions' }, comment, submitBtn),
          h('p', { class: 'note' }, 'What only gives back applies at once; what takes more waits for a platform administrator.'))),
      findings, result,
    ];
  });

  root.append(breadcrumb([['Policies', '#/policies'], [objectName || 'New CapacityLease']]),
    h('h1', {}, objectName ? `Edit ${objectName}` : 'New CapacityLease'), edit, preview);
}
