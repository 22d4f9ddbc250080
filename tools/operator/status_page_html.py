"""The status page itself: its HTML and the script that fills it from /api/status (textContent
only: nothing the daemon says is parsed as markup), and the page that shows one job's report or
plot. Both scripts send the page's token themselves (TOKEN_JS): these files hold no data and no
token, and are served without one."""

PAGE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robodyn status</title>
<meta name="referrer" content="no-referrer">
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
<p class="muted">data <span id="data-age">-</span></p>
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
<p class="muted" id="recordings-pager"></p>
<h2>Identification jobs</h2>
<table id="jobs"><thead><tr><th>job</th><th>state</th><th>stage</th><th>progress</th><th>method</th>
<th>relative error: fit / held-out</th><th>report</th><th>plot</th></tr></thead><tbody></tbody></table>
<p class="muted" id="jobs-pager"></p>
<div id="latest-plot-box"></div>
<p class="muted">Read-only: this page shows the daemon's state and cannot arm it, move the robot or queue work.
Arming and motion stay on the daemon's authenticated control socket (<code>robodyn arm</code>,
<code>robodyn run</code>).</p>
<script src="/app.js"></script>
</body></html>
"""

TOKEN_JS = r"""
"use strict";
const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "robodyn-view-token";
// The page's credential arrives in the address's fragment (#token=...), which a browser sends to
// no server and puts in no Referer. The tab keeps it in sessionStorage, which only this origin
// (scheme, host and port) can read, and the address bar loses it. Never a cookie: a browser sends
// a host's cookies to every port of that host, so another account's server on 127.0.0.1 would get it.
function takeToken() {
  const h = new URLSearchParams(location.hash.slice(1));
  let t = h.get("token");
  try {  // a browser with storage turned off: the token lasts as long as this document
    if (t) sessionStorage.setItem(TOKEN_KEY, t); else t = sessionStorage.getItem(TOKEN_KEY);
  } catch (e) { /* kept in this document only */ }
  if (h.has("token")) {
    h.delete("token");
    const rest = h.toString();
    history.replaceState(history.state, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }
  return t || "";
}
const TOKEN = takeToken();
// this page's own paths only (built here, never taken from the data), the token in a header; no
// cookie, no Referer, no redirect followed
function authed(path) {
  return fetch(path, {headers: {Authorization: "Bearer " + TOKEN}, cache: "no-store", credentials: "omit",
                      referrerPolicy: "no-referrer", redirect: "error"});
}
async function failure(r) {
  if (r.status === 401) {
    return "no valid token in this tab: open the address `robodyn status-page` printed (it ends in #token=...)";
  }
  return `${r.status} ${await r.text()}`;
}
const jobPath = (job, leaf) => `/jobs/${encodeURIComponent(job)}/${leaf}`;
"""

APP_JS = TOKEN_JS + r"""
const fmt = (v, d = 3) => (v === null || v === undefined || Number.isNaN(v)) ? "-" : Number(v).toFixed(d);
function setText(id, text, cls) { const e = $(id); e.textContent = text; e.className = cls || ""; }
function cell(tr, text) { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); return td; }
function link(td, href, text) {
  const a = document.createElement("a"); a.href = href; a.rel = "noreferrer"; a.textContent = text; td.appendChild(a);
}
// a job's report or plot opens on /job.html, whose script fetches it with the token: a link alone
// carries no header. The token goes in the fragment, for a link opened in a new tab (which may
// start with an empty sessionStorage).
function jobHref(job, show) { return "/job.html#" + new URLSearchParams({job: job, show: show, token: TOKEN}); }
let latestJob = null;
let plotLoading = false;
// which page of each list is shown: in the address's fragment (#recordings=2&jobs=1), never sent to the server
function pages() {
  const h = new URLSearchParams(location.hash.slice(1));
  return {recordings: Math.max(1, parseInt(h.get("recordings") || "1", 10) || 1), jobs: Math.max(1, parseInt(h.get("jobs") || "1", 10) || 1)};
}
function pageHref(list, page) { const p = pages(); p[list] = page; return `#recordings=${p.recordings}&jobs=${p.jobs}`; }
function pager(id, list, info, noun) {
  const e = $(id); e.replaceChildren();
  if (!info) return;
  e.appendChild(document.createTextNode(`page ${info.page} of ${info.pages} (${info.kept < info.total ? `the newest ${info.kept} of ${info.total}` : info.total} ${noun}, ${info.size} a page) `));
  if (info.page > 1) { const a = document.createElement("a"); a.href = pageHref(list, info.page - 1); a.textContent = "newer"; a.className = "newer"; e.appendChild(a); e.appendChild(document.createTextNode(" ")); }
  if (info.page < info.pages) { const a = document.createElement("a"); a.href = pageHref(list, info.page + 1); a.textContent = "older"; a.className = "older"; e.appendChild(a); }
}

function render(s) {
  if (s.stale) {
    setText("connection", s.age_s === null ? "STALE: the daemon has not answered yet" :
            `STALE: no answer from the daemon for ${fmt(s.age_s, 1)} s` + (s.error ? ` (${s.error})` : ""), "bad");
  } else {
    setText("connection", s.connected ? "connected" : ("daemon unreachable: " + (s.error || "")), s.connected ? "muted" : "bad");
  }
  setText("data-age", s.age_s === null ? "none yet" : `${fmt(s.age_s, 1)} s old` + (s.stale ? " (stale)" : ""), s.stale ? "bad" : "");
  pager("recordings-pager", "recordings", s.recordings_page, "recordings");
  pager("jobs-pager", "jobs", s.jobs_page, "jobs");
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
    if (j.report) { link(rep, jobHref(j.job, "report"), "report"); link(plot, jobHref(j.job, "plot"), "predicted vs measured"); if (!newest) newest = j; }
    jb.appendChild(tr);
  }
  if (newest) showLatestPlot(newest.job);
}

function showLatestPlot(job) {
  if (job === latestJob || plotLoading) return;
  latestJob = job;
  plotLoading = true;
  const box = $("latest-plot-box");
  const old = $("latest-plot");
  if (old && old.src.startsWith("blob:")) URL.revokeObjectURL(old.src);
  box.replaceChildren();
  const cap = document.createElement("p"); cap.textContent = `latest job ${job}: predicted vs measured joint torque`;
  const img = document.createElement("img"); img.id = "latest-plot"; img.alt = cap.textContent;
  img.dataset.plot = jobPath(job, "torque.png");
  box.appendChild(cap); box.appendChild(img);
  // a plot that failed to load (the daemon answered late, a busy host) is asked for again at the
  // next refresh
  authed(img.dataset.plot).then(async (r) => {
    if (!r.ok) throw new Error(String(r.status));
    const blob = await r.blob();
    if (latestJob === job) img.src = URL.createObjectURL(blob);
  }).catch(() => { if (latestJob === job) latestJob = null; }).finally(() => { plotLoading = false; });
}

let timer = null;
async function poll() {
  clearTimeout(timer);
  try {
    const p = pages();
    const r = await authed(`/api/status?recordings_page=${p.recordings}&jobs_page=${p.jobs}`);
    if (!r.ok) throw new Error(await failure(r));
    render(await r.json());
  } catch (e) {
    setText("connection", "status page unreachable: " + e, "bad");
    setText("data-age", "unknown (stale)", "bad");
  }
  timer = setTimeout(poll, 500);
}
window.addEventListener("hashchange", poll);
poll();
"""

JOB_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robodyn job</title>
<meta name="referrer" content="no-referrer">
<style>body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1200px;color:#222;padding:0 1em}
#job-plot{max-width:100%}</style></head>
<body><p id="job-state">loading...</p>
<script src="/job.js"></script>
</body></html>
"""

JOB_JS = TOKEN_JS + r"""
// /job.html#job=ID&show=report|plot: the report is the page's own HTML (made by the status page's
// process, every daemon string escaped); it is parsed inert (no script of it runs) and shown here
const wanted = new URLSearchParams(location.hash.slice(1));
const job = wanted.get("job") || "";
const show = wanted.get("show") === "plot" ? "plot" : "report";

async function load() {
  const state = $("job-state");
  if (!job) { state.textContent = "no job in the address (#job=...)"; return; }
  const r = await authed(jobPath(job, show === "plot" ? "torque.png" : "report.html"));
  if (!r.ok) { state.textContent = await failure(r); return; }
  if (show === "plot") {
    const img = document.createElement("img"); img.id = "job-plot";
    img.alt = state.textContent = `job ${job}: predicted vs measured joint torque`;
    img.src = URL.createObjectURL(await r.blob());
    document.title = `robodyn job ${job}: plot`;
    document.body.appendChild(img);
    return;
  }
  const doc = new DOMParser().parseFromString(await r.text(), "text/html");
  for (const e of doc.querySelectorAll("script, iframe, object, embed, base, link, meta")) e.remove();
  document.title = doc.title || `robodyn job ${job}`;
  for (const st of doc.head.querySelectorAll("style")) document.head.appendChild(document.adoptNode(st));
  document.body.replaceChildren(...Array.from(doc.body.childNodes, (n) => document.adoptNode(n)));
}
load().catch((e) => { $("job-state").textContent = "report unreachable: " + e; });
"""
