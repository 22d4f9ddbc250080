"""Runs: their record (:class:`Run`) and their course once admitted (admission.py): the recording
opened, the run started on the driver, the driver's and recorder's events to a finished summary,
aborting the one in progress, the stops the driver served on its stop socket, and the history kept
in memory (``run_status``, ``runs``); the recordings on disk are listed from their index
(heavy.py, recording/index.py).

One object of :class:`robodyn.daemon.server.Daemon` (:class:`Runs`), handed its collaborators.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from pathlib import Path

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


class Runs:
    """The run in progress and the runs before it, from the recording's opening to the summary.

    Handed what it needs: the recordings' folder (run ids are unique in it); the driver's and the
    recorder's worker (supervision.Component: alive or not, last telemetry) and pipes; the listing
    of recordings (heavy.HeavyReads: ``index_closed``); and callables for the rest of the daemon:
    ``disarm(reason)`` (any fault), ``pending_submission()`` (the submission being checked, admission.py) and
    ``withdraw(reason)`` (withdraw it), ``changed()`` (cached reads are out of date) and
    ``announce()`` (the status line to systemd)."""

    def __init__(self, recordings_dir: Path, driver, recorder, driver_pipe, recorder_pipe, recordings, *, disarm,
                 pending_submission, withdraw, changed, announce):
        self.recordings_dir = recordings_dir
        self.driver, self.recorder = driver, recorder
        self.driver_pipe, self.recorder_pipe = driver_pipe, recorder_pipe
        self.recordings = recordings
        self.disarm, self.pending_submission, self.withdraw = disarm, pending_submission, withdraw
        self.changed, self.announce = changed, announce
        self.history: list[Run] = []
        self.current: Run | None = None
        self.run_counter = 0  # runs accepted: the next one's number is one more
        self.driver_stops_seen = 0  # the driver's count of stops served, as far as this process knows
        # the counts of the driver's stops that withdrew a submission, until each stop's own
        # bookkeeping call asks (Client._stop asks the control endpoint too, naming the stop, when
        # nothing was moving; by then the withdrawn submission may be gone from ``pending_submission()``)
        self.withdrawn_by_driver_stop: set[int] = set()
        self.driver_stops = {"count": 0, "same_cycle": 0, "not_since_previous_cycle": 0,
                             "max_in_socket_periods": None, "last": None}

    # ----------------------------------------------------------------- a new run: open, start

    def next_run(self) -> tuple[int, str]:
        """The number and the id of the run being accepted (the id names its file)."""
        self.run_counter += 1
        return self.run_counter, self._new_run_id()

    def _new_run_id(self) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S")  # wall time: a label only
        run_id = f"{stamp}-{self.run_counter:03d}"
        k = 1
        while (self.recordings_dir / f"{run_id}.mcap").exists():
            k += 1
            run_id = f"{stamp}-{self.run_counter:03d}-{k}"
        return run_id

    def open(self, run: Run, meta: dict, width: int) -> None:
        """An accepted run: the recorder opens its file; the driver is sent the run when the
        recorder says it is open (:meth:`on_recorder` "opened")."""
        self.recorder_pipe.send(P.pack_spliced({"type": "open", "run": run.number, "run_id": run.id, "path": run.path,
                                                "meta": meta, "width": width}))
        self.current = run
        self.history.append(run)
        if len(self.history) > MAX_RUN_HISTORY:  # months of unattended runs must not grow memory
            del self.history[:len(self.history) - MAX_RUN_HISTORY]
        self.recordings.index_opened(run.id, run.path)

    def send_start(self, run: Run) -> None:
        """The run to the driver, with the count of its stops this process has heard of: the
        driver refuses a run sent before a stop it served (rtloop.py, stop_socket.py)."""
        self.driver_pipe.send(P.pack_spliced({"type": "start_run", "run": run.number, "run_id": run.id, "move": run.move,
                                              "trajectory": run.trajectory, "mode": run.mode,
                                              "stops_seen": self.driver_stops_seen}))

    # ----------------------------------------------------------------- the workers' word on it

    def on_progress(self, progress: dict) -> None:
        """The driver's telemetry: the progress of the run it moves."""
        if self.current is not None and progress.get("run_id") == self.current.id:
            self.current.progress.update(progress)

    def on_driver_ready(self) -> None:
        """A new driver process counts its stops from 0: an old driver's counts name none of its stops."""
        self.driver_stops_seen = 0
        self.withdrawn_by_driver_stop.clear()

    def on_run_event(self, msg: dict) -> None:
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
            self.disarm(reason)
        elif event == "refused" and msg.get("stale_stop"):
            # the driver served a stop this process had not yet heard of when it sent the run; that
            # stop's event came first on the pipe (on_driver_stop): it either aborted this run or
            # came after the run was submitted, and then the run starts on the up-to-date word
            missed = int(msg.get("stops_served", 0)) > self.driver_stops_seen  # its event lost (a full pipe)
            if run.abort_requested or missed:
                self.driver_stops_seen = max(self.driver_stops_seen, int(msg.get("stops_served", 0)))
                run.abort_requested = True
                run.abort_reason = run.abort_reason or msg.get("reason", "stopped on the stop socket")
                run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
                self.close_recording(run, "aborted")
            else:
                self.send_start(run)
        elif event == "refused":
            run.abort_reason = msg.get("reason", "driver refused the run")
            self.disarm(f"the driver refused run {run.id}: {run.abort_reason}")
            run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
            self.close_recording(run, "failed")
        elif event == "done":
            run.done_event = msg
            if msg.get("aborted") and not run.abort_reason:
                run.abort_reason = msg.get("reason", "")
            self.close_recording(run, "aborted" if msg.get("aborted") else "completed")

    def on_recorder(self, msg: dict) -> None:
        """The recorder's word on the run in progress (messages naming another run are stale)."""
        run, kind = self.current, msg.get("type")
        if run is None or msg.get("run") != run.number:
            return
        if kind == "opened":
            if run.abort_requested:
                run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
                self.close_recording(run, "aborted")
                return
            run.state = "starting"
            self.send_start(run)
        elif kind == "open_failed":
            self.disarm(f"could not open the recording of run {run.id}: {msg['reason']}")
            self.finish_run(run, "failed", f"could not open the recording: {msg['reason']}")
        elif kind == "closed":
            self.recordings.index_closed(run.id, run.path, msg.get("index"))
            self.finish_run(run, run.progress.get("final_status", "completed"), run.abort_reason, msg["summary"])
        elif kind == "close_failed":
            self.disarm(f"could not finalize the recording of run {run.id}: {msg['reason']}")
            self.finish_run(run, "failed", f"could not finalize the recording: {msg['reason']}")
        elif kind == "write_failed":
            # e.g. disk full: the recorder cut the file back to its last complete block; stop the
            # robot, since an unrecorded run is a wasted and unaccounted motion
            run.recorder_failed = f"recording failed: {msg['reason']}; file kept up to its last complete block"
            log.error("run %s: %s", run.id, run.recorder_failed, extra={"fields": {"run_id": run.id,
                                                                               "event": "write_failed"}})
            self.disarm(run.recorder_failed)
            if run.state == "opening":
                self.finish_run(run, "failed", run.recorder_failed)
            else:
                self.abort_current(run.recorder_failed)

    def on_recorder_lost(self, exit_code) -> str | None:
        """The recorder died: the run in progress ends; the path of its cut file (for the
        successor to repair), or None."""
        run = self.current
        if run is None:
            return None
        run.recorder_lost = True
        reason = f"recorder process died (exit code {exit_code}); partial recording kept"
        if run.state == "opening":
            self.finish_run(run, "failed", reason)
        elif run.state == "finalizing":
            self.finish_run(run, "aborted" if run.abort_requested else "completed", reason)
        else:
            self.abort_current(reason)
        return run.path

    def on_driver_lost(self, exit_code, last_seq: int) -> None:
        """The driver died: the run in progress is aborted, its recording closed at the last
        sample the dead driver published (``last_seq``, its last telemetry)."""
        run = self.current
        if run is None:
            return
        reason = f"driver process died (exit code {exit_code}); the robot is no longer commanded"
        if run.state in ("opening",):
            self.finish_run(run, "failed", reason)
            return
        run.abort_reason = reason
        run.abort_requested = True
        # the samples the dead driver published up to its last telemetry are what the recorder has
        # at least; the recorder keeps any later ones it received too
        run.done_event = {"first_seq": run.progress.get("first_seq", last_seq + 1), "last_seq": last_seq,
                          "aborted": True, "reason": reason}
        self.close_recording(run, "aborted")

    def on_driver_stop(self, msg: dict) -> None:
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
            self.disarm(reason)
        pending = self.pending_submission()
        if pending is not None and pending.started <= served_at and not pending.cancelled:
            self.withdraw(reason)
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

    # ----------------------------------------------------------------- its end

    def close_recording(self, run: Run, status: str) -> None:
        run.state = "finalizing"
        run.progress["final_status"] = status
        done = run.done_event or {}
        summary = {"status": status, "reason": run.abort_reason, "run_id": run.id,
                   "executed_samples": done.get("executed_samples", 0),
                   "trajectory_samples": run.trajectory_samples, "tracking": done.get("tracking", {}),
                   "loop": done.get("loop", {})}
        if run.recorder_lost or run.recorder_failed or not self.recorder.alive:
            self.finish_run(run, status, run.abort_reason or run.recorder_failed or "recorder unavailable")
            return
        self.recorder_pipe.send(P.packb({"type": "close", "run": run.number, "first_seq": done.get("first_seq", 1),
                                         "last_seq": done.get("last_seq", 0), "summary": summary}))

    def finish_run(self, run: Run, status: str, reason: str = "", recorder_summary: dict | None = None) -> None:
        self.changed()  # cached reads (dispatch.py) show the run's end
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
        self.recordings.index_closed(run.id, run.path, None)
        log.info("run %s %s%s", run.id, status, f": {reason}" if reason else "",
                 extra={"fields": {"run_id": run.id, "event": "run_finished", "status": status,
                                   "lost_samples": summary.get("lost_samples")}})
        self.announce()

    def abort_current(self, reason: str) -> None:
        run = self.current
        if run is None or run.finished:
            return
        run.abort_requested = True
        run.abort_reason = run.abort_reason or reason
        if run.state in ("starting", "move_to_start", "execute", "settle", "stopping") and self.driver.alive:
            self.driver_pipe.send(P.packb({"type": "abort", "reason": reason}))

    # ----------------------------------------------------------------- commands

    def _find_run(self, run_id: str | None) -> Run:
        if run_id is None:
            if self.current is not None:
                return self.current
            if self.history:
                return self.history[-1]
            raise P.ProtocolError(P.E_NOT_FOUND, "no run has been submitted to this daemon yet")
        for r in self.history:
            if r.id == run_id:
                return r
        raise P.ProtocolError(P.E_NOT_FOUND, f"no run {run_id!r} in this daemon's history", field="args.run_id")

    def cmd_run_status(self, args) -> dict:
        return self._find_run(args.get("run_id")).to_dict()

    def cmd_runs(self, args) -> dict:
        limit = args.get("limit", 50)
        return {"runs": [r.to_dict() for r in self.history[-limit:]]}

    def cmd_abort(self, args) -> dict:
        run = self.current
        # claimed once, and only by the call that names the stop (another client's abort is not its answer)
        withdrawn_by_stop = args.get("stop") in self.withdrawn_by_driver_stop
        self.withdrawn_by_driver_stop.discard(args.get("stop"))
        if run is None:
            if self.pending_submission() is not None:
                self.withdraw(args.get("reason", "aborted by request"))
                return {"aborted": None, "cancelled_submission": True, "message": "submission withdrawn"}
            if withdrawn_by_stop:  # the stop's own bookkeeping call
                return {"aborted": None, "cancelled_submission": True,
                        "message": "submission withdrawn by the stop the driver served"}
            return {"aborted": None, "message": "no run in progress"}
        if args.get("run_id") not in (None, run.id):
            raise P.ProtocolError(P.E_NOT_FOUND, f"run {args['run_id']!r} is not the run in progress ({run.id})",
                                  field="args.run_id")
        self.abort_current(args.get("reason", "aborted by request"))
        return {"aborted": run.id, "state": run.state}
