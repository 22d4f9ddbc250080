"""Runs: their record (:class:`Run`), their course from the driver's and recorder's events to a
finished summary, aborting the one in progress, and the history kept in memory (``run_status``,
``runs``); the recordings on disk are listed from their index (heavy.py, recording/index.py).

A mixin of :class:`robodyn.daemon.server.Daemon`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from . import protocol as P

log = logging.getLogger("robodyn.daemon")

FINISHED_STATES = ("completed", "aborted", "failed")
MAX_RUN_HISTORY = 500  # runs kept in memory for `runs` / `run_status`; every run is in its recording
MAX_UNCLAIMED_WITHDRAWALS = 64  # driver stops whose withdrawn submission no call has asked about yet


@dataclass
class Run:
    id: str
    number: int
    robot: str
    mode: str
    label: str
    trajectory: object  # its document, encoded (protocol.Packed): sent as it is, never decoded here
    move: dict
    duration: float
    move_duration: float
    trajectory_samples: int
    move_samples: int
    path: str
    submitted: float = field(default_factory=time.monotonic)
    requested: float = 0.0  # when its submit_run was handled (monotonic): which stops came after it
    state: str = "opening"  # opening -> starting -> move_to_start/execute/settle/stopping -> finalizing -> done
    abort_reason: str = ""
    abort_requested: bool = False
    done_event: dict | None = None
    summary: dict | None = None
    recorder_lost: bool = False
    recorder_failed: str = ""  # the recorder could not write (e.g. disk full): why
    progress: dict = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    def to_dict(self) -> dict:
        return {"run_id": self.id, "robot": self.robot, "mode": self.mode, "label": self.label, "state": self.state,
                "duration_s": self.duration, "move_duration_s": self.move_duration,
                "trajectory_samples": self.trajectory_samples, "move_samples": self.move_samples,
                "elapsed_s": time.monotonic() - self.submitted, "recording": self.path,
                "progress": self.progress, "abort_reason": self.abort_reason, "summary": self.summary}


class RunHistory:
    """The run in progress and the runs before it."""

    def _on_run_event(self, msg: dict) -> None:
        run = self.current
        if run is None or msg.get("run") != run.number:
            return
        event = msg["event"]
        if event == "started":
            run.state = "move_to_start"
            run.progress["first_seq"] = msg["first_seq"]
        elif event == "phase":
            run.state = msg["phase"]
        elif event == "aborting":
            run.state = "stopping"
        elif event == "supervisor_silent":
            # this process fell silent (frozen, stopped, stuck in a request) while the robot moved,
            # and the driver ramped it to rest on its own: a fault like a worker's death. Read
            # late (when this process runs again), maybe with the run's end right behind it
            reason = str(msg.get("reason") or "supervisor silent: motion stopped by the driver")
            run.abort_requested = True
            run.abort_reason = run.abort_reason or reason
            log.error("run %s: %s", run.id, reason, extra={"fields": {"run_id": run.id, "event": "supervisor_silent",
                                                                      "silent_s": msg.get("silent_s"),
                                                                      "starved_s": msg.get("starved_s")}})
            self._disarm(reason)
        elif event == "refused" and msg.get("stale_stop"):
            # the driver served a stop this process had not yet heard of when it sent the run; that
            # stop's event came first on the pipe (_on_driver_stop): it either aborted this run or
            # came after the run was submitted, and then the run starts on the up-to-date word
            missed = int(msg.get("stops_served", 0)) > self.driver_stops_seen  # its event lost (a full pipe)
            if run.abort_requested or missed:
                self.driver_stops_seen = max(self.driver_stops_seen, int(msg.get("stops_served", 0)))
                run.abort_requested = True
                run.abort_reason = run.abort_reason or msg.get("reason", "stopped on the stop socket")
                run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
                self._close_recording(run, "aborted")
            else:
                self._send_start(run)
        elif event == "refused":
            run.abort_reason = msg.get("reason", "driver refused the run")
            self._disarm(f"the driver refused run {run.id}: {run.abort_reason}")
            run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
            self._close_recording(run, "failed")
        elif event == "done":
            run.done_event = msg
            if msg.get("aborted") and not run.abort_reason:
                run.abort_reason = msg.get("reason", "")
            self._close_recording(run, "aborted" if msg.get("aborted") else "completed")

    def _send_start(self, run: Run) -> None:
        """The run to the driver, with the count of its stops this process has heard of: the
        driver refuses a run sent before a stop it served (rtloop.py, stop_socket.py)."""
        self.driver_pipe.send(P.pack_spliced({"type": "start_run", "run": run.number, "run_id": run.id, "move": run.move,
                                       "trajectory": run.trajectory, "mode": run.mode,
                                       "stops_seen": self.driver_stops_seen}))

    def _on_driver_stop(self, msg: dict) -> None:
        """A stop the driver served from its stop socket (it has already begun the ramp to rest):
        the bookkeeping of the same stop through the control endpoint (cmd_abort, cmd_disarm),
        for what it targets: the run the driver was moving, or the one being prepared, and a
        submission being checked, when they were submitted before the stop was served (a
        submission handled after it is not its target). Nothing is sent back to the driver: this
        process can neither undo the stop nor start motion on a word older than it."""
        self.driver_stops_seen = max(self.driver_stops_seen, int(msg.get("count", 0)))
        rec = self.driver_stops
        rec["count"] += 1
        rec["same_cycle"] += msg.get("seen_seq") == msg.get("acted_seq")
        if msg.get("in_socket_periods") is not None:
            rec["max_in_socket_periods"] = max(rec["max_in_socket_periods"] or 0.0, msg["in_socket_periods"])
        rec["not_since_previous_cycle"] += msg.get("arrived_since_previous_cycle") is False
        rec["last"] = {k: msg.get(k) for k in ("cmd", "seen_seq", "acted_seq", "in_socket_periods", "sent_periods",
                                               "arrived_since_previous_cycle", "count", "run_id")}
        reason = str(msg.get("reason") or "aborted by request")
        served_at = int(msg.get("served_ns", 0)) / 1e9
        log.info("stop served by the driver: %s from %s at cycle %s (%s)", msg.get("cmd"), msg.get("sender"),
                 msg.get("acted_seq"), reason,
                 extra={"fields": {"event": "stop_served", "run_id": msg.get("run_id") or "-"}})
        if msg.get("cmd") == "disarm":
            self._disarm(reason)
        if self.pending is not None and self.pending.started <= served_at and not self.pending.cancelled:
            self._cancel_pending(reason)
            withdrawn = self.withdrawn_by_driver_stop
            withdrawn.add(int(msg.get("count", 0)))
            if len(withdrawn) > MAX_UNCLAIMED_WITHDRAWALS:  # follow-up calls that never came
                withdrawn.discard(min(withdrawn))
        run = self.current
        if run is None or run.finished or run.requested > served_at:
            return
        if msg.get("run_id") not in (None, run.id) or msg.get("requested_run_id") not in (None, run.id):
            return
        run.abort_requested = True
        run.abort_reason = run.abort_reason or reason

    def _close_recording(self, run: Run, status: str) -> None:
        run.state = "finalizing"
        run.progress["final_status"] = status
        done = run.done_event or {}
        summary = {"status": status, "reason": run.abort_reason, "run_id": run.id,
                   "executed_samples": done.get("executed_samples", 0),
                   "trajectory_samples": run.trajectory_samples, "tracking": done.get("tracking", {}),
                   "loop": done.get("loop", {})}
        if run.recorder_lost or run.recorder_failed or not self.recorder.alive:
            self._finish_run(run, status, run.abort_reason or run.recorder_failed or "recorder unavailable")
            return
        self.recorder_pipe.send(P.packb({"type": "close", "run": run.number, "first_seq": done.get("first_seq", 1),
                                         "last_seq": done.get("last_seq", 0), "summary": summary}))
    def _finish_run(self, run: Run, status: str, reason: str = "", recorder_summary: dict | None = None) -> None:
        self.state_changed()  # cached reads (dispatch.py) show the run's end
        done = run.done_event or {}
        summary = {"status": status, "reason": reason, "recording": run.path,
                   "samples": None, "expected_samples": None, "lost_samples": None,
                   "executed_samples": done.get("executed_samples", 0), "trajectory_samples": run.trajectory_samples,
                   "loop": done.get("loop", {}), "tracking": done.get("tracking", {})}
        if recorder_summary is not None:
            summary.update(samples=recorder_summary["recorded_samples"],
                           expected_samples=recorder_summary["expected_samples"],
                           lost_samples=recorder_summary["lost_samples"], gaps=recorder_summary["gaps"])
        elif done.get("last_seq"):
            summary["expected_samples"] = int(done["last_seq"]) - int(done.get("first_seq", 1)) + 1
        run.summary = summary
        run.state = status
        if reason and not run.abort_reason:
            run.abort_reason = reason
        if self.current is run:
            self.current = None
        self._index_closed(run.id, run.path, None)
        log.info("run %s %s%s", run.id, status, f": {reason}" if reason else "",
                 extra={"fields": {"run_id": run.id, "event": "run_finished", "status": status,
                                   "lost_samples": summary.get("lost_samples")}})
        self.notifier.status(self._status_line())

    def _remember(self, run: Run) -> None:
        self.runs.append(run)
        if len(self.runs) > MAX_RUN_HISTORY:  # months of unattended runs must not grow memory
            del self.runs[:len(self.runs) - MAX_RUN_HISTORY]

    def _new_run_id(self) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")  # wall time: a label only
        run_id = f"{stamp}-{self.run_counter:03d}"
        k = 1
        while (self.recordings_dir / f"{run_id}.mcap").exists():
            k += 1
            run_id = f"{stamp}-{self.run_counter:03d}-{k}"
        return run_id

    def _find_run(self, run_id: str | None) -> Run:
        if run_id is None:
            if self.current is not None:
                return self.current
            if self.runs:
                return self.runs[-1]
            raise P.ProtocolError(P.E_NOT_FOUND, "no run has been submitted to this daemon yet")
        for r in self.runs:
            if r.id == run_id:
                return r
        raise P.ProtocolError(P.E_NOT_FOUND, f"no run {run_id!r} in this daemon's history", field="args.run_id")

    def cmd_run_status(self, args) -> dict:
        return self._find_run(args.get("run_id")).to_dict()

    def cmd_runs(self, args) -> dict:
        limit = args.get("limit", 50)
        return {"runs": [r.to_dict() for r in self.runs[-limit:]]}

    def _abort_current(self, reason: str) -> None:
        run = self.current
        if run is None or run.finished:
            return
        run.abort_requested = True
        run.abort_reason = run.abort_reason or reason
        if run.state in ("starting", "move_to_start", "execute", "settle", "stopping") and self.driver.alive:
            self.driver_pipe.send(P.packb({"type": "abort", "reason": reason}))

    def cmd_abort(self, args) -> dict:
        run = self.current
        # claimed once, and only by the call that names the stop (another client's abort is not its answer)
        withdrawn_by_stop = args.get("stop") in self.withdrawn_by_driver_stop
        self.withdrawn_by_driver_stop.discard(args.get("stop"))
        if run is None:
            if self.pending is not None:
                self._cancel_pending(args.get("reason", "aborted by request"))
                return {"aborted": None, "cancelled_submission": True, "message": "submission withdrawn"}
            if withdrawn_by_stop:  # the stop's own bookkeeping call
                return {"aborted": None, "cancelled_submission": True,
                        "message": "submission withdrawn by the stop the driver served"}
            return {"aborted": None, "message": "no run in progress"}
        if args.get("run_id") not in (None, run.id):
            raise P.ProtocolError(P.E_NOT_FOUND, f"run {args['run_id']!r} is not the run in progress ({run.id})",
                                  field="args.run_id")
        self._abort_current(args.get("reason", "aborted by request"))
        return {"aborted": run.id, "state": run.state}
