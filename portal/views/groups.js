// Groups (#/groups): every business group with its positions.
import { h, link } from '../dom.js';
import { get } from '../api.js';
import { panel } from '../panel.js';
import { positionsTable } from './group.js';
import { positionLegend } from './common.js';

export default function groups(root, ctx) {
  const list = panel('Business groups', 'group-list', async () => {
    const [gs, pools] = await Promise.all([get('groups', null, ctx.opts), get('pools', null, ctx.opts)]);
    return [positionLegend(), gs.map((g) => h('div', { class: 'group-card', 'data-testid': `group-card-${g.name}` },
      h('h3', {}, h('a', { href: link.group(g.name), 'data-testid': `group-link-${g.name}` }, g.name),
        h('span', { class: 'muted' }, ` ${g.costCenter} · namespaces ${g.namespaces.join(', ')}`)),
      positionsTable(g, pools)))];
  });
  root.append(h('h1', {}, 'Groups'), list);
}
