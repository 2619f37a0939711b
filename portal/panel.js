// A panel is a titled section of a page that loads its own data. Each one fails on its own:
// a 403 becomes "You do not have access to this (role X)", another error its message, and
// the rest of the page stays usable. data-state (loading|ready|forbidden|error) tells tests
// when a panel is done.
import { h } from './dom.js';

let currentRole = '';
export function setRole(role) { currentRole = role || ''; }

// fill() returns the panel's content (a node, a list of nodes, or a promise of those).
// The section gets .reload() to fetch and render again (used by the live overview).
export function panel(title, testid, fill) {
  const body = h('div', { class: 'panel-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const sec = h('section', { class: 'panel', 'data-testid': `panel-${testid}`, 'data-state': 'loading' },
    h('h2', {}, title), body);
  let shown = null; // the markup on screen, so a reload that changes nothing leaves the DOM be
  sec.reload = async () => {
    try {
      const nodes = [await fill()].flat(Infinity).filter((c) => c !== null && c !== undefined)
        .map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
      const markup = nodes.map((n) => n.outerHTML ?? n.textContent).join('');
      if (markup !== shown || sec.dataset.state !== 'ready') body.replaceChildren(...nodes);
      shown = markup;
      sec.dataset.state = 'ready';
    } catch (e) {
      if (e.name === 'AbortError') return; // the page was left
      if (e.status === 403) {
        sec.dataset.state = 'forbidden';
        body.replaceChildren(h('p', { class: 'forbidden', 'data-testid': 'forbidden' },
          `You do not have access to this (role ${currentRole || 'unknown'})`));
      } else {
        sec.dataset.state = 'error';
        body.replaceChildren(h('p', { class: 'error', 'data-testid': 'panel-error' }, e.message));
      }
    }
  };
  sec.reload();
  return sec;
}
