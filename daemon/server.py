"""The daemon's main process: control endpoint, run manager, supervision of the two workers.

Processes::

    main      ROUTER (control, public)  PAIR<->driver  PAIR<->recorder   run manager, validation
    driver    the real-time loop (rtloop.py)     PUB state stream (public tcp + internal ipc)
    recorder  SUB on the internal ipc stream     writes <data_dir>/recordings/<run_id>.mcap

A run: ``submit_run`` is validated here (trajectory parse, robot, every limit of the trajectory and
of the move from the current position) and rejected with the violated limit, joint and time before
anything is sent to the driver process. Accepted: the recorder opens the file, then the driver
process executes move -> trajectory -> settle -> brake, then the recorder finalizes and the run
summary is kept. Clients poll ``run_status``; no request ever blocks the loop: the limit check of
a long trajectory (seconds) runs on a validation thread and ``submit_run`` is answered when it is
done, while the loop keeps serving ``status`` and ``abort``.

Safety (docs/reliability.md): motion needs the daemon to be armed by an operator (``arm``); any
fault disarms it (a worker process dying or hanging, a driver error, a recording that cannot be
written). A dead or hung worker is restarted; the run in progress is reported aborted.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import math
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodyn import __version__
from robodyn.robot.loader import load_model
from robodyn.robot.urdf import model_to_urdf
from robodyn.limits import validation_cost
from robodyn.trajectory import trajectory_from_dict

from . import protocol as P
from . import security
from .config import DaemonConfig
from .logs import setup_logging
from .motion import HOLD_TOLERANCE, RunRejected, move_to_start, plan_run
from .recording import load_recording, read_recording_info, recording_summary_line
from .sdnotify import Notifier

log = logging.getLogger("robodyn.daemon")

# Modules that add commands to the daemon (e.g. identification jobs, issue 5). Each exposes
# ``register(daemon)`` and calls ``daemon.add_command(name, args_schema, handler)``.
EXTENSION_MODULES = ("robodyn.identification.daemon_jobs",)

STARTUP_TIMEOUT_S = 60.0
TELEMETRY_STALE_S = 1.0
HEALTH_CHECK_S = 0.2
SHUTDOWN_TIMEOUT_S = 10.0
FINISHED_STATES = ("completed", "aborted", "failed")
# a worker that is alive but silent this long is wedged: killed and restarted like a dead one
# (telemetry comes every 0.1 s, recorder statistics every 0.5 s)
HANG_TIMEOUT_S = 5.0
# the transport refuses larger frames outright (and drops that connection), so a frame claiming
# gigabytes is never buffered; between the request cap and this, the client gets `malformed`
TRANSPORT_MAX_BYTES = 2 * P.MAX_REQUEST_BYTES
# bytes per recorded sample besides the values: seq, robot_time, host_time_ns (8 each), phase (1)
SAMPLE_OVERHEAD_BYTES = 25
# Disk estimate: bytes per sample as the recorder measures them on the files it writes (zstd of
# noisy float64 samples in 50 ms blocks barely compresses: 333 B/sample for the simulator's 42
# columns, against 361 B raw; bench/reliability/run.py --only disk), times this margin. Until the
# recorder has written DISK_MEASURE_MIN_SAMPLES, the raw (uncompressed) size is the estimate.
DISK_MARGIN = 1.25
DISK_MEASURE_MIN_SAMPLES = 5_000
RECORDING_FIXED_BYTES = 64 * 1024  # self-description (16 KB for a Panda: URDF, trajectory, driver facts), summary, events
MAX_RUN_HISTORY = 500  # runs kept in memory for `runs` / `run_status`; every run is in its recording
MAX_VALIDATION_THREADS = 2  # the one being checked plus one withdrawn that is still finishing
DEFERRED = object()  # a handler's result meaning "the reply is sent later"
# Roles (docs/reliability.md, "Roles"), when CurveZMQ names the clients and [security].operators is
# set: operators arm and submit; submitters submit runs and identification jobs; every other
# allowed client observes. Stopping is never refused: abort and disarm are open to everyone.
COMMAND_ROLES = {"arm": P.ROLE_OPERATOR, "submit_run": P.ROLE_SUBMITTER, "identify": P.ROLE_SUBMITTER}


class RateLimitedLog:
    """Warnings about bad input: the first ``burst`` per window individually, the rest counted
    in one summary line, so a flood of garbage cannot flood the journal but every frame is
    accounted for in a log line."""

    def __init__(self, logger: logging.Logger, window_s: float = 10.0, burst: int = 5):
        self.logger, self.window_s, self.burst = logger, window_s, burst
        self.window_start = time.monotonic()
        self.in_window = 0
        self.suppressed = 0
        self.total = 0

    def warning(self, msg: str, *args) -> None:
        self.total += 1
        self.flush()
        self.in_window += 1
        if self.in_window <= self.burst:
            self.logger.warning(msg, *args)
        else:
            self.suppressed += 1

    def flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.window_start < self.window_s:
            return
        if self.suppressed:
            self.logger.warning("%d more dropped control messages in the last %.0f s (not logged one by one)",
                                self.suppressed, now - self.window_start)
        self.window_start, self.in_window, self.suppressed = now, 0, 0


def run_in_thread(fn, *args) -> tuple[Future, threading.Thread]:
    """``fn(*args)`` on a daemon thread (a validation left running never delays the exit).
    The loop keeps its share of the GIL: the interpreter switches threads every 5 ms."""
    future: Future = Future()

    def work():
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # delivered to the loop, which answers the client
            future.set_exception(exc)

    thread = threading.Thread(target=work, name="robodyn-validate", daemon=True)
    thread.start()
    return future, thread


def parse_trajectory(doc: dict):
    """The submitted trajectory document parsed, or ``invalid_trajectory`` naming the field.

    Any exception of the parser is the document's fault (the parser is the judge of what a
    trajectory is), so none of them becomes ``internal``; unexpected exception types are logged
    so a parser gap is still noticed."""
    try:
        return trajectory_from_dict(doc)
    except Exception as exc:
        if not isinstance(exc, (ValueError, TypeError, KeyError, IndexError)):
            log.warning("trajectory parser raised %s on a submitted document: %s", type(exc).__name__, exc)
        text = str(exc) or type(exc).__name__
        raise P.ProtocolError(P.E_INVALID_TRAJECTORY, f"trajectory: {text}",
                              field=trajectory_field(doc, text)) from None


def trajectory_field(doc: dict, message: str) -> str:
    """``args.trajectory`` refined by the parser's message prefix ("params.a: expected ..." names
    the parameter ``a``): the dotted path of the field at fault, as far as it is known."""
    head = message.split(":", 1)[0].strip() if ":" in message else ""
    parts = head.split(".")
    if not head or not all(p.isidentifier() for p in parts):
        return "args.trajectory"
    if parts[0] == "params":
        return "args.trajectory." + ".".join(parts[:2])
    params = doc.get("params") if isinstance(doc, dict) else None
    if isinstance(params, dict) and parts[0] in params:
        return f"args.trajectory.params.{parts[0]}"
    if parts[0] in ("format", "version", "family", "dof", "params"):
        return f"args.trajectory.{parts[0]}"
    return "args.trajectory"


def run_length_problem(duration: float, max_run_s: float) -> str | None:
    """Why a trajectory is too long to accept, or None. The cap bounds validation time, memory
    and file size; a non-finite duration would make every one of them unbounded."""
    if not math.isfinite(duration) or duration <= 0:
        return f"duration must be a positive finite number of seconds, got {duration}"
    if duration > max_run_s:
        return f"duration {duration:.0f} s exceeds the daemon's limit of {max_run_s:.0f} s ([safety].max_run_s)"
    return None


# the ROS 2 channels per sample before the recorder has measured: a JointState of 7 joints is
# ~390 B of CDR; as written (zstd, the names repeated in every message) the simulator's cost
# 49 B/sample (bench/reliability/ros2_channels.py: 336 -> 385 B/sample); 160 leaves room for
# noisier data, the raw estimate staying an upper bound
ROS2_BYTES_PER_SAMPLE = 160


def raw_bytes_per_sample(width: int, ros2: bool = False) -> float:
    """A recorded sample before the recorder has measured: the values plus seq, times and phase
    uncompressed (these float64 samples barely compress), plus the ROS 2 channels."""
    return width * 8 + SAMPLE_OVERHEAD_BYTES + (ROS2_BYTES_PER_SAMPLE if ros2 else 0)


def measured_bytes_per_sample(throughput: dict | None, width: int, ros2: bool = False) -> tuple[float, float, str]:
    """(bytes per sample, margin, where they come from): the recorder's own figure once it has
    written enough samples (its compression on this robot's data) with DISK_MARGIN, else the
    raw size plus 5 % for block framing (compression never makes these samples larger)."""
    t = throughput or {}
    samples, written = t.get("samples_written") or 0, t.get("bytes_written") or 0
    if samples >= DISK_MEASURE_MIN_SAMPLES and written > 0:
        return written / samples, DISK_MARGIN, f"measured by the recorder over {samples} samples"
    return raw_bytes_per_sample(width, ros2), 1.05, "raw sample size (the recorder has not measured enough samples yet)"


def estimated_recording_bytes(samples: int, bytes_per_sample: float, margin: float = DISK_MARGIN) -> float:
    """A run's file: its samples at the measured size times the margin, plus the fixed part."""
    return RECORDING_FIXED_BYTES + samples * bytes_per_sample * margin


def loop_jitter(loop: dict, rate_hz: float | None) -> dict | None:
    """Deviation of the loop period from nominal (ms) at the reported percentiles. In simulated
    time faster than real time the periods are shorter than nominal: negative values."""
    if not loop.get("count") or not rate_hz:
        return None
    nominal = 1000.0 / float(rate_hz)
    return {"nominal_ms": nominal, "count": loop["count"],
            **{key: loop[key] - nominal for key in ("p50_ms", "p99_ms", "p999_ms", "max_ms")
               if loop.get(key) is not None}}


@dataclass
class PendingSubmit:
    """A submit_run whose limit check runs on the validation thread; answered when it is done."""

    envelope: list
    rid: object
    args: dict
    future: Future
    started: float = field(default_factory=time.monotonic)
    cancelled: str = ""
    trajectory: object = None
    current_q: object = None
    rate: float = 0.0
    disk_estimate: dict = field(default_factory=dict)


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
        # systemd's RuntimeDirectory= when there is one; mkdtemp makes it private (0700), which is
        # what guards the internal ipc pipes
        self.runtime_dir = tempfile.mkdtemp(prefix="robodyn-", dir=os.environ.get("RUNTIME_DIRECTORY") or None)
        self.endpoints = {"driver_pipe": f"ipc://{self.runtime_dir}/driver", "publisher_pipe":
                          f"ipc://{self.runtime_dir}/publisher", "recorder_pipe":
                          f"ipc://{self.runtime_dir}/recorder", "state_ipc": f"ipc://{self.runtime_dir}/state"}
        self.ctx = zmq.Context()
        self.zap = None
        if cfg.curve:
            _public, secret = security.read_secret_key(cfg.curve_secret_key)
            # the handler must exist before the first curve socket binds, or libzmq admits anyone
            self.zap = security.ZapHandler(self.ctx, cfg.clients)
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, TRANSPORT_MAX_BYTES)
        self.handshakes = None
        if cfg.curve:
            security.make_curve_server(self.router, secret)
            self.handshakes = security.HandshakeMonitor(self.router, "control")
        self.router.bind(cfg.control)
        self.driver_pipe = self.ctx.socket(zmq.PAIR)
        self.driver_pipe.bind(self.endpoints["driver_pipe"])
        self.recorder_pipe = self.ctx.socket(zmq.PAIR)
        self.recorder_pipe.bind(self.endpoints["recorder_pipe"])
        self.publisher_pipe = self.ctx.socket(zmq.PAIR)
        self.publisher_pipe.bind(self.endpoints["publisher_pipe"])
        from .publisher import publisher_process_main
        from .recorder import recorder_process_main
        from .rtloop import driver_process_main

        self.driver = Component("driver", driver_process_main)
        self.recorder = Component("recorder", recorder_process_main)
        # republishes the stream to clients: not part of any run, so its failure neither aborts
        # a run nor disarms; it is restarted like the others
        self.publisher = Component("publisher", publisher_process_main)
        self.description: dict | None = None
        self.columns: list[str] = []
        self.layout = 0
        self.runs: list[Run] = []
        self.current: Run | None = None
        self.run_counter = 0
        self.started = time.monotonic()
        self.running = True
        self.notifier = Notifier()
        self.armed = False
        self.armed_info: dict = {}
        self.disarm_reason = "not armed since the daemon started"
        self.pending: PendingSubmit | None = None
        self.orphaned_recordings: list[str] = []  # cut by a recorder death: its successor repairs them
        self.validation_threads: list[threading.Thread] = []
        self.dropped = RateLimitedLog(log, window_s=5.0)
        self.requests = {"total": 0, "errors": {}, "dropped": 0}
        self._peer = ""  # authenticated name of the client of the request being handled
        self._envelope: list = []
        self._rid = None
        self.commands: dict[str, callable] = {
            "ping": self.cmd_ping, "status": self.cmd_status, "describe": self.cmd_describe,
            "submit_run": self.cmd_submit_run, "run_status": self.cmd_run_status, "abort": self.cmd_abort,
            "runs": self.cmd_runs, "recordings": self.cmd_recordings, "recording_info": self.cmd_recording_info,
            "arm": self.cmd_arm, "disarm": self.cmd_disarm,
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
        endpoints = dict(self.endpoints)
        if comp is self.recorder:  # files of runs whose recorder died: repaired at once on start
            endpoints["repair_now"] = list(self.orphaned_recordings)
        comp.process = ctx.Process(target=comp.target, args=(self.cfg.to_dict(), endpoints),
                                   name=f"robodyn-{comp.name}", daemon=False)
        comp.ready = False
        comp.process.start()
        comp.pid = comp.process.pid
        log.info("started %s process pid %d", comp.name, comp.pid)

    def start(self) -> None:
        """Spawn the workers and wait until both report ready (or one reports a fatal error)."""
        self._spawn(self.driver)
        self._spawn(self.recorder)
        self._spawn(self.publisher)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        poller = self._poller()
        while not (self.driver.ready and self.recorder.ready and self.publisher.ready):
            if time.monotonic() > deadline:
                raise RuntimeError("driver or recorder did not start within "
                                   f"{STARTUP_TIMEOUT_S:.0f} s")
            self.notifier.heartbeat()  # a slow robot connection is not a wedged daemon
            for sock, _ in poller.poll(100):
                if sock is self.driver_pipe:
                    self._on_driver(P.unpackb(sock.recv()))
                elif sock is self.recorder_pipe:
                    self._on_recorder(P.unpackb(sock.recv()))
                elif sock is self.publisher_pipe:
                    self._on_publisher(P.unpackb(sock.recv()))
                elif sock is getattr(self.zap, "socket", None):
                    self.zap.serve_pending()
            for comp in (self.driver, self.recorder, self.publisher):
                if comp.process is not None and not comp.process.is_alive() and not comp.ready:
                    reason = comp.last.get("fatal") or f"exit code {comp.process.exitcode}"
                    raise RuntimeError(f"{comp.name} failed to start: {reason}")

    def _poller(self):
        poller = self.zmq.Poller()
        poller.register(self.router, self.zmq.POLLIN)
        poller.register(self.driver_pipe, self.zmq.POLLIN)
        poller.register(self.recorder_pipe, self.zmq.POLLIN)
        poller.register(self.publisher_pipe, self.zmq.POLLIN)
        if self.zap is not None:
            poller.register(self.zap.socket, self.zmq.POLLIN)
            poller.register(self.handshakes.socket, self.zmq.POLLIN)
        return poller

    def serve_forever(self) -> None:
        poller = self._poller()
        next_health = time.monotonic()
        shutdown_deadline = None
        self.notifier.ready(self._status_line())
        while True:
            for sock, _ in poller.poll(50):
                if sock is self.router:
                    for _ in range(100):  # a burst of requests, without starving the pipes
                        if not self.router.poll(0):
                            break
                        self._on_request()
                elif sock is self.driver_pipe:
                    while self.driver_pipe.poll(0):
                        self._on_driver(P.unpackb(self.driver_pipe.recv()))
                elif sock is self.recorder_pipe:
                    while self.recorder_pipe.poll(0):
                        self._on_recorder(P.unpackb(self.recorder_pipe.recv()))
                elif sock is self.publisher_pipe:
                    while self.publisher_pipe.poll(0):
                        self._on_publisher(P.unpackb(self.publisher_pipe.recv()))
                elif self.zap is not None and sock is self.zap.socket:
                    self.zap.serve_pending()
                elif self.handshakes is not None and sock is self.handshakes.socket:
                    self.handshakes.serve_pending()
            if self.pending is not None and (self.pending.future.done() or self.pending.cancelled):
                self._complete_submit()
            now = time.monotonic()
            if now >= next_health:
                next_health = now + HEALTH_CHECK_S
                self._check_health()
                self.dropped.flush()
            # the heartbeat comes from this loop only: if it wedges, systemd restarts the service
            self.notifier.heartbeat()
            if not self.running:
                if shutdown_deadline is None:
                    shutdown_deadline = now + SHUTDOWN_TIMEOUT_S
                    self.notifier.stopping("stopping: bringing any motion to rest, finalizing the recording")
                    log.info("shutting down", extra={"fields": {"run_id": getattr(self.current, "id", "-")}})
                    self._cancel_pending("the daemon is shutting down")
                    if self.current is not None:
                        self._abort_current("daemon shutting down")
                if self.current is None or now > shutdown_deadline:
                    break
        self.close()

    def request_shutdown(self, *_args) -> None:
        self.running = False

    def _status_line(self) -> str:
        run = self.current
        return (f"{'ARMED' if self.armed else 'disarmed'}; robot {self.model.name} via {self.cfg.driver}; "
                + (f"run {run.id} {run.state}" if run else "idle"))

    def close(self) -> None:
        if self.zap is not None:
            self.zap.close()
            self.handshakes.close()
        for comp, pipe in ((self.driver, self.driver_pipe), (self.recorder, self.recorder_pipe),
                           (self.publisher, self.publisher_pipe)):
            if comp.alive:
                pipe.send(P.packb({"type": "shutdown"}))
        for comp in (self.driver, self.recorder, self.publisher):
            if comp.process is not None:
                comp.process.join(5.0)
                if comp.process.is_alive():
                    log.warning("%s did not stop in 5 s; terminating", comp.name)
                    comp.process.terminate()
                    comp.process.join(2.0)
        self.ctx.destroy(linger=0)
        shutil.rmtree(self.runtime_dir, ignore_errors=True)

    def _drain_pipes(self) -> None:
        while self.driver_pipe.poll(0):
            self._on_driver(P.unpackb(self.driver_pipe.recv()))
        while self.recorder_pipe.poll(0):
            self._on_recorder(P.unpackb(self.recorder_pipe.recv()))
        while self.publisher_pipe.poll(0):
            self._on_publisher(P.unpackb(self.publisher_pipe.recv()))

    def _check_health(self) -> None:
        # judge silence only on what is really unread: a slow request handler must not make a
        # healthy worker look hung
        self._drain_pipes()
        now = time.monotonic()
        for comp in (self.driver, self.recorder, self.publisher):
            if comp.process is None:
                continue
            if comp.process.is_alive():
                if comp.ready and comp.last_time and now - comp.last_time > HANG_TIMEOUT_S:
                    # alive but silent: wedged. SIGKILL, then the death path below restarts it
                    log.error("%s process %d silent for %.1f s; killing it", comp.name, comp.pid,
                              now - comp.last_time, extra={"fields": {"component": comp.name, "event": "hang"}})
                    comp.process.kill()
                    comp.process.join(2.0)
                else:
                    continue
            if comp.process.is_alive():
                continue
            comp.exit_code = comp.process.exitcode
            log.error("%s process %s died (exit code %s)", comp.name, comp.pid, comp.exit_code,
                      extra={"fields": {"component": comp.name, "event": "died", "exit_code": comp.exit_code}})
            comp.process = None
            comp.ready = False
            comp.last_time = 0.0
            if comp is self.publisher:  # clients lose their stream for a moment; the robot nothing
                if self.running:
                    comp.restarts += 1
                    self._spawn(comp)
                continue
            self._disarm(f"{comp.name} process died (exit code {comp.exit_code})")
            if comp is self.recorder:
                self._on_recorder_lost()
            else:
                self._on_driver_lost()
            if self.running:
                comp.restarts += 1
                self._spawn(comp)

    def _disarm(self, reason: str) -> None:
        """Any fault: motion needs an operator's `arm` again."""
        if self.armed:
            log.warning("DISARMED: %s", reason, extra={"fields": {"event": "disarmed"}})
        self.armed = False
        self.armed_info = {}
        self.disarm_reason = reason
        self.notifier.status(self._status_line())

    def _on_recorder_lost(self) -> None:
        run = self.current
        if run is None:
            return
        self.orphaned_recordings = (self.orphaned_recordings + [run.path])[-100:]
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
        reason = f"driver process died (exit code {self.driver.exit_code}); the robot is no longer commanded"
        seq = int(self.driver.last.get("seq", 0))
        if run.state in ("opening",):
            self._finish_run(run, "failed", reason)
            return
        run.abort_reason = reason
        run.abort_requested = True
        # the samples the dead driver published up to its last telemetry are what the recorder has
        # at least; the recorder keeps any later ones it received too
        run.done_event = {"first_seq": run.progress.get("first_seq", seq + 1), "last_seq": seq,
                          "aborted": True, "reason": reason}
        self._close_recording(run, "aborted")

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
            log.error("driver: %s", msg.get("message"), extra={"fields": {"component": "driver", "event": kind}})
            self._disarm(f"driver error: {msg.get('message')}")

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
            self._disarm(f"the driver refused run {run.id}: {run.abort_reason}")
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
        if run.recorder_lost or run.recorder_failed or not self.recorder.alive:
            self._finish_run(run, status, run.abort_reason or run.recorder_failed or "recorder unavailable")
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
            for path in msg.get("repaired", []):
                log.warning("finalized an unfinished recording left by a crash: %s", path,
                            extra={"fields": {"event": "recording_repaired", "component": "recorder"}})
        elif kind == "opened" and run is not None and msg["run"] == run.number:
            if run.abort_requested:
                run.done_event = {"first_seq": 1, "last_seq": 0, "aborted": True, "reason": run.abort_reason}
                self._close_recording(run, "aborted")
                return
            run.state = "starting"
            self.driver_pipe.send(P.packb({"type": "start_run", "run": run.number, "run_id": run.id,
                                           "move": run.move, "trajectory": run.trajectory, "mode": run.mode}))
        elif kind == "open_failed" and run is not None and msg["run"] == run.number:
            self._disarm(f"could not open the recording of run {run.id}: {msg['reason']}")
            self._finish_run(run, "failed", f"could not open the recording: {msg['reason']}")
        elif kind == "closed" and run is not None and msg["run"] == run.number:
            self._finish_run(run, run.progress.get("final_status", "completed"), run.abort_reason,
                             msg["summary"])
        elif kind == "close_failed" and run is not None and msg["run"] == run.number:
            self._disarm(f"could not finalize the recording of run {run.id}: {msg['reason']}")
            self._finish_run(run, "failed", f"could not finalize the recording: {msg['reason']}")
        elif kind == "write_failed" and run is not None and msg["run"] == run.number:
            # e.g. disk full: the recorder cut the file back to its last complete block; stop the
            # robot, since an unrecorded run is a wasted and unaccounted motion
            run.recorder_failed = f"recording failed: {msg['reason']}; file kept up to its last complete block"
            log.error("run %s: %s", run.id, run.recorder_failed, extra={"fields": {"run_id": run.id,
                                                                               "event": "write_failed"}})
            self._disarm(run.recorder_failed)
            if run.state == "opening":
                self._finish_run(run, "failed", run.recorder_failed)
            else:
                self._abort_current(run.recorder_failed)

    def _on_publisher(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == "stats":
            self.publisher.last = msg
            self.publisher.last_time = time.monotonic()
        elif kind == "ready":
            self.publisher.ready = True
            self.publisher.pid = msg["pid"]
        elif kind == "fatal":
            self.publisher.last = dict(self.publisher.last, fatal=msg.get("message"))
            log.error("publisher: %s", msg.get("message"), extra={"fields": {"component": "publisher",
                                                                            "event": "fatal"}})

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
        log.info("run %s %s%s", run.id, status, f": {reason}" if reason else "",
                 extra={"fields": {"run_id": run.id, "event": "run_finished", "status": status,
                                   "lost_samples": summary.get("lost_samples")}})
        self.notifier.status(self._status_line())

    # ----------------------------------------------------------------- requests

    def _on_request(self) -> None:
        frames = self.router.recv_multipart(copy=False)
        data = [f.bytes for f in frames]
        if len(data) == 3 and data[1] == b"":  # REQ client: identity, delimiter, payload
            envelope, payload = data[:2], data[2]
        elif len(data) == 2:  # DEALER client: identity, payload
            envelope, payload = data[:1], data[1]
        else:
            self.requests["dropped"] += 1
            self.dropped.warning("dropped a control message with %d frames (expected 1 payload frame)",
                                 len(data) - 1)
            if len(data) >= 2:
                self.router.send_multipart([data[0], P.error_reply(None, P.E_MALFORMED,
                                                                   "expected exactly one payload frame")])
            return
        self._peer = self._user_id(frames[-1])
        self._envelope = envelope
        reply = self.handle_payload(payload)
        if reply is not None:
            self.router.send_multipart(envelope + [reply])

    def _user_id(self, frame) -> str:
        """The client's name from the allow-list (set by the ZAP handler); '' without Curve."""
        if self.zap is None:
            return ""
        try:
            return frame.get("User-Id") or ""
        except Exception:  # not authenticated through ZAP
            return ""

    def handle_payload(self, payload: bytes) -> bytes | None:
        """Validate and dispatch one request; the encoded reply, or None when it is deferred."""
        rid = None
        self.requests["total"] += 1
        try:
            obj = P.unpackb(payload)
            rid = P.request_id(obj)
            req = P.parse_request(obj)
            handler = self.commands.get(req.cmd)
            if handler is None:
                raise P.ProtocolError(P.E_UNKNOWN_COMMAND, f"command {req.cmd!r} is not available in this daemon")
            self._rid = rid
            self._authorise(req.cmd)
            result = handler(req.args)
            return None if result is DEFERRED else P.ok_reply(rid, result)
        except P.ProtocolError as exc:
            self._count_error(exc.code)
            if rid is None:
                rid = getattr(exc, "request_id", None)
            return P.error_reply(rid, exc.code, exc.message, exc.details)
        except Exception as exc:  # a bug: answer, log, keep serving
            self._count_error(P.E_INTERNAL)
            log.exception("internal error while handling a request")
            return P.error_reply(rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")

    def role_of(self, peer: str) -> str:
        """The role of an authenticated client (everyone is an operator without roles)."""
        if not self.cfg.curve or not self.cfg.operators or peer in self.cfg.operators:
            return P.ROLE_OPERATOR
        return P.ROLE_SUBMITTER if peer in self.cfg.submitters else P.ROLE_ANYONE

    def _authorise(self, cmd: str) -> None:
        needed = COMMAND_ROLES.get(cmd, P.ROLE_ANYONE)
        role = self.role_of(self._peer)
        allowed = {P.ROLE_ANYONE: (P.ROLE_ANYONE, P.ROLE_SUBMITTER, P.ROLE_OPERATOR),
                   P.ROLE_SUBMITTER: (P.ROLE_SUBMITTER, P.ROLE_OPERATOR), P.ROLE_OPERATOR: (P.ROLE_OPERATOR,)}
        if role in allowed[needed]:
            return
        who = self._peer or "not authenticated"
        log.warning("%s refused: client %s has the role %s, %s needs %s", cmd, who, role, cmd, needed,
                    extra={"fields": {"event": "forbidden", "peer": who}})
        what = "arming is reserved to the operators' keys" if cmd == "arm" else \
            f"{cmd} is reserved to {'operators' if needed == P.ROLE_OPERATOR else 'operators and submitters'}"
        raise P.ProtocolError(P.E_FORBIDDEN, f"{what} ([security].operators / submitters); this client is {who} "
                                             f"({role}); abort and disarm are open to every client",
                              {"role": role, "needed": needed, "client": who}, field="cmd")

    def _count_error(self, code: str) -> None:
        errors = self.requests["errors"]
        errors[code] = errors.get(code, 0) + 1

    def _reply_later(self, envelope: list, reply: bytes) -> None:
        try:  # ROUTER drops a reply to a client that has gone: never blocks, never raises for that
            self.router.send_multipart(envelope + [reply], flags=self.zmq.NOBLOCK)
        except self.zmq.ZMQError as exc:
            log.warning("could not deliver a deferred reply: %s", exc)

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
                        "validating_s": None if self.pending is None else now - self.pending.started},
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
            "jobs": None if jobs is None else jobs.summary(),
        }

    def _current_q(self) -> np.ndarray:
        tel = self.driver.last
        if not self.driver.ready or not self.driver.alive:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the driver process is not running; see `robodyn status`")
        if time.monotonic() - self.driver.last_time > TELEMETRY_STALE_S or "q" not in tel:
            raise P.ProtocolError(P.E_UNAVAILABLE, "no fresh robot state from the driver (telemetry older than "
                                                   f"{TELEMETRY_STALE_S} s)")
        return np.asarray(tel["q"], float)

    def cmd_submit_run(self, args) -> object:
        """Quick checks here; the limit check of the trajectory runs on the validation thread and
        the reply is sent by :meth:`_complete_submit` (the loop keeps serving meanwhile)."""
        robot = args["robot"]
        if robot != self.model.name:
            raise P.ProtocolError(P.E_ROBOT, f"robot: this daemon drives {self.model.name!r}, not {robot!r}",
                                  {"robot": self.model.name}, field="args.robot")
        mode = args.get("mode", "position")
        # a run commands the trajectory's q, qd, qdd every cycle: only in modes where the driver tracks
        # them (Franka torque mode: its impedance law; the simulator's torque mode is raw torque)
        modes = (self.description or {}).get("trajectory_modes", ["position"])
        if mode not in modes:
            raise P.ProtocolError(P.E_INVALID_ARGS, f"mode: {mode!r} is not a trajectory mode of the "
                                                    f"{self.cfg.driver} driver; it runs trajectories in {modes}",
                                  field="args.mode")
        self._require_idle()
        traj = parse_trajectory(args["trajectory"])
        problem = run_length_problem(traj.duration, self.cfg.max_run_s)
        if problem:
            raise P.ProtocolError(P.E_INVALID_TRAJECTORY, f"trajectory: {problem}", field="args.trajectory.duration")
        self._require_affordable(traj)
        self._require_armed()  # after the parse: a malformed document is named even when disarmed
        if not self.recorder.alive or not self.recorder.ready:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the recorder process is not running; a run would not be recorded")
        current_q = self._current_q()
        rate = float(self.description["rate_hz"])
        pend_estimate = self._require_disk_space(traj, current_q, rate)
        future, thread = run_in_thread(plan_run, self.model, traj, current_q, rate)
        self.validation_threads.append(thread)
        self.pending = PendingSubmit(list(self._envelope), self._rid, dict(args, mode=mode), future)
        self.pending.trajectory, self.pending.current_q, self.pending.rate = traj, current_q, rate
        self.pending.disk_estimate = pend_estimate
        log.info("validating a %.1f s %s trajectory", traj.duration, traj.family,
                 extra={"fields": {"event": "validating", "peer": self._peer or "local"}})
        return DEFERRED

    def _require_idle(self) -> None:
        if self.current is not None:
            raise P.ProtocolError(P.E_BUSY, f"run {self.current.id} is in progress ({self.current.state}); "
                                            "one run at a time per robot", {"run_id": self.current.id})
        if self.pending is not None:
            raise P.ProtocolError(P.E_BUSY, "another submission is being validated; one run at a time per robot")
        # a withdrawn submission's check cannot be interrupted and finishes in the background;
        # one such leftover is tolerated, more would let submit+abort loops pile up CPU work
        self.validation_threads = [t for t in self.validation_threads if t.is_alive()]
        if len(self.validation_threads) >= MAX_VALIDATION_THREADS:
            raise P.ProtocolError(P.E_BUSY, "withdrawn submissions are still being checked; try again in a "
                                            "few seconds")

    def _require_affordable(self, traj) -> None:
        """The validation's cost, known from the parameters before anything is evaluated, within
        [safety].max_validation_cost; the check itself then runs in fixed-size windows."""
        rate = float((self.description or {}).get("rate_hz") or 1000.0)
        cost = validation_cost(traj, rate)
        budget = self.cfg.max_validation_cost
        if cost.evaluations > budget:
            raise P.ProtocolError(
                P.E_LIMIT, f"trajectory: checking it would evaluate {cost.evaluations:.3g} terms ({traj.duration:.0f} s "
                           f"x {2 * rate:.0f} Hz x {cost.terms} terms per sample), above the daemon's budget of "
                           f"{budget:.3g} ([safety].max_validation_cost); use a shorter run or fewer harmonics",
                {"limit": "validation_cost", "value": cost.evaluations, "bound": budget, "duration_s": traj.duration,
                 "rate_hz": rate, "terms_per_sample": cost.terms}, field="args.trajectory")

    def _require_armed(self) -> None:
        if self.cfg.arming_required and not self.armed:
            raise P.ProtocolError(P.E_NOT_ARMED, f"the daemon is not armed ({self.disarm_reason}); an operator "
                                                 "arms it with `robodyn arm` after checking the robot's workspace")

    def _require_disk_space(self, traj, current_q: np.ndarray, rate_hz: float) -> dict:
        """Refuse a run whose estimated file (+ [safety].min_free_mb) does not fit; the estimate:
        samples of the move to the start (its real duration), the trajectory and the settle, at
        the recorder's measured bytes per sample with a margin."""
        width = len(self.columns) or 1
        move = move_to_start(self.model, traj, current_q)
        samples = int(math.ceil((move.duration + traj.duration + self.cfg.settle_s + 0.5) * rate_hz)) + 2
        per_sample, margin, source = measured_bytes_per_sample(self.recorder.last.get("throughput"), width,
                                                               self.cfg.ros2)
        estimate = estimated_recording_bytes(samples, per_sample, margin)
        need = estimate + self.cfg.min_free_mb * 1e6
        free = shutil.disk_usage(self.recordings_dir).free
        if free < need:
            raise P.ProtocolError(P.E_UNAVAILABLE, f"not enough disk space for this run: {free / 1e6:.0f} MB free in "
                                                   f"{self.recordings_dir}, {need / 1e6:.0f} MB needed (file estimate "
                                                   f"{estimate / 1e6:.1f} MB: {samples} samples x {per_sample:.0f} B "
                                                   f"x {margin}, {source}; + [safety].min_free_mb)",
                                  {"free_bytes": free, "needed_bytes": need, "estimate_bytes": estimate})
        return {"bytes": estimate, "samples": samples, "bytes_per_sample": per_sample, "margin": margin,
                "source": source}

    def _cancel_pending(self, reason: str) -> None:
        if self.pending is not None and not self.pending.cancelled:
            self.pending.cancelled = reason

    def _complete_submit(self) -> None:
        pend, self.pending = self.pending, None
        try:
            reply = P.ok_reply(pend.rid, self._accept_run(pend))
        except P.ProtocolError as exc:
            self._count_error(exc.code)
            reply = P.error_reply(pend.rid, exc.code, exc.message, exc.details)
        except Exception as exc:  # a bug in planning: answer, log, keep serving
            self._count_error(P.E_INTERNAL)
            log.exception("internal error while validating a run")
            reply = P.error_reply(pend.rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        self._reply_later(pend.envelope, reply)

    def _accept_run(self, pend: PendingSubmit) -> dict:
        if pend.cancelled:
            raise P.ProtocolError(P.E_CANCELLED, f"submission withdrawn before any motion: {pend.cancelled}")
        try:
            plan = pend.future.result()
        except RunRejected as exc:
            raise P.ProtocolError(P.E_LIMIT, f"{exc.stage} rejected before any motion: {exc}",
                                  {"stage": exc.stage, "report": exc.report.to_dict()},
                                  field="args.trajectory") from None
        except (ValueError, ArithmeticError) as exc:  # the trajectory evaluates to nonsense
            raise P.ProtocolError(P.E_INVALID_TRAJECTORY, f"trajectory: cannot be evaluated: {exc}",
                                  field="args.trajectory") from None
        # the world may have changed while the trajectory was checked
        self._require_armed()
        if not self.recorder.alive or not self.recorder.ready:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the recorder process is not running; a run would not be recorded")
        if np.max(np.abs(self._current_q() - pend.current_q)) > HOLD_TOLERANCE:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the robot moved while the trajectory was validated; submit again")
        args, traj, rate, robot, mode = pend.args, pend.trajectory, pend.rate, pend.args["robot"], pend.args["mode"]
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
        if len(self.runs) > MAX_RUN_HISTORY:  # months of unattended runs must not grow memory
            del self.runs[:len(self.runs) - MAX_RUN_HISTORY]
        log.info("run %s accepted: %s, %.2f s (+ %.2f s move to start), validated in %.1f s", run_id, traj.family,
                 traj.duration, plan.move.duration, time.monotonic() - pend.started,
                 extra={"fields": {"run_id": run_id, "event": "run_accepted", "peer": self._peer or "local"}})
        self.notifier.status(self._status_line())
        return {"run_id": run_id, "duration_s": traj.duration, "move_duration_s": plan.move.duration,
                "trajectory_samples": traj_samples, "move_samples": move_samples, "recording": run.path,
                "limit_utilisation": plan.report.utilisation, "disk_estimate": pend.disk_estimate}

    def cmd_arm(self, args) -> dict:
        who = self._peer or "a local client"  # an operator: _authorise checked the role
        if not security.token_matches(args.get("token"), self.cfg.arm_token_sha256):
            log.warning("arming refused: wrong or missing token from %s", who,
                        extra={"fields": {"event": "arm_refused"}})
            raise P.ProtocolError(P.E_FORBIDDEN, "arming needs the operator token (robodyn arm --token-file FILE)",
                                  field="args.token")
        if not (self.driver.alive and self.driver.ready and self.recorder.alive and self.recorder.ready):
            raise P.ProtocolError(P.E_UNAVAILABLE, "cannot arm: the driver or the recorder is not running")
        self._current_q()  # fresh robot state, or `unavailable`
        self.armed = True
        self.armed_info = {"by": self._peer or "local", "since": time.monotonic()}
        log.warning("ARMED by %s: motion is enabled", who, extra={"fields": {"event": "armed"}})
        self.notifier.status(self._status_line())
        return {"armed": True, "required": self.cfg.arming_required}

    def cmd_disarm(self, args) -> dict:
        reason = f"disarmed by {self._peer or 'a local client'}" + (f": {args['reason']}" if args.get("reason") else "")
        was = self.armed
        self._disarm(reason)
        if not was:
            log.info("%s (was not armed)", reason, extra={"fields": {"event": "disarmed"}})
        self._cancel_pending(reason)
        run = self.current
        if run is not None:
            self._abort_current(reason)
        return {"armed": False, "aborted": None if run is None else run.id}

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
        if run is None:
            if self.pending is not None:
                self._cancel_pending(args.get("reason", "aborted by request"))
                return {"aborted": None, "cancelled_submission": True, "message": "submission withdrawn"}
            return {"aborted": None, "message": "no run in progress"}
        if args.get("run_id") not in (None, run.id):
            raise P.ProtocolError(P.E_NOT_FOUND, f"run {args['run_id']!r} is not the run in progress ({run.id})",
                                  field="args.run_id")
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
        rid = args["recording"]  # an id by schema (P.check_id): never a path
        path = self.recordings_dir / f"{rid}.mcap"
        if not path.exists():
            raise P.ProtocolError(P.E_NOT_FOUND, f"no recording {rid!r}", field="args.recording")
        rec = load_recording(path)
        return {**recording_summary_line(rec), "summary": rec.summary, "gaps": rec.gaps(),
                "truncated": rec.truncated, "columns": rec.meta.get("columns"), "units": rec.units}


def run_daemon(cfg: DaemonConfig) -> int:
    setup_logging()
    daemon = Daemon(cfg)
    signal.signal(signal.SIGTERM, daemon.request_shutdown)
    signal.signal(signal.SIGINT, daemon.request_shutdown)
    try:
        daemon.start()
    except Exception:
        daemon.running = False
        daemon.close()
        raise
    log.info("ready: control %s, state %s, robot %s (%s), recordings in %s, %s", cfg.control, cfg.state, cfg.robot,
             cfg.driver, daemon.recordings_dir, "CurveZMQ" if cfg.curve else "loopback only",
             extra={"fields": {"event": "ready", "arming_required": cfg.arming_required}})
    print(f"robodyn daemon ready: control {cfg.control}, state {cfg.state}, robot {cfg.robot} "
          f"({cfg.driver}), recordings in {daemon.recordings_dir}", flush=True)
    daemon.serve_forever()  # sends READY=1 to systemd before its first poll
    if any(t.is_alive() for t in daemon.validation_threads):
        # a withdrawn submission's limit check is still computing on a daemon thread; finalizing
        # the interpreter under it can abort the process, so leave without finalization
        log.info("exiting while a withdrawn validation is still running")
        logging.shutdown()
        sys.stdout.flush()
        os._exit(0)
    return 0
