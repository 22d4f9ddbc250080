"""What ur_rtde's control script (``rtde_control.script``) does on a UR, executed natively.

The simulated controller does not interpret URScript. It recognises the uploaded script and
runs the same register handshake the script implements (learned from ur_rtde 1.6.5's script and
``RTDEControlInterface::sendCommand``):

- the script writes ``output_int_register_0 = 1`` (ready for a command) when it starts and after
  a command was cleared; the client writes the command type to ``input_int_register_0`` and the
  arguments to ``input_double_register_*`` / ``input_int_register_1`` in the same data package;
- real-time commands (servoJ 11, speedJ 9, servoL 24, ...) are applied and the script stays ready
  (1): the client never waits for them;
- other commands are executed once, then the script writes 2 (done) and waits for the client to
  clear the command register to 0, after which it is ready (1) again;
- 255 stops the script (runtime state leaves PLAYING).

Register layouts used by ur_rtde 1.6.5 (its input recipes):
servoJ  (recipe 2): int0 = 11, double0..5 = q, double6 speed, double7 accel, double8 time,
                    double9 lookahead time, double10 gain;
moveJ   (recipe 1): int0 = 1, double0..5 = q, double6 speed, double7 accel, int1 = async;
servoStop (recipe 8/4 shape): int0 = 16, double0 = deceleration;
stopJ   (recipe 19): int0 = 34, double0 = deceleration, int1 = async;
triggerProtectiveStop: int0 = 31.

The motion itself (targets for the plant each controller tick) is ``JointMotion``.
"""

from __future__ import annotations

import math

import numpy as np

READY, DONE = 1, 2
CMD_NONE, CMD_MOVEJ, CMD_SPEEDJ, CMD_SERVOJ, CMD_SERVO_STOP = 0, 1, 9, 11, 16
CMD_PROTECTIVE_STOP, CMD_STOPL, CMD_STOPJ, CMD_STOP_SCRIPT = 31, 33, 34, 255
# commands the script treats as real-time (never signals done), from the script's main loop
REALTIME_COMMANDS = frozenset({24, 11, 9, 10, 6, 25, 26, 27, 38, 58, 66, 67, 68, 69, 70, 71})
DEFAULT_STOP_DECEL = 2.0  # rad/s^2 when a stop carries no deceleration
SERVO_LOOKAHEAD_DEFAULT, SERVO_GAIN_DEFAULT = 0.1, 300.0  # URScript servoj defaults


def script_is_complete(text: str) -> bool:
    """A URScript program sent to port 30003 is one top-level ``def`` closed by a top-level ``end``."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and lines[0].startswith("def ") and lines[-1].rstrip() == "end"


def script_name(text: str) -> str:
    first = text.lstrip().split("\n", 1)[0]
    return first[4:].split("(", 1)[0].strip() if first.startswith("def ") else ""


def quintic_duration(distance: np.ndarray, v_max: float, a_max: float) -> float:
    """Shortest duration of a rest-to-rest quintic whose peak speed/acceleration stay within
    v_max / a_max on every joint (peak speed 1.875 d/T, peak acceleration 5.7735 d/T^2)."""
    d = float(np.max(np.abs(distance)))
    if d == 0:
        return 0.0
    return max(1.875 * d / max(v_max, 1e-6), math.sqrt(5.7735 * d / max(a_max, 1e-6)), 0.01)


class JointMotion:
    """The controller's joint target generator: servo tracking, quintic moves, decelerating stops."""

    def __init__(self, q0: np.ndarray, dt: float, qd_max: np.ndarray | None = None,
                 qdd_max: np.ndarray | None = None):
        self.dt = dt
        self.q = np.array(q0, float)  # commanded position
        # the controller never moves its own target faster than the joint speed and acceleration
        # limits: a servo target far from where the arm is (a program started on a sagging arm)
        # is approached within them, not in one tick
        self.qd_max = None if qd_max is None else np.asarray(qd_max, float)
        self.qdd_max = None if qdd_max is None else np.asarray(qdd_max, float)
        self.qd = np.zeros_like(self.q)
        self.qdd = np.zeros_like(self.q)
        self.mode = "hold"
        self._move = None  # (q_start, q_end, T, t)
        self._servo_target = self.q.copy()
        self._servo_age = 0.0
        self._servo_time = dt
        self._lookahead = SERVO_LOOKAHEAD_DEFAULT
        self._gain = SERVO_GAIN_DEFAULT
        self._decel = DEFAULT_STOP_DECEL

    @property
    def busy(self) -> bool:
        return self.mode in ("move", "stop")

    def servo(self, q: np.ndarray, time_s: float, lookahead_time: float = SERVO_LOOKAHEAD_DEFAULT,
              gain: float = SERVO_GAIN_DEFAULT) -> None:
        self._servo_target[:] = q
        self._servo_time = max(time_s, self.dt)
        self._servo_age = 0.0
        # out-of-range values are clamped as URScript's servoj documents its ranges
        self._lookahead = min(max(lookahead_time, 0.03), 0.2)
        self._gain = min(max(gain, 100.0), 2000.0)
        self.mode = "servo"

    def move(self, q: np.ndarray, v: float, a: float) -> None:
        if self.qd_max is not None:
            v = min(v, float(np.min(self.qd_max)))  # a moveJ faster than the joints allow
        T = quintic_duration(np.asarray(q) - self.q, v, a)
        self._move = (self.q.copy(), np.array(q, float), T, 0.0)
        self.mode = "move" if T > 0 else "hold"

    def stop(self, decel: float) -> None:
        self._decel = decel if decel > 0 else DEFAULT_STOP_DECEL
        self.mode = "stop" if np.any(self.qd != 0) else "hold"

    def hold(self) -> None:
        """Protective stop: freeze the command where it is."""
        self.qd[:] = 0.0
        self.qdd[:] = 0.0
        self.mode = "hold"

    def _servo_law(self) -> None:
        """servoj's tracking law, from Universal Robots' description of its two parameters: the
        gain acts as a proportional term on the error to the target, and the lookahead time
        projects the current position forward with the current velocity before the error is
        taken. As an acceleration command:

            qdd = gain * (q_target - (q + lookahead_time * qd))

        a second-order tracker with natural frequency sqrt(gain) and damping ratio
        lookahead_time * sqrt(gain) / 2 (0.87 at the defaults 0.1 s / 300); a ramp is followed
        lookahead_time seconds behind. A target that arrives one tick late moves the
        acceleration by gain * (one tick of motion), not by a velocity jump over one tick: the
        target stream's timing jitter is smoothed, as on the robot. Integrated semi-implicitly
        at the controller rate, within the joints' speed and acceleration limits."""
        dt = self.dt
        qdd = self._gain * (self._servo_target - self.q - self._lookahead * self.qd)
        if self.qdd_max is not None:
            np.clip(qdd, -self.qdd_max, self.qdd_max, out=qdd)
        qd = self.qd + qdd * dt
        if self.qd_max is not None:
            np.clip(qd, -self.qd_max, self.qd_max, out=qd)
        self.qdd[:] = (qd - self.qd) / dt
        self.q += qd * dt
        self.qd[:] = qd

    def step(self) -> None:
        dt = self.dt
        if self.mode == "servo":
            # a stale target (client stopped sending for longer than a few servo periods) is not
            # chased: the joints decelerate to a stop, as the UR does
            self._servo_age += dt
            if self._servo_age > 10 * self._servo_time:
                self.stop(self._decel)
                return self.step()
            self._servo_law()
        elif self.mode == "move":
            q0, q1, T, t = self._move
            t = min(t + dt, T)
            s = t / T
            p = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
            v = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / T
            acc = (60 * s - 180 * s ** 2 + 120 * s ** 3) / T ** 2
            d = q1 - q0
            self.q[:] = q0 + p * d
            self.qd[:] = v * d
            self.qdd[:] = acc * d
            self._move = (q0, q1, T, t)
            if t >= T:
                self.qd[:] = 0.0
                self.qdd[:] = 0.0
                self.mode = "hold"
        elif self.mode == "stop":
            speed = np.abs(self.qd)
            dv = self._decel * dt
            new_speed = np.maximum(speed - dv, 0.0)
            new_qd = np.sign(self.qd) * new_speed
            self.qdd[:] = (new_qd - self.qd) / dt
            self.q += 0.5 * (self.qd + new_qd) * dt
            self.qd[:] = new_qd
            if not np.any(new_speed):
                self.qdd[:] = 0.0
                self.mode = "hold"
        else:
            self.qd[:] = 0.0
            self.qdd[:] = 0.0


class ControlScript:
    """The register handshake of ur_rtde's control script, one controller tick at a time."""

    def __init__(self, motion: JointMotion):
        self.motion = motion
        self.running = False
        self.state = 0  # output_int_register_0
        self.executing = False
        self._pending = None  # a regular command waiting for its motion to finish
        self.counts: dict[int, int] = {}
        self.unsupported: dict[int, int] = {}
        self.protective_stop_requested = False

    def start(self) -> None:
        self.running = True
        self.executing = False
        self._pending = None
        self.state = READY

    def stop(self) -> None:
        self.running = False
        self.state = 0
        self._pending = None

    def tick(self, ints: dict, doubles: dict) -> None:
        """Read the command registers, act, and update ``state``. ``ints`` / ``doubles`` map
        register index -> value (the controller's global input registers)."""
        if not self.running:
            return
        if self._pending is not None:
            if not self.motion.busy:
                self._pending = None
                self.state = DONE
            return
        cmd = int(ints.get(0, 0))
        if cmd in REALTIME_COMMANDS:
            self._count(cmd)
            if cmd == CMD_SERVOJ:
                q = np.array([doubles.get(i, 0.0) for i in range(6)])
                self.motion.servo(q, doubles.get(8, self.motion.dt), doubles.get(9, SERVO_LOOKAHEAD_DEFAULT),
                                  doubles.get(10, SERVO_GAIN_DEFAULT))
            else:
                self.unsupported[cmd] = self.unsupported.get(cmd, 0) + 1
            self.state = READY
        elif cmd == CMD_NONE:
            self.executing = False
            self.state = READY
        elif not self.executing:
            self.executing = True
            self._count(cmd)
            self._regular(cmd, ints, doubles)

    def _count(self, cmd: int) -> None:
        self.counts[cmd] = self.counts.get(cmd, 0) + 1

    def _regular(self, cmd: int, ints: dict, doubles: dict) -> None:
        wait = False
        if cmd == CMD_MOVEJ:
            q = np.array([doubles.get(i, 0.0) for i in range(6)])
            self.motion.move(q, doubles.get(6, 1.05), doubles.get(7, 1.4))
            wait = not ints.get(1, 0)  # async moveJ signals done at once
        elif cmd in (CMD_SERVO_STOP, CMD_STOPJ, CMD_STOPL):
            self.motion.stop(doubles.get(0, DEFAULT_STOP_DECEL))
            wait = not (cmd != CMD_SERVO_STOP and ints.get(1, 0))
        elif cmd == CMD_PROTECTIVE_STOP:
            self.protective_stop_requested = True
        elif cmd == CMD_STOP_SCRIPT:
            self.motion.stop(DEFAULT_STOP_DECEL)
            self.stop()
            return
        else:
            self.unsupported[cmd] = self.unsupported.get(cmd, 0) + 1
        if wait and self.motion.busy:
            self._pending = cmd
        else:
            self.state = DONE
