// The portal's shell: sign-in, the header (virtual clock, who is signed in, theme, sign
// out) and a router on location.hash that shows one view at a time in <main>.
import * as api from './api.js';
import { h, fmtTime } from './dom.js';
import { setRole } from './panel.js';
import overview from './views/overview.js';
import groups from './views/groups.js';
import group from './views/group.js';
import workload from './views/workload.js';
import { gpusView, poolView } from './views/gpus.js';
import gpu from './views/gpu.js';
import inference from './views/inference.js';
import bank from './views/bank.js';
import governance from './views/governance.js';
import policies from './views/policies.js';
import editor from './views/editor.js';
import changes from './views/changes.js';
import signin from './views/signin.js';

const main = document.getElementById('main');
const clockEl = document.querySelector('[data-testid=clock]');
const whoEl = document.querySelector('[data-testid=whoami]');
const themeBtn = document.querySelector('[data-testid=theme-toggle]');

let session = null; // {subject, role, group, csrfToken, expiresAt}
let page = null;    // AbortController of the view on screen: aborting stops its fetches and timers

// --- Theme: the stored choice, else the system's preference ---------------------------------
const THEME_KEY = 'gpubank-theme';
const systemDark = window.matchMedia('(prefers-color-scheme: dark)');
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  themeBtn.textContent = theme === 'dark' ? 'Light theme' : 'Dark theme';
  themeBtn.setAttribute('aria-pressed', String(theme === 'dark'));
}
applyTheme(localStorage.getItem(THEME_KEY) || (systemDark.matches ? 'dark' : 'light'));
systemDark.addEventListener('change', (e) => {
  if (!localStorage.getItem(THEME_KEY)) applyTheme(e.matches ? 'dark' : 'light');
});
themeBtn.addEventListener('click', () => {
  const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
  localStorage.setItem(THEME_KEY, next);
  applyTheme(next);
});

// --- Routes: [pattern on the hash path, view, nav entry to highlight] -----------------------
const routes = [
  [/^\/?$/, overview, 'overview'],
  [/^\/groups$/, groups, 'groups'],
  [/^\/group\/([^/]+)$/, group, 'groups'],
  [/^\/workload\/([^/]+)\/([^/]+)$/, workload, 'groups'],
  [/^\/gpus$/, gpusView, 'gpus'],
  [/^\/pool\/([^/]+)$/, poolView, 'gpus'],
  [/^\/gpu\/([^/]+)$/, gpu, 'gpus'],
  [/^\/inference$/, inference, 'inference'],
  [/^\/bank$/, bank, 'bank'],
  [/^\/governance$/, governance, 'governance'],
  [/^\/policies$/, policies, 'policies'],
  [/^\/policies\/new$/, editor, 'policies'],
  [/^\/policies\/([^/]+)\/([^/]+)\/edit$/, editor, 'policies'],
  [/^\/changes$/, changes, 'changes'],
];

function notFound(root) {
  root.append(h('h1', {}, 'Not found'), h('p', {}, 'No such page. ', h('a', { href: '#/' }, 'Back to the overview')));
}

function show(view, params, query, nav) {
  page?.abort();
  page = new AbortController();
  const { signal } = page;
  const ctx = {
    params, query, session, signal,
    opts: { signal },
    // Runs fn every ms milliseconds while this view is on screen.
    every(ms, fn) {
      const id = setInterval(fn, ms);
      signal.addEventListener('abort', () => clearInterval(id));
    },
  };
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = h('div', { class: 'page' });
  main.replaceChildren(root);
  try {
    view(root, ctx);
  } catch (e) {
    root.append(h('p', { class: 'error' }, e.message));
  }
}

// The pages this server has data for: every one on `gpubank up`; on a controller the ones
// its session answer lists (server.pages), the first of them as its home.
const offered = (nav) => !session?.server?.pages || session.server.pages.includes(nav);

function route() {
  if (!session) return;
  let [path, qs = ''] = (location.hash.replace(/^#/, '') || '/').split('?');
  if ((path === '/' || path === '') && !offered('overview')) path = `/${session.server.pages[0]}`;
  for (const [re, view, nav] of routes) {
    const m = path.match(re);
    if (!m) continue;
    if (!offered(nav)) {
      return show((root) => root.append(h('h1', {}, 'Not served here'),
        h('p', { 'data-testid': 'not-served' }, 'This page shows the embedded twin (gpubank up); the controller serves ',
          session.server.pages.join(', '), '.')), [], new URLSearchParams(), nav);
    }
    let params;
    try { params = m.slice(1).map(decodeURIComponent); } catch { break; }
    return show(view, params, new URLSearchParams(qs), nav);
  }
  show(notFound, [], new URLSearchParams(), '');
}
window.addEventListener('hashchange', route);

// --- Session ------------------------------------------------------------------------------
function signedIn(s) {
  session = s;
  for (const a of document.querySelectorAll('[data-nav]')) a.hidden = !offered(a.dataset.nav);
  api.setCsrfToken(s.csrfToken);
  setRole(s.role);
  document.body.classList.remove('signed-out');
  whoEl.textContent = `${s.subject} · ${s.role}${s.group ? ` (${s.group})` : ''}`;
  tickClock();
  route();
}

function signedOut(message) {
  if (!session && main.querySelector('[data-testid=signin-form]')) return; // already showing it
  session = null;
  page?.abort();
  api.setCsrfToken(null);
  document.body.classList.add('signed-out');
  whoEl.textContent = '';
  clockEl.textContent = '';
  main.replaceChildren(signin({
    message,
    async submit(token) {
      signedIn(await api.post('session', { token }, { handle401: true }));
    },
  }));
}

api.setUnauthorizedHandler(() => signedOut('Your session has ended. Sign in again.'));

document.querySelector('[data-testid=signout]').addEventListener('click', async () => {
  try { await api.del('session', { handle401: true }); } catch { /* signed out either way */ }
  signedOut('Signed out.');
});

// --- The virtual clock in the header ------------------------------------------------------
async function tickClock() {
  if (!session) return;
  if (session.server?.kind === 'controller') {
    clockEl.textContent = 'cluster · live';
    clockEl.title = 'The controller\'s portal: the policies on the cluster';
    return;
  }
  try {
    const c = await api.get('clock');
    const mode = c.finished ? 'day finished' : c.paused ? 'paused' : `×${c.speed}`;
    clockEl.textContent = `${fmtTime(c.time)} · ${mode}`;
  } catch (e) {
    if (e.status !== 401) clockEl.textContent = 'clock unavailable';
  }
}
setInterval(tickClock, 2000);

// --- Start: a sign-in link (#token=...), else an existing session, else the sign-in form ---
async function start() {
  if (location.hash.startsWith('#token=')) {
    const raw = location.hash.slice('#token='.length);
    // Drop the token from the address bar (and this history entry) before anything else.
    history.replaceState(null, '', `${location.pathname}${location.search}#/`);
    try {
      signedIn(await api.post('session', { token: decodeURIComponent(raw) }, { handle401: true }));
    } catch (e) {
      signedOut(`Sign-in link refused: ${e.message}`);
    }
    return;
  }
  try {
    signedIn(await api.get('session', null, { handle401: true }));
  } catch (e) {
    signedOut(e.status === 401 ? '' : `Cannot reach the server: ${e.message}`);
  }
}
start();
