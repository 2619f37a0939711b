#!/usr/bin/env python3
"""Smoke test of the gpubank portal in headless Chromium (Python 3 stdlib + webdriver.py).

  python3 tests/portal/portal_smoke_test.py --base-url http://127.0.0.1:8080 --token gpb_... \\
      [--screenshots DIR] [--viewer-token TOKEN] [--group-admin-token TOKEN]

Signs in through the #token= link, checks that the overview shows every pool with the
numbers GET /api/v1/pools answers (used and free too, and the groups' positions, when the
clock is paused or the day is over), drills down group -> workload -> GPU and checks the GPU
page against GET /api/v1/gpus/<uuid>, checks the Inference page's TTFT p95, replicas and
queue per service against GET /api/v1/services, opens Governance, Policies, Changes and Bank,
checks the Bank page's reclaims (in progress first, first one's lender and pool) and capacity
leases (approval) against GET /api/v1/reclaims and /policies, signs out and in again through
the form, and fails on Content-Security-Policy violations or uncaught errors in the console.
--viewer-token: also signs in as a viewer and checks that another group's workload answers
"You do not have access to this (role viewer)" in its panel, that the Changes page shows it
the proposals the API does, with no Approve button, and the Bank page the reclaims its API
does. --group-admin-token (a group-admin of ads): in the policy editor lowers
GPUQuotaPolicy/ads-training-h100's borrowLimit and maxCapacity and submits (Applied at once,
on the page and in the API), raises them again, previews 2 hours and then the whole 6-hour
day, each time checking every figure of the preview against POST /api/v1/proposals/preview
for the same document, submits (Pending, no Approve button for it), then as the --token
platform-admin approves it on the Changes page and checks GET /api/v1/proposals/<id>.
--screenshots: saves overview, group, gpu, governance, inference, bank, policies, changes
(and editor-preview with --group-admin-token) at 1280x800 and overview-narrow at 390x844, in
the light theme and (as *-dark.png) the dark one. Exits 1 naming the first mismatch.
"""
import argparse
import decimal
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import WebDriver, WebDriverError  # noqa: E402


class Mismatch(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Mismatch(message)


class Api:
    def __init__(self, base, token):
        self.base, self.token = base, token

    def get(self, path):
        req = urllib.request.Request(f'{self.base}/api/v1/{path}', headers={'Authorization': f'Bearer {self.token}'})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            raise Mismatch(f'GET /api/v1/{path} with the token answers {e.code}: {e.read()[:300].decode(errors="replace")}') from None

    def post(self, path, body):
        req = urllib.request.Request(f'{self.base}/api/v1/{path}', data=json.dumps(body).encode(), method='POST',
                                     headers={'Authorization': f'Bearer {self.token}', 'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            raise Mismatch(f'POST /api/v1/{path} with the token answers {e.code}: {e.read()[:300].decode(errors="replace")}') from None


# Every element with a data-testid starting with prefix: {testid: (text, data-value)}, read
# in one script so a panel refreshing in between cannot mix two answers.
READ = """
const out = {};
for (const el of document.querySelectorAll('[data-testid]')) {
  const id = el.dataset.testid;
  if (id.startsWith(arguments[0])) out[id] = [el.textContent.trim(), el.dataset.value ?? null];
}
return out;"""


def same_number(shown, value):
    """Whether a number element shows the API's value: integers as text, others by data-value."""
    if shown is None:
        return False
    text, data = shown
    if isinstance(value, int):
        return text == str(value)
    return data is not None and abs(float(data) - value) < 1e-9


def rounded(value, places):
    """Number.prototype.toFixed: half away from zero on the exact binary value."""
    q = decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP)
    return str(q)


def page_text(value, percent=False, signed=False, digits=2):
    """The text dom.js num() (or pct()) shows for an API number; signed: a difference."""
    if value is None:
        return '—'
    if percent:
        text = rounded(value * 100, 1) + '%'
    elif float(value).is_integer():
        text = str(int(value))
    else:
        text = rounded(value, digits).rstrip('0').rstrip('.')
    return ('+' + text) if signed and value > 0 else text


def shows(shown, value, **kw):
    """Whether an element shows the API's number as the page rounds it, the exact value in
    data-value where it is not an integer."""
    if shown is None:
        return False
    text, data = shown
    exact = abs(float(data) - value) < 1e-9 if data is not None else float(value).is_integer()
    return text == page_text(value, **kw) and exact


def check_console(d):
    """Fails on a Content-Security-Policy violation, an uncaught error or any other severe
    console entry (a 401 or 403 answer is the test's own doing)."""
    problems = [e['message'] for e in d.browser_log()
                if 'Content Security Policy' in e['message'] or 'Uncaught' in e['message']
                or (e['level'] == 'SEVERE' and '401' not in e['message'] and '403' not in e['message'])]
    check(not problems, 'the browser console reports: ' + ' | '.join(problems))
    print('ok: no CSP violations or uncaught errors in the console')


def set_viewport(d, width, height):
    """Sizes the window so the page itself gets width x height."""
    d.set_window_size(width, height)
    iw, ih = d.execute_script('return [innerWidth, innerHeight]')
    if (iw, ih) != (width, height):
        d.set_window_size(2 * width - iw, 2 * height - ih)


def wait_ready(d, *panels, timeout=20):
    for p in panels:
        d.wait_for(f'[data-testid="panel-{p}"]:not([data-state="loading"])', timeout)
        css = f'[data-testid="panel-{p}"]'
        if d.execute_script('return document.querySelector(arguments[0]).dataset.state', css) == 'error':
            raise Mismatch(f'panel {p} failed: {d.text(css)}')


PAGES = [  # name, hash route, panels to wait for
    ('overview', '#/', ['pools', 'groups', 'alerts', 'events']),
    ('governance', '#/governance', ['governance-alerts', 'leaderboard', 'kpis', 'showback']),
    ('policies', '#/policies', ['policies']),
    ('changes', '#/changes', ['proposals']),
    ('inference', '#/inference', ['services', 'service-history']),
    ('bank', '#/bank', ['reclaims', 'leases', 'ledger', 'ledger-chart']),  # last: the ledger and reclaim checks read this page
]


def run(args, d, api):
    base = args.base_url
    shots = args.screenshots
    set_viewport(d, 1280, 800)
    api.get('clock')  # a token the API refuses fails here, naming the answer

    # Sign in through the link gpubank up prints.
    d.navigate(f'{base}/#token={urllib.parse.quote(args.token)}')
    d.wait_for('[data-testid="panel-pools"], [data-testid=signin-message]', 20)
    check(not d.find_all('[data-testid=signin-message]'),
          f'the sign-in link was refused: {d.execute_script("return document.querySelector(`[data-testid=signin-message]`)?.textContent")}')
    wait_ready(d, 'pools', 'groups')
    check(args.token not in d.current_url(), f'the token is still in the address bar: {d.current_url()}')
    check(d.text('[data-testid=whoami]'), 'the header names nobody after signing in')

    # The overview's numbers against the API's.
    clock = api.get('clock')
    frozen = clock['paused'] or clock['finished']
    pools = api.get('pools')
    groups = api.get('groups') if frozen else []
    shown = d.execute_script(READ, 'pool-')
    shown.update(d.execute_script(READ, 'group-'))
    for p in pools:
        check(f'pool-row-{p["name"]}' in shown, f'pool {p["name"]} is not on the overview')
        for k in ('capacity', 'guaranteed') + (('used', 'free') if frozen else ()):
            got = shown.get(f'pool-{k}-{p["name"]}')
            check(same_number(got, p[k]), f'pool {p["name"]} {k}: page shows {got}, API says {p[k]}')
    for g in groups:
        for pos in g['positions']:
            for k in ('used', 'borrowed', 'lent', 'borrowable', 'guaranteed'):
                got = shown.get(f'group-{k}-{g["name"]}-{pos["pool"]}')
                check(same_number(got, pos[k]), f'group {g["name"]} in {pos["pool"]} {k}: page shows {got}, API says {pos[k]}')
    print(f'ok: overview shows {len(pools)} pools as the API does'
          + (f', and {sum(len(g["positions"]) for g in groups)} group positions (clock frozen)' if frozen else
             ' (capacity and guarantee only: the clock runs)'))

    # Drill down: group -> workload -> GPU, choosing a workload the API says holds a GPU.
    gpus = api.get('gpus')
    target = next((w for g in gpus for w in g.get('workloads', []) if w.get('workload')), None)
    check(target, 'no GPU runs a named workload: nothing to drill down to')
    wl, grp = target['workload'], target['businessGroup']
    d.click(f'[data-testid="group-link-{grp}"]')
    wait_ready(d, 'positions', 'group-history', 'queues', 'workloads', 'alerts')
    check(grp in d.text('[data-testid=breadcrumb]'), 'the group page has no breadcrumb naming the group')
    # Its position over time: one chart per pool with minutes, as the API has them.
    gh = api.get('groups/' + urllib.parse.quote(grp) + '/history')
    charted = [p['pool'] for p in gh['pools'] if len(p['minutes']) >= 2]
    for pool in charted:
        check(d.find_all(f'[data-testid="group-history-chart-{pool}"] svg path.line'),
              f'the group page of {grp} has no position chart for {pool}')
    check(d.find_all('[data-testid=group-markers]'), 'the group page has no list of quota changes and reclaims')
    print(f'ok: group {grp}: position charts for {charted}, {len(gh["markers"])} events in the last 6 h')
    # Its pools' pages chart their devices and holders over time, as the API has them.
    for pool in charted[:1]:
        d.click(f'a[href="#/pool/{urllib.parse.quote(pool)}"]')
        wait_ready(d, 'pool', 'pool-history', 'gpu-grid')
        ph = api.get('pools/' + urllib.parse.quote(pool) + '/history')
        if len(ph['minutes']) >= 2:
            check(d.find_all('[data-testid=pool-history-chart] svg path.line'), f'the pool page of {pool} has no chart')
        check(d.find_all('[data-testid=pool-markers]'), f'the pool page of {pool} has no event list')
        print(f'ok: pool {pool}: {len(ph["minutes"])} minutes, {ph["minutes"][-1]["devices"] if ph["minutes"] else 0} devices '
              f'at the last, {len(ph["markers"])} events')
        d.click(f'a[href="#/group/{urllib.parse.quote(grp)}"]')
        wait_ready(d, 'positions', 'group-history', 'queues', 'workloads', 'alerts')
    d.click(f'[data-testid="workload-link-{wl}"]')
    wait_ready(d, 'workload', 'gpus', 'workload-history')
    wh = api.get('workloads/' + wl + '/history')
    if len(wh['mean']) >= 2:
        check(d.find_all('[data-testid=workload-history-chart] svg path.line'), f'the workload page of {wl} has no utilisation chart')
    check(d.text('[data-testid=workload-name]') == wl, f'the workload page shows {d.text("[data-testid=workload-name]")}, not {wl}')
    links = d.execute_script("return [...document.querySelectorAll('[data-testid=workload-gpu-link]')].map(a => a.textContent)")
    want = sorted({g['uuid'] for g in api.get('gpus?pool=' + urllib.parse.quote(target_pool(gpus, wl)))
                   if any(w.get('workload') == wl for u in [g] + g.get('migSlices', []) for w in u.get('workloads', []))})
    # On a running clock the workload may have moved on since: then only its GPUs' pages are checked.
    check(sorted(set(links)) == want if frozen else links, f'workload {wl} lists GPUs {links}, the API has {want}')
    d.click('[data-testid=workload-gpu-link]')
    wait_ready(d, 'gpu')
    uuid = d.text('[data-testid=gpu-uuid]')
    g = api.get('gpus/' + urllib.parse.quote(uuid))
    for testid, key in (('uuid', 'uuid'), ('model', 'gpuModel'), ('product', 'product'), ('node', 'node'), ('pool', 'pool')):
        got = d.text(f'[data-testid=gpu-{testid}]')
        check(got == g[key], f'GPU page {testid}: page shows {got!r}, API says {g[key]!r}')
    crumb = d.text('[data-testid=breadcrumb]')
    for part in ('Cluster', g['pool'], grp, wl, uuid):
        check(part in crumb, f'the GPU breadcrumb {crumb!r} lacks {part!r}')
    print(f'ok: drilled down {grp} -> {wl} -> {uuid} ({g["gpuModel"]}), breadcrumb {" ".join(crumb.split())!r}')
    # The last steps: the pod (and the model a replica serves) as the API has them, and the
    # GPU's minutes as a chart with its events as markers.
    holders = [w for u in [g] + g.get('migSlices', []) for w in u.get('workloads', [])]
    pods = d.execute_script("return [...document.querySelectorAll('[data-testid=gpu-pod]')].map(e => e.textContent)")
    if frozen:
        check(sorted(pods) == sorted(w.get('pod', '—') for w in holders), f'GPU page pods {pods}, the API has {holders}')
    check(any(p.startswith(wl.split('/')[1]) for p in pods) or not frozen, f'no pod of {wl} on its GPU page: {pods}')
    wait_ready(d, 'gpu-history')
    history = api.get('gpus/' + urllib.parse.quote(uuid) + '/history')
    if any(len(dev['samples']) >= 2 for dev in history['devices']):
        check(d.find_all('[data-testid^=gpu-history-chart] svg path.line'), 'the GPU page has no utilisation chart')
    check(d.find_all('[data-testid=gpu-markers]'), 'the GPU page has no event list')
    d.click('[data-testid=gpu-range-1h]')
    wait_ready(d, 'gpu-history')
    check('range=1h' in d.current_url(), f'the time range is not in the address: {d.current_url()}')
    marks = len(d.find_all('[data-testid^=gpu-history-chart] line.marker'))
    print(f'ok: GPU {uuid}: pods {pods}, {sum(len(dev["samples"]) for dev in history["devices"])} minutes in the last 6 h, '
          f'{len(history["markers"])} events; {marks} markers on the last hour\'s chart')
    if shots:
        capture(d, shots, '', [('group', f'#/group/{grp}', ['positions', 'group-history', 'workloads']), ('pool', f'#/pool/{urllib.parse.quote(g["pool"])}', ['pool', 'pool-history', 'gpu-grid']), ('gpu', f'#/gpu/{uuid}?workload={wl}', ['gpu', 'gpu-history'])])

    inference(d, args, api, frozen)

    # Governance, Policies, Changes, Inference and Bank load, and the ledger's newest entry is the API's.
    for name, route, panels in PAGES[1:]:
        d.navigate(f'{base}/{route}')
        wait_ready(d, *panels)
    if frozen:
        after, last = 0, 0
        while True:
            page = api.get(f'ledger?after={after}&limit=1000')
            last = page['items'][-1]['seq'] if page['items'] else last
            after = page['next']
            if not page['more']:
                break
        top = d.text('[data-testid=ledger-seq]')
        check(top == str(last), f'the Bank page starts at seq {top}, the ledger ends at {last}')
    print('ok: governance, policies, changes, inference and bank panels load' + (f', ledger newest seq {top}' if frozen else ''))
    reclaims(d, api, frozen)

    if shots:
        capture(d, shots, '', PAGES)
        d.click('[data-testid=theme-toggle]')
        dark = d.execute_script('return document.documentElement.dataset.theme')
        capture(d, shots, '-dark', PAGES + [('group', f'#/group/{grp}', ['positions', 'group-history', 'workloads']), ('pool', f'#/pool/{urllib.parse.quote(g["pool"])}', ['pool', 'pool-history', 'gpu-grid']), ('gpu', f'#/gpu/{uuid}?workload={wl}', ['gpu', 'gpu-history'])])
        set_viewport(d, 390, 844)
        for suffix in ('-dark', ''):  # dark first, then back to light
            capture(d, shots, '-narrow' + suffix, PAGES[:1])
            width = d.execute_script('return document.documentElement.scrollWidth')
            check(width <= 390, f'at 390 px the overview is {width} px wide (scrolls sideways)')
            if suffix:
                d.click('[data-testid=theme-toggle]')
        set_viewport(d, 1280, 800)
        print(f'ok: screenshots in {shots} (second theme {dark})')

    # Sign out, then in again through the form; a wrong token is refused inline.
    d.click('[data-testid=signout]')
    d.wait_for('[data-testid=signin-form]')
    d.send_keys('[data-testid=signin-token]', 'gpb_not_a_token')
    d.click('[data-testid=signin-submit]')
    d.wait_for('[data-testid=signin-error]:not(:empty)')
    d.execute_script("document.querySelector('[data-testid=signin-token]').value = ''")
    d.send_keys('[data-testid=signin-token]', args.token)
    d.click('[data-testid=signin-submit]')
    d.wait_for('.page [data-state=ready]')  # back on the page it was on
    check(d.text('[data-testid=whoami]'), 'the header names nobody after signing in through the form')
    print('ok: signed out, a wrong token refused in the form, signed in again through it')

    if args.group_admin_token:
        policy_change(d, args, api)
    if args.viewer_token:
        viewer(d, args, gpus)

    check_console(d)


def inference(d, args, api, frozen):
    """The Inference page has a card per service of GET /api/v1/services; with the clock
    frozen, each shows the API's TTFT p95, replica count (and per state) and queue depth."""
    d.navigate(f'{args.base_url}/#/inference')
    wait_ready(d, 'services')
    services = api.get('services')
    shown = d.execute_script(READ, 'service-')
    for s in services:
        p = s['policy']
        check(f'service-{p}' in shown, f'service {p} has no card on the Inference page')
        if not frozen:
            continue
        got, ttft = shown.get(f'service-ttft-{p}'), s['ttftP95Seconds']
        want = page_text(ttft, digits=3) + ('' if ttft is None else ' s')
        check(got and got[0] == want and (ttft is None or float(got[1]) == ttft),
              f'service {p} TTFT p95: page shows {got}, API says {ttft}')
        got = shown.get(f'service-replicas-{p}')
        check(same_number(got, len(s['replicas'])), f'service {p} replicas: page shows {got}, API lists {len(s["replicas"])}')
        for state in {r['state'] for r in s['replicas']}:
            n = sum(r['state'] == state for r in s['replicas'])
            got = shown.get(f'service-replicas-{state}-{p}')
            check(same_number(got, n), f'service {p} {state} replicas: page shows {got}, API lists {n}')
        got = shown.get(f'service-queue-{p}')
        check(same_number(got, s['waiting'] + s['routerWaiting']), f'service {p} queue: page shows {got}, API waiting {s["waiting"]} + router {s["routerWaiting"]}')
    print(f'ok: the Inference page has the API\'s {len(services)} services'
          + (': TTFT p95, replicas by state and queue as the API says (clock frozen)' if frozen else ' (figures not compared: the clock runs)'))
    # Each service over time: replicas and TTFT p95 as charts where the API has the minutes.
    wait_ready(d, 'service-history')
    charted = []
    for s in services:
        hist = api.get('services/' + urllib.parse.quote(s['policy']) + '/history')
        if len(hist['minutes']) >= 2:
            check(d.find_all(f'[data-testid="service-history-replicas-{s["policy"]}"] svg path.line'),
                  f'service {s["policy"]} has no replica chart although the API has {len(hist["minutes"])} minutes')
            charted.append(f'{s["policy"]} ({len(hist["minutes"])} minutes, {len(hist["markers"])} events)')
    print(f'ok: the Inference page charts {", ".join(charted) or "no service yet"} over the last 6 h')


def reclaim_order(items):
    """The page's order: those in progress first, then the rest, each as the API lists them."""
    open_ = [r for r in items if r['result'] == 'InProgress' or not r['ended']]
    return open_ + [r for r in items if r not in open_]


RECLAIM_IDS = "return [...document.querySelectorAll('[data-testid=reclaim-list] > article')].map(a => a.dataset.testid.slice(8))"


def reclaims(d, api, frozen):
    """On the Bank page (open): the reclaims panel lists GET /api/v1/reclaims?limit=100, in
    progress first, the first one's lender and pool as the API's; each CapacityLease is listed
    approved exactly when its status has an approval."""
    want = reclaim_order(api.get('reclaims?limit=100')['items'])
    ids = d.execute_script(RECLAIM_IDS)
    if frozen:
        check(ids == [r['id'] for r in want], f'the reclaims panel lists {ids}, the API {[r["id"] for r in want]}')
        if want:
            r = want[0]
            for key in ('lender', 'pool'):
                got = d.text(f'[data-testid="reclaim-{key}-{r["id"]}"]')
                check(got == r[key], f'reclaim {r["id"]} {key}: page shows {got!r}, API says {r[key]!r}')
            victims = d.execute_script("return document.querySelectorAll(`[data-testid^='reclaim-victim-${arguments[0]}-']`).length", r['id'])
            check(victims == len(r['victims']), f'reclaim {r["id"]} shows {victims} victims, the API {len(r["victims"])}')
    leases = [i for i in api.get('policies')['items'] if i['kind'] == 'CapacityLease']
    for lease in leases:
        name = lease['metadata']['name']
        got = d.text(f'[data-testid="lease-approval-{name}"]')
        approved = bool((lease.get('status') or {}).get('approval'))
        check(got.startswith('approved by') == approved, f'lease {name} reads {got!r}; status.approval {"is" if approved else "is not"} there')
    print(f'ok: the reclaims panel lists {len(ids)} reclaims'
          + (f' as the API does (first {want[0]["id"]}: {want[0]["lender"]} in {want[0]["pool"]})' if frozen and want else '')
          + f'; {len(leases)} capacity leases with their approval')


def target_pool(gpus, wl):
    return next(g['pool'] for g in gpus for u in [g] + g.get('migSlices', []) for w in u.get('workloads', []) if w.get('workload') == wl)


def sign_in_as(d, args, token):
    """Signs out, signs in with token through the form and returns the session."""
    d.click('[data-testid=signout]')
    d.wait_for('[data-testid=signin-form]')
    d.send_keys('[data-testid=signin-token]', token)
    d.click('[data-testid=signin-submit]')
    d.wait_for('[data-testid=whoami]:not(:empty)')
    # Signing in through the form stays on the page it was on: go to the overview.
    d.navigate(f'{args.base_url}/#/')
    wait_ready(d, 'pools', 'groups')
    return d.execute_script("return fetch('/api/v1/session', {credentials: 'same-origin'}).then(r => r.json())")


def type_number(d, testid, value):
    d.execute_script("document.querySelector(`[data-testid=${arguments[0]}]`).value = ''", testid)
    d.send_keys(f'[data-testid={testid}]', str(value))


def both_themes(d, folder, name):
    """Screenshots of the page as it is, light and (name-dark.png) dark."""
    check(d.execute_script('return document.documentElement.dataset.theme') == 'light', 'the page is not in the light theme')
    toggle = "document.querySelector('[data-testid=theme-toggle]').click()"  # a WebDriver click would scroll up to it
    d.screenshot(os.path.join(folder, f'{name}.png'))
    d.execute_script(toggle)
    d.screenshot(os.path.join(folder, f'{name}-dark.png'))
    d.execute_script(toggle)


def preview(d, ga, doc, hours):
    """Runs Preview impact for hours on the page and checks every figure it shows against
    POST /api/v1/proposals/preview for the same document; returns the API's answer."""
    d.execute_script("document.querySelector('[data-testid=preview-hours]').value = arguments[0]", str(hours))
    d.click('[data-testid=preview-button]')
    d.wait_for('[data-testid="panel-preview"]:not([data-state="loading"])', 300)
    check(d.execute_script("return document.querySelector('[data-testid=panel-preview]').dataset.state") == 'ready',
          f'the preview failed: {d.text("[data-testid=panel-preview]")} {d.text("[data-testid=editor-findings]")}')
    want = ga.post('proposals/preview', {'document': doc, 'hours': hours})
    shown = d.execute_script(READ, 'preview-')
    rows = [(f'{g["businessGroup"]}-{g["pool"]}', g, m, {}) for g in want['groups'] for m in PREVIEW_METRICS]
    rows += [(sv['policy'], sv, m, {'percent': m == 'sloAttainment'}) for sv in want['services'] for m in ('sloAttainment', 'gpuHours')]
    for key, r, m, kw in rows:
        diff = r['difference'][m] if 'difference' in r else r['proposed'][m] - r['current'][m]
        for side, value in (('current', r['current'][m]), ('proposed', r['proposed'][m]), ('difference', diff)):
            got = shown.get(f'preview-{side}-{m}-{key}')
            check(shows(got, value, signed=side == 'difference', **kw), f'{hours} h preview {key} {side} {m}: page shows {got}, API says {value}')
    patch = d.text('[data-testid=preview-patch]')
    check('spec.borrowLimit: 8 → 16' in patch and 'spec.maxCapacity: 24 → 32' in patch, f'the preview lists the changes as {patch!r}')
    check(want['needsApproval'] and want['approvalReason'] in d.text('[data-testid=preview-approval]'),
          f'the preview says {d.text("[data-testid=preview-approval]")!r}, the API {want["approvalReason"]!r}')
    ads = next(g for g in want['groups'] if (g['businessGroup'], g['pool']) == ('ads', 'h100-rdma-training'))
    moved = sum(1 for g in want['groups'] for m in PREVIEW_METRICS if g['difference'][m])
    print(f'ok: the {hours}-hour preview shows the API\'s {3 * len(rows)} figures (ads/h100-rdma-training borrowed GPU-h '
          f'{page_text(ads["current"]["borrowedGpuHours"])} -> {page_text(ads["proposed"]["borrowedGpuHours"])}; '
          f'{moved} group figures change), the patch and "{want["approvalReason"]}"')


POLICY = 'GPUQuotaPolicy/ads-training-h100'
PREVIEW_METRICS = ['usedGpuHours', 'borrowedGpuHours', 'lentGpuHours', 'recomputeLossGpuHours',
                   'queueWaitP50Seconds', 'queueWaitP90Seconds', 'queueWaitP99Seconds', 'reclaims']


def policy_change(d, args, api):
    """A group-admin of ads gives back at once, then asks for more; the platform-admin approves."""
    ga = Api(args.base_url, args.group_admin_token)
    me = sign_in_as(d, args, args.group_admin_token)
    check(me.get('role') == 'group-admin' and me.get('group') == 'ads', f'--group-admin-token signs in as {me}, not a group-admin of ads')
    d.navigate(f'{args.base_url}/#/policies')
    wait_ready(d, 'policies')
    check(d.find_all('[data-testid="edit-GPUQuotaPolicy-ads-training-h100"]'), 'the Policies page has no Edit link for ads-training-h100')
    check(not d.find_all('[data-testid="edit-GPUQuotaPolicy-search-team-h100"]'), 'a group-admin of ads gets an Edit link for search-team-h100')
    d.click('[data-testid="edit-GPUQuotaPolicy-ads-training-h100"]')
    wait_ready(d, 'editor')
    spec = ga.get(f'policies/{POLICY}')['object']['spec']
    for k in ('guaranteed', 'borrowLimit', 'maxCapacity'):
        got = d.execute_script(f"return document.querySelector('[data-testid=field-{k}]').value")
        check(got == str(spec[k]), f'the editor shows {k} {got!r}, the API {spec[k]}')

    def edit(borrow, cap):
        type_number(d, 'field-borrowLimit', borrow)
        type_number(d, 'field-maxCapacity', cap)
        doc = d.execute_script("return document.querySelector('[data-testid=editor-yaml]').value")
        check(f'\n  borrowLimit: {borrow}\n' in doc and f'\n  maxCapacity: {cap}\n' in doc, f'the form did not write the YAML: {doc!r}')
        return doc

    def submit(comment, state):
        d.execute_script("document.querySelector('[data-testid=submit-comment]').value = ''")
        d.send_keys('[data-testid=submit-comment]', comment)
        d.click('[data-testid=submit-button]')
        d.wait_for('[data-testid=proposal-state], [data-testid=editor-error]', 60)
        check(not d.find_all('[data-testid=editor-error]'), f'the proposal was refused: {d.text("[data-testid=editor-findings]")}')
        got, pid = d.text('[data-testid=proposal-state]'), d.text('[data-testid=proposal-id]')
        check(got == state, f'the proposal {pid} is {got} on the page, not {state}')
        listed = next((p for p in ga.get('proposals')['items'] if p['id'] == pid), None)
        check(listed and listed['state'] == state, f'GET /api/v1/proposals lists {pid} as {listed and listed["state"]}, not {state}')
        return pid

    # Giving back applies at once.
    edit(8, 24)
    first = submit('give back for now', 'Applied')
    after = ga.get(f'policies/{POLICY}')['object']['spec']
    check((after['borrowLimit'], after['maxCapacity']) == (8, 24), f'after {first} the policy in force has {after}')
    print(f'ok: {first} lowered ads-training-h100 to borrowLimit 8, maxCapacity 24: Applied (page and API)')

    # Asking for more: the preview on the page is the API's.
    doc = edit(16, 32)
    preview(d, ga, doc, 2)
    preview(d, ga, doc, 6)  # the whole day: the change moves figures here
    if args.screenshots:
        d.execute_script("document.querySelector('[data-testid=panel-preview]').scrollIntoView()")
        both_themes(d, args.screenshots, 'editor-preview')
        d.execute_script('window.scrollTo(0, 0)')
    second = submit('more for the retrain', 'Pending')
    d.navigate(f'{args.base_url}/#/changes')
    wait_ready(d, 'proposals')
    check(d.text(f'[data-testid="proposal-state-{second}"]') == 'Pending', f'the Changes page does not show {second} Pending')
    check(not d.find_all('[data-testid^="proposal-"][data-testid$="-approve"]'), 'a group-admin gets an Approve button')
    print(f'ok: {second} raising it back waits for approval (page and API); no Approve button for the group-admin')

    # The platform-admin approves it on the Changes page.
    admin = api.get('session')['subject']
    me = sign_in_as(d, args, args.token)
    check(me.get('role') == 'platform-admin', f'--token signs in as {me.get("role")}, not a platform-admin')
    d.navigate(f'{args.base_url}/#/changes')
    wait_ready(d, 'proposals')
    if args.screenshots:
        both_themes(d, args.screenshots, 'changes')
    d.send_keys(f'[data-testid="proposal-{second}-text"]', 'ok for the retrain')
    d.click(f'[data-testid="proposal-{second}-approve"]')
    deadline = time.monotonic() + 30
    while d.text(f'[data-testid="proposal-state-{second}"]') != 'Applied':
        error = d.execute_script("return document.querySelector(`[data-testid='proposal-${arguments[0]}-error']`)?.textContent", second)
        check(not error, f'approving {second} failed: {error}')
        check(time.monotonic() < deadline, f'{second} is not Applied on the Changes page 30 s after Approve')
        time.sleep(0.2)
    p = api.get(f'proposals/{second}')
    check(p['state'] == 'Applied' and p.get('decidedBy') == admin, f'GET /api/v1/proposals/{second}: state {p["state"]}, decided by {p.get("decidedBy")}, not Applied by {admin}')
    spec = api.get(f'policies/{POLICY}')['object']['spec']
    check((spec['borrowLimit'], spec['maxCapacity']) == (16, 32), f'after approving {second} the policy in force has {spec}')
    print(f'ok: {admin} approved {second} on the Changes page: Applied, decidedBy {admin}; borrowLimit 16, maxCapacity 32 in force')
    if args.screenshots:
        d.navigate(f'{args.base_url}/#/policies')
        wait_ready(d, 'policies')
        both_themes(d, args.screenshots, 'policies')


def viewer(d, args, gpus):
    me = sign_in_as(d, args, args.viewer_token)
    check(me.get('role') == 'viewer', f'--viewer-token signs in as {me.get("role")}, not a viewer')
    other = next((w['workload'] for g in gpus for w in g.get('workloads', []) if w.get('workload') and w['businessGroup'] != me['group']), None)
    check(other, f'no workload of a group other than {me["group"]} to try')
    d.navigate(f'{args.base_url}/#/workload/{other}')
    d.wait_for('[data-testid="panel-workload"]:not([data-state="loading"])')
    text = d.text('[data-testid="panel-workload"]')
    check('You do not have access to this (role viewer)' in text, f'a viewer of {me["group"]} sees {other}: {text!r}')
    d.navigate(f'{args.base_url}/#/governance')
    wait_ready(d, 'governance-alerts', 'leaderboard', 'kpis', 'showback')
    if args.screenshots:
        capture(d, args.screenshots, '-viewer', [('workload-other-group', f'#/workload/{other}', ['workload'])])
    d.navigate(f'{args.base_url}/#/changes')
    wait_ready(d, 'proposals')
    listed = d.execute_script("return fetch('/api/v1/proposals', {credentials: 'same-origin'}).then(r => r.json())")['items']
    rows = d.execute_script("return [...document.querySelectorAll('[data-testid^=proposal-state-]')].map(e => e.dataset.testid.slice(15))")
    check(rows == [p['id'] for p in listed], f'a viewer\'s Changes page lists {rows}, the API {[p["id"] for p in listed]}')
    check(not d.find_all('[data-testid$="-approve"], [data-testid$="-reject"]'), 'a viewer gets Approve or Reject buttons')
    d.navigate(f'{args.base_url}/#/bank')
    wait_ready(d, 'reclaims')
    mine = d.execute_script("return fetch('/api/v1/reclaims?limit=100', {credentials: 'same-origin'}).then(r => r.json())")['items']
    ids = d.execute_script(RECLAIM_IDS)
    check(ids == [r['id'] for r in reclaim_order(mine)], f'a viewer\'s reclaims panel lists {ids}, its API {[r["id"] for r in mine]}')
    print(f'ok: a viewer of {me["group"]} is told "no access" for {other}; governance loads for it; '
          f'Changes lists its {len(rows)} proposals with no Approve button; the Bank page its {len(ids)} reclaims')


def capture(d, folder, suffix, pages):
    os.makedirs(folder, exist_ok=True)
    base = d.current_url().split('#')[0]
    for name, route, panels in pages:
        d.navigate(base + route)
        wait_ready(d, *panels)
        d.execute_script('window.scrollTo(0, 0)')
        d.screenshot(os.path.join(folder, f'{name}{suffix}.png'))


def main():
    ap = argparse.ArgumentParser(description='Smoke test of the gpubank portal in headless Chromium.')
    ap.add_argument('--base-url', required=True, help='e.g. http://127.0.0.1:8080')
    ap.add_argument('--token', required=True, help='a platform-admin (or finops) API token')
    ap.add_argument('--screenshots', help='save screenshots in this folder')
    ap.add_argument('--viewer-token', help='a viewer token, to check the per-panel 403')
    ap.add_argument('--group-admin-token', help='a group-admin token of ads, to change a policy through the editor')
    args = ap.parse_args()
    args.base_url = args.base_url.rstrip('/')
    api = Api(args.base_url, args.token)
    try:
        with WebDriver() as d:
            try:
                run(args, d, api)
            except (Mismatch, TimeoutError, WebDriverError):
                if args.screenshots:
                    os.makedirs(args.screenshots, exist_ok=True)
                    d.screenshot(os.path.join(args.screenshots, 'failure.png'))
                raise
    except Mismatch as e:
        print(f'FAIL: {e}', file=sys.stderr)
        return 1
    except (TimeoutError, WebDriverError, OSError) as e:
        print(f'FAIL: {type(e).__name__}: {e}', file=sys.stderr)
        return 1
    print('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
