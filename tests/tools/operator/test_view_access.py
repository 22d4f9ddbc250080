"""Who may read the status page, from where, and how much it asks of the daemon: the page's own
token, its Host/Origin checks, paged lists, the cache for unknown job ids and the age of its data.
A counting stand-in for the daemon's read client; the server on loopback; a clock the test moves."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import stat
import threading

import pytest

from robodyn.daemon.control_access import COMMAND_ROLES
from robodyn.daemon import protocol as P
from robodyn.daemon.client import DaemonError
from robodyn.daemon.readonly import READ_ONLY_COMMANDS, ReadOnlyClient
from robodyn.errors import UserError
from robodyn.tools.operator.listen import check_listen_host
from robodyn.tools.operator.status_page import PAGE_SIZE, JobReports, StatusPageServer, StatusPoller
from tests.tools.operator.result_document import panda_result_document


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class CountingDaemon:
    """The read commands the page uses, with a call count per command; ``frozen`` makes them fail."""

    def __init__(self, recordings: int = 60, jobs: int = 60):
        self.calls: dict[str, int] = {}
        self.frozen = False
        self.recs = [{"id": f"2026-01-01T00-00-{i:03d}", "status": "recording", "samples": i, "lost": 0}
                     for i in range(recordings)]
        self.job_list = [{"job": f"job{i:04d}", "state": "running", "stage": "fit", "progress": 0.5}
                         for i in range(jobs)]
        self.pull_doc: dict = {}
        self.pulls_busy = 0  # the next pulls answered `busy` (the daemon's heavy-read worker taken)

    def _count(self, cmd: str) -> None:
        self.calls[cmd] = self.calls.get(cmd, 0) + 1
        if self.frozen:
            raise TimeoutError("no reply from the daemon")

    def factory(self):
        """The real read client's methods over this stand-in's ``call``, which pages listings as
        the daemon does (the newest DEFAULT_PAGE without a limit): a page that forgot to ask
        for more than the default sees only that."""
        daemon = self

        class Client(ReadOnlyClient):
            endpoint = "tcp://127.0.0.1:9"

            def __init__(self):  # no socket
                pass

            def call(self, cmd, **args):
                daemon._count(cmd)
                if cmd == "status":
                    return {"robot": {"name": "panda", "dof": 7, "driver": "sim", "rate_hz": 1000},
                            "safety": {"armed": False, "disarm_reason": "start"}, "run": None, "last_run": None}
                if cmd in ("recordings", "jobs"):
                    rows = list(daemon.recs if cmd == "recordings" else daemon.job_list)
                    offset, limit = P.page_bounds(args, len(rows))
                    return P.page_reply(cmd, rows[offset:offset + limit], offset, limit, len(rows))
                if cmd == "runs":
                    return {"runs": []}
                if cmd == "pull":
                    if daemon.pulls_busy:
                        daemon.pulls_busy -= 1
                        raise DaemonError("busy", "busy: this client has 1 of its 1 heavy reads in progress")
                    return {"result": dict(daemon.pull_doc)}
                raise AssertionError(f"the page sent {cmd!r}")

            def close(self):
                pass

        return Client()


@contextlib.contextmanager
def serving(daemon: CountingDaemon, clock: Clock, token_dir):
    """The page on a free loopback port, its data polled once from ``daemon``, served from a thread."""
    poller = StatusPoller(daemon.factory, period_s=0.5, clock=clock)
    poller.refresh()
    server = StatusPageServer(("127.0.0.1", 0), poller, JobReports(daemon.factory, clock=clock), token_dir)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    server.daemon_stub, server.clock = daemon, clock
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def page(tmp_path):
    with serving(CountingDaemon(), Clock(), tmp_path / "tokens") as server:
        yield server


def get(server, path: str, headers: dict | None = None, method: str = "GET", token: bool = True):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    h = {"Host": f"127.0.0.1:{server.port}"}
    if token:
        h["Authorization"] = f"Bearer {server.token.value}"
    h.update(headers or {})
    try:
        conn.request(method, path, headers=h)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode(errors="replace")
    finally:
        conn.close()


def test_the_page_needs_its_token_written_for_its_user_only(page, tmp_path):
    path = page.token.path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert path.read_text().strip() == page.token.value and len(page.token.value) >= 40
    for p in ("/api/status", "/jobs/job0001/report.html", "/jobs/job0001/torque.png", "/nothing-here"):
        status, _, body = get(page, p, token=False)
        assert status == 401 and str(path) in body, (p, status)
        assert get(page, p, {"Authorization": "Bearer " + page.token.value[:-1] + "x"}, token=False)[0] == 401
    # the address carries the token in its fragment, which the browser never sends to a server
    assert page.token_url == f"{page.url}#token={page.token.value}"
    # the address's older form (?token=): sent on to the fragment once checked, no cookie set
    status, headers, _ = get(page, f"/?token={page.token.value}", token=False)
    assert status == 303 and headers["Location"] == f"/#token={page.token.value}" and "Set-Cookie" not in headers
    assert get(page, f"/?token={page.token.value[:-1]}x", token=False)[0] == 401
    page.server_close()
    assert not path.exists()


def test_only_the_authorization_header_opens_the_data(page):
    """A cookie is sent by the browser to every port of its host, another account's server's too,
    and a query ends up in histories and logs: the data opens to ``Authorization: Bearer`` only."""
    token = page.token.value
    for cookie in (f"robodyn_view_{page.port}={token}", f"robodyn_view={token}", f"token={token}"):
        for p in ("/api/status", "/jobs/job0001/report.html"):
            assert get(page, p, {"Cookie": cookie}, token=False)[0] == 401, (cookie, p)
    assert get(page, f"/api/status?token={token}", token=False)[0] == 401
    assert get(page, "/api/status", {"Authorization": f"Basic {token}"}, token=False)[0] == 401
    assert get(page, "/api/status", {"Authorization": f"bearer {token}"}, token=False)[0] == 200
    # the four files without data load without the token (a navigation or <script> cannot send the
    # header); none holds the token or a daemon value; no response sets a cookie or lets a Referer out
    for p in ("/", "/index.html", "/app.js", "/job.html", "/job.js"):
        status, headers, body = get(page, p, token=False)
        assert status == 200 and token not in body and "panda" not in body, p
    for p, with_token in (("/", False), ("/app.js", False), ("/api/status", True), ("/api/status", False),
                          ("/jobs/x/report.html", True), ("/nothing-here", True)):
        _, headers, _ = get(page, p, token=with_token)
        assert headers.get("Referrer-Policy") == "no-referrer" and "Set-Cookie" not in headers, (p, headers)
        assert "connect-src" not in headers["Content-Security-Policy"]  # default-src 'self': no fetch elsewhere


def test_foreign_host_and_origin_are_refused_even_with_the_token(page):
    port = page.port
    # DNS rebinding: a name the attacker controls resolves to 127.0.0.1, the browser sends that name
    for host in (f"rebind.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", ""):
        status, _, body = get(page, "/api/status", {"Host": host})
        assert status == 403 and "Host" in body, host
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", f"https://127.0.0.1:{port}"):
        status, _, body = get(page, "/api/status", {"Origin": origin})
        assert status == 403 and "Origin" in body, origin
        assert get(page, "/api/status", {"Origin": origin}, method="POST")[0] == 403
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert get(page, "/api/status", {"Origin": origin})[0] == 200
    assert get(page, "/api/status", {"Host": f"localhost:{port}"})[0] == 200


def test_listings_are_served_a_page_at_a_time(page):
    _, _, body = get(page, "/api/status")
    snap = json.loads(body)
    assert len(snap["recordings"]) == PAGE_SIZE and len(snap["jobs"]) == PAGE_SIZE
    assert snap["recordings_page"] == {"page": 1, "pages": 3, "kept": 60, "total": 60, "size": PAGE_SIZE}
    newest = sorted((r["id"] for r in page.daemon_stub.recs), reverse=True)
    assert [r["id"] for r in snap["recordings"]] == newest[:PAGE_SIZE]
    _, _, body = get(page, "/api/status?recordings_page=3&jobs_page=2")
    snap = json.loads(body)
    assert [r["id"] for r in snap["recordings"]] == newest[2 * PAGE_SIZE:]
    assert snap["jobs_page"]["page"] == 2 and len(snap["jobs"]) == PAGE_SIZE
    assert json.loads(get(page, "/api/status?recordings_page=99")[2])["recordings_page"]["page"] == 3
    assert get(page, "/api/status?jobs_page=x")[0] == 400


def test_finished_recordings_show_their_summaries_from_the_listing_alone(tmp_path):
    """A recording's summary on the page comes from the daemon's index entry (a bounded digest
    written when it closed), never from `recording_info`, which decodes the whole file: the
    stand-in fails the poll on any command the page should not send."""
    from robodyn.recording import index_row

    daemon, clock = CountingDaemon(recordings=40), Clock()
    for k, r in enumerate(daemon.recs):
        summary = {"status": "completed", "recorded_samples": 1000 + k, "expected_samples": 1000 + k + k % 3,
                   "lost_samples": k % 3, "gaps": [[10 * g, 1] for g in range(k)],
                   "loop": {"p50_ms": 1.0, "p99_ms": 1.0 + k / 100, "max_ms": 2.0, "samples": 1000},
                   "tracking": {"rms_overall_rad": k * 1e-4, "max_overall_rad": k * 1e-3, "rms_rad": [0.0] * 7}}
        r.update(index_row({"run_id": r["id"], "rate_hz": 1000.0, "robot": {"name": "panda"}}, summary,
                           tmp_path / f"{r['id']}.mcap"))
    daemon.recs[-1].update(status="indexing", summary=None)  # not yet indexed at start: nothing to show
    poller = StatusPoller(daemon.factory, clock=clock)
    poller.refresh()
    snap = poller.get()
    assert snap["connected"], snap["error"]
    rows = {r["id"]: r for r in snap["recordings"]}
    for k, r in enumerate(daemon.recs[:-1]):
        shown = rows[r["id"]]["summary"]
        assert shown["loop_p99_ms"] == pytest.approx(1.0 + k / 100) and shown["gaps"] == k
        assert (shown["samples"], shown["lost_samples"]) == (1000 + k, k % 3)
        assert shown["tracking_max_rad"] == pytest.approx(k * 1e-3)
    assert "summary" not in rows[daemon.recs[-1]["id"]]
    assert "recording_info" not in daemon.calls
    # the entry's digest is bounded whatever the recording: the gaps as a count, not the list
    assert daemon.recs[30]["summary"]["gaps"] == 30 and "rms_rad" not in daemon.recs[30]["summary"]["tracking"]


def test_histories_beyond_the_daemons_default_page_are_kept_counted_and_found(tmp_path):
    """The daemon answers a listing without a limit with its newest DEFAULT_PAGE entries: the
    page asks for the newest it keeps, says how many there are in all, and finds an old job's
    report and its recording by paging through the whole listing."""
    from robodyn.tools.operator import status_page

    daemon, clock = CountingDaemon(recordings=status_page.MAX_RECORDINGS_KEPT + 120, jobs=P.DEFAULT_PAGE + 30), Clock()
    oldest = daemon.recs[0]["id"]
    for r in daemon.recs:
        r.update(status="completed", path=str(tmp_path / f"{r['id']}.mcap"))
    daemon.job_list[0].update(state="completed")
    daemon.pull_doc = panda_result_document(recordings=[oldest])
    poller = StatusPoller(daemon.factory, clock=clock)
    poller.refresh()
    view = poller.view(recordings_page=10**6)
    assert view["recordings_page"] == {"page": 20, "pages": 20, "kept": 500, "total": 620, "size": PAGE_SIZE}
    kept = sorted((r["id"] for r in daemon.recs), reverse=True)[:500]
    assert [r["id"] for r in view["recordings"]] == kept[-PAGE_SIZE:]
    assert view["jobs_page"]["total"] == view["jobs_page"]["kept"] == P.DEFAULT_PAGE + 30
    assert "job0000" in [j["job"] for j in poller.get()["jobs"]]
    reports = JobReports(daemon.factory, clock=clock)
    assert reports.is_completed("job0000") and not reports.is_completed("job9999")
    note = reports.get("job0000")["note"]
    # the oldest recording's path was found: the plot fails only on reading the (absent) file
    assert str(tmp_path / f"{oldest}.mcap") in note and "not among" not in note, note


def test_a_busy_pull_is_asked_again_and_a_failed_one_is_kept():
    """`pull` runs in the daemon's heavy-read worker and may be answered `busy`: the page asks
    again at its next refresh instead of showing the job's result as an error for good."""
    daemon, clock = CountingDaemon(recordings=1, jobs=1), Clock()
    daemon.job_list[0].update(state="completed")
    daemon.pull_doc = {"estimate": {"method": "wls"}, "base": {"count": 3}, "provenance": {"recordings": ["r"]},
                       "metrics": {"identification": {"relative_error_total": 0.05}}}
    daemon.pulls_busy = 1
    poller = StatusPoller(daemon.factory, slow_period_s=0.0, clock=clock)
    poller.refresh()
    assert poller.get()["jobs"][0]["result"] is None and daemon.calls["pull"] == 1
    poller.refresh()
    assert poller.get()["jobs"][0]["result"]["identification_relative_error"] == 0.05 and daemon.calls["pull"] == 2
    poller.refresh()  # a completed job's result never changes: not pulled again
    assert daemon.calls["pull"] == 2


def test_unknown_job_ids_are_answered_from_a_cache_not_by_the_daemon(page):
    daemon = page.daemon_stub
    daemon.job_list.append({"job": "job-done", "state": "completed"})
    before = dict(daemon.calls)
    for i in range(500):
        status, _, _ = get(page, f"/jobs/unknown{i:04d}/report.html")
        assert status == 404
    made = {k: v - before.get(k, 0) for k, v in daemon.calls.items() if v - before.get(k, 0)}
    assert made == {"jobs": 1}, made  # one list of completed jobs answers all 500
    page.clock.t += 10  # the list ages out: the next unknown id asks once more
    for i in range(100):
        assert get(page, f"/jobs/again{i}/torque.png")[0] == 404
    assert daemon.calls["jobs"] - before.get("jobs", 0) == 2 and daemon.calls.get("pull", 0) == before.get("pull", 0)
    # a daemon that does not answer is not asked per request either
    daemon.frozen = True
    page.clock.t += 10
    statuses = [get(page, f"/jobs/x{i}/report.html")[0] for i in range(50)]
    assert statuses[0] == 502 and set(statuses[1:]) == {404}
    assert daemon.calls["jobs"] - before.get("jobs", 0) == 3


def test_the_data_carries_its_age_and_turns_stale_when_the_daemon_stops_answering(page):
    poller, clock, daemon = page.poller, page.clock, page.daemon_stub
    clock.t += 1.0
    snap = json.loads(get(page, "/api/status")[2])
    assert snap["age_s"] == pytest.approx(1.0) and snap["stale"] is False and snap["connected"]
    daemon.frozen = True
    poller.refresh()  # the poll fails: the data shown is still the last answer, and ages
    clock.t += poller.stale_after_s
    snap = json.loads(get(page, "/api/status")[2])
    assert snap["connected"] is False and "no reply" in snap["error"]
    assert snap["age_s"] == pytest.approx(1.0 + poller.stale_after_s) and snap["stale"] is True
    # a poll stuck on a frozen daemon does not stop the clock: the age is taken when served
    clock.t += 100
    assert json.loads(get(page, "/api/status")[2])["age_s"] == pytest.approx(101.0 + poller.stale_after_s)
    daemon.frozen = False
    poller.refresh()
    snap = json.loads(get(page, "/api/status")[2])
    assert snap["age_s"] == 0.0 and snap["stale"] is False and snap["connected"]


def test_the_browser_shows_the_age_and_stale(page, tmp_path):
    pytest.importorskip("playwright", reason="the page is driven by playwright (extra 'test', installed by make test)")
    from playwright.sync_api import expect, sync_playwright

    from tests.tools.operator.test_status_page import CHROMIUM_FLAGS, chromium_path

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        try:
            tab = browser.new_page()
            tab.goto(page.token_url)
            assert tab.url == page.url  # the token left the address bar
            assert tab.context.cookies() == []
            expect(tab.locator("#data-age")).to_have_text("0.0 s old", timeout=20_000)
            expect(tab.locator("#recordings-pager")).to_contain_text("page 1 of 3 (60 recordings", timeout=20_000)
            assert tab.locator("#recordings tbody tr").count() == PAGE_SIZE
            tab.locator("#recordings-pager a.older").click()
            expect(tab.locator("#recordings-pager")).to_contain_text("page 2 of 3", timeout=20_000)
            page.daemon_stub.frozen = True
            page.poller.refresh()
            page.clock.t += 30
            expect(tab.locator("#data-age")).to_have_text("30.0 s old (stale)", timeout=20_000)
            expect(tab.locator("#connection")).to_contain_text("STALE: no answer from the daemon for 30.0 s")
            assert tab.locator("#connection").get_attribute("class") == "bad"
            tab.screenshot(path=str(tmp_path / "status-page-stale.png"), full_page=True)
        finally:
            browser.close()


def test_a_view_asks_the_daemon_nothing_an_observer_may_not_ask():
    """The views send only read commands, and the daemon restricts none of them to a role: a view
    started with an observer's key gets exactly what the observer gets, and serves it only to
    the holder of the view's token."""
    assert READ_ONLY_COMMANDS.isdisjoint(COMMAND_ROLES), READ_ONLY_COMMANDS & COMMAND_ROLES.keys()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "lab-pc.example"])
def test_a_view_refuses_a_non_loopback_address_with_one_line(host):
    with pytest.raises(UserError) as err:
        check_listen_host(host, "status page")
    assert "\n" not in str(err.value) and "no TLS" in str(err.value) and "ssh -L" in str(err.value)


def test_a_page_with_an_observer_key_serves_what_the_observer_reads_to_its_token_holder_only(tmp_path):
    """A CurveZMQ daemon with an operator (alice) and an observer (bob): the page started with
    bob's key shows the daemon, every field it serves about the daemon is one bob's own `status`
    carries, and nobody without the page's token gets any of it."""
    import urllib.error
    import urllib.request

    from robodyn.daemon import security
    from tests.daemon.conftest import DaemonProcess
    from tests.tools.operator.conftest import ViewerProcess

    keys = {}
    for name in ("daemon", "alice", "bob"):
        _pub, secret_path, public = security.write_keypair(tmp_path / "keys", name)
        keys[name] = (public, secret_path)
    extra = (f'[security]\ncurve_secret_key = "{keys["daemon"][1]}"\n'
             f'clients = {{ alice = "{keys["alice"][0]}", bob = "{keys["bob"][0]}" }}\noperators = ["alice"]\n')
    saved = {k: os.environ.get(k) for k in ("ROBODYN_CLIENT_KEY", "ROBODYN_SERVER_KEY")}
    os.environ.update({"ROBODYN_CLIENT_KEY": str(keys["alice"][1]), "ROBODYN_SERVER_KEY": keys["daemon"][0]})
    try:
        daemon = DaemonProcess(tmp_path, extra_config=extra, arm=False)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    page = None
    try:
        from robodyn.daemon.client import Client, CurveKeys

        with Client(daemon.control, timeout=10, curve=CurveKeys.from_files(keys["bob"][1], keys["daemon"][0])) as bob:
            observer = bob.status()
        assert observer["safety"]["your_role"] == "anyone"
        page = ViewerProcess(["status-page", "--endpoint", daemon.control, "--client-key", str(keys["bob"][1]),
                              "--server-key", keys["daemon"][0], "--port", "0", "--period", "0.2"], tmp_path / "page.log")
        url, token = page.info["url"], open(page.info["token_file"]).read().strip()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "api/status", timeout=10)
        assert refused.value.code == 401
        req = urllib.request.Request(url + "api/status", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            snap = json.loads(r.read())
        assert snap["connected"], snap
        for section in ("daemon", "robot", "safety", "driver"):
            extra_fields = set(snap[section]) - set(observer[section])
            assert not extra_fields, (section, extra_fields)
        assert snap["safety"]["armed"] == observer["safety"]["armed"]
        assert snap["robot"] == observer["robot"]
    finally:
        if page is not None:
            page.stop()
        daemon.stop()
