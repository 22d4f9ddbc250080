"""A read-only status page for the daemon: `robodyn status-page`.

A companion process, outside the daemon: one thread polls the daemon's read commands (through
:class:`ReadOnlyClient`) and keeps a snapshot; a small HTTP server on loopback serves

    GET /                          the page (HTML; /app.js refreshes it twice a second)
    GET /job.html#job=ID&show=...  a job's report or plot (HTML; /job.js fetches and shows it)
    GET /api/status                the snapshot (JSON): arm state, driver and recorder health, loop
                                   statistics, the run in progress and its progress, one page of
                                   recordings with their summaries and one of identification jobs
                                   (?recordings_page=N&jobs_page=N), the age of the data and whether
                                   it is stale
    GET /jobs/<job>/report.html    the job's report: parameters, torque metrics and the plot below
    GET /jobs/<job>/torque.png     predicted against measured joint torque on the job's held-out
                                   recording (or its identification recording when it has none)

and nothing else: no request of any method can arm the daemon, submit or abort a run or queue
work. Those stay on the daemon's (authenticated) control socket. Every request must come from the
page's own origin and address; every one but for the four files without data (/, /app.js,
/job.html, /job.js) must carry the page's own token in ``Authorization: Bearer`` (listen.py). The
page never sets a cookie: the token reaches it in the address's fragment and its script keeps it in
the tab's sessionStorage, which no other origin (another port included) can read.
"""

from __future__ import annotations

import html
import json
from urllib.parse import parse_qs, quote, urlsplit
import re
import tempfile
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from robodyn.daemon.readonly import ReadOnlyClient, run_progress

from .status_page_html import APP_JS, JOB_HTML, JOB_JS, PAGE_HTML
from .listen import ViewToken, check_listen_host, foreign_request, presented_token

DEFAULT_PORT = 47780
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
FINISHED = ("completed", "aborted", "failed")
MAX_RECORDINGS_KEPT = 500  # newest first; the page serves them PAGE_SIZE at a time
MAX_JOBS_KEPT = 500
PAGE_SIZE = 25
MAX_PULLS_PER_REFRESH = 2  # a completed job's metrics, fetched once each, a few per refresh
KNOWN_JOBS_TTL_S = 5.0  # how long the list of completed jobs answers for unknown report ids
HTML, SCRIPT = "text/html; charset=utf-8", "text/javascript; charset=utf-8"
# the files that hold neither data nor the token: a browser loads them by navigation or <script>,
# which cannot carry the token's header, so they are served to any request from the page's own
# address (their scripts then fetch the data with the token)
STATIC_FILES = {"/": (PAGE_HTML, HTML), "/index.html": (PAGE_HTML, HTML), "/app.js": (APP_JS, SCRIPT),
                "/job.html": (JOB_HTML, HTML), "/job.js": (JOB_JS, SCRIPT)}
ENTRY_PAGES = ("/", "/index.html")


class NotFound(LookupError):
    code = "not_found"


class StatusPoller:
    """Polls the daemon and keeps the page's snapshot. Status twice a second; recordings, run
    history and jobs every ``slow_period_s`` and whenever the run changes state."""

    def __init__(self, client_factory, period_s: float = 0.5, slow_period_s: float = 2.0, clock=time.monotonic):
        self.client_factory = client_factory
        self.client = client_factory()
        self.period_s = period_s
        self.slow_period_s = slow_period_s
        # the age at which the data is called stale: a few missed polls, whatever the client's time-out
        self.stale_after_s = max(2.0, 4 * period_s)
        self.clock = clock
        self.answered: float | None = None  # self.clock() when the daemon last answered
        self.lock = threading.Lock()
        self.snapshot: dict = {"connected": False, "error": "not polled yet", "updated": None}
        self.stop_event = threading.Event()
        self._slow_next = 0.0
        self._run_key = None
        self._slow: dict = {"recordings": [], "jobs": []}
        self._job_cache: dict[str, dict] = {}
        self._totals: dict[str, int | None] = {}  # each listing's length in the daemon; the page keeps the newest
        self.thread = threading.Thread(target=self._loop, name="robodyn-status-poll", daemon=True)

    def start(self) -> None:
        self.refresh()
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(5.0)
        self.client.close()

    def get(self) -> dict:
        with self.lock:
            return self.snapshot

    def view(self, recordings_page: int = 1, jobs_page: int = 1) -> dict:
        """What /api/status serves: the snapshot with one page of each list, the age of the data
        (now, not when the poll thread last ran: a poll stuck on a frozen daemon ages it too)."""
        with self.lock:
            snap, answered = self.snapshot, self.answered
        age = None if answered is None else max(0.0, self.clock() - answered)
        out = dict(snap, age_s=age, stale=age is None or age > self.stale_after_s,
                   stale_after_s=self.stale_after_s)
        for name, page in (("recordings", recordings_page), ("jobs", jobs_page)):
            rows = snap.get(name) or []
            pages = max(1, -(-len(rows) // PAGE_SIZE))
            page = min(max(1, page), pages)
            out[name] = rows[(page - 1) * PAGE_SIZE:page * PAGE_SIZE]
            total = snap.get(f"{name}_total")
            out[f"{name}_page"] = {"page": page, "pages": pages, "kept": len(rows), "size": PAGE_SIZE,
                                   "total": len(rows) if total is None else max(int(total), len(rows))}
        return out

    def _loop(self) -> None:
        while not self.stop_event.wait(self.period_s):
            self.refresh()

    def refresh(self) -> None:
        stamp = time.time()  # when the daemon was asked: what the snapshot describes
        try:
            st = self.client.status()
            run = st.get("run")
            key = (run or {}).get("run_id"), (run or {}).get("state"), (st.get("last_run") or {}).get("run_id")
            now = time.monotonic()
            if key != self._run_key or now >= self._slow_next:
                self._run_key = key
                self._slow_next = now + self.slow_period_s
                self._slow = {"recordings": self._recordings(), "jobs": self._jobs()}
            snap = self._build(st, self._slow)
            answered = self.clock()
        except Exception as exc:  # daemon away or restarting: the page says so and keeps polling
            snap = dict(self.get(), connected=False, error=f"{type(exc).__name__}: {exc}")
            answered, stamp = self.answered, self.get().get("updated")
            try:  # a timed-out client may hold a stale request; start over
                self.client.close()
            finally:
                self.client = self.client_factory()
        snap["updated"] = stamp  # wall time of the data shown
        with self.lock:
            self.snapshot, self.answered = snap, answered

    # ------------------------------------------------------------------ pieces of the snapshot

    def _build(self, st: dict, slow: dict) -> dict:
        drv, rec, safety = st.get("driver") or {}, st.get("recorder") or {}, st.get("safety") or {}
        metrics = st.get("metrics") or {}
        run = self._run_view(st.get("run"))
        recordings = slow["recordings"]
        if run is not None:  # the row of the file being written follows the run at the status rate
            recordings = [dict(r, progress=run) if r.get("id") == run["run_id"] else r for r in recordings]
        return {
            "connected": True, "error": None,
            "daemon": {k: (st.get("daemon") or {}).get(k) for k in ("version", "pid", "uptime_s", "control")},
            "robot": st.get("robot"),
            "safety": {k: safety.get(k) for k in ("armed", "arming_required", "armed_by", "armed_for_s",
                                                  "disarm_reason")},
            "driver": {k: drv.get(k) for k in ("pid", "alive", "ready", "restarts", "telemetry_age_s", "lifecycle",
                                               "scheduler", "error")},
            "recorder": {"pid": rec.get("pid"), "alive": rec.get("alive"), "ready": rec.get("ready"),
                         "restarts": rec.get("restarts"), "stream": rec.get("stream")},
            "loop": {"all": drv.get("loop") or {}, "jitter": metrics.get("loop_jitter_ms"),
                     "lost_samples": metrics.get("lost_samples")},
            "run": run,
            "last_run": self._run_view(st.get("last_run")),
            "recordings": recordings,
            "jobs": slow["jobs"],
            "recordings_total": self._totals.get("recordings"), "jobs_total": self._totals.get("jobs"),
        }

    @staticmethod
    def _run_view(run: dict | None) -> dict | None:
        if not run:
            return None
        out = run_progress(run)
        out.update({k: run.get(k) for k in ("label", "mode", "duration_s", "move_duration_s", "elapsed_s",
                                             "abort_reason")})
        out["recording_id"] = run.get("run_id")
        summary = run.get("summary")
        if summary:
            out["summary"] = _summary_view(summary)
        return out

    def _recordings(self) -> list[dict]:
        """The newest recordings, each with its summary: a run of this daemon's history has its own;
        any other row carries the digest the daemon keeps in its index (daemon/recording/index.py).
        The page never asks for `recording_info`, which decodes a whole file in the daemon's worker
        (about 20 s for an hour at 1 kHz) while this poll would wait for it."""
        reply = self.client.listing_page("recordings", MAX_RECORDINGS_KEPT)
        self._totals["recordings"] = reply.get("total")
        rows = sorted(reply["recordings"], key=lambda r: str(r.get("id")), reverse=True)  # ids start with the start time
        history = {r["run_id"]: r for r in self.client.runs(limit=MAX_RECORDINGS_KEPT)}
        out = []
        for row in rows:
            rid = str(row.get("id"))
            view = {k: row.get(k) for k in ("id", "status", "samples", "lost", "duration_s", "label", "created")}
            summary = (history.get(rid) or {}).get("summary") or row.get("summary")
            if summary:
                view["summary"] = _summary_view(summary)
            out.append(view)
        return out

    def _jobs(self) -> list[dict]:
        try:
            reply = self.client.listing_page("jobs", MAX_JOBS_KEPT)
        except Exception as exc:  # a daemon without the identification worker has no `jobs`
            if getattr(exc, "code", "") == "unknown_command":
                self._totals["jobs"] = 0
                return []
            raise
        out = []
        self._totals["jobs"] = reply.get("total")
        jobs = sorted(reply["jobs"], key=lambda j: str(j.get("job")), reverse=True)
        self._job_cache = {k: v for k, v in self._job_cache.items() if k in {str(j.get("job")) for j in jobs}}
        pulls = 0
        for j in jobs:
            view = {k: j.get(k) for k in ("job", "state", "stage", "progress", "error")}
            if j.get("state") == "completed":
                job = str(j["job"])
                if job not in self._job_cache and pulls < MAX_PULLS_PER_REFRESH:
                    pulls += 1
                    try:
                        self._job_cache[job] = _job_metrics(self.client.pull(job))
                    except Exception as exc:
                        # `busy`: the daemon's heavy-read worker is taken (pull is read there); asked
                        # again at the next refresh. Anything else is the job's state: kept.
                        if getattr(exc, "code", "") != "busy":
                            self._job_cache[job] = {"error": str(exc)}
                view["result"] = self._job_cache.get(job)
                view["report"] = f"/jobs/{job}/report.html"
                view["plot"] = f"/jobs/{job}/torque.png"
            out.append(view)
        return out


def _summary_view(s: dict) -> dict:
    loop = s.get("loop") or {}
    tracking = s.get("tracking") or {}
    gaps = s.get("gaps")
    return {"status": s.get("status"), "reason": s.get("reason") or None,
            "samples": s.get("samples", s.get("recorded_samples")), "expected_samples": s.get("expected_samples"),
            "lost_samples": s.get("lost_samples"), "gaps": len(gaps) if isinstance(gaps, list) else gaps,
            "executed_samples": s.get("executed_samples"), "trajectory_samples": s.get("trajectory_samples"),
            "loop_p50_ms": loop.get("p50_ms"), "loop_p99_ms": loop.get("p99_ms"), "loop_max_ms": loop.get("max_ms"),
            "tracking_rms_rad": tracking.get("rms_overall_rad"), "tracking_max_rad": tracking.get("max_overall_rad"),
            **({"error": s["error"]} if "error" in s else {})}


def _job_metrics(doc: dict) -> dict:
    prov = doc.get("provenance") or {}
    metrics = doc.get("metrics") or {}
    held = metrics.get("holdout") or {}
    ident = metrics.get("identification") or {}
    corr = [c for c in held.get("correlation") or [] if c is not None]
    return {"method": (doc.get("estimate") or {}).get("method"), "base_parameters": (doc.get("base") or {}).get("count"),
            "recordings": prov.get("recordings"), "holdout": prov.get("holdout") or [],
            "holdout_relative_error": held.get("relative_error_total"),
            "holdout_min_correlation": min(corr) if corr else None,
            "identification_relative_error": ident.get("relative_error_total")}


# --------------------------------------------------------------------------- job reports


class JobReports:
    """Reports and predicted-vs-measured plots of completed jobs, built once per job on first
    request (a completed job's result never changes) in this process, never in the daemon."""

    def __init__(self, client_factory, clock=time.monotonic, known_ttl_s: float = KNOWN_JOBS_TTL_S):
        self.client_factory = client_factory
        self.clock = clock
        self.known_ttl_s = known_ttl_s
        self.lock = threading.Lock()
        self.cache: dict[str, dict] = {}
        self.building: dict[str, threading.Lock] = {}
        self.completed: set[str] = set()  # the daemon's completed jobs, as of completed_at
        self.completed_at: float | None = None
        self.refresh_lock = threading.Lock()

    def is_completed(self, job: str) -> bool:
        """Whether the daemon has ``job`` completed. Unknown ids are answered from the last list of
        completed jobs while it is younger than ``known_ttl_s``: a flood of made-up ids costs the
        daemon one `jobs` call per ``known_ttl_s``, not one call per request."""
        def fresh() -> bool:
            return self.completed_at is not None and self.clock() - self.completed_at < self.known_ttl_s
        if job in self.completed or fresh():
            return job in self.completed
        with self.refresh_lock:
            if not fresh():
                try:
                    with self.client_factory() as client:
                        self.completed = {str(j.get("job")) for j in client.every("jobs")
                                          if j.get("state") == "completed"}
                finally:  # a daemon that does not answer is not asked again before the TTL either
                    self.completed_at = self.clock()
        return job in self.completed

    def get(self, job: str) -> dict:
        with self.lock:
            if job in self.cache:
                return self.cache[job]
        if not self.is_completed(job):
            raise NotFound(f"no completed job {job!r}")
        with self.lock:
            lock = self.building.setdefault(job, threading.Lock())
        with lock:
            with self.lock:
                if job in self.cache:
                    return self.cache[job]
            built = self._build(job)
            with self.lock:
                self.cache[job] = built
            return built

    def _build(self, job: str) -> dict:
        from robodyn.recording import load_recording
        from robodyn.jobs.identification import _model_of
        from robodyn.identification.data import recording_dataset
        from robodyn.identification.pipeline import predict, validate
        from robodyn.identification.report import torque_plot_png, write_html_report

        with self.client_factory() as client:
            doc = client.pull(job)
            prov = doc.get("provenance") or {}
            holdout = list(prov.get("holdout") or [])
            target = (holdout or list(prov.get("recordings") or []) or [None])[0]
            paths = {str(r.get("id")): r.get("path") for r in client.every("recordings") if str(r.get("id")) == target}
        kind = "held-out" if holdout else "identification"
        sections = [{"title": "identification data (as fitted)", "metrics": doc["metrics"]["identification"]}]
        png, note = None, None
        try:
            if target is None or not paths.get(target):
                raise ValueError(f"recording {target!r} is not among the daemon's recordings any more")
            rec = load_recording(Path(paths[target]))
            model = _model_of(rec)
            raw = recording_dataset(rec)
            t, measured, predicted = predict(model, doc, raw)
            title = f"{kind} recording {target}: predicted vs measured joint torque"
            png = torque_plot_png(t - t[0], measured, predicted, model.joint_names, title)
            metrics = doc["metrics"].get("holdout") if holdout else None
            if metrics is None:
                metrics = validate(model, doc, [raw])
            sections.append({"title": title, "metrics": {k: v for k, v in metrics.items() if k != "filtered"},
                             "png": png})
        except (OSError, ValueError, KeyError) as exc:
            # e.g. the daemon runs on another host: its recording paths are not readable here
            note = f"no predicted-vs-measured plot: {exc}"
        try:
            with tempfile.TemporaryDirectory(prefix="robodyn-report-") as tmp:
                page = write_html_report(Path(tmp) / "report.html", doc, sections).read_text()
        except ValueError as exc:  # a document this version cannot read (a newer daemon's): said, not a crash
            page = f"<html><body><p><b>the result of job {html.escape(job)} cannot be shown here: " \
                   f"{html.escape(str(exc))}</b></p></body></html>"
        page += (f"\n<p>job {html.escape(job)}; plot on {kind} recording {html.escape(str(target))}</p>"
                 + (f"\n<p><b>{html.escape(note)}</b></p>" if note else ""))
        return {"html": page.encode(), "png": png, "note": note}


# --------------------------------------------------------------------------- HTTP


class StatusPageServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, poller: StatusPoller, reports: JobReports, token_dir: Path | None = None):
        self.poller = poller
        self.reports = reports
        super().__init__(address, StatusPageHandler)
        self.host, self.port = address[0], self.server_address[1]
        self.token = ViewToken("status-page", self.host, self.port, token_dir)
        self.url = f"http://{self.host}:{self.port}/"

    @property
    def token_url(self) -> str:
        """The address to open: the token in the fragment, which the browser keeps to itself."""
        return f"{self.url}#token={self.token.value}"

    def server_close(self) -> None:
        super().server_close()
        self.token.remove()


class StatusPageHandler(BaseHTTPRequestHandler):
    server: StatusPageServer
    server_version = "robodyn-status-page"

    def log_message(self, fmt, *args) -> None:  # no access log on stderr: the page polls twice a second
        pass

    def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; "
                                                    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; "
                                                    "base-uri 'none'; form-action 'none'")
        # no address of this page (a job link carries the token in its fragment) goes to another server
        self.send_header("Referrer-Policy", "no-referrer")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _text(self, status: int, text: str, extra: dict | None = None) -> None:
        self._send(status, text.encode(), "text/plain; charset=utf-8", extra)

    def _unauthorized(self) -> None:
        self._text(HTTPStatus.UNAUTHORIZED, "this page needs its token: open the address `robodyn status-page` "
                                            "printed (it ends in #token=...); a script sends it as "
                                            f"`Authorization: Bearer TOKEN`, from {self.server.token.path}")

    def _admitted(self, path: str) -> bool:
        """From this view's own address and origin (else 403), with its token in
        ``Authorization: Bearer`` unless ``path`` is one of the files without data (else 401)."""
        why = foreign_request(self.headers, self.server.host, self.server.port)
        if why:
            self._text(HTTPStatus.FORBIDDEN, why)
            return False
        if path in STATIC_FILES or self.server.token.matches(presented_token(self.headers, self.path, query=False)):
            return True
        self._unauthorized()
        return False

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        if not self._admitted(path):
            return
        try:
            if path in ENTRY_PAGES and "token" in query:
                # the address in its older form (?token=): it reached this server only; the browser
                # is sent to the same page with the token in the fragment, which it keeps to itself,
                # and the address bar loses the query
                if not self.server.token.matches(query["token"][0]):
                    self._unauthorized()
                    return
                self._send(HTTPStatus.SEE_OTHER, b"", "text/plain",
                           {"Location": f"{path}#token={quote(self.server.token.value, safe='')}"})
            elif path in STATIC_FILES:
                body, ctype = STATIC_FILES[path]
                self._send(200, body.encode(), ctype)
            elif path == "/api/status":
                try:
                    pages = {k: int(query.get(k, ["1"])[0]) for k in ("recordings_page", "jobs_page")}
                except ValueError:
                    self._text(400, "recordings_page and jobs_page are page numbers (1, 2, ...)")
                    return
                body = json.dumps(self.server.poller.view(**pages), default=str, allow_nan=False).encode()
                self._send(200, body, "application/json")
            elif path.startswith("/jobs/") and path.count("/") == 3:
                _, _, job, leaf = path.split("/")
                if not JOB_ID.match(job) or ".." in job or leaf not in ("report.html", "torque.png"):
                    self._text(404, "not found")
                    return
                built = self.server.reports.get(job)
                if leaf == "report.html":
                    self._send(200, built["html"], HTML)
                elif built["png"] is None:
                    self._text(404, built["note"] or "no plot for this job")
                else:
                    self._send(200, built["png"], "image/png")
            else:
                self._text(404, "not found")
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as exc:  # e.g. the job is not completed, the daemon is away
            code = getattr(exc, "code", None)
            status = 404 if code == "not_found" else 409 if code == "busy" else 502
            self._text(status, f"{type(exc).__name__}: {exc}")

    do_HEAD = do_GET

    def _refuse(self) -> None:
        # the page only shows state: no method but GET/HEAD exists on any path
        why = foreign_request(self.headers, self.server.host, self.server.port)
        if why:
            self._text(HTTPStatus.FORBIDDEN, why)
            return
        self._text(HTTPStatus.METHOD_NOT_ALLOWED, "read-only: this page cannot change the daemon; arming and "
                                                  "motion are on the daemon's control socket (robodyn arm / run)",
                   {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse


def serve_status_page(client_factory, host: str = "127.0.0.1", port: int = DEFAULT_PORT, period_s: float = 0.5,
                      token_dir: Path | None = None) -> tuple[StatusPageServer, StatusPoller]:
    """Start polling and listening; the caller runs ``server.serve_forever()`` and, at the end,
    ``server.server_close()`` (which removes the token file)."""
    check_listen_host(host, "status page")
    poller = StatusPoller(client_factory, period_s=period_s)
    poller.start()
    server = StatusPageServer((host, port), poller, JobReports(client_factory), token_dir)
    return server, poller
