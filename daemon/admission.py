"""Arming and the admission of runs: a ``submit_run`` is checked (robot, mode, trajectory, length,
validation cost, arming, recorder, disk space) and its limits are validated on a thread while the
loop keeps serving; when the check is done the run is accepted (recording opened, driver started)
or refused with the violated limit, joint and time. Nothing reaches the driver before; an accepted
run is handed to runs.py, which opens its recording and starts it.

One object of :class:`robodyn.daemon.server.Daemon` (:class:`RunAdmission`), handed its collaborators.
"""

from __future__ import annotations

import logging
import math
import re
import shutil
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from robodyn.limits import ValidationWithdrawn, validation_cost
from robodyn.robot.urdf import model_to_urdf
from robodyn.trajectory import trajectory_from_dict

from . import protocol as P
from . import security
from .dispatch import DEFERRED
from .motion import HOLD_TOLERANCE, RunRejected, move_to_start, plan_run
from .runs import Run, Runs

log = logging.getLogger("robodyn.daemon")

# bytes per recorded sample besides the values: seq, robot_time, host_time_ns (8 each), phase (1)
SAMPLE_OVERHEAD_BYTES = 25
# Disk estimate: bytes per sample as the recorder measures them on the files it writes (zstd of
# noisy float64 samples in 50 ms blocks barely compresses: 333 B/sample for the simulator's 42
# columns, against 361 B raw; bench/reliability/run.py --only disk), times this margin. Until the
# recorder has written DISK_MEASURE_MIN_SAMPLES, the raw (uncompressed) size is the estimate.
DISK_MARGIN = 1.25
DISK_MEASURE_MIN_SAMPLES = 5_000
RECORDING_FIXED_BYTES = 64 * 1024  # self-description (16 KB for a Panda: URDF, trajectory, driver facts), summary, events
MAX_VALIDATION_THREADS = 2  # the one being checked plus one withdrawn that has not reached its next window


def run_in_thread(fn, *args) -> tuple[Future, threading.Thread]:
    """``fn(*args)`` on a daemon thread (a validation left running never delays the exit).
    The loop keeps its share of the GIL: the interpreter switches threads every 5 ms."""
    future: Future = Future()

    def work():
        try:
            future.set_result(fn(*args))
        except ValidationWithdrawn as exc:  # nobody waits for it: the client was answered at the abort
            log.info("withdrawn submission: its check stopped %s", exc, extra={"fields": {"event": "check_stopped"}})
            future.set_exception(exc)
        except BaseException as exc:  # delivered to the loop, which answers the client
            future.set_exception(exc)

    thread = threading.Thread(target=work, name="robodyn-validate", daemon=True)
    thread.start()
    return future, thread


def plan_and_encode(model, traj, current_q, rate_hz: float, withdrawn) -> tuple:
    """On the validation thread: the run's plan (motion.plan_run), and the trajectory and the
    move to its start as the documents the recorder and the driver are sent, the trajectory's
    encoded here (protocol.Packed): a sampled one of 220 000 samples takes 1.3 s to turn into a
    document and 0.4 s to encode, work the main loop never does."""
    plan = plan_run(model, traj, current_q, rate_hz, withdrawn)
    return plan, P.Packed(P.packb(traj.to_dict(robot=model.name))), plan.move.to_dict(robot=model.name)


def prepare_request(req: P.Request) -> dict:
    """On a large request's thread (intake.py): the work of its handler that needs nothing of
    the daemon's state, done before the loop dispatches it: a submitted trajectory parsed."""
    if req.cmd == "submit_run":
        return {"trajectory": parse_trajectory(req.args["trajectory"])}
    return {}


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


_PATH_PART = re.compile(r"[^\W\d]\w*(\[\d+\])*")


def trajectory_field(doc: dict, message: str) -> str:
    """``args.trajectory`` refined by the parser's message prefix: every message of the parser
    begins with the dotted path of the field at fault (``params.parts[3].params.wf: ...``,
    robodyn/trajectory/schema.py), which names it in ``details.field``."""
    head = message.split(":", 1)[0].strip() if ":" in message else ""
    if head and all(_PATH_PART.fullmatch(p) for p in head.split(".")):
        return "args.trajectory." + head
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


@dataclass
class PendingSubmit:
    """A submit_run whose limit check runs on the validation thread; answered when it is done."""

    envelope: list
    rid: object
    args: dict
    future: Future
    started: float = field(default_factory=time.monotonic)
    cancelled: str = ""
    withdrawn: threading.Event = field(default_factory=threading.Event)  # tells the check to stop
    trajectory: object = None
    current_q: object = None
    rate: float = 0.0
    disk_estimate: dict = field(default_factory=dict)


class RunAdmission:
    """Arming, and the path of a submitted run to an accepted one: submit, check, accept.

    Handed what it needs: the robot model, the config and the recordings' folder; the robot's
    newest state (status.RobotState: the driver's description and position); the driver's and the
    recorder's worker (supervision.Component: running and ready, the recorder's measured bytes per
    sample); the runs (runs.Runs: the one in progress, and where an accepted run goes); the request
    being handled (dispatch.RequestContext); and callables: ``reply_later(envelope, reply)``,
    ``count_error(code)``, ``changed()`` (cached reads are out of date) and ``announce()`` (the
    status line to systemd)."""

    def __init__(self, model, cfg, recordings_dir, robot, driver, recorder, runs: Runs, request, *, reply_later,
                 count_error, changed, announce):
        self.model, self.cfg, self.recordings_dir = model, cfg, recordings_dir
        self.robot, self.driver, self.recorder, self.runs, self.request = robot, driver, recorder, runs, request
        self.reply_later, self.count_error, self.changed, self.announce = reply_later, count_error, changed, announce
        self.armed = False
        self.armed_info: dict = {}
        self.disarm_reason = "not armed since the daemon started"
        self.pending: PendingSubmit | None = None
        self.validation_threads: list[threading.Thread] = []

    def disarm(self, reason: str) -> None:
        """Any fault: motion needs an operator's `arm` again."""
        if self.armed:
            # the reason may quote a client's text: a quoted field, so that a key=value reader never
            # takes words inside it (e.g. "event=armed") for the record's own fields
            log.warning("DISARMED", extra={"fields": {"event": "disarmed", "reason": reason}})
        self.armed = False
        self.armed_info = {}
        self.disarm_reason = reason
        self.changed()
        self.announce()

    def cmd_submit_run(self, args) -> object:
        """Quick checks here; the limit check of the trajectory runs on the validation thread and
        the reply is sent by :meth:`complete_submit` (the loop keeps serving meanwhile)."""
        robot = args["robot"]
        if robot != self.model.name:
            raise P.ProtocolError(P.E_ROBOT, f"robot: this daemon drives {self.model.name!r}, not {robot!r}",
                                  {"robot": self.model.name}, field="args.robot")
        mode = args.get("mode", "position")
        # a run commands the trajectory's q, qd, qdd every cycle: only in modes where the driver tracks
        # them (Franka torque mode: its impedance law; the simulator's torque mode is raw torque)
        modes = (self.robot.description or {}).get("trajectory_modes", ["position"])
        if mode not in modes:
            raise P.ProtocolError(P.E_INVALID_ARGS, f"mode: {mode!r} is not a trajectory mode of the "
                                                    f"{self.cfg.driver} driver; it runs trajectories in {modes}",
                                  field="args.mode")
        self._require_idle()
        # parsed on the large request's thread when it came in a large frame (intake.py)
        traj = self.request.prepared.get("trajectory") or parse_trajectory(args["trajectory"])
        problem = run_length_problem(traj.duration, self.cfg.max_run_s)
        if problem:
            raise P.ProtocolError(P.E_INVALID_TRAJECTORY, f"trajectory: {problem}", field="args.trajectory.duration")
        self._require_affordable(traj)
        self._require_armed()  # after the parse: a malformed document is named even when disarmed
        if not self.recorder.alive or not self.recorder.ready:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the recorder process is not running; a run would not be recorded")
        current_q = self.robot.current_q()
        rate = float(self.robot.description["rate_hz"])
        pend_estimate = self._require_disk_space(traj, current_q, rate)
        withdrawn = threading.Event()
        future, thread = run_in_thread(plan_and_encode, self.model, traj, current_q, rate, withdrawn.is_set)
        self.validation_threads.append(thread)
        self.pending = PendingSubmit(list(self.request.envelope), self.request.rid, dict(args, mode=mode), future,
                                     withdrawn=withdrawn)
        self.pending.trajectory, self.pending.current_q, self.pending.rate = traj, current_q, rate
        self.pending.disk_estimate = pend_estimate
        log.info("validating a %.1f s %s trajectory", traj.duration, traj.family,
                 extra={"fields": {"event": "validating", "peer": self.request.peer or "local"}})
        return DEFERRED

    def _require_idle(self) -> None:
        current = self.runs.current
        if current is not None:
            raise P.ProtocolError(P.E_BUSY, f"run {current.id} is in progress ({current.state}); "
                                            "one run at a time per robot", {"run_id": current.id})
        if self.pending is not None:
            raise P.ProtocolError(P.E_BUSY, "another submission is being validated; one run at a time per robot")
        # a withdrawn submission's check stops at its next window (one window of work); one such
        # leftover is tolerated, more would let submit+abort loops pile up CPU work
        self.validation_threads = [t for t in self.validation_threads if t.is_alive()]
        if len(self.validation_threads) >= MAX_VALIDATION_THREADS:
            raise P.ProtocolError(P.E_BUSY, "withdrawn submissions are still being checked; try again in a "
                                            "few seconds")

    def _require_affordable(self, traj) -> None:
        """The validation's cost, known from the parameters before anything is evaluated, within
        [safety].max_validation_cost; the check itself then runs in fixed-size windows."""
        rate = float((self.robot.description or {}).get("rate_hz") or 1000.0)
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
        width = len(self.robot.columns) or 1
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

    def cancel_pending(self, reason: str) -> None:
        if self.pending is not None and not self.pending.cancelled:
            self.pending.cancelled = reason
            self.pending.withdrawn.set()

    def checked(self) -> bool:
        """The submission being checked has its answer (or was withdrawn): :meth:`complete_submit`."""
        return self.pending is not None and (self.pending.future.done() or bool(self.pending.cancelled))

    def complete_submit(self) -> None:
        pend, self.pending = self.pending, None
        self.changed()
        try:
            reply = P.ok_reply(pend.rid, self._accept_run(pend))
        except P.ProtocolError as exc:
            self.count_error(exc.code)
            reply = P.error_reply(pend.rid, exc.code, exc.message, exc.details)
        except Exception as exc:  # a bug in planning: answer, log, keep serving
            self.count_error(P.E_INTERNAL)
            log.exception("internal error while validating a run")
            reply = P.error_reply(pend.rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        self.reply_later(pend.envelope, reply)

    def _accept_run(self, pend: PendingSubmit) -> dict:
        if pend.cancelled:
            raise P.ProtocolError(P.E_CANCELLED, f"submission withdrawn before any motion: {pend.cancelled}")
        try:
            plan, trajectory, move = pend.future.result()
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
        if np.max(np.abs(self.robot.current_q() - pend.current_q)) > HOLD_TOLERANCE:
            raise P.ProtocolError(P.E_UNAVAILABLE, "the robot moved while the trajectory was validated; submit again")
        args, traj, rate, robot, mode = pend.args, pend.trajectory, pend.rate, pend.args["robot"], pend.args["mode"]
        number, run_id = self.runs.next_run()
        move_samples, traj_samples = plan.sample_counts(rate)
        run = Run(id=run_id, number=number, robot=robot, mode=mode, label=args.get("label", ""),
                  trajectory=trajectory, move=move,
                  duration=traj.duration, move_duration=plan.move.duration, trajectory_samples=traj_samples,
                  move_samples=move_samples, path=str(self.recordings_dir / f"{run_id}.mcap"),
                  requested=pend.started)
        meta = {"run_id": run_id, "robot": self.model.summary(), "model_urdf": model_to_urdf(self.model),
                "model_inertial": self.model.inertial.tolist(), "model_rotor_inertia": self.model.rotor_inertia.tolist(),
                "driver": self.robot.description, "rate_hz": rate, "columns": self.robot.columns,
                "units": {s["name"]: s["unit"] for s in self.robot.description["signals"]},
                "trajectory": run.trajectory, "move_to_start": run.move, "mode": mode, "label": run.label,
                "limit_utilisation": plan.report.utilisation, "protocol": P.PROTOCOL_VERSION,
                "time_base": {"robot_time": "s, robot clock", "host_time_ns": "CLOCK_MONOTONIC ns at driver read"}}
        self.runs.open(run, meta, len(self.robot.columns))  # the recording opened, then the run started: runs.py
        log.info("run %s accepted: %s, %.2f s (+ %.2f s move to start), validated in %.1f s", run_id, traj.family,
                 traj.duration, plan.move.duration, time.monotonic() - pend.started,
                 extra={"fields": {"run_id": run_id, "event": "run_accepted", "peer": self.request.peer or "local"}})
        self.announce()
        return {"run_id": run_id, "duration_s": traj.duration, "move_duration_s": plan.move.duration,
                "trajectory_samples": traj_samples, "move_samples": move_samples, "recording": run.path,
                "limit_utilisation": plan.report.utilisation, "disk_estimate": pend.disk_estimate}

    def cmd_arm(self, args) -> dict:
        who = self.request.peer or "a local client"  # an operator: _authorise checked the role
        if not security.token_matches(args.get("token"), self.cfg.arm_token_sha256):
            log.warning("arming refused: wrong or missing token from %s", who,
                        extra={"fields": {"event": "arm_refused"}})
            raise P.ProtocolError(P.E_FORBIDDEN, "arming needs the operator token (robodyn arm --token-file FILE)",
                                  field="args.token")
        if not (self.driver.alive and self.driver.ready and self.recorder.alive and self.recorder.ready):
            raise P.ProtocolError(P.E_UNAVAILABLE, "cannot arm: the driver or the recorder is not running")
        self.robot.current_q()  # fresh robot state, or `unavailable`
        self.armed = True
        self.armed_info = {"by": self.request.peer or "local", "since": time.monotonic()}
        log.warning("ARMED by %s: motion is enabled", who, extra={"fields": {"event": "armed"}})
        self.announce()
        return {"armed": True, "required": self.cfg.arming_required}

    def cmd_disarm(self, args) -> dict:
        reason = (f"disarmed by {self.request.peer or 'a local client'}"
                  + (f": {args['reason']}" if args.get("reason") else ""))
        was = self.armed
        self.disarm(reason)
        if not was:
            log.info("disarm asked while not armed", extra={"fields": {"event": "disarmed", "reason": reason}})
        self.cancel_pending(reason)
        run = self.runs.current
        if run is not None:
            self.runs.abort_current(reason)
        return {"armed": False, "aborted": None if run is None else run.id}
