"""The driver process: the real-time loop, alone in its interpreter.

A busy thread sharing the interpreter with a 1 kHz loop was measured to drop it to ~640 Hz
(pylibfranka holds the GIL), so the loop owns this process: nothing else runs here but the loop.

Per cycle, in this order (the command goes out before anything that is not control)::

    state = driver.read()             blocks until the robot's cycle (the sim paces itself)
    stop socket: poll(2), 0 timeout   abort / disarm acted on now, before this cycle's command (stop_socket.py)
    executor.tick(state)              run state machine -> driver.write(command) when active
    batcher.append(sample)            preallocated arrays, no allocation
    publish the batch when due        PUB, never blocks (drops are visible as sequence gaps)
    every POLL_EVERY cycles: poll the control pipe from the main process (non-blocking); while a
                      run moves the robot and nothing came, judge the main process's silence
                      (SupervisorWatch): too long, and the loop ramps the robot to rest itself
    every TELEMETRY_S: telemetry to the main process

Sockets: PUB bound on the internal ipc endpoint only (read by the recorder and by the publisher
process, which serves clients: daemon/publisher.py); PAIR connected to the main process (commands
in, events and telemetry out).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
import traceback
import zlib

import numpy as np

from robodyn.drivers.base import ConnectionLost, ControlMode, DriverError, JointCommand, ProtectiveStop
from robodyn.drivers.loop_stats import PeriodHistogram
from robodyn.drivers.pacing import set_realtime
from robodyn.trajectory import trajectory_from_dict

from . import protocol as P
from .main_process import (holding_the_gil, main_process_gone, main_process_pid, say_leaving, start_up_done,
                           start_up_step, watch_start_up)
from .motion import StopRamp, TrajectoryFeeder
from .schedstat import open_schedstat, run_delay_s
from .stop_socket import MAX_STOPS_PER_CYCLE, StopServer, sender_name
from .supervisor_watch import SUPERVISOR_ALIVE, AliveBeacon, SupervisorWatch

POLL_EVERY = 10  # cycles between control-pipe polls (10 ms at 1 kHz)
TELEMETRY_S = 0.1
BATCH_CAPACITY = 256  # samples; a batch is also published when full
PUB_HWM = 200_000  # internal ipc only (recorder, publisher): messages queued before a drop (3 min at 1 kHz)
# The recorder gets the stream in batches of this span (topic "record"); the live stream keeps one
# sample per batch. The recorder's work is mostly per batch: at 10 samples a batch its CPU per
# recorded sample was a sixth of that at one (bench/acquisition/recorder_cost.py). With one, a
# starved recorder (stress-ng --cpu 4 beside a loaded test suite) fell minutes behind, its queue
# filled, and the run's tail, waiting in this process's queue, died with it when the robot link broke.
# A SIGKILLed driver loses at most this span of samples it had not yet published.
RECORD_BATCH_MS = 10.0
class MainProcessGone(Exception):
    """The daemon's main process died while this driver process started: it connects to no robot."""


def layout_id(columns: list[str]) -> int:
    return zlib.crc32(",".join(columns).encode())


class Batcher:
    """Consecutive samples waiting to be published, in preallocated arrays."""

    def __init__(self, width: int, interval_ns: int, capacity: int = BATCH_CAPACITY):
        self.seq = np.zeros(capacity, dtype=np.uint64)
        self.robot_time = np.zeros(capacity)
        self.host_time_ns = np.zeros(capacity, dtype=np.int64)
        self.phase = np.zeros(capacity, dtype=np.uint8)
        self.run = np.zeros(capacity, dtype=np.uint32)
        self.values = np.zeros((capacity, width))
        self.n = 0
        self.interval_ns = interval_ns
        self.last_publish_ns = 0

    def append(self, seq: int, robot_time: float, host_ns: int, phase: int, run: int, values: np.ndarray) -> None:
        i = self.n
        self.seq[i] = seq
        self.robot_time[i] = robot_time
        self.host_time_ns[i] = host_ns
        self.phase[i] = phase
        self.run[i] = run
        self.values[i] = values
        self.n = i + 1

    def due(self, now_ns: int) -> bool:
        return self.n > 0 and (self.n == self.seq.shape[0] or now_ns - self.last_publish_ns >= self.interval_ns)

    def pack(self, robot: str, layout: int, now_ns: int) -> bytes:
        n = self.n
        payload = P.pack_state_batch(robot, layout, self.seq[:n], self.robot_time[:n], self.host_time_ns[:n],
                                     self.phase[:n], self.run[:n], self.values[:n])
        self.n = 0
        self.last_publish_ns = now_ns
        return payload


class TrackingError:
    """Per-joint RMS and max of (commanded position of the previous cycle - measured position)."""

    def __init__(self, dof: int):
        self.sumsq = np.zeros(dof)
        self.maxabs = np.zeros(dof)
        self.n = 0
        self._err = np.zeros(dof)

    def add(self, q_cmd_prev: np.ndarray, q: np.ndarray) -> None:
        np.subtract(q_cmd_prev, q, out=self._err)
        np.abs(self._err, out=self._err)
        np.maximum(self.maxabs, self._err, out=self.maxabs)
        self._err *= self._err
        self.sumsq += self._err
        self.n += 1

    def summary(self) -> dict:
        if self.n == 0:
            return {"samples": 0}
        rms = np.sqrt(self.sumsq / self.n)
        return {"samples": self.n, "rms_rad": rms.tolist(), "max_rad": self.maxabs.tolist(),
                "rms_overall_rad": float(np.sqrt(np.mean(rms ** 2))), "max_overall_rad": float(self.maxabs.max())}


class RunExecutor:
    """The run state machine: move to start -> execute -> settle -> brake; abort ramps to rest."""

    def __init__(self, driver, rate_hz: float, settle_s: float, emit):
        desc = driver.describe()
        self.driver = driver
        self.rate_hz = rate_hz
        self.settle_count = max(1, int(round(settle_s * rate_hz)))
        self.emit = emit  # callable(dict): events to the main process and the stream
        self.dof = desc.dof
        self.qdd_max = np.asarray(desc.limits["qdd_max"], float)
        self.qddd_max = np.asarray(desc.limits["qddd_max"], float)
        self.cmd = JointCommand(self.dof)
        self._prev_q = np.zeros(self.dof)
        self.phase = P.PHASE_IDLE
        self.run = 0
        self.stamp_phase, self.stamp_run = P.PHASE_IDLE, 0
        self.run_id = ""
        self.source = None
        self.move = self.traj = None
        self.settle_left = 0
        self.aborted = False
        self.abort_reason = ""
        self.first_seq = 0
        self.tracking = TrackingError(self.dof)

    @property
    def busy(self) -> bool:
        return self.phase != P.PHASE_IDLE

    def start(self, msg: dict, state, seq: int) -> None:
        """Begin a run. Trajectories arrive validated by the main process (limits.check_trajectory)."""
        if self.busy:
            raise RuntimeError(f"run {self.run_id} still active")
        move = TrajectoryFeeder(trajectory_from_dict(msg["move"]), self.rate_hz)
        traj = TrajectoryFeeder(trajectory_from_dict(msg["trajectory"]), self.rate_hz)
        self.driver.start(ControlMode(msg.get("mode", "position")))
        self.move, self.traj, self.source = move, traj, move
        self.run, self.run_id = int(msg["run"]), str(msg["run_id"])
        self.aborted, self.abort_reason = False, ""
        self.tracking = TrackingError(self.dof)
        self.first_seq = seq + 1
        self.phase = P.PHASE_MOVE
        self._prev_q[:] = state.q
        # an abort before the first command ramps from where the robot is, at rest (not from the
        # previous run's last command)
        self.cmd.q[:] = state.q
        self.cmd.qd[:] = 0.0
        self.cmd.qdd[:] = 0.0
        self.emit({"event": "started", "run": self.run, "run_id": self.run_id, "first_seq": self.first_seq,
                   "move_samples": move.count, "trajectory_samples": traj.count})

    def abort(self, reason: str) -> bool:
        if self.phase in (P.PHASE_MOVE, P.PHASE_EXECUTE):
            self.source = StopRamp(self.cmd.q, self.cmd.qd, self.qdd_max, self.qddd_max, self.rate_hz)
            self.phase = P.PHASE_STOPPING
        elif self.phase not in (P.PHASE_STOPPING, P.PHASE_SETTLE):
            return False
        self.aborted, self.abort_reason = True, reason
        self.emit({"event": "aborting", "run": self.run, "run_id": self.run_id, "reason": reason})
        return True

    def progress(self) -> dict:
        if not self.busy:
            return {"phase": "idle"}
        out = {"phase": P.PHASE_NAMES[self.phase], "run": self.run, "run_id": self.run_id}
        if self.traj is not None:
            out.update(trajectory_index=min(self.traj.index, self.traj.count), trajectory_samples=self.traj.count,
                       move_index=min(self.move.index, self.move.count), move_samples=self.move.count)
        return out

    def tick(self, state, seq: int) -> None:
        """One cycle. Sets ``stamp_phase`` / ``stamp_run``: what this cycle's sample is labelled
        with (the phase its command was issued in, even when the run ends on this cycle)."""
        self.stamp_phase, self.stamp_run = self.phase, self.run
        if self.phase == P.PHASE_IDLE:
            return
        if self.phase == P.PHASE_EXECUTE:
            self.tracking.add(self._prev_q, state.q)
        cmd = self.cmd
        if self.phase == P.PHASE_MOVE and self.source.done:
            self.source = self.traj
            self._enter(P.PHASE_EXECUTE, seq)
        if self.phase in (P.PHASE_EXECUTE, P.PHASE_STOPPING) and self.source.done:
            self.settle_left = self.settle_count
            self._enter(P.PHASE_SETTLE, seq)
        if self.phase == P.PHASE_SETTLE:
            cmd.qd[:] = 0.0
            cmd.qdd[:] = 0.0
            self.settle_left -= 1
        else:
            self.source.next_into(cmd.q, cmd.qd, cmd.qdd)
        self.driver.write(cmd)
        self._prev_q[:] = cmd.q
        self.stamp_phase = self.phase
        if self.phase == P.PHASE_SETTLE and self.settle_left <= 0:
            self.driver.stop()
            self._finish(seq)

    def _enter(self, phase: int, seq: int) -> None:
        self.phase = phase
        self.emit({"event": "phase", "run": self.run, "run_id": self.run_id, "phase": P.PHASE_NAMES[phase],
                   "seq": seq})

    def _finish(self, seq: int, error: str = "") -> None:
        self.emit({"event": "done", "run": self.run, "run_id": self.run_id, "first_seq": self.first_seq,
                   "last_seq": seq, "aborted": self.aborted or bool(error),
                   "reason": error or self.abort_reason,
                   "executed_samples": min(self.traj.index, self.traj.count) if self.traj else 0,
                   "trajectory_samples": self.traj.count if self.traj else 0,
                   "tracking": self.tracking.summary()})
        self.phase = P.PHASE_IDLE
        self.run = 0
        self.source = self.move = self.traj = None

    def fail(self, seq: int, error: str) -> None:
        """The driver raised: the robot stopped itself or the link broke; close the run."""
        if not self.busy:
            return
        try:
            self.driver.stop()
        except DriverError:
            pass
        self._finish(seq, error)


class DriverLoop:
    def __init__(self, cfg, endpoints: dict):
        import zmq

        from robodyn.drivers.registry import create_driver

        # first: the main process may die while this start-up runs (daemon/main_process.py)
        self.parent_pid = main_process_pid()
        self.cfg = cfg
        # before the ZeroMQ context: its I/O thread, which does the actual sending, inherits the
        # scheduling policy, so the stream is as timely as the loop
        self.scheduler = set_realtime(cfg.rt_priority)
        self.ctx = zmq.Context()
        self.pipe = self.ctx.socket(zmq.PAIR)
        self.pipe.setsockopt(zmq.LINGER, 1000)
        self.pipe.setsockopt(zmq.SNDHWM, 100_000)  # a stalled main process must never block the loop
        self.pipe.connect(endpoints["driver_pipe"])
        # every driver builds on the configured robot model; [driver] need not repeat it
        start_up_step("while loading the driver")
        self.driver = create_driver(cfg.driver, {"robot": cfg.robot, **cfg.driver_options})
        self.desc = self.driver.describe()
        if self._parent_gone():  # connect to no robot for nobody (the simulator's connect compiles its kernels)
            self.ctx.destroy(linger=0)
            raise MainProcessGone
        # the connect is the slow step (a cold compile, a robot that does not answer): the start-up
        # watch leaves during it if the main process dies (daemon/main_process.py)
        start_up_step(getattr(self.driver, "connect_step", lambda: "while connecting to the robot")())
        self.driver.holding_the_gil = holding_the_gil
        self.driver.connect()
        # the stream leaves this process only on the internal ipc endpoint, to two subscribers of
        # ours: the recorder and the publisher process, which republishes it to clients. No client
        # connection, stalled or not, ever holds memory in the process of the real-time loop.
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.SNDHWM, PUB_HWM)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.bind(endpoints["state_ipc"])
        self.terminate_requested = False  # SIGTERM: stop like a shutdown request (ramp, then exit)
        self.zmq = zmq
        self.columns = self.desc.columns()
        self.layout = layout_id(self.columns)
        self.rate_hz = self.desc.rate_hz
        self.batcher = Batcher(self.desc.width, int(cfg.publish_interval_ms * 1e6))
        self.record_batcher = Batcher(self.desc.width, int(RECORD_BATCH_MS * 1e6))
        self.executor = RunExecutor(self.driver, self.rate_hz, cfg.settle_s, self._emit)
        self.stops, self.stops_error = self._bind_stop_socket(endpoints.get("stop_socket"))
        self.stats_run = PeriodHistogram()
        self.stats_all = PeriodHistogram()
        self.seq = 0
        self.skip_run_period = False
        self.dropped_to_main = 0
        self.running = True
        self.state = None
        # the main process's scheduler statistics: how long its loop waited for a CPU (SupervisorWatch)
        self.supervisor_schedstat = open_schedstat(self.parent_pid)
        self.alive_beacon = AliveBeacon(endpoints["supervisor_alive"], False) if endpoints.get("supervisor_alive") else None
        self.supervisor_watch: SupervisorWatch | None = None
        self.supervisor_stops = 0  # runs this loop stopped because the main process fell silent

    def _bind_stop_socket(self, path: str | None) -> tuple:
        """(StopServer or None, why not): without it clients stop through the control endpoint."""
        if not path:
            return None, "no stop socket configured"
        mode = 0o660 if self.cfg.token_file_mode == 0o640 else 0o600  # as the state socket's (publisher.py)
        try:
            return StopServer(path, mode, self.rate_hz), ""
        except Exception as exc:  # noqa: BLE001 - the loop runs on; stops take the control endpoint
            print(f"robodyn driver: could not bind the stop socket {path}: {exc}; stops go through the "
                  "control endpoint", file=sys.stderr, flush=True)
            return None, f"{type(exc).__name__}: {exc}"

    def _emit(self, event: dict) -> None:
        event = dict(event, type="run_event", host_time_ns=time.monotonic_ns())
        if event["event"] == "done":
            event["loop"] = self.stats_run.summary()
        if event["event"] == "started":
            self.stats_run.reset()
            # the cycle that prepared the run (trajectory parsing, braked robot) is not a run cycle
            self.skip_run_period = True
        self._to_main(event)
        self._publish([P.TOPIC_EVENT, P.packb(event)])

    def _publish(self, frames: list) -> None:
        """To the recorder and the publisher; PUB never blocks (a lost message is a seq gap)."""
        self.pub.send_multipart(frames, flags=self.zmq.NOBLOCK)

    def _parent_gone(self) -> bool:
        """The main process died (even SIGKILL): nobody supervises this loop any more."""
        return main_process_gone(self.parent_pid)

    def _supervisor_run_delay_s(self) -> float | None:
        return run_delay_s(self.supervisor_schedstat)

    def _check_supervisor(self, now_ns: int) -> bool:
        """Stop the run if it moves the robot and the main process has been silent too long (no
        message on the pipe this time). Only while it moves: a settle holds the robot at rest, a
        stopping ramp already brings it there, and an idle robot needs no supervisor."""
        if P.PHASE_MOVE <= self.executor.phase <= P.PHASE_EXECUTE and self.supervisor_watch.too_long(now_ns):
            self._stop_unsupervised(now_ns)
            return True
        return False

    def _stop_unsupervised(self, now_ns: int) -> None:
        """The main process has been silent too long while the robot moves: ramp it to rest (the
        ramp of every abort) and say why, to the stream (the recording's events), to the main
        process (it disarms once it reads its pipe again) and to the log, which a frozen main
        process cannot write."""
        executor, watch = self.executor, self.supervisor_watch
        reason = watch.reason(now_ns)
        executor.abort(reason)
        self.supervisor_stops += 1
        self._emit({"event": "supervisor_silent", "run": executor.run, "run_id": executor.run_id, "reason": reason,
                    "silent_s": (now_ns - watch.heard_ns) / 1e9, "starved_s": watch.starved_ns / 1e9,
                    "bound_s": watch.bound_ns / 1e9})
        print(f"robodyn driver: run {executor.run_id}: {reason}", file=sys.stderr, flush=True)

    def _to_main(self, msg: dict) -> bool:
        """Non-blocking send to the main process; False if its queue is full (message dropped)."""
        try:
            self.pipe.send(P.packb(msg), flags=self.zmq.NOBLOCK)
            return True
        except self.zmq.Again:
            self.dropped_to_main += 1
            return False

    def _telemetry(self, state, now_ns: int) -> dict:
        # sent_ns (CLOCK_MONOTONIC, shared by the processes): how old this state is when the main
        # process judges it, however late it reads its pipe
        return {"type": "telemetry", "seq": self.seq, "robot_time": state.robot_time, "sent_ns": now_ns,
                "q": state.q.tolist(), "qd": state.qd.tolist(), "tau": state.tau.tolist(),
                "progress": self.executor.progress(), "loop": self.stats_all.summary(),
                "loop_run": self.stats_run.summary(), "driver": self.driver.diagnostics(),
                "lifecycle": self.driver.lifecycle, "scheduler": self.scheduler,
                "dropped_to_main": self.dropped_to_main, "supervisor_stops": self.supervisor_stops,
                "stop_socket": self.stops.summary(self.seq) if self.stops is not None else {"error": self.stops_error}}

    def _handle(self, msg: dict, state) -> None:
        kind = msg.get("type")
        if kind == "start_run":
            stops = self.stops
            if stops is not None and msg.get("stops_seen") is not None and msg["stops_seen"] < stops.served:
                # admitted before the main process heard of a stop served here: never start it on
                # that stale word; the main process aborts it or, admitted after the stop, sends it again
                self._to_main({"type": "run_event", "event": "refused", "run": msg.get("run"),
                               "run_id": msg.get("run_id"), "stale_stop": True, "stops_served": stops.served,
                               "reason": "a stop came in on the stop socket before this run started"})
                return
            try:
                self.executor.start(msg, state, self.seq)
            except Exception as exc:  # refuse, tell the main process, keep looping
                self._to_main({"type": "run_event", "event": "refused", "run": msg.get("run"),
                               "run_id": msg.get("run_id"), "reason": str(exc)})
        elif kind == "abort":
            self.executor.abort(str(msg.get("reason", "aborted by request")))
        elif kind == "shutdown":
            if self.executor.busy:
                self.executor.abort("daemon shutting down")
            self.running = False
        elif kind == "reset_stats":
            self.stats_all.reset()

    def _serve_stops(self, seq: int, now: int, previous_cycle_ns: int) -> None:
        """The stops waiting on the stop socket, acted on in this cycle before its command is
        written (``executor.abort``: the ramp to rest of every stop); the main process is told
        (``stop_served``) before the client is answered, so what the client sees next from the
        main process already knows of the stop."""
        stops, executor = self.stops, self.executor
        for _ in range(MAX_STOPS_PER_CYCLE):
            got = stops.receive()
            if got is None:
                return
            if not got:
                continue
            sender, req, rid, stamps, creds = got
            run_id = req.args.get("run_id")
            if run_id is not None and executor.busy and run_id != executor.run_id:
                stops.refuse(sender, rid, P.E_NOT_FOUND, f"run {run_id!r} is not the run in progress "
                             f"({executor.run_id})", "args.run_id")
                continue
            if req.cmd == "disarm":
                reason = f"disarmed by {sender_name(creds)}" + (f": {req.args['reason']}"
                                                                 if req.args.get("reason") else "")
            else:
                reason = req.args.get("reason", "aborted by request")
            moving = executor.run_id if executor.busy else None
            acted = executor.abort(reason) if executor.busy else False
            figures = stops.record(req.cmd, seq, self.seq, stamps, previous_cycle_ns)
            self._to_main({"type": "stop_served", **figures, "reason": reason, "run": executor.run,
                           "run_id": moving, "requested_run_id": run_id, "served_ns": now, "acted": acted,
                           "sender": sender_name(creds)})
            result = {"aborted": moving, "state": P.PHASE_NAMES[executor.phase], "served_by": "driver",
                      "stop": figures}
            if req.cmd == "disarm":
                result["armed"] = False
            stops.answer(sender, rid, result)

    def run(self) -> None:
        pipe, batcher, executor, driver = self.pipe, self.batcher, self.executor, self.driver
        record_batcher = self.record_batcher
        robot, layout = self.desc.robot, self.layout
        if self._parent_gone():  # died while this process started: no run exists, nothing moves
            start_up_done()
            say_leaving("driver", self.parent_pid, "during start-up, before any run; closing the robot "
                        "connection and exiting")
            driver.close()
            return
        start_up_step("while reading the robot's first state")
        state = driver.read()
        self.state = state
        start_up_done()  # before ready, never after: the watch can then no longer end this process
        self.pipe.send(P.packb({"type": "ready", "pid": os.getpid(), "description": self.desc.to_dict(),
                                "columns": self.columns, "layout": layout, "scheduler": self.scheduler}))
        # The loop allocates only short-lived objects (message bytes), never cycles; the cyclic
        # collector would only add multi-millisecond pauses, so it stays off in this process.
        gc.collect()
        gc.freeze()
        gc.disable()
        last_ns = time.monotonic_ns()
        next_telemetry = last_ns
        telemetry_ns = int(TELEMETRY_S * 1e9)
        stopping = False
        watch = self.supervisor_watch = SupervisorWatch(self.cfg.supervisor_silence_s, self._supervisor_run_delay_s,
                                                        last_ns)
        beacon = self.alive_beacon
        while True:
            try:
                state = driver.read()
            except (ConnectionLost, ProtectiveStop, DriverError) as exc:
                executor.fail(self.seq, f"{type(exc).__name__}: {exc}")
                self._to_main({"type": "driver_error", "error": type(exc).__name__, "message": str(exc)})
                if isinstance(exc, ConnectionLost):
                    self._flush_batches()  # the samples read before the link broke belong in the recording
                    raise
                continue
            now = time.monotonic_ns()
            self.seq += 1
            seq = self.seq
            period = now - last_ns
            last_ns = now
            self.stats_all.add(period)
            if executor.busy:
                if self.skip_run_period:
                    self.skip_run_period = False
                else:
                    self.stats_run.add(period)
            if self.stops is not None and self.stops.waiting(seq):  # every cycle, zero timeout
                self._serve_stops(seq, now, now - period)
            try:
                executor.tick(state, seq)
            except DriverError as exc:
                executor.fail(seq, f"{type(exc).__name__}: {exc}")
            batcher.append(seq, state.robot_time, now, executor.stamp_phase, executor.stamp_run, state.values)
            if batcher.due(now):
                self._publish([P.TOPIC_STATE, batcher.pack(robot, layout, now)])
            record_batcher.append(seq, state.robot_time, now, executor.stamp_phase, executor.stamp_run, state.values)
            if record_batcher.due(now):
                self._publish([P.TOPIC_RECORD, record_batcher.pack(robot, layout, now)])
            if seq % POLL_EVERY == 0:
                heard = beacon is not None and beacon.changed()
                if pipe.poll(0):
                    heard = True
                    while pipe.poll(0):
                        message = pipe.recv()
                        if message != SUPERVISOR_ALIVE:
                            self._handle(P.unpackb(message), state)
                if heard:
                    watch.heard(now)
                else:
                    self._check_supervisor(now)
                if now >= next_telemetry:
                    next_telemetry = now + telemetry_ns
                    self._to_main(self._telemetry(state, now))
                    if self.running and (self._parent_gone() or self.terminate_requested):
                        # ramp any motion to rest and leave; never keep moving unsupervised
                        if not self.terminate_requested:
                            say_leaving("driver", self.parent_pid, "bringing any motion to rest, then exiting"
                                        if executor.busy else "no run in progress; exiting")
                        self._handle({"type": "shutdown"}, state)
                if not self.running and not stopping:
                    stopping = True
                if stopping and not executor.busy:
                    break
        self._flush_batches()
        driver.close()
        if self.supervisor_schedstat is not None:
            os.close(self.supervisor_schedstat)
            self.supervisor_schedstat = None
        if self.alive_beacon is not None:
            self.alive_beacon.close()
            self.alive_beacon = None

    def _flush_batches(self) -> None:
        """Publish what both batchers hold (the loop ends, or the robot link broke)."""
        now = time.monotonic_ns()
        for topic, batcher in ((P.TOPIC_STATE, self.batcher), (P.TOPIC_RECORD, self.record_batcher)):
            if batcher.n:
                self._publish([topic, batcher.pack(self.desc.robot, self.layout, now)])


def driver_process_main(cfg_dict: dict, endpoints: dict) -> None:
    """Entry point of the spawned driver process."""
    from .config import DaemonConfig

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the main process, which stops us
    main_pid = main_process_pid()
    if main_process_gone(main_pid):  # died while this interpreter started: connect to no robot
        say_leaving("driver", main_pid, "during start-up, before connecting; exiting")
        return
    watch_start_up("driver", main_pid)
    cfg = DaemonConfig.from_dict(cfg_dict)
    try:
        loop = DriverLoop(cfg, endpoints)
    except MainProcessGone:
        start_up_done()
        say_leaving("driver", main_pid, "during start-up, before connecting; exiting")
        return
    except Exception as exc:
        start_up_done()
        _report_fatal(endpoints, exc)
        sys.exit(1)
    signal.signal(signal.SIGTERM, lambda *_: setattr(loop, "terminate_requested", True))
    try:
        loop.run()
    except Exception as exc:
        traceback.print_exc()
        try:
            loop.pipe.send(P.packb({"type": "fatal", "message": f"{type(exc).__name__}: {exc}"}))
        except Exception:
            pass
        sys.exit(1)
    finally:
        loop.ctx.destroy(linger=500)


def _report_fatal(endpoints: dict, exc: Exception) -> None:
    import zmq

    ctx = zmq.Context()
    s = ctx.socket(zmq.PAIR)
    s.setsockopt(zmq.LINGER, 1000)
    s.connect(endpoints["driver_pipe"])
    message = str(exc) if isinstance(exc, (ValueError, DriverError)) else f"{type(exc).__name__}: {exc}"
    # on the daemon's log too: the main process may see the exit before it reads the pipe, and then
    # has only the exit code to say
    print(f"robodyn driver: failed to start: {message}", file=sys.stderr, flush=True)
    s.send(P.packb({"type": "fatal", "message": message}))
    s.close()
    ctx.term()
