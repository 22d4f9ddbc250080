"""A view's credential is useless anywhere else: another local account's web server, on another
port of 127.0.0.1, never receives the status page's token in any form (browsers send a host's
cookies to all its ports), and nothing it received opens the page. In Debian's Chromium, the
page on its stand-in daemon (test_view_access.py), the other server recording every request."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest

# page: a fixture
from tests.tools.operator.result_document import panda_result_document
from tests.tools.operator.test_view_access import Clock, CountingDaemon, get, page, serving  # noqa: F401

pytestmark = pytest.mark.browser

# what the other account's page does in the operator's browser: loads sub-resources from its own
# server and fetches from it with credentials, sending what its script can see of the browser
OTHER_PAGE = (b"<!doctype html><title>other account</title><link rel=stylesheet href=/style.css>"
              b"<img src=/pixel.png><script src=/probe.js></script>")
OTHER_SCRIPT = b"""
const seen = new URLSearchParams({referrer: document.referrer, cookie: document.cookie, href: location.href,
                                  session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage)});
const done = () => { document.title = "probed"; };
fetch("/fetched?" + seen, {credentials: "include"}).then(done, done);
"""


class OtherAccountServer(ThreadingHTTPServer):
    """Another account's web server on another loopback port: records every request's method,
    target and headers, and serves OTHER_PAGE on every other path."""

    daemon_threads = True

    def __init__(self):
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, list[tuple[str, str]]]] = []
        super().__init__(("127.0.0.1", 0), OtherAccountHandler)
        self.origin = f"http://127.0.0.1:{self.server_address[1]}"
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()
        self.thread.join(10)

    def requests(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        with self.lock:
            return list(self.seen)


class OtherAccountHandler(BaseHTTPRequestHandler):
    server: OtherAccountServer

    def log_message(self, fmt, *args) -> None:
        pass

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.seen.append((self.command, self.path, list(self.headers.items())))
        path = urlsplit(self.path).path
        body, ctype = {"/probe.js": (OTHER_SCRIPT, "text/javascript"), "/style.css": (b"body{}", "text/css"),
                       "/pixel.png": (b"", "image/png"), "/fetched": (b"", "text/plain"),
                       "/favicon.ico": (b"", "image/x-icon")}.get(path, (OTHER_PAGE, "text/html"))
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_HEAD = do_GET


def follow_link(tab, url: str) -> None:
    """The operator clicks a link on the page in front of them (a real click: the browser, not the
    test, decides what the request carries)."""
    tab.evaluate("(u) => { const a = document.createElement('a'); a.href = u; a.id = 'away'; a.textContent = 'away';"
                 " document.body.prepend(a); }", url)
    with tab.expect_navigation():
        tab.click("#away")


def browser_context(pw):
    from tests.tools.operator.test_status_page import CHROMIUM_FLAGS, chromium_path

    browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
    return browser, browser.new_context()


def test_another_ports_server_never_receives_the_pages_token_nor_anything_that_opens_it(tmp_path):
    pytest.importorskip("playwright", reason="the page is driven by playwright (extra 'test', installed by make test)")
    from playwright.sync_api import expect, sync_playwright

    daemon = CountingDaemon(recordings=3, jobs=2)
    daemon.job_list[0].update(state="completed")
    # a completed job's result (its recording has no file here: no plot)
    daemon.pull_doc = panda_result_document(recordings=["r"])
    with serving(daemon, Clock(), tmp_path / "tokens") as page, OtherAccountServer() as other, \
            sync_playwright() as pw:
        token = page.token.value
        browser, context = browser_context(pw)
        try:
            tab = context.new_page()
            # the operator opens the address the page printed, and sees the daemon's data
            tab.goto(page.token_url)
            expect(tab.locator("#robot")).to_contain_text("panda (7 joints", timeout=20_000)
            assert token not in tab.url
            tab.locator("#jobs a", has_text="report").wait_for(timeout=20_000)
            # ... follows a link from the page to the other server, in the same tab
            follow_link(tab, f"{other.origin}/from-status-page")
            expect(tab).to_have_title("probed", timeout=20_000)
            # ... comes back (the page reloads without the token in its address), opens a job's report
            tab.go_back()
            expect(tab.locator("#robot")).to_contain_text("panda (7 joints", timeout=20_000)
            with tab.expect_navigation():
                tab.locator("#jobs a", has_text="report").first.click()
            expect(tab.locator("h1")).to_contain_text("Identification of panda", timeout=20_000)
            assert token not in tab.url
            # ... and from the report to the other server
            follow_link(tab, f"{other.origin}/from-report")
            expect(tab).to_have_title("probed", timeout=20_000)
            # ... and, in another tab of the same browser, types the other server's address
            second = context.new_page()
            second.goto(f"{other.origin}/typed")
            expect(second).to_have_title("probed", timeout=20_000)
            cookies = context.cookies()
        finally:
            browser.close()
        seen = other.requests()

        visits = [urlsplit(target).path for _, target, _ in seen]
        for path in ("/from-status-page", "/from-report", "/typed", "/probe.js", "/pixel.png", "/style.css"):
            assert path in visits, (path, visits)
        assert visits.count("/fetched") >= 3, visits  # one per visit: each page's script ran
        for method, target, headers in seen:
            names = {name.lower() for name, _ in headers}
            assert "cookie" not in names and "authorization" not in names, (target, headers)
            referer = dict((k.lower(), v) for k, v in headers).get("referer")
            assert referer is None or referer.startswith(other.origin + "/"), (target, referer)
            for said in [target, unquote(unquote(target))] + [f"{k}: {v}" for k, v in headers]:
                assert token not in said, (method, target, headers)

        assert token not in repr(cookies)  # nor is it anywhere in the browser's cookie jar

        # nothing the other server received opens the page: its requests replayed against
        # /api/status (with the page's own Host), and every value in them presented as the token
        for _, target, headers in seen:
            replayed = {k: v for k, v in headers if k.lower() not in ("host", "origin", "connection")}
            query = urlsplit(target).query
            assert get(page, "/api/status" + ("?" + query if query else ""), replayed, token=False)[0] == 401
        values = set()
        for _, target, headers in seen:
            values.update(v for vs in parse_qs(urlsplit(target).query).values() for v in vs)
            for name, value in headers:
                values.add(value)
                if name.lower() == "cookie":
                    values.update(part.strip().partition("=")[2] for part in value.split(";"))
        for value in values:
            assert get(page, "/api/status", {"Authorization": f"Bearer {value}"}, token=False)[0] == 401, value
            assert get(page, f"/api/status?token={quote(value)}", token=False)[0] == 401, value
        # the page itself still opens to its token
        assert get(page, "/api/status")[0] == 200


def test_a_tab_without_the_token_shows_nothing_and_says_what_to_open(page, tmp_path):
    """The token lives in one tab's sessionStorage, never in a cookie: a new tab on the bare address
    gets no data; the printed address opens it, and so does the address's older form (?token=)."""
    pytest.importorskip("playwright", reason="the page is driven by playwright (extra 'test', installed by make test)")
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser, context = browser_context(pw)
        try:
            tab = context.new_page()
            tab.goto(page.token_url)
            expect(tab.locator("#robot")).to_contain_text("panda (7 joints", timeout=20_000)
            tab.reload()  # the tab keeps the token through a reload, its address no longer has it
            assert tab.url == page.url
            expect(tab.locator("#data-age")).to_have_text("0.0 s old", timeout=20_000)
            bare = context.new_page()
            bare.goto(page.url)
            expect(bare.locator("#connection")).to_contain_text("no valid token in this tab", timeout=20_000)
            assert bare.locator("#robot").inner_text() == "-"
            bare.goto(f"{page.url}?token={page.token.value}")
            expect(bare.locator("#robot")).to_contain_text("panda (7 joints", timeout=20_000)
            assert bare.url == page.url and context.cookies() == []
        finally:
            browser.close()
