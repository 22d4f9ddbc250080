"""Identification jobs inside the daemon: the offline worker (the adapter between the daemon and
robodyn.identification, above both).

`robodyn daemon` passes :func:`register` to the daemon as an extension, and the daemon gains the
commands ``identify``, ``job_status``, ``jobs`` and ``pull``. A job runs in its own process (never
in the daemon's main process or the driver's), one at a time in submission order. Each job owns a
directory ``<data_dir>/jobs/<job_id>/`` with

    request.json   what was asked (recording ids, robot, pipeline config)
    status.json    state, stage, progress, error; rewritten atomically by the worker
    result.json    the identification result (robodyn.identification format) when done

so a job's state survives a daemon restart and a client can always be told what happened.
Clients name recordings and jobs by id; no path ever comes from a client. The folders are 0700 and
the files 0600 whatever the umask (robodyn.private_files): a job's result is the robot's
dynamics, the daemon account's data as its recordings are.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import re
import threading
import time
import traceback
from pathlib import Path

from robodyn.daemon import protocol as P
from robodyn.json_values import document_text
from robodyn.private_files import make_private_dir, tighten_dir, write_private_atomic

log = logging.getLogger("robodyn.daemon")

JOB_STATES = ("queued", "running", "completed", "failed")
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
POLL_S = 0.2
SERVICE_RESCAN_S = 2.0  # with a separate worker service, job states are re-read this often, off the main loop
STATUS_QUEUED_SHOWN = 20  # `status` names this many queued jobs and counts the rest


def _valid_id(v) -> str | None:
    return None if isinstance(v, str) and ID_PATTERN.match(v) and ".." not in v else \
        "must be an id (letters, digits, '-', '_', '.'), not a path"


def _recording_ids(v) -> str | None:
    if not isinstance(v, list) or not v:
        return "must be a non-empty list of recording ids"
    if len(v) > 100:
        return "at most 100 recordings per job"
    for item in v:
        if _valid_id(item):
            return f"{item!r} is not a recording id"
    return None


def _type_ok(value, hint) -> bool:
    """``value`` (decoded msgpack) fits the annotation ``hint`` of a config dataclass field."""
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is float:
        return type(value) in (int, float)
    if hint in (int, bool, str):
        return type(value) is hint
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    if hint in (list, tuple) or origin in (list, tuple):
        return isinstance(value, (list, tuple))
    return True


def _type_text(hint) -> str:
    return str(hint).replace("tuple", "list").replace("typing.", "").replace("<class '", "").replace("'>", "").replace("NoneType", "None")


def _numbers(v) -> bool:
    return isinstance(v, (list, tuple)) and all(type(x) in (int, float) for x in v)


def _config_fields() -> tuple[set, set]:
    """The fields a job's config may have: those of the config dataclasses, one list for the check
    at submit and the worker (``cutoff_choice`` is filled in by the fit, never given)."""
    import dataclasses

    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.processing import ProcessingConfig

    return ({f.name for f in dataclasses.fields(IdentificationConfig)},
            {f.name for f in dataclasses.fields(ProcessingConfig)} - {"cutoff_choice"})


def check_config(v) -> str | None:
    """The identification config of a job, checked at submit field by field (types from the config
    dataclasses, then the values, by building the config as the worker will), so a wrong field is
    refused with its name, not found by the worker."""
    import typing

    from robodyn.identification.names import estimator_names
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.processing import ProcessingConfig

    fields, processing_fields = _config_fields()
    for cls, doc, where, names in ((IdentificationConfig, v, "config", fields),
                                   (ProcessingConfig, v.get("processing"), "config.processing", processing_fields)):
        if doc is None and where != "config":
            continue
        if not isinstance(doc, dict):
            return f"field '{where}' must be a map, got {type(doc).__name__}"
        hints = typing.get_type_hints(cls)
        for key, value in doc.items():
            if key not in names:
                return f"unknown field '{where}.{key}'; known: {sorted(names)}"
            if key == "processing":
                continue
            if not _type_ok(value, hints[key]):
                return f"field '{where}.{key}' must be {_type_text(hints[key])}, got {type(value).__name__} {value!r:.40}"
    couplings = v.get("motor_couplings")
    if couplings is not None:
        for k, c in enumerate(couplings):
            if not _numbers(c):
                return f"field 'config.motor_couplings[{k}]' must be a list of numbers (one per joint), got {c!r:.40}"
    scales = v.get("friction_scales")
    if scales is not None and not _numbers(scales):
        return f"field 'config.friction_scales' must be a list of numbers, got {scales!r:.40}"
    if v.get("method", "wls") not in estimator_names():  # a job runs the pipeline's estimators (names.py)
        return f"field 'config.method' must be one of {list(estimator_names())}, got {v.get('method')!r:.40}"
    try:
        _config_from_dict(v)
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


ARGS = {
    "identify": {
        "recordings": P.Arg((list,), True, _recording_ids, "recording ids (see `recordings`)"),
        "config": P.Arg((dict,), False, check_config, "pipeline config: method (absent: weighted least "
                                               "squares or the physically consistent fit, whichever predicts the "
                                               "held-out last quarter better, as `identify` without --method), "
                                               "friction, rotor_inertia, friction_model, processing{...}, "
                                               "motor_couplings"),
        "holdout": P.Arg((list,), False, lambda v: _recording_ids(v) if v else None, "recording ids to validate on"),
    },
    "job_status": {"job": P.Arg((str,), True, _valid_id, "job id")},
    "jobs": dict(P.PAGE_ARGS),
    "pull": {"job": P.Arg((str,), True, _valid_id, "job id")},
}


def _write_json_atomic(path: Path, doc: dict) -> None:
    write_private_atomic(path, json.dumps(doc, indent=1).encode(), temporary=path.with_suffix(path.suffix + ".tmp"),
                         fsync=False)


def private_jobs_dir(data_dir) -> Path:
    """``<data_dir>/jobs``, made 0700, or narrowed to it (one log line) when others could read it."""
    jobs_dir = Path(data_dir).expanduser() / "jobs"
    old = tighten_dir(jobs_dir)
    if old is not None:
        log.warning("%s had mode %04o (other accounts could read the identification jobs); now %04o",
                    jobs_dir, old, old & 0o700)
    return jobs_dir


def _config_from_dict(d: dict):
    """The job's config; a value out of its range raises ValueError naming its field
    (``field 'config.processing.trim_s': must be >= 0.0, got -5``)."""
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.processing import ProcessingConfig

    fields, processing_fields = _config_fields()
    d = dict(d or {})
    unknown = set(d) - fields
    if unknown:
        raise ValueError(f"unknown field(s) {['config.' + k for k in sorted(unknown)]}; known: {sorted(fields)}")
    processing = d.pop("processing", None) or {}
    bad = set(processing) - processing_fields
    if bad:
        raise ValueError(f"unknown field(s) {['config.processing.' + k for k in sorted(bad)]}; "
                         f"known: {sorted(processing_fields)}")
    if "motor_couplings" in d:
        d["motor_couplings"] = tuple(tuple(c) for c in d["motor_couplings"])
    try:
        processing = ProcessingConfig(**processing)
    except ValueError as exc:
        raise ValueError(_field_message("config.processing", exc)) from None
    try:
        return IdentificationConfig(processing=processing, **d)
    except ValueError as exc:
        raise ValueError(_field_message("config", exc)) from None


def _field_message(where: str, exc: ValueError) -> str:
    """``name: why`` from a config's own check, as ``field 'where.name': why``."""
    name, sep, why = str(exc).partition(": ")
    return f"field '{where}.{name}': {why}" if sep and name.isidentifier() else f"{where}: {exc}"


def run_job(job_dir: str, recordings_dir: str) -> None:
    """The worker process: identify as `robodyn identify` does (a config without ``method`` as the
    command without --method), validate on hold-out recordings, write result.json."""
    job_dir = Path(job_dir)
    request = json.loads((job_dir / "request.json").read_text())
    status = {"job": job_dir.name, "state": "running", "stage": "loading", "progress": 0.0,
              "started": time.time(), "pid": os.getpid()}

    def report(stage: str, fraction: float) -> None:
        status.update(stage=stage, progress=round(0.1 + 0.8 * fraction, 3))
        _write_json_atomic(job_dir / "status.json", status)

    try:
        from robodyn.recording import load_recording

        from robodyn.identification.data import IDENTIFICATION_SIGNALS, recording_dataset
        from robodyn.identification.methods import identification_result

        _write_json_atomic(job_dir / "status.json", status)
        given = request.get("config") or {}
        config = _config_from_dict(given)
        recs = [load_recording(Path(recordings_dir) / f"{rid}.mcap", signals=IDENTIFICATION_SIGNALS)
                for rid in request["recordings"]]
        model = _model_of(recs[0])
        datasets = [recording_dataset(r) for r in recs]
        holdout = request.get("holdout") or []
        held = [recording_dataset(load_recording(Path(recordings_dir) / f"{rid}.mcap", signals=IDENTIFICATION_SIGNALS))
                for rid in holdout]
        # the command line's identification, one function: the automatic cut-off judged on held-out
        # data and, when the config names no method, least squares or the physically consistent fit,
        # whichever predicts the held-out last quarter better (as `robodyn identify` without
        # --method); the checks, the coverage, the fit against the measured torque and the residual
        # model (held-out recordings calibrate its spread) come with it
        result = identification_result(model, datasets, config, config.method, holdout=held,
                                       sources=request["recordings"], holdout_sources=holdout, progress=report,
                                       choose_method="method" not in given)[0]
        if holdout:  # the daemon's result names the held-out error "holdout" (pull, the status page)
            result.metrics["holdout"] = result.metrics.pop("held_out")
            result.provenance["holdout"] = holdout
        # the file identify --out writes: strict JSON (a NaN is null)
        write_private_atomic(job_dir / "result.json", document_text(result.to_json_dict()).encode(),
                             temporary=job_dir / "result.json.tmp", fsync=False)
        status.update(state="completed", stage="done", progress=1.0, finished=time.time())
    except Exception as exc:  # the job fails, the worker reports why; the daemon is untouched
        status.update(state="failed", error=f"{type(exc).__name__}: {exc}", finished=time.time(),
                      traceback=traceback.format_exc(limit=5))
    _write_json_atomic(job_dir / "status.json", status)


def _model_of(rec):
    """The robot model a recording was made with: the daemon stores its URDF and limits."""
    import numpy as np

    from robodyn.robot.urdf import model_from_urdf

    from robodyn.robot.model import LIMIT_FIELDS

    meta = rec.meta
    if "model_urdf" not in meta:
        raise ValueError(f"recording {rec.path}: carries no robot model (not a daemon recording?)")
    robot = meta.get("robot") or {}
    joints = robot.get("joints") or []
    # summary() writes infinite limits as the strings 'inf'/'-inf', which float() reads back
    limits = {k: [float(j[k]) for j in joints] for k in LIMIT_FIELDS} if joints else None
    model = model_from_urdf(meta["model_urdf"], name=robot.get("name"), limits_override=limits,
                            gravity=robot.get("gravity", (0.0, 0.0, -9.81)))
    if "model_rotor_inertia" in meta:
        model = model.__class__(**{**model.__dict__, "rotor_inertia": np.asarray(meta["model_rotor_inertia"], float)})
    return model


def queued_jobs(jobs_dir: Path) -> list[str]:
    """Queued job ids in submission order (``queue_seq``, a counter: never the wall clock)."""
    found = []
    for status_file in jobs_dir.glob("*/status.json"):
        try:
            st = json.loads(status_file.read_text())
        except (OSError, ValueError):
            continue
        if st.get("state") == "queued":
            found.append((int(st.get("queue_seq", 0)), status_file.parent.name))
    return [job for _, job in sorted(found)]


class JobManager:
    """Queues jobs and answers the job commands. Runs them one at a time, each in a fresh worker
    process, unless ``runner == "service"``: then robodyn-worker.service (:func:`worker_main`)
    runs the queue in its own cgroup and this manager only queues and reports."""

    def __init__(self, data_dir: Path, recordings_dir: Path, runner: str = "daemon"):
        self.jobs_dir = private_jobs_dir(data_dir)
        self.recordings_dir = Path(recordings_dir)
        self.runner = runner
        self.queue: list[str] = []
        self.current: tuple[str, multiprocessing.Process] | None = None
        self.lock = threading.Lock()
        self.ctx = multiprocessing.get_context("spawn")
        self._stop = threading.Event()
        self._seq = 0
        # every job's state in memory, so `status` and `jobs` never read the whole directory; kept by
        # this manager's own transitions, or re-read by its thread when a worker service runs the jobs
        self.states: dict[str, str] = {}
        self.queue_seq: dict[str, int] = {}
        self._rows: dict[str, dict] = {}  # `jobs` rows of finished jobs (they no longer change)
        self._order: list[str] | None = None
        for status_file in self.jobs_dir.glob("*/status.json"):
            try:
                st = json.loads(status_file.read_text())
            except (OSError, ValueError):
                continue
            self._seq = max(self._seq, int(st.get("queue_seq", 0)))
            # a job left 'running' by a daemon that died cannot finish any more (a separate worker
            # service owns its jobs and outlives the daemon)
            if runner == "daemon" and st.get("state") in ("running", "queued"):
                st.update(state="failed", error="the daemon stopped before the job finished; submit it again")
                _write_json_atomic(status_file, st)
            self.states[status_file.parent.name] = st.get("state")
            self.queue_seq[status_file.parent.name] = int(st.get("queue_seq", 0))
            if st.get("state") in ("completed", "failed"):  # read now: a first listing reads no file
                self._rows[status_file.parent.name] = {k: st.get(k) for k in ("job", "state", "stage", "progress",
                                                                             "error")}
        self.thread = threading.Thread(target=self._supervise if runner == "daemon" else self._rescan,
                                       name="robodyn-jobs", daemon=True)
        self.thread.start()

    def _rescan(self) -> None:
        """With a worker service: job states as it wrote them, re-read on this thread."""
        while not self._stop.wait(SERVICE_RESCAN_S):
            found = {}
            for job_dir in self.jobs_dir.iterdir():
                state = _state_of(job_dir)
                if state is not None:
                    found[job_dir.name] = state
            with self.lock:
                self.states.update(found)

    def _supervise(self) -> None:
        while not self._stop.wait(POLL_S):
            with self.lock:
                if self.current is not None and not self.current[1].is_alive():
                    job_id, proc = self.current
                    proc.join(0)
                    st = self._status(job_id)
                    if st.get("state") not in ("completed", "failed"):
                        st.update(state="failed", error=f"worker process exited with code {proc.exitcode}")
                        _write_json_atomic(self.jobs_dir / job_id / "status.json", st)
                    self.states[job_id] = st.get("state")
                    self.current = None
                if self.current is None and self.queue:
                    job_id = self.queue.pop(0)
                    proc = self.ctx.Process(target=run_job, args=(str(self.jobs_dir / job_id), str(self.recordings_dir)),
                                            name=f"robodyn-job-{job_id}", daemon=True)
                    proc.start()
                    self.current = (job_id, proc)
                    self.states[job_id] = "running"

    def close(self) -> None:
        self._stop.set()
        with self.lock:
            if self.current is not None and self.current[1].is_alive():
                self.current[1].terminate()

    def summary(self) -> dict:
        """Job states for `robodyn status`: counts per state, the running job and the first
        STATUS_QUEUED_SHOWN queued ones (its size does not grow with the job history)."""
        counts = dict.fromkeys(JOB_STATES, 0)
        with self.lock:
            for state in self.states.values():
                if state in counts:
                    counts[state] += 1
            if self.runner == "service":
                running = next((j for j, st in self.states.items() if st == "running"), None)
                queued = sorted((j for j, st in self.states.items() if st == "queued"),
                                key=lambda j: self.queue_seq.get(j, 0))
            else:
                running = None if self.current is None else self.current[0]
                queued = list(self.queue)
        return {"counts": counts, "running": running, "queued": queued[:STATUS_QUEUED_SHOWN],
                "queued_total": len(queued), "runner": self.runner}

    def _status(self, job_id: str) -> dict:
        path = self.jobs_dir / job_id / "status.json"
        if not path.exists():
            raise P.ProtocolError(P.E_NOT_FOUND, f"no job {job_id!r}", field="args.job")
        return json.loads(path.read_text())

    # ----------------------------------------------------------------- commands

    def cmd_identify(self, args) -> dict:
        # the config was built and checked with the arguments (check_config): a bad one never queues
        missing = [r for r in args["recordings"] + list(args.get("holdout") or [])
                   if not (self.recordings_dir / f"{r}.mcap").exists()]
        if missing:
            raise P.ProtocolError(P.E_NOT_FOUND, f"no recording(s) {missing}; see `robodyn recordings`",
                                  field="args.holdout" if set(missing) <= set(args.get("holdout") or [])
                                  else "args.recordings")
        holdout = args.get("holdout") or []
        job_id = time.strftime("job-%Y%m%d-%H%M%S-") + os.urandom(3).hex()
        job_dir = self.jobs_dir / job_id
        make_private_dir(job_dir, exist_ok=False)
        _write_json_atomic(job_dir / "request.json", {"recordings": args["recordings"], "holdout": holdout,
                                                      "config": args.get("config") or {}})
        with self.lock:
            self._seq += 1
            _write_json_atomic(job_dir / "status.json", {"job": job_id, "state": "queued", "stage": "queued",
                                                         "progress": 0.0, "submitted": time.time(),
                                                         "queue_seq": self._seq})
            self.states[job_id] = "queued"
            self.queue_seq[job_id] = self._seq
            self._order = None
            if self.runner == "service":
                return {"job": job_id, "state": "queued",
                        "ahead": sum(st in ("queued", "running") for st in self.states.values()) - 1}
            self.queue.append(job_id)
            position = len(self.queue) + (self.current is not None) - 1
        return {"job": job_id, "state": "queued", "ahead": position}

    def cmd_job_status(self, args) -> dict:
        st = self._status(args["job"])
        st.pop("traceback", None)
        return st

    def cmd_jobs(self, args) -> dict:
        """A page of the jobs, oldest first (ids begin with their submission time); only the
        page's unfinished jobs are read from disk."""
        with self.lock:
            if self._order is None or len(self._order) != len(self.states):
                self._order = sorted(self.states)
            order = self._order
        offset, limit = P.page_bounds(args, len(order))
        out = []
        for job in order[offset:offset + limit]:
            row = self._rows.get(job)
            if row is None:
                try:
                    st = json.loads((self.jobs_dir / job / "status.json").read_text())
                except (OSError, ValueError):  # being replaced right now, or removed by hand
                    st = {"job": job, "state": self.states.get(job)}
                row = {k: st.get(k) for k in ("job", "state", "stage", "progress", "error")}
                if row["state"] in ("completed", "failed"):
                    self._rows[job] = row
            out.append(row)
        return P.page_reply("jobs", out, offset, limit, len(order))

    def cmd_pull(self, args) -> dict:
        st = self._status(args["job"])
        if st.get("state") != "completed":
            raise P.ProtocolError(P.E_BUSY if st.get("state") in ("queued", "running") else P.E_NOT_FOUND,
                                  f"job {args['job']} is {st.get('state')}" +
                                  (f": {st.get('error')}" if st.get("error") else ""), field="args.job")
        from robodyn.daemon.heavy import packed_json_work

        # decoded and encoded in the daemon's heavy-read worker, not on its main loop (daemon/heavy.py)
        return self.daemon.defer_to_worker(packed_json_work, str(self.jobs_dir / args["job"] / "result.json"),
                                           {"job": args["job"]}, "result", finish=lambda packed: packed,
                                           what=f"the result of job {args['job']}")


def _state_of(job_dir: Path) -> str | None:
    try:
        return json.loads((job_dir / "status.json").read_text()).get("state")
    except (OSError, ValueError):
        return None


def worker_main(data_dir: str, recordings_dir: str, poll_s: float = 1.0, once: bool = False) -> int:
    """robodyn-worker.service: run queued jobs one at a time, each in a child process (a crash
    in identification fails that job, not the worker). systemd readiness and watchdog through the
    notify protocol; SIGTERM finishes waiting and leaves the running job to be marked failed."""
    import signal

    from robodyn.daemon.sdnotify import Notifier

    jobs_dir = private_jobs_dir(data_dir)
    notifier = Notifier()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    ctx = multiprocessing.get_context("spawn")
    for job in jobs_dir.glob("*"):  # a job this worker was running when it died cannot finish
        if _state_of(job) == "running":
            st = json.loads((job / "status.json").read_text())
            st.update(state="failed", error="the worker stopped before the job finished; submit it again")
            _write_json_atomic(job / "status.json", st)
    notifier.ready("waiting for identification jobs")
    while not stop.is_set():
        notifier.heartbeat()
        queue = queued_jobs(jobs_dir)
        if not queue:
            if once:
                return 0
            stop.wait(poll_s)
            continue
        job = queue[0]
        notifier.status(f"running {job} ({len(queue) - 1} queued)")
        proc = ctx.Process(target=run_job, args=(str(jobs_dir / job), recordings_dir), name=f"robodyn-job-{job}")
        proc.start()
        while proc.is_alive() and not stop.is_set():
            notifier.heartbeat()
            proc.join(min(poll_s, 1.0))
        if proc.is_alive():
            proc.terminate()
            proc.join(10)
        if _state_of(jobs_dir / job) not in ("completed", "failed"):
            st = json.loads((jobs_dir / job / "status.json").read_text())
            st.update(state="failed", error=f"worker process exited with code {proc.exitcode}")
            _write_json_atomic(jobs_dir / job / "status.json", st)
        notifier.status("waiting for identification jobs")
    notifier.stopping()
    return 0


def register(daemon) -> None:
    manager = JobManager(daemon.cfg.data_dir, daemon.recordings_dir, getattr(daemon.cfg, "jobs_runner", "daemon"))
    daemon.job_manager = manager
    manager.daemon = daemon  # pull defers its read to the daemon's heavy-read worker
    for name, handler in (("identify", manager.cmd_identify), ("job_status", manager.cmd_job_status),
                          ("jobs", manager.cmd_jobs), ("pull", manager.cmd_pull)):
        daemon.add_command(name, ARGS[name], handler)
