"""`robodyn status-page` in real Chromium (Debian's package, driven by Playwright) while the
simulated robot runs: the phase, the progress and the recording row appear and update; a job's
report and predicted-vs-measured plot are one click away; nothing on it can move the robot."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.tools.operator.conftest import ViewerProcess, excitation
from tests.system_tools import require_system_tool

pytestmark = pytest.mark.browser

RUN_S = 4.0
WATCHED_RUN_S = 60.0  # aborted once the page has shown it executing
# headless, no sandbox (root in a container), and nothing that reaches out to the network
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> str:
    return require_system_tool("chromium", "chromium", "the status page is tested in Debian's Chromium",
                               override_env="ROBODYN_CHROMIUM")


@pytest.fixture(scope="module")
def page_server(rt_daemon, tmp_path_factory):
    log = tmp_path_factory.mktemp("status-page") / "status-page.log"
    viewer = ViewerProcess(["status-page", "--endpoint", rt_daemon.control, "--port", "0", "--period", "0.25"], log)
    yield viewer
    viewer.stop()


@pytest.fixture
def browser_page(tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 1100})
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


def text(page, selector: str) -> str:
    return page.locator(selector).inner_text()


@pytest.mark.timeout(1200)  # an outer guard over the outer time-outs inside
def test_page_shows_the_run_its_recording_and_the_identification_job_as_they_happen(
        rt_daemon, page_server, browser_page, tmp_path):
    page = browser_page
    page.goto(page_server.info["serving"])
    expect(page.locator("#arm-state")).to_have_text(re.compile("^ARMED"), timeout=20_000)
    assert "p99" in text(page, "#loop-stats") and "alive" in text(page, "#driver-health")
    # a page to look at, not to steer: no form, button or input anywhere
    assert page.locator("form, button, input, select, textarea").count() == 0

    # mid-run: a long run, so the page (polling every 0.25 s) sees it executing on any host, however
    # late it is woken; it is aborted once seen
    run_id = rt_daemon.client.submit_run("panda", excitation(WATCHED_RUN_S), label="watched in chromium")["run_id"]
    expect(page.locator("#run-phase")).to_have_text("execute", timeout=60_000)
    first = float(page.locator("#run-progress").evaluate("e => e.value"))
    # progress moves on while the trajectory executes, and the text says how far
    page.wait_for_function(f"() => document.getElementById('run-phase').textContent === 'execute' && "
                           f"document.getElementById('run-progress').value > {first} + 0.01", timeout=60_000)
    assert run_id in text(page, "#run-id") and "watched in chromium" in text(page, "#run-id")
    assert f"% of {WATCHED_RUN_S:.1f} s" in text(page, "#run-progress-text")
    row = page.locator(f"#recordings tr[data-recording-id='{run_id}']")
    row.wait_for(timeout=60_000)
    assert row.locator("td").nth(1).inner_text().startswith("recording")
    page.screenshot(path=str(tmp_path / "status-page-during-run.png"), full_page=True)
    rt_daemon.client.abort(run_id, reason="seen mid-run by the status page")
    assert rt_daemon.client.wait_run(run_id, timeout=120)["state"] == "aborted"
    if not rt_daemon.client.status()["safety"]["armed"]:
        rt_daemon.client.arm()

    # a short run to its end: the phase says so and the recording row turns into the finished file's summary
    run_id = rt_daemon.client.submit_run("panda", excitation(RUN_S), label="completed in chromium")["run_id"]
    row = page.locator(f"#recordings tr[data-recording-id='{run_id}']")
    expect(page.locator("#run-id")).to_contain_text(run_id, timeout=60_000)
    expect(page.locator("#run-phase")).to_have_text("completed", timeout=120_000)
    row.locator("td:nth-child(2)", has_text="completed").wait_for(timeout=60_000)
    listed = {r["id"]: r for r in rt_daemon.client.recordings()}[run_id]
    cells = row.locator("td").all_inner_texts()
    assert int(cells[2]) == listed["samples"] > RUN_S * 1000 and int(cells[3]) == listed["lost"]
    assert float(cells[5]) > 0  # the run's loop period p99, from its summary
    assert float(page.locator("#run-progress").evaluate("e => e.value")) == 1.0

    # an identification job on that recording: its row, then its report and predicted-vs-measured plot
    job = rt_daemon.client.identify([run_id], {"method": "ols", "friction": "coulomb-viscous"})["job"]
    job_row = page.locator(f"#jobs tr[data-job-id='{job}']")
    # outer time-outs only (the job runs identify's whole path: validation, checks, residual model)
    job_row.wait_for(timeout=60_000)
    try:
        job_row.locator("td:nth-child(2)", has_text="completed").wait_for(timeout=600_000)
    except Exception:
        raise AssertionError(f"row {job_row.inner_text()!r}; the daemon says {rt_daemon.client.job_status(job)}") from None
    img = page.locator("#latest-plot")
    img.wait_for(timeout=60_000)
    # an outer time-out only: the page server builds the plot on first request (the job's recording
    # loaded and predicted, then drawn); beside stress-ng --cpu 4 that took over 60 s twice
    try:
        page.wait_for_function("() => document.getElementById('latest-plot').complete && "
                               "document.getElementById('latest-plot').naturalWidth > 300", timeout=300_000)
    except Exception:
        src = page_server.info["url"].rstrip("/") + img.get_attribute("data-plot")
        token = open(page_server.info["token_file"]).read().strip()
        try:
            with urllib.request.urlopen(urllib.request.Request(src, headers={"Authorization": f"Bearer {token}"}),
                                        timeout=120) as r:
                said = f"{r.status} {r.headers.get('Content-Type')}, {len(r.read())} bytes"
        except urllib.error.HTTPError as exc:
            said = f"{exc.code} {exc.read()[:300]!r}"
        raise AssertionError(f"the plot {src} did not show in 300 s; asked again, the page server answers {said}") from None
    page.screenshot(path=str(tmp_path / "status-page-after-job.png"), full_page=True)
    # the report page loads the report and its plot with the token: on a 2-core host beside
    # stress-ng that took longer than Playwright's 30 s default (the other waits here allow minutes)
    with page.expect_navigation(timeout=300_000):
        job_row.locator("a", has_text="report").click()
    # the report page fetches the report with the token and shows it: its heading, then its plot
    assert "Identification of panda" in page.locator("h1").inner_text()
    assert "predicted vs measured joint torque" in page.content()
    assert "token" not in page.url  # the link's fragment left the address bar
    page.wait_for_function("() => { const i = document.querySelector('img'); return i && i.complete && "
                           "i.naturalWidth > 300; }", timeout=60_000)
    page.screenshot(path=str(tmp_path / "job-report.png"), full_page=True)
    print("screenshots in", tmp_path)


def request(url: str, method: str = "GET", token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, method=method, data=b"{}" if method not in ("GET", "HEAD") else None,
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_the_page_exposes_no_motion_or_arming_endpoint(rt_daemon, page_server):
    base = page_server.info["url"].rstrip("/")
    token = open(page_server.info["token_file"]).read().strip()
    assert page_server.info["serving"] == f"{base}/#token={token}"
    assert request(base + "/api/status")[0] == 401  # no token, no state
    rt_daemon.client.disarm("checking that the status page cannot arm")
    disarmed_at = time.time()
    runs_before = len(rt_daemon.client.runs())
    paths = ["/", "/api/status", "/arm", "/api/arm", "/disarm", "/run", "/api/run", "/submit_run", "/api/submit_run",
             "/abort", "/api/abort", "/identify", "/jobs", "/jobs/x/report.html", "/api/command"]
    try:
        for path in paths:
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                status, body = request(base + path, method)
                assert status == 405, (method, path, status)
                assert "read-only" in body
            if path not in ("/", "/api/status"):
                assert request(base + path, token=token)[0] == 404, path
        # the page shows the daemon disarmed once it has polled since (twice a second)
        for _ in range(300):  # an outer time-out of about 60 s
            status, body = request(base + "/api/status", token=token)
            snap = json.loads(body)
            if snap["updated"] > disarmed_at:
                break
            time.sleep(0.2)
        assert status == 200 and snap["connected"] and snap["safety"]["armed"] is False, snap["safety"]
        # nothing reached the daemon: still disarmed, no run submitted
        st = rt_daemon.client.status()
        assert st["safety"]["armed"] is False and st["run"] is None
        assert len(rt_daemon.client.runs()) == runs_before
    finally:
        rt_daemon.client.arm()
