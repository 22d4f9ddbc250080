"""Motion planning pieces of a run, as pure functions and one small streaming helper.

- :func:`plan_run`: the validated (move-to-start, trajectory) pair, or a LimitViolation naming the
  limit, joint and time, computed before anything reaches the driver;
- :class:`StopRamp`: a smooth deceleration from the commanded state to rest (abort);
- :class:`TrajectoryFeeder`: hands out one command per cycle, evaluating the trajectory in blocks
  so the real-time loop never evaluates a spline sample by sample or holds a whole long run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robodyn.drivers.base import START_STATE_TOLERANCE
from robodyn.limits import LimitReport, LimitViolation, check_trajectory
from robodyn.robot.model import RobotModel
from robodyn.trajectory import PointToPointTrajectory, Trajectory

MOVE_SCALE = 0.3  # the move to the start uses 30 % of each velocity/acceleration/jerk limit
MOVE_MIN_DURATION = 1.0  # s
# the robot holds its position within this before a move starts (impedance tracking error at rest)
# how far the robot may have moved since a run was planned; the drivers' command guard allows the
# same for the first target (one number, so an accepted run never fails at its first command)
HOLD_TOLERANCE = START_STATE_TOLERANCE  # rad
STOP_SCALE = 0.5  # an abort decelerates with half the acceleration and jerk limits
FEED_BLOCK = 250  # samples evaluated at once (a quarter second at 1 kHz)


class RunRejected(LimitViolation):
    """A run refused before any motion; ``stage`` is "trajectory" or "move to the start"."""

    def __init__(self, stage: str, report: LimitReport):
        super().__init__(report)
        self.stage = stage


@dataclass
class RunPlan:
    move: PointToPointTrajectory
    trajectory: Trajectory
    move_report: LimitReport
    report: LimitReport

    def sample_counts(self, rate_hz: float) -> tuple[int, int]:
        return feed_length(self.move, rate_hz), feed_length(self.trajectory, rate_hz)


def feed_length(traj: Trajectory, rate_hz: float) -> int:
    """Commands sent for a trajectory: samples at k / rate for k = 0 .. floor(duration * rate)."""
    return int(math.floor(traj.duration * rate_hz + 1e-9)) + 1


def move_to_start(model: RobotModel, traj: Trajectory, current_q: np.ndarray) -> PointToPointTrajectory:
    """The quintic move from ``current_q`` to the trajectory's start, at MOVE_SCALE of the limits."""
    q_start = traj.evaluate(np.zeros(1))[0][0]
    return PointToPointTrajectory.within_limits(current_q, q_start, model.qd_max, model.qdd_max, model.qddd_max,
                                                scale=MOVE_SCALE, min_duration=MOVE_MIN_DURATION)


def plan_run(model: RobotModel, traj: Trajectory, current_q: np.ndarray, rate_hz: float,
             withdrawn: Callable[[], bool] | None = None) -> RunPlan:
    """Validate the trajectory and the move from ``current_q`` to its start; raise on any violation.

    The trajectory is checked against every limit (its own start is reached by the move, so it is
    checked without a start-position constraint); the move is checked against the limits and the
    current position. ``withdrawn`` stops either check between windows
    (:class:`robodyn.limits.ValidationWithdrawn`).
    """
    report = check_trajectory(model, traj, rate_hz=rate_hz, withdrawn=withdrawn)
    if not report.ok:
        raise RunRejected("trajectory", report)
    move = move_to_start(model, traj, current_q)
    move_report = check_trajectory(model, move, rate_hz=rate_hz, current_q=current_q,
                                   start_tolerance=HOLD_TOLERANCE, withdrawn=withdrawn)
    if not move_report.ok:
        raise RunRejected("move to the start", move_report)
    return RunPlan(move, traj, move_report, report)


def warm_up_validation(model: RobotModel, rate_hz: float) -> None:
    """Run :func:`plan_run` once on a small move, at start-up, so numba compiles (or loads from its
    cache) every kernel validation uses before the daemon reports ready. Otherwise the first
    submission after an install compiles them in the validation thread, which holds the GIL for
    the whole compile: the main loop then cannot drain
    its workers' pipes, and healthy workers look hung."""
    finite = np.isfinite(model.q_min) & np.isfinite(model.q_max)
    mid = np.where(finite, (np.where(finite, model.q_min, 0.0) + np.where(finite, model.q_max, 0.0)) / 2, 0.0)
    step = np.where(finite, 0.01 * (np.where(finite, model.q_max, 1.0) - np.where(finite, model.q_min, 0.0)), 0.01)
    # long enough for the parallel kernel's batch size (robot.dynamics.PARALLEL_THRESHOLD) and the serial one
    for duration in (2.0, 0.1):  # batches above and below the parallel kernel's threshold
        try:
            plan_run(model, PointToPointTrajectory(mid, mid + step, duration), mid, rate_hz)
        except RunRejected:
            pass  # a model whose limits reject even this move: the kernels ran all the same


class TrajectoryFeeder:
    """Commands of one trajectory at ``k / rate`` for k = 0..count-1, evaluated FEED_BLOCK at a time."""

    def __init__(self, traj: Trajectory, rate_hz: float, block: int = FEED_BLOCK):
        self.traj = traj
        self.rate_hz = rate_hz
        self.count = feed_length(traj, rate_hz)
        self.index = 0
        self._block = block
        self._start = 0
        self._q = self._qd = self._qdd = None
        self._load(0)

    def _load(self, start: int) -> None:
        stop = min(self.count, start + self._block)
        t = np.arange(start, stop) / self.rate_hz
        q, qd, qdd, _ = self.traj.evaluate(t)
        self._q, self._qd, self._qdd = q, qd, qdd
        self._start = start

    @property
    def done(self) -> bool:
        return self.index >= self.count

    def next_into(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> None:
        """Copy the next command into the caller's buffers; the last sample repeats once done."""
        k = min(self.index, self.count - 1)
        if k - self._start >= self._q.shape[0]:
            self._load(k)
        i = k - self._start
        q[:] = self._q[i]
        qd[:] = self._qd[i]
        qdd[:] = self._qdd[i]
        self.index += 1


class StopRamp:
    """Bring every joint from velocity v0 to rest over a common time T, smoothly.

    Velocity v(s) = v0 (1 - 3 s^2 + 2 s^3), s = t / T: zero acceleration at both ends, peak
    acceleration 1.5 |v0| / T and jerk 6 |v0| / T^2. T is the shortest time that keeps both under
    STOP_SCALE of each joint's limits. Travel is v0 T / 2.
    """

    def __init__(self, q0: np.ndarray, v0: np.ndarray, qdd_max: np.ndarray, qddd_max: np.ndarray, rate_hz: float):
        speed = np.abs(v0)
        T = max(0.02,
                float(np.max(1.5 * speed / (STOP_SCALE * qdd_max))),
                float(np.max(np.sqrt(6.0 * speed / (STOP_SCALE * qddd_max)))))
        self.duration = T
        self.q0 = np.array(q0, dtype=float)
        self.v0 = np.array(v0, dtype=float)
        self.count = int(math.ceil(T * rate_hz)) + 1
        self.rate_hz = rate_hz
        self.index = 0

    @property
    def done(self) -> bool:
        return self.index >= self.count

    def next_into(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> None:
        t = min(self.index / self.rate_hz, self.duration)
        s = t / self.duration
        T = self.duration
        q[:] = self.q0 + self.v0 * T * (s - s ** 3 + 0.5 * s ** 4)
        qd[:] = self.v0 * (1 - 3 * s ** 2 + 2 * s ** 3)
        qdd[:] = self.v0 * (-6 * s + 6 * s ** 2) / T
        self.index += 1
