#!/usr/bin/env python3
"""The controller's portal (`gpubank controller --api-port`) in headless Chromium.

  python3 tests/portal/cluster_portal_test.py --base-url http://127.0.0.1:PORT \\
      --group-admin-token TOKEN --admin-token TOKEN

Run by tests/controller/portal_browser_test.cpp against a controller on a FAKE API server
holding the example policies. As a group-admin of research: the header says the cluster,
only the Overview, Groups, Bank, Governance, Policies and Changes links show, the home page
is the Overview with every pool GET /api/v1/pools answers, the Groups page shows every
position GET /api/v1/groups answers (the ledger the controller keeps), the research
group's page shows its queues as GET /api/v1/queues does, and the GPUs page says it is the
twin's; the editor's impact preview replays the cluster's recorded work of the last 24 hours
(the finished research job) and shows every figure POST /api/v1/proposals/preview answers;
lowering GPUQuotaPolicy/research-training-h100's maxCapacity is Applied at once, the
Changes page shows it on the cluster (the controller server-side applied it) and the
policies API (the cluster's objects) has the new value; raising it again is Pending with no
Approve button. As a platform-admin: Approve on the Changes page, then the change is on the
cluster too. Fails on CSP violations or uncaught errors. Exits 1 naming the first mismatch.
"""
import argparse
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from portal_smoke_test import PREVIEW_METRICS, READ, Api, Mismatch, check, check_console, shows, type_number, wait_ready  # noqa: E402
from webdriver import WebDriver, WebDriverError  # noqa: E402

POLICY = 'GPUQuotaPolicy/research-training-h100'


def sign_in(d, base, token, first=False):
    """The first time through the #token= link (the home page must be Policies), then
    through the form after signing out."""
    if first:
        d.navigate(f'{base}/#token={urllib.parse.quote(token)}')
        d.wait_for('[data-testid="panel-pools"], [data-testid=signin-message]', 20)
        if d.find_all('[data-testid=signin-message]'):
            raise Mismatch(f'the sign-in link was refused: {d.text("[data-testid=signin-message]")}')
        wait_ready(d, 'pools', 'groups', 'alerts')
        return
    else:
        d.click('[data-testid=signout]')
        d.wait_for('[data-testid=signin-form]')
        d.send_keys('[data-testid=signin-token]', token)
        d.click('[data-testid=signin-submit]')
        d.wait_for('[data-testid=whoami]:not(:empty)')
        d.navigate(f'{base}/#/policies')
    wait_ready(d, 'policies')


def wait_enacted(d, base, pid, timeout=60):
    """Reloads the Changes page until the proposal shows on the cluster; returns the text."""
    deadline = time.monotonic() + timeout
    while True:
        d.navigate(f'{base}/#/changes?t={time.monotonic()}')
        wait_ready(d, 'proposals')
        text = d.text(f'[data-testid="proposal-enacted-{pid}"]') if d.find_all(f'[data-testid="proposal-enacted-{pid}"]') else ''
        if text.startswith('on the cluster since'):
            return text
        check(time.monotonic() < deadline, f'{pid} is not on the cluster {timeout} s after it was applied: the page says {text!r}')
        time.sleep(0.5)


def submit(d, ga, comment, state):
    d.execute_script("document.querySelector('[data-testid=submit-comment]').value = ''")
    d.send_keys('[data-testid=submit-comment]', comment)
    d.click('[data-testid=submit-button]')
    d.wait_for('[data-testid=proposal-state], [data-testid=editor-error]', 60)
    if d.find_all('[data-testid=editor-error]'):
        raise Mismatch(f'the proposal was refused: {d.text("[data-testid=editor-findings]")}')
    got, pid = d.text('[data-testid=proposal-state]'), d.text('[data-testid=proposal-id]')
    check(got == state, f'the proposal {pid} is {got} on the page, not {state}')
    listed = next((p for p in ga.get('proposals')['items'] if p['id'] == pid), None)
    check(listed and listed['state'] == state, f'GET /api/v1/proposals lists {pid} as {listed and listed["state"]}, not {state}')
    return pid


def cluster_preview(d, ga, hours):
    """Preview impact on the editor's document, replaying the last `hours` of the cluster's
    recorded work, and checks every figure against the API's answer for the same document."""
    d.execute_script("document.querySelector('[data-testid=preview-hours]').value = arguments[0]", str(hours))
    d.click('[data-testid=preview-button]')
    d.wait_for('[data-testid="panel-preview"]:not([data-state="loading"])', 300)
    check(d.execute_script("return document.querySelector('[data-testid=panel-preview]').dataset.state") == 'ready',
          f'the preview failed: {d.text("[data-testid=panel-preview]")}')
    doc = d.execute_script("return document.querySelector('[data-testid=editor-yaml]').value")
    want = ga.post('proposals/preview', {'document': doc, 'hours': hours})
    check('(1 workload,' in want['work'], f'the preview replayed {want["work"]!r}, not the one recorded job')
    check(want['work'] in d.text('[data-testid=preview-work]'), f'the page says {d.text("[data-testid=preview-work]")!r}')
    shown = d.execute_script(READ, 'preview-')
    n = 0
    for g in want['groups']:
        key = f'{g["businessGroup"]}-{g["pool"]}'
        for m in PREVIEW_METRICS:
            diff = g['difference'][m] if 'difference' in g else g['proposed'][m] - g['current'][m]
            for side, value in (('current', g['current'][m]), ('proposed', g['proposed'][m]), ('difference', diff)):
                got = shown.get(f'preview-{side}-{m}-{key}')
                check(shows(got, value, signed=side == 'difference'), f'preview {key} {side} {m}: page shows {got}, API says {value}')
                n += 1
    research = next(g for g in want['groups'] if (g['businessGroup'], g['pool']) == ('research', 'h100-rdma-training'))
    check(abs(research['current']['usedGpuHours'] - 8 * (170 - 60) / 60) < 0.5,
          f'the replay used {research["current"]["usedGpuHours"]} GPU-hours for research, not the job\'s 8 GPUs x 110 min')
    print(f'ok: the {hours}-hour preview replays the recorded job ({want["work"]}); the page shows the API\'s {n} figures')


def bank_page(d, base, ga):
    """The Bank page on a cluster: the ledger the controller writes (times are wall times),
    the leases in force on the cluster, and the reclaims (none here)."""
    d.navigate(f'{base}/#/bank')
    wait_ready(d, 'ledger', 'ledger-chart', 'reclaims', 'leases')
    ledger = ga.get('ledger?limit=1000')['items']
    check(ledger, 'GET /api/v1/ledger is empty: the controller kept no ledger')
    rows = d.execute_script("return [...document.querySelectorAll('[data-testid=ledger-table] tbody tr')].map((r) => r.dataset.testid)")
    want = [f'ledger-row-{e["seq"]}' for e in reversed(ledger[-50:])]
    check(rows == want, f'the ledger table lists {rows[:5]}..., the API {want[:5]}...')
    first = ledger[-1]
    shown = d.text(f'[data-testid="ledger-row-{first["seq"]}"] td:nth-child(2)')
    check(shown[:10] == time.strftime('%Y-%m-%d', time.gmtime(first['timeMs'] / 1000)), f'the ledger shows time {shown!r} for Unix ms {first["timeMs"]}')
    leases = [i['metadata']['name'] for i in ga.get('policies')['items'] if i['kind'] == 'CapacityLease']
    for name in leases:
        check(d.find_all(f'[data-testid="lease-row-{name}"]'), f'the Bank page does not list the lease {name}')
    check(d.text('[data-testid=reclaim-list]') == 'No reclaims yet.', f'the reclaims panel says {d.text("[data-testid=reclaim-list]")!r}')
    print(f'ok: the Bank page shows the {len(rows)} newest of the {len(ledger)} ledger entries at their wall times, '
          f'the {len(leases)} leases on the cluster and no reclaims')


def shot(d, args, name):
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
        d.execute_script('window.scrollTo(0, 0)')
        d.screenshot(os.path.join(args.screenshots, f'cluster-{name}.png'))


def run(args, d):
    base = args.base_url
    ga = Api(base, args.group_admin_token)
    admin = Api(base, args.admin_token)
    sign_in(d, base, args.group_admin_token, first=True)
    shown = [a for a in d.execute_script(
        "return [...document.querySelectorAll('[data-nav]')].filter((a) => !a.hidden).map((a) => a.dataset.nav)")]
    check(shown == ['overview', 'groups', 'bank', 'governance', 'policies', 'changes'],
          f'the controller\'s portal links {shown}, not overview, groups, bank, governance, policies and changes')
    check(d.text('[data-testid=clock]') == 'cluster · live', f'the header says {d.text("[data-testid=clock]")!r}')
    pools = ga.get('pools')
    for p in pools:
        for k in ('capacity', 'guaranteed', 'used', 'free'):
            got = d.text(f'[data-testid="pool-{k}-{p["name"]}"]')
            check(got == str(p[k]), f'the Overview shows {k} {got} for {p["name"]}, the API {p[k]}')
    check(not d.find_all('[data-testid^=pool-frag-]'), 'the Overview on a cluster shows a fragmentation it cannot know')
    print(f'ok: the Overview (home page) shows the {len(pools)} pools of GET /api/v1/pools, without fragmentation')
    shot(d, args, 'overview')
    d.navigate(f'{base}/#/groups')
    wait_ready(d, 'group-list')
    groups = ga.get('groups')
    positions = [(g['name'], p) for g in groups for p in g['positions']]
    check(any(name == 'research' and p['guaranteed'] > 0 for name, p in positions),
          f'GET /api/v1/groups has no research position with a guarantee (the controller\'s ledger): {groups}')
    shown = d.execute_script(READ, 'position-')
    for name, p in positions:
        for k in ('guaranteed', 'used', 'borrowed', 'lent', 'borrowable', 'lendingFloor'):
            got = shown.get(f'position-{k}-{name}-{p["pool"]}')
            check(got and got[0] == str(p[k]), f'the Groups page shows {k} {got} for {name} in {p["pool"]}, the API {p[k]}')
    print(f'ok: the Groups page shows the {len(positions)} positions of GET /api/v1/groups (the controller\'s ledger)')
    d.click('[data-testid="group-link-research"]')
    wait_ready(d, 'positions', 'queues', 'workloads')
    check(not d.find_all('[data-testid="panel-group-history"]'), 'the controller\'s group page has a history panel it cannot fill')
    queues = [q for q in ga.get('queues') if q['businessGroup'] == 'research']
    check(queues, 'GET /api/v1/queues lists no research queue')
    for q in queues:
        got = d.text(f'[data-testid="queue-nominalQuota-{q["clusterQueue"]}"]')
        check(got == str(q['nominalQuota']), f'the research page shows nominal {got} for {q["clusterQueue"]}, the API {q["nominalQuota"]}')
    print(f'ok: the research page shows its {len(queues)} queues as GET /api/v1/queues does')
    d.navigate(f'{base}/#/gpus')
    d.wait_for('[data-testid=not-served]')
    check('overview, groups, bank, governance, policies, changes' in d.text('[data-testid=not-served]'), f'the GPUs page says {d.text("[data-testid=not-served]")!r}')
    print('ok: the portal shows the cluster, links Overview, Groups, Bank, Governance, Policies and Changes only, and says the GPUs page is the twin\'s')
    bank_page(d, base, ga)
    shot(d, args, 'bank')
    d.navigate(f'{base}/#/governance')
    wait_ready(d, 'governance-alerts')
    check(d.find_all('[data-testid=alerts-source]') and d.find_all('[data-testid=reports-elsewhere]'),
          'the Governance page on a cluster does not say where its alerts and reports come from')
    open_count = d.text('[data-testid=alerts-open-count]')
    check(open_count == str(len(ga.get('governance/alerts')['open'])), f'the Governance page counts {open_count} open alerts')
    print(f'ok: the Governance page lists the {open_count} open alerts of the store and says the reports are gpubank report\'s')

    d.navigate(f'{base}/#/policies')
    wait_ready(d, 'policies')
    check(d.find_all('[data-testid="edit-GPUQuotaPolicy-research-training-h100"]'), 'no Edit link for research-training-h100')
    d.click('[data-testid="edit-GPUQuotaPolicy-research-training-h100"]')
    wait_ready(d, 'editor')
    check('recorded work' in d.text('[data-testid=preview-note]'), f'the editor says {d.text("[data-testid=preview-note]")!r}')
    spec = ga.get(f'policies/{POLICY}')['object']['spec']
    got = d.execute_script("return document.querySelector('[data-testid=field-maxCapacity]').value")
    check(got == str(spec['maxCapacity']), f'the editor shows maxCapacity {got!r}, the cluster {spec["maxCapacity"]}')

    type_number(d, 'field-maxCapacity', spec['maxCapacity'] - 8)
    cluster_preview(d, ga, 24)
    if args.screenshots:
        d.execute_script("document.querySelector('[data-testid=panel-preview]').scrollIntoView()")
        d.screenshot(os.path.join(args.screenshots, 'cluster-editor-preview.png'))
    first = submit(d, ga, 'give back for now', 'Applied')
    check('server-side applies it' in d.text('[data-testid=proposal-result]'), f'the editor says {d.text("[data-testid=proposal-result]")!r}')
    print(f'ok: {first} lowering maxCapacity to {spec["maxCapacity"] - 8} is Applied (page and API)')
    text = wait_enacted(d, base, first)
    p = ga.get(f'proposals/{first}')
    check(text.endswith(f'(resourceVersion {p["enacted"]["resourceVersion"]})'), f'the page says {text!r}, the API {p["enacted"]}')
    after = ga.get(f'policies/{POLICY}')['object']['spec']
    check(after['maxCapacity'] == spec['maxCapacity'] - 8, f'the cluster\'s {POLICY} has maxCapacity {after["maxCapacity"]}')
    print(f'ok: {first} is on the cluster ({text}); the cluster\'s object has the new maxCapacity')

    d.navigate(f'{base}/#/policies/GPUQuotaPolicy/research-training-h100/edit')
    wait_ready(d, 'editor')
    type_number(d, 'field-maxCapacity', spec['maxCapacity'] - 4)
    second = submit(d, ga, 'more for the retrain', 'Pending')
    d.navigate(f'{base}/#/changes')
    wait_ready(d, 'proposals')
    check(not d.find_all('[data-testid^="proposal-"][data-testid$="-approve"]'), 'a group-admin gets an Approve button')
    print(f'ok: {second} raising it waits for approval; no Approve button for the group-admin')

    sign_in(d, base, args.admin_token)
    d.navigate(f'{base}/#/changes')
    wait_ready(d, 'proposals')
    d.send_keys(f'[data-testid="proposal-{second}-text"]', 'ok')
    d.click(f'[data-testid="proposal-{second}-approve"]')
    text = wait_enacted(d, base, second)
    p = admin.get(f'proposals/{second}')
    check(p['state'] == 'Applied' and p['decidedBy'] == admin.get('session')['subject'], f'GET /api/v1/proposals/{second}: {p}')
    after = admin.get(f'policies/{POLICY}')['object']['spec']
    check(after['maxCapacity'] == spec['maxCapacity'] - 4, f'after approving {second} the cluster has maxCapacity {after["maxCapacity"]}')
    print(f'ok: approved on the Changes page, {second} is on the cluster ({text})')
    shot(d, args, 'changes')

    check_console(d)


def main():
    ap = argparse.ArgumentParser(description='The controller\'s portal in headless Chromium.')
    ap.add_argument('--base-url', required=True)
    ap.add_argument('--group-admin-token', required=True, help='a group-admin of research')
    ap.add_argument('--admin-token', required=True, help='a platform-admin')
    ap.add_argument('--screenshots', help='save the controller\'s pages here as cluster-*.png (scripts/screenshots.sh)')
    args = ap.parse_args()
    args.base_url = args.base_url.rstrip('/')
    try:
        with WebDriver() as d:
            run(args, d)
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
