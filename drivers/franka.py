"""Franka Emika / Franka Research 3 driver over FCI, through the official ``pylibfranka`` bindings.

It fits the driver contract with libfranka's read/write control API: ``start(mode)`` opens an
active control (joint positions through Franka's internal joint impedance, or torques), then each
``read()`` is one ``readOnce()`` (blocks until the robot's next 1 kHz packet) and each ``write()``
one ``writeOnce()``. Between runs ``read()`` uses ``Robot.read_once()`` so the state still streams.

Torque mode runs the project's own joint impedance plus an RNEA feedforward (``ImpedanceLaw``);
the robot adds gravity compensation, as in every libfranka torque controller.

pylibfranka holds the GIL for a whole ``readOnce``, so the loop must own its interpreter: the daemon
already runs every driver in its own process (``daemon/rtloop.py``). Nothing here allocates
NumPy arrays per cycle; the binding itself converts each state field to a Python list, which
cannot be avoided from Python.

Failures map to the contract's typed errors:

- ``ControlException`` (reflex, motion-generator or communication violation) -> ``ProtectiveStop``
  whose ``state`` holds the exception text, the robot mode, the active errors and the last
  ``HISTORY`` samples before it, so the run's partial recording is closed with the cause;
- ``NetworkException`` (UDP timeout, refused TCP) -> ``ConnectionLost``;
- ``RealtimeException`` / bad options / robot in the wrong mode -> ``ValueError`` with one sentence.

``automatic_error_recovery`` only runs when asked: option ``error_recovery = true`` or
``recover()``. ``reconnect()`` rebuilds the link after a ``ConnectionLost``.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import numpy as np
import pylibfranka as fr  # missing extra -> the registry names `pip install 'robodyn[franka]'`

from .loop_stats import PeriodHistogram
from .base import (ConnectionLost, ControlMode, Driver, DriverDescription, JointCommand, JointState,
                   LimitViolation, ProtectiveStop, Signal, load_robot, model_limits)
from .franka_control import (FRANKA_FIELDS, ROBOT_MODE_REFLEX, SCALARS, FrankaConfig, ImpedanceLaw,
                             active_errors, collision_thresholds, error_bitmask, error_names, host_is_realtime)

log = logging.getLogger(__name__)

HISTORY = 50  # samples kept for the error report (50 ms at 1 kHz)
COMMAND_LIMIT_TOL = 1e-6
RT_WARNING = ("WARNING: robodyn franka driver: realtime = 'ignore' on a host without a real-time kernel. "
              "libfranka's 1 kHz loop will miss deadlines under load and the robot will stop with "
              "communication_constraints_violation. Use this only with a simulator (franky-sim).")


class FrankaDriver(Driver):
    kind = "franka"
    options_type = FrankaConfig

    def __init__(self, options: dict | FrankaConfig | None = None):
        super().__init__()
        self.cfg = cfg = self.parse_options(options)
        self.model = load_robot(cfg.robot, 7, "Franka")
        self.collision = dict(cfg.collision) if cfg.collision else collision_thresholds(self.model.tau_max)
        self._desc = self._build_description()
        self.state = JointState(self._desc)
        offsets = self._desc.offsets()
        # (attribute, slice) pairs resolved once: the per-cycle copy is a flat loop
        self._copies = tuple((attr, offsets[name]) for name, attr, _, _ in FRANKA_FIELDS)
        self._i_rate = offsets["success_rate"].start
        self._i_mode = offsets["robot_mode"].start
        self._i_errors = offsets["errors"].start
        self._i_lost = offsets["lost_cycles"].start
        self._history = np.zeros((HISTORY, self._desc.width))
        self._history_t = np.zeros(HISTORY)
        self._history_n = 0
        self.law = ImpedanceLaw(self.model, cfg.stiffness, cfg.damping, cfg.feedforward)
        # Run the law once now: loading its compiled kernel takes a while (it must not land in the
        # first 1 ms cycle), and it loads SciPy's BLAS, whose worker threads would otherwise start
        # after libfranka has raised this thread to SCHED_FIFO 99. They would inherit that priority,
        # and a BLAS worker spinning at 99 stalled other real-time loops here by up to 64 ms.
        zero = np.zeros(self.model.dof)
        self.law.compute(zero, zero, zero, zero, zero)
        self.periods = PeriodHistogram()
        self._robot = None
        self._ctl = None
        self._cmd_pos = None
        self._cmd_tau = None
        self._error_names: list[str] = []
        self._last_ns = 0
        self._last_robot_time = None
        self.lost_cycles = 0
        self.reads = 0
        self.saturated = 0
        self.control_exceptions = 0
        self.recoveries = 0
        self.last_error: dict = {}

    # ----------------------------------------------------------------- description

    def _build_description(self) -> DriverDescription:
        n = 7
        sig = tuple(Signal(name, n, unit, desc) for name, _, unit, desc in FRANKA_FIELDS) + SCALARS
        limits = model_limits(self.model)
        info = {"ip": self.cfg.ip, "client": f"pylibfranka {getattr(fr, '__version__', '?')}",
                "realtime": self.cfg.realtime, "host_realtime_kernel": host_is_realtime(),
                "collision_thresholds": self.collision,
                "torque_mode": {"law": "K (q_d - q) + D (qd_d - qd) + RNEA(q, qd, qdd_d) without gravity; "
                                       "the robot adds gravity compensation",
                                "stiffness": list(self.cfg.stiffness), "damping": list(self.cfg.damping),
                                "feedforward": self.cfg.feedforward},
                "position_mode": "libfranka joint position control, ControllerMode.JointImpedance",
                "error_recovery": self.cfg.error_recovery}
        return DriverDescription(driver=self.kind, robot=self.model.name, joint_names=self.model.joint_names,
                                 limits=limits, rate_hz=1000.0,
                                 control_modes=(ControlMode.POSITION.value, ControlMode.TORQUE.value),
                                 trajectory_modes=(ControlMode.POSITION.value, ControlMode.TORQUE.value),
                                 signals=sig, info=info)

    def describe(self) -> DriverDescription:
        return self._desc

    # ----------------------------------------------------------------- connection

    def _realtime_config(self):
        if self.cfg.realtime == "enforce":
            if not host_is_realtime():
                raise ValueError("driver.realtime = 'enforce' but this host's kernel is not real-time "
                                 "(/sys/kernel/realtime missing): boot a PREEMPT_RT kernel, or set "
                                 "realtime = 'ignore' for a simulator only")
            return fr.RealtimeConfig.kEnforce
        if not host_is_realtime():
            # straight to stderr, not through logging: it must show even where logging is unconfigured
            print(RT_WARNING, file=sys.stderr, flush=True)
        return fr.RealtimeConfig.kIgnore

    def _open(self) -> None:
        rt = self._realtime_config()
        # libfranka raises the calling thread to SCHED_FIFO; close() hands the caller its policy back
        self._caller_policy = (os.sched_getscheduler(0), os.sched_getparam(0))
        last = None
        for attempt in range(self.cfg.connect_attempts):
            if attempt:
                time.sleep(1.0)
            try:
                with self.holding_the_gil():  # pylibfranka's bindings never release it
                    self._robot = fr.Robot(self.cfg.ip, rt)
                break
            except fr.NetworkException as exc:
                last = exc
            except fr.FrankaException as exc:  # incompatible server version and the like
                raise ValueError(f"driver.ip {self.cfg.ip}: the robot refused the connection: {exc}") from None
        else:
            raise ConnectionLost(f"cannot reach a Franka at {self.cfg.ip} ({_one_line(last)}); check driver.ip, "
                                 f"the network cable and that FCI is enabled in Desk")
        self._error_names = []
        try:
            c = self.collision
            with self.holding_the_gil():  # a command waits for its answer with no time-out
                self._robot.set_collision_behavior(c["lower_torque"], c["upper_torque"], c["lower_force"],
                                                   c["upper_force"])
                st = self._robot.read_once()
        except fr.NetworkException as exc:
            raise ConnectionLost(f"Franka at {self.cfg.ip}: link lost while configuring ({_one_line(exc)})") from None
        except (fr.CommandException, fr.ControlException) as exc:
            raise ValueError(f"Franka at {self.cfg.ip} rejected the collision thresholds: {_one_line(exc)}") from None
        self._error_names = error_names(st.current_errors)
        self._check_mode(st)
        self._last_robot_time = None
        self._fill(st)

    def _check_mode(self, st) -> None:
        """Refuse to take a robot that is stopped or in error unless recovery was asked for."""
        mode = st.robot_mode
        if mode == fr.RobotMode.UserStopped:
            raise ValueError("the Franka is user-stopped: release the external activation device (enabling "
                             "button) and unlock the joints in Desk")
        if mode == fr.RobotMode.Reflex or bool(st.current_errors):
            if self.cfg.error_recovery:
                self.recover()
                return
            raise ValueError(f"the Franka is in {mode.name} mode with errors "
                             f"[{', '.join(active_errors(st.current_errors, self._error_names))}]; clear them in "
                             f"Desk or set error_recovery = true")
        if mode == fr.RobotMode.Other:
            raise ValueError("the Franka is not ready for FCI (robot mode 'Other'): unlock the joints and activate "
                             "FCI in Desk")

    def connect_step(self) -> str:
        return f"while connecting to the Franka at {self.cfg.ip}"

    def _do_connect(self) -> None:
        if self.cfg.robot not in ("panda", "fr3") and not self.cfg.robot.endswith((".toml", ".urdf")):
            log.warning("franka driver with model %s", self.cfg.robot)
        try:  # no numba thread pool in the 1 kHz process (its start-up costs more than an RNEA)
            import numba

            numba.set_num_threads(1)
        except Exception:  # pragma: no cover
            pass
        self._open()

    def reconnect(self, attempts: int = 10, delay_s: float = 0.5) -> None:
        """Drop the link and connect again (after ``ConnectionLost``). Leaves the driver connected, idle."""
        self._ctl = None
        self._robot = None
        self._mode = None
        last = None
        for i in range(max(1, attempts)):
            try:
                self._open()
                self._reconnected()
                return
            except ConnectionLost as exc:
                last = exc
                time.sleep(delay_s)
        raise last

    def recover(self) -> None:
        """libfranka's automatic_error_recovery: only on explicit request."""
        try:
            self._robot.automatic_error_recovery()
        except fr.NetworkException as exc:
            raise ConnectionLost(f"Franka at {self.cfg.ip}: link lost during error recovery ({_one_line(exc)})") from None
        except (fr.CommandException, fr.ControlException) as exc:
            raise ProtectiveStop(f"automatic error recovery failed: {_one_line(exc)}", self._report("recovery")) from None
        self.recoveries += 1

    # ----------------------------------------------------------------- lifecycle

    def _do_start(self, mode: ControlMode) -> None:
        st = self._robot.read_once()
        self._check_mode(st)
        try:
            if mode is ControlMode.POSITION:
                self._ctl = self._robot.start_joint_position_control(fr.ControllerMode.JointImpedance)
                self._cmd_pos = fr.JointPositions(list(st.q))
            else:
                self._ctl = self._robot.start_torque_control()
                self._cmd_tau = fr.Torques([0.0] * 7)
        except fr.RealtimeException as exc:
            raise ValueError(f"libfranka refused real-time control: {_one_line(exc)}; use a PREEMPT_RT kernel or "
                             f"realtime = 'ignore' (simulator only)") from None
        except fr.NetworkException as exc:
            raise ConnectionLost(f"Franka at {self.cfg.ip}: {_one_line(exc)}") from None
        except (fr.ControlException, fr.CommandException, fr.InvalidOperationException) as exc:
            raise ProtectiveStop(f"the Franka refused to start {mode.value} control: {_one_line(exc)}",
                                 self._report("start")) from None
        self._last_ns = 0

    def _do_stop(self) -> None:
        ctl, self._ctl = self._ctl, None
        if ctl is not None:
            # finish the motion the libfranka way: one last command flagged motion_finished
            try:
                if self._mode is ControlMode.POSITION:
                    self._cmd_pos.q = self.state.q
                    self._cmd_pos.motion_finished = True
                    ctl.writeOnce(self._cmd_pos)
                else:
                    self._cmd_tau.tau_J = [0.0] * 7
                    self._cmd_tau.motion_finished = True
                    ctl.writeOnce(self._cmd_tau)
            except Exception:  # the control already died (reflex, link): nothing left to finish
                pass
        try:
            self._robot.stop()
        except Exception:
            pass

    def _do_close(self) -> None:
        self._ctl = None
        self._robot = None  # pylibfranka closes the sockets in the destructor
        policy = getattr(self, "_caller_policy", None)
        if policy is not None:
            try:
                os.sched_setscheduler(0, policy[0], policy[1])
            except OSError:
                pass

    # ----------------------------------------------------------------- cycle

    def _fill(self, st) -> None:
        v = self.state.values
        for attr, sl in self._copies:
            v[sl] = getattr(st, attr)
        t = st.time.to_sec()
        v[self._i_rate] = st.control_command_success_rate
        mode = int(st.robot_mode.value)
        v[self._i_mode] = mode
        errors = st.current_errors
        v[self._i_errors] = error_bitmask(errors, self._error_names) if errors else 0
        lost = 0
        if self._last_robot_time is not None:
            lost = int(round((t - self._last_robot_time) / self.cfg.cycle_s)) - 1
            if lost > 0:
                self.lost_cycles += lost
            else:
                lost = 0
        v[self._i_lost] = lost
        self._last_robot_time = t
        self.state.robot_time = t
        k = self._history_n % HISTORY
        self._history[k] = v
        self._history_t[k] = t
        self._history_n += 1

    def _do_read(self) -> JointState:
        try:
            if self._ctl is not None:
                st, _ = self._ctl.readOnce()
            else:
                st = self._robot.read_once()
        except fr.ControlException as exc:
            self._control_died(exc, "read")
        except (fr.NetworkException, RuntimeError) as exc:  # RuntimeError: "Net Exception" after a timeout
            if isinstance(exc, (fr.ControlException, fr.InvalidOperationException, fr.CommandException)):
                self._control_died(exc, "read")
            self._ctl = None
            raise ConnectionLost(f"Franka at {self.cfg.ip}: link lost ({_one_line(exc)})", self._report("read", exc)) from None
        now = time.monotonic_ns()
        if self._last_ns:
            self.periods.add(now - self._last_ns)
        self._last_ns = now
        self.reads += 1
        self._fill(st)
        if self._ctl is not None and self.state.values[self._i_mode] == ROBOT_MODE_REFLEX:
            self._control_died(RuntimeError(f"robot entered Reflex mode: "
                                            f"{', '.join(active_errors(st.current_errors, self._error_names))}"),
                               "read")
        return self.state

    def _do_write(self, command: JointCommand) -> None:
        if self._ctl is None:
            raise ProtectiveStop("the Franka's control session ended (reflex or stop); start a new run",
                                 self._report("write"))
        try:
            if self._mode is ControlMode.POSITION:
                self._check_position(command.q)
                self._cmd_pos.q = command.q
                self._ctl.writeOnce(self._cmd_pos)
            else:
                s = self.state
                tau = self.law.compute(s.q, s.qd, command.q, command.qd, command.qdd)
                tau += command.tau  # a caller's own torque on top (zero for trajectory runs)
                if not np.all(np.isfinite(tau)):
                    raise LimitViolation("torque command: non-finite value")
                over = np.abs(tau) > self.model.tau_max
                if over.any():
                    # saturate like the drive would, but count it: a tracking law that saturates
                    # means gains or trajectory are too aggressive
                    self.saturated += 1
                    np.clip(tau, -self.model.tau_max, self.model.tau_max, out=tau)
                self._cmd_tau.tau_J = tau
                self._ctl.writeOnce(self._cmd_tau)
        except fr.ControlException as exc:
            self._control_died(exc, "write")
        except fr.NetworkException as exc:
            self._ctl = None
            raise ConnectionLost(f"Franka at {self.cfg.ip}: link lost ({_one_line(exc)})", self._report("write", exc)) from None

    def _check_position(self, q) -> None:
        m = self.model
        if not np.all(np.isfinite(q)):
            raise LimitViolation("position command: non-finite value")
        bad = (q < m.q_min - COMMAND_LIMIT_TOL) | (q > m.q_max + COMMAND_LIMIT_TOL)
        if bad.any():
            j = int(np.argmax(bad))
            raise LimitViolation(f"position command {q[j]:.6g} rad outside [{m.q_min[j]:.6g}, {m.q_max[j]:.6g}] "
                                 f"on {m.joint_names[j]}")

    def _control_died(self, exc, where: str):
        """A reflex or ControlException: the active control is gone; report with the last states."""
        self._ctl = None
        self.control_exceptions += 1
        report = self._report(where, exc, query=True)
        self.last_error = {k: report[k] for k in ("where", "exception", "message", "robot_mode", "errors")}
        raise ProtectiveStop(f"Franka reflex / control exception during {where}: {_one_line(exc)}", report) from None

    def _report(self, where: str, exc=None, query: bool = False) -> dict:
        """The last states before a failure (oldest first), JSON-ready. ``query``: also ask the robot
        for its mode and errors (only when the link is known to be up, a read on a dead link blocks 1 s)."""
        n = min(self._history_n, HISTORY)
        idx = [(self._history_n - n + i) % HISTORY for i in range(n)]
        errors = []
        mode = None
        try:
            if query and self._robot is not None:
                st = self._robot.read_once()
                mode = st.robot_mode.name
                errors = active_errors(st.last_motion_errors, self._error_names) or \
                    active_errors(st.current_errors, self._error_names)
        except Exception:
            pass
        if mode is None and n:
            mode = int(self._history[idx[-1], self._i_mode])
        return {"where": where, "exception": type(exc).__name__ if exc is not None else None,
                "message": _one_line(exc) if exc is not None else "", "robot_mode": mode, "errors": errors,
                "columns": self._desc.columns(), "robot_time": self._history_t[idx].tolist(),
                "last_states": self._history[idx].tolist()}

    # ----------------------------------------------------------------- introspection

    def diagnostics(self) -> dict:
        return {"reads": self.reads, "lost_cycles": self.lost_cycles, "period": self.periods.summary(),
                "torque_saturations": self.saturated, "control_exceptions": self.control_exceptions,
                "recoveries": self.recoveries, "last_error": self.last_error, "guard_refusals": self.guard_refusals,
                "success_rate": float(self.state.values[self._i_rate])}


def _one_line(exc) -> str:
    return " ".join(str(exc).split()) if exc is not None else ""
