"""A read-only status page for the daemon: `robodyn status-page`.

A companion process, outside the daemon: one thread polls the daemon's read commands (through
:class:`ReadOnlyClient`) and keeps a snapshot; a small HTTP server on loopback serves

    GET /                          the page (HTML; /app.js refreshes it twice a second)
    GET /api/status                the snapshot (JSON): arm state, driver and recorder health, loop
                                   statistics, the run in progress and its progress, recordings with
                                   their summaries, identification jobs
    GET /jobs/<job>/report.html    the job's report: parameters, torque metrics and the plot below
    GET /jobs/<job>/torque.png     predicted against measured joint torque on the job's held-out
                                   recording (or its identification recording when it has none)

and nothing else: no request of any method can arm the daemon, submit or abort a run or queue
work. Those stay on the daemon's (authenticated) control socket.
"""

from __future__ import annotations

import html
import json
import re
import tempfile
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from robodyn.daemon.readonly import ReadOnlyClient, run_progress

from .listen import check_listen_host

DEFAULT_PORT = 47780
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
FINISHED = ("completed", "aborted", "failed")
MAX_RECORDINGS_SHOWN = 50
MAX_INFO_FETCHES_PER_REFRESH = 1  # recording_info decodes a file in the daemon: one at a time, cached


class StatusPoller:
    """Polls the daemon and keeps the page's snapshot. Status twice a second; recordings, run
    history and jobs every ``slow_period_s`` and whenever the run changes state."""

    def __init__(self, client_factory, period_s: float = 0.5, slow_period_s: float = 2.0):
        self.client_factory = client_factory
        self.client = client_factory()
        self.period_s = period_s
        self.slow_period_s = slow_period_s
        self.lock = threading.Lock()
        self.snapshot: dict = {"connected": False, "error": "not polled yet", "updated": None}
        self.stop_event = threading.Event()
        self._slow_next = 0.0
        self._run_key = None
        self._slow: dict = {"recordings": [], "jobs": []}
        self._info_cache: dict[str, dict] = {}
        self._job_cache: dict[str, dict] = {}
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
        except Exception as exc:  # daemon away or restarting: the page says so and keeps polling
            snap = dict(self.get(), connected=False, error=f"{type(exc).__name__}: {exc}")
            try:  # a timed-out client may hold a stale request; start over
                self.client.close()
            finally:
                self.client = self.client_factory()
        snap["updated"] = stamp
        with self.lock:
            self.snapshot = snap

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
        rows = self.client.recordings()
        rows.sort(key=lambda r: str(r.get("id")), reverse=True)  # ids start with the start time
        rows = rows[:MAX_RECORDINGS_SHOWN]
        history = {r["run_id"]: r for r in self.client.runs(limit=MAX_RECORDINGS_SHOWN)}
        fetches = 0
        out = []
        for row in rows:
            rid = str(row.get("id"))
            view = {k: row.get(k) for k in ("id", "status", "samples", "lost", "duration_s", "label", "created")}
            run = history.get(rid)
            summary = (run or {}).get("summary")
            if summary is None and row.get("status") not in (None, "recording") and not str(row.get("status")).startswith("unreadable"):
                if rid not in self._info_cache and fetches < MAX_INFO_FETCHES_PER_REFRESH:
                    fetches += 1
                    try:
                        self._info_cache[rid] = self.client.recording_info(rid).get("summary") or {}
                    except Exception as exc:  # unreadable file: show why, do not retry every refresh
                        self._info_cache[rid] = {"error": str(exc)}
                summary = self._info_cache.get(rid)
            if summary:
                view["summary"] = _summary_view(summary)
            out.append(view)
        return out

    def _jobs(self) -> list[dict]:
        try:
            jobs = self.client.jobs()
        except Exception as exc:  # a daemon without the identification worker has no `jobs`
            if getattr(exc, "code", "") == "unknown_command":
                return []
            raise
        out = []
        for j in sorted(jobs, key=lambda j: str(j.get("job")), reverse=True):
            view = {k: j.get(k) for k in ("job", "state", "stage", "progress", "error")}
            if j.get("state") == "completed":
                job = str(j["job"])
                if job not in self._job_cache:
                    try:
                        self._job_cache[job] = _job_metrics(self.client.pull(job))
                    except Exception as exc:
                        self._job_cache[job] = {"error": str(exc)}
                view["result"] = self._job_cache[job]
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

    def __init__(self, client_factory):
        self.client_factory = client_factory
        self.lock = threading.Lock()
        self.cache: dict[str, dict] = {}
        self.building: dict[str, threading.Lock] = {}

    def get(self, job: str) -> dict:
        with self.lock:
            if job in self.cache:
                return self.cache[job]
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
        from robodyn.daemon.recording import load_recording
        from robodyn.identification.daemon_jobs import _model_of
        from robodyn.identification.data import recording_dataset
        from robodyn.identification.pipeline import predict, validate
        from robodyn.identification.report import torque_plot_png, write_html_report

        with self.client_factory() as client:
            doc = client.pull(job)
            paths = {str(r.get("id")): r.get("path") for r in client.recordings()}
        prov = doc.get("provenance") or {}
        holdout = list(prov.get("holdout") or [])
        target = (holdout or list(prov.get("recordings") or []) or [None])[0]
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
        with tempfile.TemporaryDirectory(prefix="robodyn-report-") as tmp:
            page = write_html_report(Path(tmp) / "report.html", doc, sections).read_text()
        page += (f"\n<p>job {html.escape(job)}; plot on {kind} recording {html.escape(str(target))}</p>"
                 + (f"\n<p><b>{html.escape(note)}</b></p>" if note else ""))
        return {"html": page.encode(), "png": png, "note": note}


# --------------------------------------------------------------------------- HTTP


class StatusPageServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, poller: StatusPoller, reports: JobReports):
        self.poller = poller
        self.reports = reports
        super().__init__(address, StatusPageHandler)


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
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "
                                                    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _text(self, status: int, text: str, extra: dict | None = None) -> None:
        self._send(status, text.encode(), "text/plain; charset=utf-8", extra)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            if path in ("/", "/index.html"):
                self._send(200, PAGE_HTML.encode(), "text/html; charset=utf-8")
            elif path == "/app.js":
                self._send(200, APP_JS.encode(), "text/javascript; charset=utf-8")
            elif path == "/api/status":
                body = json.dumps(self.server.poller.get(), default=str, allow_nan=False).encode()
                self._send(200, body, "application/json")
            elif path.startswith("/jobs/") and path.count("/") == 3:
                _, _, job, leaf = path.split("/")
                if not JOB_ID.match(job) or ".." in job or leaf not in ("report.html", "torque.png"):
                    self._text(404, "not found")
                    return
                built = self.server.reports.get(job)
                if leaf == "report.html":
                    self._send(200, built["html"], "text/html; charset=utf-8")
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
        self._text(HTTPStatus.METHOD_NOT_ALLOWED, "read-only: this page cannot change the daemon; arming and "
                                                  "motion are on the daemon's control socket (robodyn arm / run)",
                   {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse


def serve_status_page(client_factory, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                      period_s: float = 0.5) -> tuple[StatusPageServer, StatusPoller]:
    """Start polling and listening; the caller runs ``server.serve_forever()``."""
    check_listen_host(host, "status page")
    poller = StatusPoller(client_factory, period_s=period_s)
    poller.start()
    server = StatusPageServer((host, port), poller, JobReports(client_factory))
    return server, poller


# --------------------------------------------------------------------------- the page

PAGE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robodyn status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.3em;margin:0 0 .4em}h2{font-size:1.05em;margin:1.2em 0 .4em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f4f4f4}.ok{color:#176b2c}.bad{color:#b00020;font-weight:bold}.warn{color:#a05a00}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:.6em}
.card{border:1px solid #ddd;border-radius:6px;padding:.5em .8em}.card b{display:block;font-size:12px;color:#666}
progress{width:100%;height:1.1em}#latest-plot{max-width:100%;border:1px solid #ddd}
.muted{color:#777;font-size:12px}code{font-size:12px}
</style></head>
<body>
<h1>robodyn: <span id="robot">-</span> <span class="muted" id="connection">connecting...</span></h1>
<div class="grid">
 <div class="card"><b>arm state</b><span id="arm-state">-</span></div>
 <div class="card"><b>driver</b><span id="driver-health">-</span></div>
 <div class="card"><b>recorder</b><span id="recorder-health">-</span></div>
 <div class="card"><b>loop period (all cycles since the driver started)</b><span id="loop-stats">-</span></div>
</div>
<h2>Run</h2>
<div class="grid">
 <div class="card"><b>run</b><span id="run-id">-</span></div>
 <div class="card"><b>phase</b><span id="run-phase">-</span></div>
 <div class="card"><b>progress</b><progress id="run-progress" max="1" value="0"></progress>
  <span id="run-progress-text">-</span></div>
</div>
<p class="muted" id="last-run"></p>
<h2>Recordings</h2>
<table id="recordings"><thead><tr><th>recording</th><th>status</th><th>samples</th><th>lost</th><th>duration s</th>
<th>loop p99 ms</th><th>tracking rms rad</th><th>label</th></tr></thead><tbody></tbody></table>
<h2>Identification jobs</h2>
<table id="jobs"><thead><tr><th>job</th><th>state</th><th>stage</th><th>progress</th><th>method</th>
<th>relative error: fit / held-out</th><th>report</th><th>plot</th></tr></thead><tbody></tbody></table>
<div id="latest-plot-box"></div>
<p class="muted">Read-only: this page shows the daemon's state and cannot arm it, move the robot or queue work.
Arming and motion stay on the daemon's authenticated control socket (<code>robodyn arm</code>,
<code>robodyn run</code>).</p>
<script src="/app.js"></script>
</body></html>
"""

APP_JS = r"""
"use strict";
const $ = (id) => document.getElementById(id);
const fmt = (v, d = 3) => (v === null || v === undefined || Number.isNaN(v)) ? "-" : Number(v).toFixed(d);
function setText(id, text, cls) { const e = $(id); e.textContent = text; e.className = cls || ""; }
function cell(tr, text) { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); return td; }
function link(td, href, text) { const a = document.createElement("a"); a.href = href; a.textContent = text; td.appendChild(a); }
let latestPlot = null;

function render(s) {
  setText("connection", s.connected ? "connected" : ("daemon unreachable: " + (s.error || "")), s.connected ? "muted" : "bad");
  if (!s.robot) return;
  $("robot").textContent = `${s.robot.name} (${s.robot.dof} joints, ${s.robot.driver} driver, ${s.robot.rate_hz} Hz)`;
  const sf = s.safety || {};
  setText("arm-state", sf.armed ? `ARMED by ${sf.armed_by}` : `disarmed (${sf.disarm_reason || "-"})`, sf.armed ? "warn" : "ok");
  const d = s.driver || {};
  setText("driver-health", `${d.alive ? "alive" : "DOWN"}, ${d.lifecycle || "-"}, ${d.scheduler || "-"}, restarts ${d.restarts}` +
          `, telemetry ${fmt(d.telemetry_age_s, 2)} s old` + (d.error ? `; error: ${d.error}` : ""), d.alive && !d.error ? "ok" : "bad");
  const r = s.recorder || {}; const st = r.stream || {};
  setText("recorder-health", `${r.alive ? "alive" : "DOWN"}, restarts ${r.restarts}, received ${st.received ?? "-"} samples, lost ${st.lost ?? "-"}`,
          r.alive && !st.lost ? "ok" : "bad");
  const l = (s.loop || {}).all || {};
  setText("loop-stats", `p50 ${fmt(l.p50_ms)} / p99 ${fmt(l.p99_ms)} / p99.9 ${fmt(l.p999_ms)} / max ${fmt(l.max_ms)} ms over ${l.count ?? 0} cycles`);
  const run = s.run;
  if (run) {
    setText("run-id", `${run.run_id}${run.label ? " (" + run.label + ")" : ""}`);
    setText("run-phase", run.state, "warn");
    $("run-progress").value = run.state === "move_to_start" ? run.move_fraction : run.fraction;
    setText("run-progress-text", run.text);
  } else {
    const lr = s.last_run;
    setText("run-id", lr ? `none in progress; last ${lr.run_id}` : "none");
    setText("run-phase", lr ? lr.state : "idle", lr && lr.state !== "completed" ? "bad" : "");
    $("run-progress").value = lr ? lr.fraction : 0;
    setText("run-progress-text", lr ? lr.text : "-");
  }
  const lr = s.last_run;
  $("last-run").textContent = lr && lr.summary ? `last run ${lr.run_id}: ${lr.state}${lr.abort_reason ? " (" + lr.abort_reason + ")" : ""}, ` +
      `${lr.summary.samples ?? "-"} samples recorded of ${lr.summary.expected_samples ?? "-"}, lost ${lr.summary.lost_samples ?? "-"}, ` +
      `loop p99 ${fmt(lr.summary.loop_p99_ms)} ms, tracking rms ${fmt(lr.summary.tracking_rms_rad, 6)} rad` : "";
  const rb = document.querySelector("#recordings tbody"); rb.replaceChildren();
  for (const rec of s.recordings || []) {
    const tr = document.createElement("tr"); tr.dataset.recordingId = rec.id;
    const sm = rec.summary || {};
    cell(tr, rec.id); cell(tr, rec.progress ? `${rec.status} ${rec.progress.text}` : rec.status);
    cell(tr, rec.samples ?? sm.samples ?? "-"); cell(tr, rec.lost ?? sm.lost_samples ?? "-");
    cell(tr, fmt(rec.duration_s, 2)); cell(tr, fmt(sm.loop_p99_ms)); cell(tr, fmt(sm.tracking_rms_rad, 6)); cell(tr, rec.label || "");
    rb.appendChild(tr);
  }
  const jb = document.querySelector("#jobs tbody"); jb.replaceChildren();
  let newest = null;
  for (const j of s.jobs || []) {
    const tr = document.createElement("tr"); tr.dataset.jobId = j.job;
    const res = j.result || {};
    cell(tr, j.job); cell(tr, j.state + (j.error ? ": " + j.error : "")); cell(tr, j.stage || "");
    cell(tr, fmt(100 * (j.progress || 0), 0) + " %"); cell(tr, res.method || "-");
    cell(tr, `${fmt(res.identification_relative_error, 4)} / ${fmt(res.holdout_relative_error, 4)}`);
    const rep = cell(tr, ""); const plot = cell(tr, "");
    if (j.report) { link(rep, j.report, "report"); link(plot, j.plot, "predicted vs measured"); if (!newest) newest = j; }
    jb.appendChild(tr);
  }
  if (newest && newest.plot !== latestPlot) {
    latestPlot = newest.plot;
    const box = $("latest-plot-box"); box.replaceChildren();
    const cap = document.createElement("p"); cap.textContent = `latest job ${newest.job}: predicted vs measured joint torque`;
    const img = document.createElement("img"); img.id = "latest-plot"; img.alt = cap.textContent; img.src = newest.plot;
    box.appendChild(cap); box.appendChild(img);
  }
}

async function poll() {
  try {
    const r = await fetch("/api/status", {cache: "no-store"});
    render(await r.json());
  } catch (e) {
    setText("connection", "status page unreachable: " + e, "bad");
  }
  setTimeout(poll, 500);
}
poll();
"""
