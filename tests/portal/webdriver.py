"""A minimal W3C WebDriver client for the portal's browser tests (Python 3 stdlib only).

It starts chromedriver on a free port, opens a headless Chromium session with a fresh
profile, and offers the few commands the tests use. quit() always ends chromedriver.

    with WebDriver() as d:
        d.navigate('http://127.0.0.1:8088/')
        d.wait_for('[data-testid=pool-table]')
        print(d.text('[data-testid=pool-capacity-h100-inference]'))
"""
import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'  # the W3C key of an element reference


class WebDriverError(RuntimeError):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self, chromium='/usr/bin/chromium', chromedriver='/usr/bin/chromedriver', width=1280, height=800):
        self.profile = tempfile.mkdtemp(prefix='gpubank-portal-chromium-')
        self.port = free_port()
        self.base = f'http://127.0.0.1:{self.port}'
        self.proc = subprocess.Popen([chromedriver, f'--port={self.port}'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.session = None
        try:
            self._wait_ready()
            caps = {'capabilities': {'alwaysMatch': {
                'browserName': 'chrome',
                'goog:loggingPrefs': {'browser': 'ALL'},
                'goog:chromeOptions': {
                    'binary': chromium,
                    'args': ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                             '--disable-background-networking', '--disable-component-update', '--disable-sync',
                             f'--window-size={width},{height}', f'--user-data-dir={self.profile}'],
                },
            }}}
            self.session = self._call('POST', '/session', caps)['sessionId']
        except BaseException:
            self.quit()
            raise

    # --- plumbing --------------------------------------------------------------------
    def _wait_ready(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise WebDriverError(f'chromedriver exited with {self.proc.returncode}')
            try:
                with urllib.request.urlopen(self.base + '/status', timeout=2) as r:
                    if json.load(r)['value'].get('ready'):
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise WebDriverError('chromedriver did not become ready')

    def _call(self, method, path, body=None):
        data = json.dumps(body if body is not None else {}).encode() if method == 'POST' else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.load(r)['value']
        except urllib.error.HTTPError as e:
            try:
                v = json.load(e)['value']
                raise WebDriverError(f"{v.get('error')}: {v.get('message', '').splitlines()[0] if v.get('message') else ''}") from None
            except (ValueError, KeyError):
                raise WebDriverError(f'{method} {path}: HTTP {e.code}') from None

    def _s(self, path, method='GET', body=None):
        return self._call(method, f'/session/{self.session}{path}', body)

    def _el(self, target):
        return self.find(target) if isinstance(target, str) else target

    # --- commands --------------------------------------------------------------------
    def navigate(self, url):
        self._s('/url', 'POST', {'url': url})

    def current_url(self):
        return self._s('/url')

    def find(self, css):
        """The first element matching a CSS selector (raises WebDriverError if none)."""
        return self._s('/element', 'POST', {'using': 'css selector', 'value': css})[ELEMENT]

    def find_all(self, css):
        return [e[ELEMENT] for e in self._s('/elements', 'POST', {'using': 'css selector', 'value': css})]

    def _on(self, target, command, method='GET', body=None):
        """Runs an element command; for a CSS selector, finds it again if the page replaced
        the element in between (a panel that refreshed)."""
        for attempt in range(3):
            try:
                return self._s(f'/element/{self._el(target)}/{command}', method, body)
            except WebDriverError as e:
                if not isinstance(target, str) or 'stale element' not in str(e) or attempt == 2:
                    raise

    def text(self, target):
        """The rendered text of an element or of the first match of a CSS selector."""
        return self._on(target, 'text')

    def click(self, target):
        self._on(target, 'click', 'POST')

    def send_keys(self, target, keys):
        self._on(target, 'value', 'POST', {'text': keys})

    def execute_script(self, script, *args):
        return self._s('/execute/sync', 'POST', {'script': script, 'args': list(args)})

    def wait_for(self, css, timeout=10):
        """Waits until an element matches css; returns it, or raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.find_all(css)
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f'no element matches {css} after {timeout} s (at {self.current_url()})')
            time.sleep(0.1)

    def screenshot(self, path):
        with open(path, 'wb') as f:
            f.write(base64.b64decode(self._s('/screenshot')))

    def set_window_size(self, width, height):
        self._s('/window/rect', 'POST', {'width': width, 'height': height})

    def browser_log(self):
        """The browser console's entries since the last call (chromedriver's log extension)."""
        return self._s('/se/log', 'POST', {'type': 'browser'})

    def quit(self):
        try:
            if self.session:
                self._s('', 'DELETE')
        except (OSError, WebDriverError):
            pass
        finally:
            self.session = None
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.quit()
