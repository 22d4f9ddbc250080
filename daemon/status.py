"""What the daemon reports about itself: ``ping``, ``describe`` and ``status`` (processes, robot
state, safety, security, request counters and the operator's metrics), and the latest robot
position for the checks that need it (:class:`RobotState`, an object handed to those that check).

Both are objects of :class:`robodyn.daemon.server.Daemon`, handed their collaborators: the report
reads every part of the daemon, and is handed each of them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from robodyn import __version__

from . import protocol as P

TELEMETRY_STALE_S = 1.0
JOBS_SUMMARY_S = 0.5


def loop_jitter(loop: dict, rate_hz: float | None) -> dict | None:
    """Deviation of the loop period from nominal (ms) at the reported percentiles. In simulated
    time faster than real time the periods are shorter than nominal: negative values."""
    if not loop.get("count") or not rate_hz:
        return None
    nominal = 1000.0 / float(rate_hz)
    return {"nominal_ms": nominal, "count": loop["count"],
            **{key: loop[key] - nominal for key in ("p50_ms", "p99_ms", "p999_ms", "max_ms")
               if loop.get(key) is not None}}


class StatusReport:
    """The daemon's self-description and health report.

    Handed what it reports on: the config and the robot model; the robot's newest state
    (:class:`RobotState`); the three workers (supervision.Component); the runs (runs.Runs), the
    admission (admission.RunAdmission: armed, the submission being checked), the heavy reads and
    the recording index; the request being handled (dispatch.RequestContext, for the client's role
    through ``role_of``); the CurveZMQ handlers (``zap``, ``handshakes``, None without CurveZMQ);
    ``loop_report()``, the control endpoint's and the main loop's counters (server.Daemon._loop_report:
    the Dispatcher's, MainLoop's and the daemon's own figures); and
    ``jobs()``, the identification jobs' manager if an extension registered one."""

    def __init__(self, cfg, model, robot: RobotState, driver, recorder, publisher, runs, admission, heavy_reads,
                 recording_index, request, *, started, role_of, zap, handshakes, loop_report, jobs):
        self.cfg, self.model, self.robot = cfg, model, robot
        self.driver, self.recorder, self.publisher = driver, recorder, publisher
        self.runs, self.admission, self.heavy_reads, self.recording_index = runs, admission, heavy_reads, recording_index
        self.request, self.role_of, self.zap, self.handshakes = request, role_of, zap, handshakes
        self.loop_report, self.jobs = loop_report, jobs
        self.started = started  # when the daemon started (monotonic): its uptime
        self._jobs_summary_cache: tuple | None = None

    def cmd_ping(self, args) -> dict:
        return {"version": __version__, "protocol": P.PROTOCOL_VERSION}

    def cmd_describe(self, args) -> dict:
        return {"robot": self.model.summary(), "driver": self.robot.description, "columns": self.robot.columns,
                "layout": self.robot.layout, "state_endpoint": self.cfg.state, "protocol": P.PROTOCOL_VERSION}

    def cmd_status(self, args) -> dict:
        tel = self.driver.last
        now = time.monotonic()
        last_run = next((r for r in reversed(self.runs.history) if r.finished), None)
        pending = self.admission.pending
        loop = self.loop_report()
        return {
            "daemon": {"version": __version__, "protocol": P.PROTOCOL_VERSION, "pid": os.getpid(),
                       "uptime_s": now - self.started, "control": self.cfg.control, "state": self.cfg.state,
                       "data_dir": str(Path(self.cfg.data_dir).expanduser())},
            "robot": {"name": self.model.name, "driver": self.cfg.driver, "dof": self.model.dof,
                      "rate_hz": self.robot.rate_hz()},
            "driver": {"pid": self.driver.pid, "alive": self.driver.alive, "ready": self.driver.ready,
                       "restarts": self.driver.restarts, "telemetry_age_s": self.robot.telemetry_age(), "lifecycle": tel.get("lifecycle"),
                       "scheduler": tel.get("scheduler"), "loop": tel.get("loop"),
                       "diagnostics": tel.get("driver"), "error": tel.get("fatal"),
                       "stop_socket": tel.get("stop_socket")},
            "state": {"seq": tel.get("seq"), "robot_time": tel.get("robot_time"), "q": tel.get("q"),
                      "qd": tel.get("qd"), "tau": tel.get("tau")},
            "recorder": {"pid": self.recorder.pid, "alive": self.recorder.alive, "ready": self.recorder.ready,
                         "restarts": self.recorder.restarts, **{k: v for k, v in self.recorder.last.items()
                                                                if k in ("stream", "recording", "written_runs")}},
            "publisher": {"pid": self.publisher.pid, "alive": self.publisher.alive, "ready": self.publisher.ready,
                          "restarts": self.publisher.restarts, "error": self.publisher.last.get("fatal"),
                          **{k: v for k, v in self.publisher.last.items()
                             if k in ("subscribers", "max_subscribers", "refused_over_cap", "forwarded", "hwm")}},
            "run": None if self.runs.current is None else self.runs.current.to_dict(),
            "last_run": None if last_run is None else last_run.to_dict(),
            "safety": {"armed": self.admission.armed, "arming_required": self.cfg.arming_required,
                       "armed_by": self.admission.armed_info.get("by"),
                       "armed_for_s": now - self.admission.armed_info["since"] if self.admission.armed else None,
                       "disarm_reason": None if self.admission.armed else self.admission.disarm_reason,
                       "token_required": bool(self.cfg.arm_token_sha256), "operators": list(self.cfg.operators),
                       "submitters": list(self.cfg.submitters), "your_role": self.role_of(self.request.peer)},
            "security": {"curve": self.cfg.curve, "clients": sorted(self.cfg.clients),
                         "authenticated": self.zap.accepted if self.zap else 0,
                         "refused": self.zap.refused if self.zap else 0,
                         "failed_handshakes": self.handshakes.failed if self.handshakes else 0},
            "control": {"requests": loop["requests"], "errors": loop["errors"], "dropped": loop["dropped"],
                        "validating_s": None if pending is None else now - pending.started,
                        "stop_latency": loop["stop_latency"], "loop_rounds": loop["loop_rounds"],
                        "driver_stops": dict(self.runs.driver_stops),
                        "stale_refusals": self.robot.stale_refusals, "main_scheduler": loop["main_scheduler"],
                        "gc_pauses": loop["gc_pauses"], "gc_frozen_objects": loop["gc_frozen_objects"],
                        "request_cost_ms": loop["request_cost_ms"], "heavy_reads": self.heavy_reads.report(),
                        "large_requests": loop["large_requests"], "read_cache": loop["read_cache"],
                        "recordings_indexed": len(self.recording_index)},
            "metrics": self._metrics(),
        }

    def _metrics(self) -> dict:
        """The figures an operator watches: loop jitter, lost samples, queue depths, recorder
        throughput and job states (`robodyn status --json`)."""
        tel, rec = self.driver.last, self.recorder.last
        stream = rec.get("stream") or {}
        rate = self.robot.rate_hz()
        run_lost = None
        if self.runs.current is not None and self.runs.current.summary:
            run_lost = self.runs.current.summary.get("lost_samples")
        jobs = self.jobs()
        return {
            "loop_jitter_ms": loop_jitter(tel.get("loop") or {}, rate),
            "loop_jitter_run_ms": loop_jitter(tel.get("loop_run") or {}, rate),
            "lost_samples": {"stream": stream.get("lost", 0), "stream_gaps": stream.get("gaps", 0),
                             "current_run": run_lost,
                             "runs_in_history": sum(int((r.summary or {}).get("lost_samples") or 0)
                                                    for r in self.runs.history)},
            "queues": {"recorder_backlog_samples": max(0, int(tel.get("seq") or 0) - int(stream.get("last_seq") or 0))
                       if tel.get("seq") and stream.get("last_seq") else None,
                       "recorder_buffered_samples": rec.get("buffered_samples"),
                       "driver_to_main_dropped": tel.get("dropped_to_main"),
                       "validations_pending": int(self.admission.pending is not None),
                       "jobs_queued": None if jobs is None else len(jobs.queue)},
            "recorder_throughput": rec.get("throughput"),
            "jobs": None if jobs is None else self._jobs_summary(jobs),
        }

    def _jobs_summary(self, jobs) -> dict:
        """The job manager's summary walks every job: reused while no job was added, for at most
        JOBS_SUMMARY_S (a job's state shows that much later), so a status costs the same with
        a long job history."""
        key, now = len(jobs.states), time.monotonic()
        cached = self._jobs_summary_cache
        if cached is None or cached[0] != key or now - cached[1] >= JOBS_SUMMARY_S:
            cached = self._jobs_summary_cache = (key, now, jobs.summary())
        return cached[2]


class RobotState:
    """What the driver process last said about the robot: its description and the columns of its
    samples (its ``ready`` message, set by supervision.py) and its newest telemetry (on the
    driver's supervision.Component), judged fresh or stale for the checks that need the robot's
    position (``arm``, ``submit_run``)."""

    def __init__(self, driver):
        self.driver = driver
        self.description: dict | None = None
        self.columns: list[str] = []
        self.layout = 0
        self.stale_refusals = 0  # arm / submit refused for telemetry older than TELEMETRY_STALE_S

    def on_ready(self, msg: dict) -> None:
        """A driver process started: its description of the robot and of its samples."""
        self.description, self.columns, self.layout = msg["description"], msg["columns"], msg["layout"]

    def rate_hz(self) -> float | None:
        return (self.description or {}).get("rate_hz")

    def telemetry_age(self) -> float | None:
        """How old the newest robot state the loop has read is: since the driver sent it (its
        CLOCK_MONOTONIC stamp), not since this loop got round to reading it. The loop reads the
        driver's pipe before every request but a stop (dispatch.py), so a loop that served
        observers for a while judges the state the driver sent meanwhile, and a driver that has
        really fallen silent is seen as such however recently its last message was read."""
        sent = self.driver.last.get("sent_ns")
        if sent is not None:
            return max(0.0, time.monotonic_ns() - int(sent)) / 1e9
        return time.monotonic() - self.driver.last_time if self.driver.last_time else None

    def current_q(self) -> np.ndarray:
        tel = self.driver.last
        if not self.driver.ready or not self.driver.alive:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the driver process is not running; see `robodyn status`")
        age = self.telemetry_age()
        if age is None or age > TELEMETRY_STALE_S or "q" not in tel:
            self.stale_refusals += 1
            raise P.ProtocolError(P.E_UNAVAILABLE, "no fresh robot state from the driver (its newest telemetry is "
                                                   f"{'missing' if age is None else f'{age:.2f} s old'}, the limit "
                                                   f"is {TELEMETRY_STALE_S} s)", {"telemetry_age_s": age})
        return np.asarray(tel["q"], float)
