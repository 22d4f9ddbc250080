"""The daemon's main process: control endpoint, run manager, supervision of the two workers.

Processes::

    main      ROUTER (control, public)  PAIR<->driver  PAIR<->recorder   run manager, validation
    driver    the real-time loop (rtloop.py)     PUB state stream (public tcp + internal ipc)
    recorder  SUB on the internal ipc stream     writes <data_dir>/recordings/<run_id>.mcap

A run: ``submit_run`` is validated here (trajectory parse, robot, every limit of the trajectory and
of the move from the current position) and rejected with the violated limit, joint and time before
anything is sent to the driver process. Accepted: the recorder opens the file, then the driver
process executes move -> trajectory -> settle -> brake, then the recorder finalizes and the run
summary is kept. Clients poll ``run_status``; no request ever blocks the loop.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodyn import __version__
from robodyn.robot.loader import load_model
from robodyn.robot.urdf import model_to_urdf
from robodyn.trajectory import trajectory_from_dict

from . import protocol as P
from .config import DaemonConfig
from .motion import RunRejected, plan_run
from .recording import load_recording, read_recording_info, recording_summary_line

log = logging.getLogger("robodyn.daemon")

# Modules that add commands to the daemon (e.g. identification jobs, issue 5). Each exposes
# ``register(daemon)`` and calls ``daemon.add_command(name, args_schema, handler)``.
EXTENSION_MODULES = ("robodyn.identification.daemon_jobs",)

STARTUP_TIMEOUT_S = 60.0
TELEMETRY_STALE_S = 1.0
HEALTH_CHECK_S = 0.2
SHUTDOWN_TIMEOUT_S = 10.0
FINISHED_STATES = ("completed", "aborted", "failed")


@dataclass
class Run:
    id: str
    number: int
    robot: str
    mode: str
    label: str
    trajectory: dict
    move: dict
    duration: float
    move_duration: float
    trajectory_samples: int
    move_samples: int
    path: str
    submitted: float = field(default_factory=time.monotonic)
    state: str = "opening"  # opening -> starting -> move_to_start/execute/settle/stopping -> finalizing -> done
    abort_reason: str = ""
    abort_requested: bool = False
    done_event: dict | None = None
    summary: dict | None = None
    recorder_lost: bool = False
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


@dataclass
class Component:
    """A worker process and what we last heard from it."""

    name: str
    target: object
    process: object = None
    ready: bool = False
    pid: int | None = None
    last: dict = field(default_factory=dict)  # last telemetry / stats
    last_time: float = 0.0
    restarts: int = 0
    exit_code: int | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()


class Daemon:
    def __init__(self, cfg: DaemonConfig):
        import zmq

        self.zmq = zmq
        self.cfg = cfg
        self.model = load_model(cfg.robot)
        self.recordings_dir = cfg.recordings_dir
        self.recordings_dir.mkdir(parents=True, exist_ok=True)
        self.runtime_dir = tempfile.mkdtemp(prefix="robodyn-")
        self.endpoints = {"driver_pipe": f"ipc://{self.runtime_dir}/driver", "recorder_pipe":
                          f"ipc://{self.runtime_dir}/recorder", "state_ipc": f"ipc://{self.runtime_dir}/state"}
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, P.MAX_REQUEST_BYTES)
        self.router.bind(cfg.control)
        self.driver_pipe = self.ctx.socket(zmq.PAIR)
        self.driver_pipe.bind(self.endpoints["driver_pipe"])
        self.recorder_pipe = self.ctx.socket(zmq.PAIR)
        self.recorder_pipe.bind(self.endpoints["recorder_pipe"])
        from .recorder import recorder_process_main
        from .rtloop import driver_process_main

        self.driver = Component("driver", driver_process_main)
        self.recorder = Component("recorder", recorder_process_main)
        self.description: dict | None = None
        self.columns: list[str] = []
        self.layout = 0
        self.runs: list[Run] = []
        self.current: Run | None = None
        self.run_counter = 0
        self.started = time.monotonic()
        self.running = True
        self.commands: dict[str, callable] = {
            "ping": self.cmd_ping, "status": self.cmd_status, "describe": self.cmd_describe,
            "submit_run": self.cmd_submit_run, "run_status": self.cmd_run_status, "abort": self.cmd_abort,
            "runs": self.cmd_runs, "recordings": self.cmd_recordings, "recording_info": self.cmd_recording_info,
        }
        self._load_extensions()

    # ----------------------------------------------------------------- extension point

    def add_command(self, name: str, args: dict, handler) -> None:
        """Register a request handler ``handler(args) -> dict`` (raise ProtocolError on errors)."""
        if name in self.commands:
            raise ValueError(f"command {name!r} already registered")
        if name not in P.COMMANDS:
            P.register_command(name, args)
        self.commands[name] = handler

    def _load_extensions(self) -> None:
        for name in EXTENSION_MODULES:
            try:
                spec = importlib.util.find_spec(name)
            except ModuleNotFoundError:
                spec = None
            if spec is not None:
                importlib.import_module(name).register(self)

    # ----------------------------------------------------------------- processes

    def _spawn(self, comp: Component) -> None:
        ctx = multiprocessing.get_context("spawn")
        comp.process = ctx.Process(target=comp.target, args=(self.cfg.to_dict(), self.endpoints),
                                   name=f"robodyn-{comp.name}", daemon=False)
        comp.ready = False
        comp.process.start()
        comp.pid = comp.process.pid
        log.info("started %s process pid %d", comp.name, comp.pid)

    def start(self) -> None:
        """Spawn the workers and wait until both report ready (or one reports a fatal error)."""
        self._spawn(self.driver)
        self._spawn(self.recorder)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        poller = self._poller()
        while not (self.driver.ready and self.recorder.ready):
            if time.monotonic() > deadline:
                raise RuntimeError("driver or recorder did not start within "
                                   f"{STARTUP_TIMEOUT_S:.0f} s")
            for sock, _ in poller.poll(100):
                if sock is self.driver_pipe:
                    self._on_driver(P.unpackb(sock.recv()))
                elif sock is self.recorder_pipe:
                    self._on_recorder(P.unpackb(sock.recv()))
            for comp in (self.driver, self.recorder):
                if comp.process is not None and not comp.process.is_alive() and not comp.ready:
                    reason = comp.last.get("fatal") or f"exit code {comp.process.exitcode}"
                    raise RuntimeError(f"{comp.name} failed to start: {reason}")

    def _poller(self):
        poller = self.zmq.Poller()
        poller.register(self.router, self.zmq.POLLIN)
        poller.register(self.driver_pipe, self.zmq.POLLIN)
        poller.register(self.recorder_pipe, self.zmq.POLLIN)
        return poller

    def serve_forever(self) -> None:
        poller = self._poller()
        next_health = time.monotonic()
        shutdown_deadline = None
        while True:
            for sock, _ in poller.poll(50):
                if sock is self.router:
                    self._on_request()
                elif sock is self.driver_pipe:
                    while self.driver_pipe.poll(0):
                        self._on_driver(P.unpackb(self.driver_pipe.recv()))
                elif sock is self.recorder_pipe:
                    while self.recorder_pipe.poll(0):
                        self._on_recorder(P.unpackb(self.recorder_pipe.recv()))
            now = time.monotonic()
            if now >= next_health:
                next_health = now + HEALTH_CHECK_S
                self._check_health()
            if not self.running:
                if shutdown_deadline is None:
                    shutdown_deadline = now + SHUTDOWN_TIMEOUT_S
                    if self.current is not None:
                        self._abort_current("daemon shutting down")
                if self.current is None or now > shutdown_deadline:
                    break
        self.close()

    def request_shutdown(self, *_args) -> None:
        self.running = False

    def close(self) -> None:
        for comp, pipe in ((self.driver, self.driver_pipe), (self.recorder, self.recorder_pipe)):
            if comp.alive:
                pipe.send(P.packb({"type": "shutdown"}))
        for comp in (self.driver, self.recorder):
            if comp.process is not None:
                comp.process.join(5.0)
                if comp.process.is_alive():
                    log.warning("%s did not stop in 5 s; terminating", comp.name)
                    comp.process.terminate()
                    comp.process.join(2.0)
        self.ctx.destroy(linger=0)
        shutil.rmtree(self.runtime_dir, ignore_errors=True)

    def _check_health(self) -> None:
        for comp in (self.driver, self.recorder):
            if comp.process is None or comp.process.is_alive():
                continue
            comp.exit_code = comp.process.exitcode
            log.error("%s process %s died (exit code %s)", comp.name, comp.pid, comp.exit_code)
            comp.process = None
            comp.ready = False
            if comp is self.recorder:
                self._on_recorder_lost()
            else:
                self._on_driver_lost()
            if self.running:
                comp.restarts += 1
                self._spawn(comp)

    def _on_recorder_lost(self) -> None:
        run = self.current
        if run is None:
            return
        run.recorder_lost = True
        reason = f"recorder process died (exit code {self.recorder.exit_code}); partial recording kept"
        if run.state == "opening":
            self._finish_run(run, "failed", reason)
        elif run.state == "finalizing":
            self._finish_run(run, "aborted" if run.abort_requested else "completed", reason)
        else:
            self._abort_current(reason)

    def _on_driver_lost(self) -> None:
        run = self.current
        if run is None:
            return
        reason = f"driver process died (exit code {self.driver.exit_code})"
        seq = int(self.driver.last.get("seq", 0))
        if run.state in ("opening",):
            self._finish_run(run, "failed", reason)
            return
        run.abort_reason = reason
        # the samples the dead driver published up to its last telemetry are what the recorder has
        run.done_event = {"first_seq": run.progress.get("first_seq", seq + 1), "last_seq": seq,
                          "aborted": True, "reason": reason}
        self._close_recording(run, "failed")

    # ----------------------------------------------------------------- worker messages

    def _on_driver(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == "telemetry":
            self.driver.last = msg
            self.driver.last_time = time.monotonic()
            if self.current is not None and msg["progress"].get("run_id") == self.current.id:
                self.current.progress.update(msg["progress"])
        elif kind == "ready":
            self.driver.ready = True
            self.driver.pid = msg["pid"]
            self.description = msg["description"]
            self.columns = msg["columns"]
            self.layout = msg["layout"]
            if self.description["joint_names"] and len(self.description["joint_names"]) != self.model.dof:
                log.error("driver reports %d joints, model %s has %d", len(self.description["joint_names"]),
                          self.model.name, self.model.dof)
            log.info("driver ready: %s %s at %g Hz (%s)", self.description["driver"], self.description["robot"],
                     self.description["rate_hz"], msg.get("scheduler"))
        elif kind == "run_event":
            self._on_run_event(msg)
        elif kind in ("fatal", "driver_error"):
            self.driver.last = dict(self.driver.last, fatal=msg.get("message"))
            log.error("driver: %s", msg.get("message"))

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
        elif event == "refused":
            run.abort_reason = msg.get("reason", "driver refused the run")
            run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
            self._close_recording(run, "failed")
        elif event == "done":
            run.done_event = msg
            if msg.get("aborted") and not run.abort_reason:
                run.abort_reason = msg.get("reason", "")
            self._close_recording(run, "aborted" if msg.get("aborted") else "completed")

    def _close_recording(self, run: Run, status: str) -> None:
        run.state = "finalizing"
        run.progress["final_status"] = status
        done = run.done_event or {}
        summary = {"status": status, "reason": run.abort_reason, "run_id": run.id,
                   "executed_samples": done.get("executed_samples", 0),
                   "trajectory_samples": run.trajectory_samples, "tracking": done.get("tracking", {}),
                   "loop": done.get("loop", {})}
        if run.recorder_lost or not self.recorder.alive:
            self._finish_run(run, status, run.abort_reason or "recorder unavailable")
            return
        self.recorder_pipe.send(P.packb({"type": "close", "run": run.number, "first_seq": done.get("first_seq", 1),
                                         "last_seq": done.get("last_seq", 0), "summary": summary}))

    def _on_recorder(self, msg: dict) -> None:
        kind = msg.get("type")
        run = self.current
        if kind == "stats":
            self.recorder.last = msg
            self.recorder.last_time = time.monotonic()
        elif kind == "ready":
            self.recorder.ready = True
            self.recorder.pid = msg["pid"]
        elif kind == "opened" and run is not None and msg["run"] == run.number:
            if run.abort_requested:
                run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
                self._close_recording(run, "aborted")
                return
            run.state = "starting"
            self.driver_pipe.send(P.packb({"type": "start_run", "run": run.number, "run_id": run.id,
                                           "move": run.move, "trajectory": run.trajectory, "mode": run.mode}))
        elif kind == "open_failed" and run is not None and msg["run"] == run.number:
            self._finish_run(run, "failed", f"could not open the recording: {msg['reason']}")
        elif kind == "closed" and run is not None and msg["run"] == run.number:
            self._finish_run(run, run.progress.get("final_status", "completed"), run.abort_reason,
                             msg["summary"])
        elif kind == "close_failed" and run is not None and msg["run"] == run.number:
            self._finish_run(run, "failed", f"could not finalize the recording: {msg['reason']}")

    def _finish_run(self, run: Run, status: str, reason: str = "", recorder_summary: dict | None = None) -> None:
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
        log.info("run %s %s%s", run.id, status, f": {reason}" if reason else "")

    # ----------------------------------------------------------------- requests

    def _on_request(self) -> None:
        frames = self.router.recv_multipart()
        if len(frames) == 3 and frames[1] == b"":  # REQ client: identity, delimiter, payload
            envelope, payload = frames[:2], frames[2]
        elif len(frames) == 2:  # DEALER client: identity, payload
            envelope, payload = frames[:1], frames[1]
        else:
            log.warning("dropped a control message with %d frames (expected 1 payload frame)", len(frames) - 1)
            if len(frames) >= 2:
                self.router.send_multipart([frames[0], P.error_reply(None, P.E_MALFORMED,
                                                                     "expected exactly one payload frame")])
            return
        self.router.send_multipart(envelope + [self.handle_payload(payload)])

    def handle_payload(self, payload: bytes) -> bytes:
        rid = None
        try:
            obj = P.unpackb(payload)
            if isinstance(obj, dict):
                rid = obj.get("id")
                if not isinstance(rid, (int, str, type(None))):
                    rid = None
            req = P.parse_request(obj)
            handler = self.commands.get(req.cmd)
            if handler is None:
                raise P.ProtocolError(P.E_UNKNOWN_COMMAND, f"command {req.cmd!r} is not available in this daemon")
            return P.ok_reply(rid, handler(req.args))
        except P.ProtocolError as exc:
            return P.error_reply(rid, exc.code, exc.message, exc.details)
        except Exception as exc:  # a bug: answer, log, keep serving
            log.exception("internal error while handling a request")
            return P.error_reply(rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")

    # ----------------------------------------------------------------- handlers

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
                       "restarts": self.driver.restarts, "telemetry_age_s": now - self.driver.last_time
                       if self.driver.last_time else None, "lifecycle": tel.get("lifecycle"),
                       "scheduler": tel.get("scheduler"), "loop": tel.get("loop"),
                       "diagnostics": tel.get("driver"), "error": tel.get("fatal")},
            "state": {"seq": tel.get("seq"), "robot_time": tel.get("robot_time"), "q": tel.get("q"),
                      "qd": tel.get("qd"), "tau": tel.get("tau")},
            "recorder": {"pid": self.recorder.pid, "alive": self.recorder.alive, "ready": self.recorder.ready,
                         "restarts": self.recorder.restarts, **{k: v for k, v in self.recorder.last.items()
                                                                if k in ("stream", "recording", "written_runs")}},
            "run": None if self.current is None else self.current.to_dict(),
            "last_run": None if last_run is None else last_run.to_dict(),
        }

    def _current_q(self) -> np.ndarray:
        tel = self.driver.last
        if not self.driver.ready or not self.driver.alive:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the driver process is not running; see `robodyn status`")
        if time.monotonic() - self.driver.last_time > TELEMETRY_STALE_S or "q" not in tel:
            raise P.ProtocolError(P.E_UNAVAILABLE, "no fresh robot state from the driver (telemetry older than "
                                                   f"{TELEMETRY_STALE_S} s)")
        return np.asarray(tel["q"], float)

    def cmd_submit_run(self, args) -> dict:
        robot = args["robot"]
        if robot != self.model.name:
            raise P.ProtocolError(P.E_ROBOT, f"this daemon drives {self.model.name!r}, not {robot!r}",
                                  {"robot": self.model.name})
        mode = args.get("mode", "position")
        modes = (self.description or {}).get("control_modes", [])
        if mode != "position":
            raise P.ProtocolError(P.E_INVALID_ARGS, f"submit_run: mode {mode!r} is not supported for runs yet; "
                                                    f"use 'position' (driver modes: {modes})")
        if self.current is not None:
            raise P.ProtocolError(P.E_BUSY, f"run {self.current.id} is in progress ({self.current.state}); "
                                            "one run at a time per robot", {"run_id": self.current.id})
        try:
            traj = trajectory_from_dict(args["trajectory"])
        except ValueError as exc:
            raise P.ProtocolError(P.E_INVALID_TRAJECTORY, f"trajectory: {exc}") from None
        if not self.recorder.alive or not self.recorder.ready:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the recorder process is not running; a run would not be recorded")
        current_q = self._current_q()
        rate = float(self.description["rate_hz"])
        try:
            plan = plan_run(self.model, traj, current_q, rate)
        except RunRejected as exc:
            raise P.ProtocolError(P.E_LIMIT, f"{exc.stage} rejected before any motion: {exc}",
                                  {"stage": exc.stage, "report": exc.report.to_dict()}) from None
        self.run_counter += 1
        run_id = self._new_run_id()
        move_samples, traj_samples = plan.sample_counts(rate)
        run = Run(id=run_id, number=self.run_counter, robot=robot, mode=mode, label=args.get("label", ""),
                  trajectory=traj.to_dict(robot=robot), move=plan.move.to_dict(robot=robot),
                  duration=traj.duration, move_duration=plan.move.duration, trajectory_samples=traj_samples,
                  move_samples=move_samples, path=str(self.recordings_dir / f"{run_id}.mcap"))
        meta = {"run_id": run_id, "robot": self.model.summary(), "model_urdf": model_to_urdf(self.model),
                "model_inertial": self.model.inertial.tolist(), "model_rotor_inertia": self.model.rotor_inertia.tolist(),
                "driver": self.description, "rate_hz": rate, "columns": self.columns,
                "units": {s["name"]: s["unit"] for s in self.description["signals"]},
                "trajectory": run.trajectory, "move_to_start": run.move, "mode": mode, "label": run.label,
                "limit_utilisation": plan.report.utilisation, "protocol": P.PROTOCOL_VERSION,
                "time_base": {"robot_time": "s, robot clock", "host_time_ns": "CLOCK_MONOTONIC ns at driver read"}}
        self.recorder_pipe.send(P.packb({"type": "open", "run": run.number, "run_id": run_id, "path": run.path,
                                         "meta": meta, "width": len(self.columns)}))
        self.current = run
        self.runs.append(run)
        log.info("run %s accepted: %s, %.2f s (+ %.2f s move to start)", run_id, traj.family, traj.duration,
                 plan.move.duration)
        return {"run_id": run_id, "duration_s": traj.duration, "move_duration_s": plan.move.duration,
                "trajectory_samples": traj_samples, "move_samples": move_samples, "recording": run.path,
                "limit_utilisation": plan.report.utilisation}

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
        raise P.ProtocolError(P.E_NOT_FOUND, f"no run {run_id!r} in this daemon's history")

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
        if run is None:
            return {"aborted": None, "message": "no run in progress"}
        if args.get("run_id") not in (None, run.id):
            raise P.ProtocolError(P.E_NOT_FOUND, f"run {args['run_id']!r} is not the run in progress ({run.id})")
        self._abort_current(args.get("reason", "aborted by request"))
        return {"aborted": run.id, "state": run.state}

    def cmd_recordings(self, args) -> dict:
        rows = []
        for path in sorted(self.recordings_dir.glob("*.mcap")):
            if self.current is not None and str(path) == self.current.path:
                rows.append({"id": self.current.id, "path": str(path), "status": "recording"})
                continue
            try:
                rows.append(read_recording_info(path))
            except (ValueError, OSError) as exc:
                rows.append({"id": path.stem, "path": str(path), "status": f"unreadable: {exc}"})
        return {"recordings": rows}

    def cmd_recording_info(self, args) -> dict:
        rid = args["recording"]
        if "/" in rid or rid.startswith("."):
            raise P.ProtocolError(P.E_INVALID_ARGS, "recording_info: give a recording id, not a path")
        path = self.recordings_dir / f"{rid}.mcap"
        if not path.exists():
            raise P.ProtocolError(P.E_NOT_FOUND, f"no recording {rid!r}")
        rec = load_recording(path)
        return {**recording_summary_line(rec), "summary": rec.summary, "gaps": rec.gaps(),
                "truncated": rec.truncated, "columns": rec.meta.get("columns"), "units": rec.units}


def run_daemon(cfg: DaemonConfig) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    daemon = Daemon(cfg)
    signal.signal(signal.SIGTERM, daemon.request_shutdown)
    signal.signal(signal.SIGINT, daemon.request_shutdown)
    try:
        daemon.start()
    except Exception:
        daemon.running = False
        daemon.close()
        raise
    print(f"robodyn daemon ready: control {cfg.control}, state {cfg.state}, robot {cfg.robot} "
          f"({cfg.driver}), recordings in {daemon.recordings_dir}", flush=True)
    daemon.serve_forever()
    return 0
