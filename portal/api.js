// The fetch wrapper for gpubank's REST API (/api/v1/...).
//
// Same origin only, the session cookie goes along (credentials 'same-origin'), writes carry
// the session's CSRF token in X-CSRF-Token (and X-Requested-With), and an error answer ({"error","field","rule"})
// becomes an ApiError whose message a person can read (the whole answer stays in .body:
// a refused policy change lists its findings there). A 401 calls the handler the app
// registered (it shows the sign-in view) unless the caller asked to handle it itself.

let csrfToken = null;
let onUnauthorized = () => {};

export function setCsrfToken(token) { csrfToken = token || null; }
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

export class ApiError extends Error {
  constructor(status, body, text) {
    const b = body && typeof body === 'object' ? body : {};
    let msg = b.error || (b.refused ? 'Refused: see the findings' : '') || (text ? text.slice(0, 200) : '') || `HTTP ${status}`;
    if (b.field) msg += ` (field: ${b.field})`;
    super(msg);
    this.status = status;
    this.rule = b.rule || '';
    this.field = b.field || '';
    this.body = b;
  }
}

// path is relative to /api/v1/ ("pools", "gpus/GPU-..."); query values that are empty,
// null or undefined are left out.
export async function request(method, path, { query, body, signal, handle401 = false } = {}) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const qs = params.toString();
  const url = `/api/v1/${path}${qs ? `?${qs}` : ''}`;
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  // Behind a sign-in proxy (docs/auth.md) there is no session token: this header, which no
  // cross-site form can send, is what the server asks of a write instead.
  if (method !== 'GET') headers['X-Requested-With'] = 'gpubank';

  let res;
  try {
    res = await fetch(url, {
      method, headers, signal, credentials: 'same-origin', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, { error: `the server cannot be reached (${e.message})` });
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON: keep the text */ }
  if (!res.ok) {
    const err = new ApiError(res.status, data, text);
    if (res.status === 401 && !handle401) onUnauthorized(err);
    throw err;
  }
  return data;
}

export const get = (path, query, opts) => request('GET', path, { ...opts, query });
export const post = (path, body, opts) => request('POST', path, { ...opts, body });
export const del = (path, opts) => request('DELETE', path, opts);

// Pages through an ?after=&limit= endpoint (events, ledger, audit) from `after` to its end.
// Returns {items, next}; stops after maxPages so a huge log cannot hang the page.
export async function readAll(path, { after = 0, query, signal, maxPages = 50 } = {}) {
  const items = [];
  let next = after;
  for (let i = 0; i < maxPages; i++) {
    const page = await get(path, { ...query, after: next, limit: 1000 }, { signal });
    items.push(...page.items);
    next = page.next;
    if (!page.more) break;
  }
  return { items, next };
}
