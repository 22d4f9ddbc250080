"""What the daemon reports about itself: ``ping``, ``describe`` and ``status`` (processes, robot
state, safety, security, request counters and the operator's metrics), and the latest robot
position for the checks that need it.

A mixin of :class:`robodyn.daemon.server.Daemon`.
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
    """The daemon's self-description and health report."""

    def cmd_ping(self, args) -> dict:
        return {"version": __version__, "protocol": P.PROTOCOL_VERSION}

    def cmd_describe(self, args) -> dict:
        return {"robot": self.model.summary(), "driver": self.description, "columns": self.columns,
                "layout": self.layout, "state_endpoint": self.cfg.state, "protocol": P.PROTOCOL_VERSION}

    def cmd_status(self, args) -> dict:
        tel = self.driver.last
        now = time.monotonic()
        last_run = next((r for r in reversed(self.runs) if r.finished), None)
        return {
            "daemon": {"version": __version__, "protocol": P.PROTOCOL_VERSION, "pid": os.getpid(),
                       "uptime_s": now - self.started, "control": self.cfg.control, "state": self.cfg.state,
                       "data_dir": str(Path(self.cfg.data_dir).expanduser())},
            "robot": {"name": self.model.name, "driver": self.cfg.driver, "dof": self.model.dof,
                      "rate_hz": (self.description or {}).get("rate_hz")},
            "driver": {"pid": self.driver.pid, "alive": self.driver.alive, "ready": self.driver.ready,
                       "restarts": self.driver.restarts, "telemetry_age_s": self.telemetry_age(), "lifecycle": tel.get("lifecycle"),
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
            "run": None if self.current is None else self.current.to_dict(),
            "last_run": None if last_run is None else last_run.to_dict(),
            "safety": {"armed": self.armed, "arming_required": self.cfg.arming_required,
                       "armed_by": self.armed_info.get("by"),
                       "armed_for_s": now - self.armed_info["since"] if self.armed else None,
                       "disarm_reason": None if self.armed else self.disarm_reason,
                       "token_required": bool(self.cfg.arm_token_sha256), "operators": list(self.cfg.operators),
                       "submitters": list(self.cfg.submitters), "your_role": self.role_of(self._peer)},
            "security": {"curve": self.cfg.curve, "clients": sorted(self.cfg.clients),
                         "authenticated": self.zap.accepted if self.zap else 0,
                         "refused": self.zap.refused if self.zap else 0,
                         "failed_handshakes": self.handshakes.failed if self.handshakes else 0},
            "control": {"requests": self.requests["total"], "errors": dict(self.requests["errors"]),
                        "dropped": self.requests["dropped"],
                        "validating_s": None if self.pending is None else now - self.pending.started,
                        "stop_latency": dict(self.stop_latency), "loop_rounds": self.loop_rounds,
                        "driver_stops": dict(self.driver_stops),
                        "stale_refusals": self.stale_refusals, "main_scheduler": self.main_scheduler,
                        "gc_pauses": self.gc_pauses.report(), "gc_frozen_objects": self.gc_frozen,
                        "request_cost_ms": {k: dict(v) for k, v in self.request_cost.items()},
                        "heavy_reads": {"in_flight": len(self.heavy), **self.heavy_counts},
                        "large_requests": {"in_flight": len(self.large_requests.in_flight),
                                           **self.large_requests.counts},
                        "read_cache": dict(self.read_cache_counts),
                        "recordings_indexed": len(self.recording_index)},
            "metrics": self._metrics(),
        }

    def _metrics(self) -> dict:
        """The figures an operator watches: loop jitter, lost samples, queue depths, recorder
        throughput and job states (`robodyn status --json`)."""
        tel, rec = self.driver.last, self.recorder.last
        stream = rec.get("stream") or {}
        rate = (self.description or {}).get("rate_hz")
        run_lost = None
        if self.current is not None and self.current.summary:
            run_lost = self.current.summary.get("lost_samples")
        jobs = getattr(self, "job_manager", None)
        return {
            "loop_jitter_ms": loop_jitter(tel.get("loop") or {}, rate),
            "loop_jitter_run_ms": loop_jitter(tel.get("loop_run") or {}, rate),
            "lost_samples": {"stream": stream.get("lost", 0), "stream_gaps": stream.get("gaps", 0),
                             "current_run": run_lost,
                             "runs_in_history": sum(int((r.summary or {}).get("lost_samples") or 0)
                                                    for r in self.runs)},
            "queues": {"recorder_backlog_samples": max(0, int(tel.get("seq") or 0) - int(stream.get("last_seq") or 0))
                       if tel.get("seq") and stream.get("last_seq") else None,
                       "recorder_buffered_samples": rec.get("buffered_samples"),
                       "driver_to_main_dropped": tel.get("dropped_to_main"),
                       "validations_pending": int(self.pending is not None),
                       "jobs_queued": None if jobs is None else len(jobs.queue)},
            "recorder_throughput": rec.get("throughput"),
            "jobs": None if jobs is None else self._jobs_summary(jobs),
        }

    def _jobs_summary(self, jobs) -> dict:
        """The job manager's summary walks every job: reused while no job was added, for at most
        JOBS_SUMMARY_S (a job's state shows that much later), so a status costs the same with
        a long job history."""
        key, now = len(jobs.states), time.monotonic()
        cached = getattr(self, "_jobs_summary_cache", None)
        if cached is None or cached[0] != key or now - cached[1] >= JOBS_SUMMARY_S:
            cached = self._jobs_summary_cache = (key, now, jobs.summary())
        return cached[2]

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

    def _current_q(self) -> np.ndarray:
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
