"""Universal Robots driver over RTDE, through ``ur_rtde`` (pinned 1.6.5; extra ``ur``).

- State: ``RTDEReceiveInterface`` at the controller's RTDE rate (500 Hz e-Series, 125 Hz CB3, read
  from the dashboard's PolyScope version) with an explicit variable list.
- Command: ``RTDEControlInterface.servoJ`` once per RTDE period (position mode only: the UR's own
  joint controller tracks the servo target).
- Every controller sample is counted by the controller timestamp (``ur_stream.SampleClock``): a poll
  that sees the same timestamp is not a new sample, a jump of k periods is k - 1 lost samples
  (recorded per sample in the ``lost`` signal and in diagnostics), a timestamp that stops advancing
  is a dead link even while ur_rtde's getters keep answering with stale values.
- ``tau`` is ``drive_gains * actual_current`` (N.m/A per joint; identify them with a load/unload
  pair, ``robodyn drive-gains`` / ``identification.drive_gains``). ur_rtde 1.6.5's Python binding has no getter for
  ``actual_current_as_torque`` (PolyScope >= 5.23), so the driver cannot use the controller's own
  conversion.
- The controller's own real-time health: ``actual_execution_time`` (its real-time thread's execution
  time) is recorded per sample, and samples whose execution time exceeds one RTDE period are
  counted in diagnostics (``controller.overruns``): a controller that falls behind says so.
- A protective stop during a run -> ``ProtectiveStop``; a silent or closed link -> ``ConnectionLost``;
  both carry the last states.
"""

from __future__ import annotations

import socket
import time
import numpy as np
import rtde_control  # missing extra -> the registry names `pip install 'robodyn[ur]'`
import rtde_receive

from .loop_stats import PeriodHistogram
from .base import (ConnectionLost, ControlMode, Driver, DriverDescription, JointCommand, JointState,
                   LimitViolation, ProtectiveStop, Signal, load_robot, model_limits)
from .pacing import realtime
from robodyn.simulation.ur_gains import NOMINAL_DRIVE_GAINS
from .ur_stream import REWIND, SampleClock, URConfig

RTDE_PORT = 30004
HISTORY = 50
COMMAND_LIMIT_TOL = 1e-6
SAFETY_NORMAL = 1
ROBOT_MODE_RUNNING = 7
ROBOT_MODE_NAMES = {-1: "NO_CONTROLLER", 0: "DISCONNECTED", 1: "CONFIRM_SAFETY", 2: "BOOTING", 3: "POWER_OFF",
                    4: "POWER_ON", 5: "IDLE", 6: "BACKDRIVE", 7: "RUNNING", 8: "UPDATING_FIRMWARE"}
SAFETY_MODE_NAMES = {1: "NORMAL", 2: "REDUCED", 3: "PROTECTIVE_STOP", 4: "RECOVERY", 5: "SAFEGUARD_STOP",
                     6: "SYSTEM_EMERGENCY_STOP", 7: "ROBOT_EMERGENCY_STOP", 8: "VIOLATION", 9: "FAULT",
                     10: "VALIDATE_JOINT_ID", 11: "UNDEFINED_SAFETY_MODE", 12: "AUTOMATIC_MODE_SAFEGUARD_STOP",
                     13: "SYSTEM_THREE_POSITION_ENABLING_STOP"}

# (signal, ur_rtde getter, RTDE variable, unit, description); one value per joint
JOINT_FIELDS = (
    ("q", "getActualQ", "actual_q", "rad", "actual joint position"),
    ("qd", "getActualQd", "actual_qd", "rad/s", "actual joint velocity"),
    ("current", "getActualCurrent", "actual_current", "A", "actual joint current"),
    ("target_current", "getTargetCurrent", "target_current", "A", "target joint current"),
    ("target_moment", "getTargetMoment", "target_moment", "N.m", "target joint moment (torque)"),
    ("control_output", "getJointControlOutput", "joint_control_output", "A", "joint control current output"),
    ("temperature", "getJointTemperatures", "joint_temperatures", "degC", "joint temperature"),
    ("q_d", "getTargetQ", "target_q", "rad", "target joint position"),
    ("qd_d", "getTargetQd", "target_qd", "rad/s", "target joint velocity"),
)
SCALAR_FIELDS = (
    ("robot_mode", "getRobotMode", "robot_mode", "enum", "RTDE robot_mode (7 = RUNNING)"),
    ("safety_mode", "getSafetyMode", "safety_mode", "enum", "RTDE safety_mode (1 = NORMAL, 3 = PROTECTIVE_STOP)"),
    ("execution_time", "getActualExecutionTime", "actual_execution_time", "ms",
     "controller real-time thread execution time"),
)
VARIABLES = ["timestamp"] + [f[2] for f in JOINT_FIELDS] + [f[2] for f in SCALAR_FIELDS]


class URDriver(Driver):
    kind = "ur"
    options_type = URConfig

    def __init__(self, options: dict | URConfig | None = None):
        super().__init__()
        self.cfg = cfg = self.parse_options(options)
        self.model = load_robot(cfg.robot, 6, "UR")
        n = self.model.dof
        gains = cfg.drive_gains if cfg.drive_gains is not None else NOMINAL_DRIVE_GAINS.get(cfg.robot)
        if gains is None or len(gains) != n or min(gains) <= 0:
            raise ValueError(f"driver.drive_gains: expected {n} positive N.m/A values (no nominal gains are known "
                             f"for {cfg.robot!r})")
        self.drive_gains = np.asarray(gains, float)
        self.frequency = cfg.frequency or 500.0
        self._desc = self._build_description()
        self.state = JointState(self._desc)
        off = self._desc.offsets()
        self._joint_slices = tuple((getter, off[name]) for name, getter, *_ in JOINT_FIELDS)
        self._scalar_index = tuple((getter, off[name].start) for name, getter, *_ in SCALAR_FIELDS)
        self._tau = self.state.tau
        self._current = self.state.signal("current")
        self._i_lost = off["lost"].start
        self._i_safety = off["safety_mode"].start
        self._i_exec = off["execution_time"].start
        self.controller_overruns = 0  # samples whose controller execution time exceeded a period
        self.controller_exec_max_ms = 0.0
        self._history = np.zeros((HISTORY, self._desc.width))
        self._history_t = np.zeros(HISTORY)
        self._history_n = 0
        self.clock = SampleClock(1.0 / self.frequency)
        self.periods = PeriodHistogram()
        self._last_ns = 0
        self._r = self._c = None
        self.version = ""
        self.servo_failures = 0
        self.last_error: dict = {}

    def _build_description(self) -> DriverDescription:
        n = 6
        sig = (Signal("q", n, "rad", "actual joint position"), Signal("qd", n, "rad/s", "actual joint velocity"),
               Signal("tau", n, "N.m", "joint torque = drive_gains * actual_current"))
        sig += tuple(Signal(name, n, unit, desc) for name, _, _, unit, desc in JOINT_FIELDS if name not in ("q", "qd"))
        sig += tuple(Signal(name, 1, unit, desc) for name, _, _, unit, desc in SCALAR_FIELDS)
        sig += (Signal("lost", 1, "1", "controller samples lost just before this one (by controller timestamp)"),)
        limits = model_limits(self.model)
        info = {"host": self.cfg.host, "client": "ur_rtde 1.6.5 (RTDEReceiveInterface, RTDEControlInterface.servoJ)",
                "drive_gains": self.drive_gains.tolist(), "rtde_variables": VARIABLES,
                "servoj": {"lookahead_time": self.cfg.lookahead_time, "gain": self.cfg.servo_gain},
                "tau_source": "drive_gains * actual_current"}
        return DriverDescription(driver=self.kind, robot=self.model.name, joint_names=self.model.joint_names,
                                 limits=limits, rate_hz=self.frequency, control_modes=(ControlMode.POSITION.value,),
                                 signals=sig, info=info)

    def describe(self) -> DriverDescription:
        return self._desc

    # ----------------------------------------------------------------- connection

    def _controller_frequency(self) -> float:
        """500 Hz for PolyScope 5 (e-Series), 125 Hz for CB3, from the dashboard's version string."""
        import dashboard_client

        db = dashboard_client.DashboardClient(self.cfg.host)
        try:
            db.connect(int(self.cfg.connect_timeout_s * 1000))
            if not db.isConnected():
                raise ConnectionLost(f"the UR dashboard at {self.cfg.host}:29999 does not answer; check driver.host")
            self.version = db.polyscopeVersion()
        finally:
            try:
                db.disconnect()
            except Exception:
                pass
        try:
            major = int(self.version.split(".")[0])
        except ValueError:
            raise ValueError(f"the UR dashboard at {self.cfg.host} reported an unreadable version {self.version!r}") from None
        return 500.0 if major >= 5 else 125.0

    def connect_step(self) -> str:
        return f"while connecting to the UR controller at {self.cfg.host}"

    def _do_connect(self) -> None:
        host = self.cfg.host
        try:
            socket.create_connection((host, RTDE_PORT), timeout=self.cfg.connect_timeout_s).close()
        except OSError as exc:
            raise ConnectionLost(f"cannot reach a UR controller at {host}:{RTDE_PORT} ({exc.strerror or exc}); check "
                                 f"driver.host and that the robot is powered and on this network") from None
        # ur_rtde's receive and control threads inherit SCHED_FIFO from the thread that creates them;
        # the caller's thread gets its own policy back, or every process it spawned later would
        # inherit SCHED_FIFO too (and busy-wait loops in them could starve a 2-core host)
        with realtime(self.cfg.rt_priority):
            self._connect_interfaces(host)

    def _connect_interfaces(self, host: str) -> None:
        native = self._controller_frequency()
        if self.cfg.frequency is None and native != self.frequency:
            # the description (rate included) is fixed before connect, so the rate cannot change here
            raise ValueError(f"the UR at {host} is a CB3 controller (PolyScope {self.version}, RTDE {native:.0f} Hz): "
                             f"set driver.frequency = {native:.0f}")
        freq = self.frequency
        try:
            with self.holding_the_gil():  # ur_rtde's constructors do not release it
                self._r = rtde_receive.RTDEReceiveInterface(host, freq, VARIABLES)
        except RuntimeError as exc:
            raise ConnectionLost(f"UR at {host}: RTDE receive setup failed: {_one_line(exc)}") from None
        self._wait_first_sample()
        mode, safety = int(self._r.getRobotMode()), int(self._r.getSafetyMode())
        if mode != ROBOT_MODE_RUNNING:
            self._r.disconnect()
            raise ValueError(f"the UR is in robot mode {ROBOT_MODE_NAMES.get(mode, mode)}, not RUNNING: power it on and "
                             f"release the brakes (pendant, or dashboard 'power on' then 'brake release')")
        if safety != SAFETY_NORMAL:
            self._r.disconnect()
            raise ValueError(f"the UR is in safety mode {SAFETY_MODE_NAMES.get(safety, safety)}: clear it on the "
                             f"pendant (or dashboard 'unlock protective stop') before connecting")
        try:
            with self.holding_the_gil():
                self._c = rtde_control.RTDEControlInterface(host, freq)
        except RuntimeError as exc:
            self._r.disconnect()
            raise ValueError(f"UR at {host}: the control interface could not start: {_one_line(exc)} "
                             f"(remote control enabled? RTDE input registers used by a fieldbus?)") from None
        self._poll()

    def _wait_first_sample(self) -> None:
        deadline = time.monotonic() + self.cfg.connect_timeout_s
        while self._r.getTimestamp() == 0.0 and time.monotonic() < deadline:
            time.sleep(0.001)

    def reconnect(self) -> None:
        """Drop both interfaces and connect again (after ``ConnectionLost``); leaves the driver connected."""
        self._teardown()
        self.clock = SampleClock(1.0 / self.frequency)
        self._do_connect()
        self._reconnected()

    def recover(self) -> None:
        """After a protective stop, on explicit request: unlock it and restart the control script."""
        import dashboard_client

        db = dashboard_client.DashboardClient(self.cfg.host)
        db.connect()
        try:
            if not db.unlockProtectiveStop():
                raise ProtectiveStop("the UR refused to unlock the protective stop (UR requires 5 s; inspect the cause)")
        finally:
            db.disconnect()
        if not self._c.reuploadScript():
            raise ProtectiveStop("could not restart the ur_rtde control script after the protective stop")

    # ----------------------------------------------------------------- lifecycle

    def _do_start(self, mode: ControlMode) -> None:
        if int(self.state.values[self._i_safety]) != SAFETY_NORMAL:
            raise ProtectiveStop("the UR is protectively stopped: call recover() (unlock + script restart) first",
                                 self._report("start"))
        if not self._c.isProgramRunning():
            if not self._c.reuploadScript():
                raise ProtectiveStop("the ur_rtde control script is not running and could not be restarted",
                                     self._report("start"))
            deadline = time.monotonic() + 2.0
            while not self._c.isProgramRunning() and time.monotonic() < deadline:
                time.sleep(0.01)

    def _do_stop(self) -> None:
        try:
            if self._c is not None and self._c.isConnected() and self._c.isProgramRunning():
                self._c.servoStop(2.0)
        except RuntimeError:
            pass

    def _teardown(self) -> None:
        c, r, self._c, self._r = self._c, self._r, None, None
        for obj, calls in ((c, ("stopScript", "disconnect")), (r, ("disconnect",))):
            if obj is None:
                continue
            for call in calls:
                try:
                    if call != "stopScript" or obj.isConnected():
                        getattr(obj, call)()
                except Exception:
                    pass

    def _do_close(self) -> None:
        self._teardown()

    # ----------------------------------------------------------------- cycle

    def _read_fields(self) -> float:
        """Copy one sample; returns its timestamp, or -1 if a new package arrived mid-copy (torn)."""
        r = self._r
        ts = r.getTimestamp()
        v = self.state.values
        for getter, sl in self._joint_slices:
            v[sl] = getattr(r, getter)()
        for getter, i in self._scalar_index:
            v[i] = getattr(r, getter)()
        return ts if r.getTimestamp() == ts else -1.0

    def _poll(self) -> float:
        """Block until a sample with a new controller timestamp is copied; return its timestamp."""
        r, clock = self._r, self.clock
        start = time.monotonic()
        while True:
            ts = r.getTimestamp()
            if ts != clock.last:
                got = self._read_fields()
                if got >= 0:
                    return got
                continue  # torn copy: take the newer package (the skipped one counts as lost)
            if time.monotonic() - start > self.cfg.stale_timeout_s:
                connected = r.isConnected()
                raise ConnectionLost(f"UR at {self.cfg.host}: no new RTDE sample for {self.cfg.stale_timeout_s} s "
                                     f"({'stale stream' if connected else 'connection closed'}; last controller "
                                     f"time {clock.last})", self._report("read"))
            time.sleep(self.cfg.poll_s)

    def _do_read(self) -> JointState:
        ts = self._poll()
        kind, gap = self.clock.classify(ts)
        if kind == REWIND:
            raise ConnectionLost(f"UR at {self.cfg.host}: controller clock went back from {self.clock.last} to {ts} "
                                 f"(controller restarted)", self._report("read"))
        v = self.state.values
        np.multiply(self.drive_gains, self._current, out=self._tau)
        v[self._i_lost] = gap
        exec_ms = v[self._i_exec]
        if exec_ms > self.controller_exec_max_ms:
            self.controller_exec_max_ms = exec_ms
        if exec_ms > 1000.0 / self.frequency:
            self.controller_overruns += 1
        self.state.robot_time = ts
        now = time.monotonic_ns()
        if self._last_ns:
            self.periods.add(now - self._last_ns)
        self._last_ns = now
        k = self._history_n % HISTORY
        self._history[k] = v
        self._history_t[k] = ts
        self._history_n += 1
        if self._mode is not None and int(v[self._i_safety]) != SAFETY_NORMAL:
            safety = int(v[self._i_safety])
            self.last_error = {"where": "read", "safety_mode": SAFETY_MODE_NAMES.get(safety, safety)}
            raise ProtectiveStop(f"UR {SAFETY_MODE_NAMES.get(safety, safety)} during the run", self._report("read"))
        return self.state

    def _do_write(self, command: JointCommand) -> None:
        q = command.q
        m = self.model
        if not np.all(np.isfinite(q)):
            raise LimitViolation("position command: non-finite value")
        bad = (q < m.q_min - COMMAND_LIMIT_TOL) | (q > m.q_max + COMMAND_LIMIT_TOL)
        if bad.any():
            j = int(np.argmax(bad))
            raise LimitViolation(f"position command {q[j]:.6g} rad outside [{m.q_min[j]:.6g}, {m.q_max[j]:.6g}] "
                                 f"on {m.joint_names[j]}")
        try:
            ok = self._c.servoJ(q.tolist(), 0.0, 0.0, 1.0 / self.frequency, self.cfg.lookahead_time,
                                self.cfg.servo_gain)
        except RuntimeError as exc:
            ok = False
            reason = _one_line(exc)
        else:
            reason = ""
        if ok:
            return
        self.servo_failures += 1
        # the cause is judged from safety_mode, which the recipe subscribes to (ur_rtde's
        # isProtectiveStopped() needs safety_status_bits, which it does not, and would throw)
        safety = int(self.state.values[self._i_safety])
        try:
            safety = int(self._r.getSafetyMode())
        except RuntimeError:
            pass
        if safety != SAFETY_NORMAL:
            self.last_error = {"where": "write", "safety_mode": SAFETY_MODE_NAMES.get(safety, safety)}
            raise ProtectiveStop(f"UR {SAFETY_MODE_NAMES.get(safety, safety)}: servoJ refused", self._report("write"))
        if not self._c.isConnected() or not self._r.isConnected():
            raise ConnectionLost(f"UR at {self.cfg.host}: link lost during servoJ {reason}".strip(), self._report("write"))
        raise ProtectiveStop("UR refused servoJ: the control script is not running (stopped from the pendant or "
                             "dashboard?)", self._report("write"))

    def _report(self, where: str) -> dict:
        n = min(self._history_n, HISTORY)
        idx = [(self._history_n - n + i) % HISTORY for i in range(n)]
        return {"where": where, "columns": self._desc.columns(), "robot_time": self._history_t[idx].tolist(),
                "last_states": self._history[idx].tolist(), "stream": self.clock.summary()}

    def diagnostics(self) -> dict:
        return {"stream": self.clock.summary(), "period": self.periods.summary(), "frequency": self.frequency,
                "polyscope": self.version, "servo_failures": self.servo_failures, "last_error": self.last_error,
                "controller": {"overruns": self.controller_overruns, "execution_time_max_ms": self.controller_exec_max_ms},
                "guard_refusals": self.guard_refusals}


def _one_line(exc) -> str:
    return " ".join(str(exc).split())
