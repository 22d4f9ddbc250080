"""The one trajectory validator: position, velocity, acceleration, jerk, torque and start state.

Used by the excitation designer (to report feasibility), the daemon (before any motion) and
the drivers (as a last guard). A rejection names the violated limit, the joint and the time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.model import LIMIT_FIELDS, RobotModel
from robodyn.trajectory import SampledTrajectory, Trajectory

# A trajectory must start and end at rest; these tolerances absorb round-off in designed
# coefficients, not real motion (1e-3 rad/s is 0.06 deg/s).
REST_VELOCITY_TOL = 1e-3
REST_ACCELERATION_TOL = 1e-2
DEFAULT_START_TOLERANCE = 1e-3  # rad (or m): how close the robot must already be to q(0)

UNITS = {"q_min": "rad", "q_max": "rad", "qd_max": "rad/s", "qdd_max": "rad/s^2", "qddd_max": "rad/s^3",
         "tau_max": "N.m", "start_position": "rad", "start_velocity": "rad/s", "start_acceleration": "rad/s^2",
         "end_velocity": "rad/s", "end_acceleration": "rad/s^2"}


@dataclass
class Violation:
    limit: str  # a LIMIT_FIELDS name, or start_*/end_*/model/dof
    joint: str | None
    joint_index: int | None
    time: float | None  # first time the limit is exceeded, s
    value: float | None  # worst value reached
    bound: float | None

    def message(self) -> str:
        if self.joint is None:
            return f"{self.limit}: {self.value}"
        unit = UNITS.get(self.limit, "")
        when = f" at t={self.time:.4f} s" if self.time is not None else ""
        return (f"{self.limit} violated on {self.joint}{when}: {self.value:.6g} {unit} "
                f"(limit {self.bound:.6g} {unit})")


@dataclass
class LimitReport:
    ok: bool
    violations: list[Violation]
    duration: float
    samples_checked: int
    rate_hz: float
    # per-joint peak use of each limit, as a fraction of the limit (1.0 = at the limit)
    utilisation: dict[str, list[float]] = field(default_factory=dict)
    torque_checked: bool = False

    def to_dict(self) -> dict:
        return {"ok": self.ok, "violations": [asdict(v) | {"message": v.message()} for v in self.violations],
                "duration": self.duration, "samples_checked": self.samples_checked, "rate_hz": self.rate_hz,
                "utilisation": self.utilisation, "torque_checked": self.torque_checked}

    def summary(self) -> str:
        if self.ok:
            return f"trajectory within limits ({self.samples_checked} samples over {self.duration:.3f} s)"
        first = self.violations[0].message()
        more = len(self.violations) - 1
        return first + (f" (and {more} more violation{'s' if more > 1 else ''})" if more else "")

    def raise_if_unsafe(self) -> None:
        if not self.ok:
            raise LimitViolation(self)


class LimitViolation(ValueError):
    """A trajectory that must not be sent to the robot. ``.report`` has every violation."""

    def __init__(self, report: LimitReport):
        self.report = report
        super().__init__(report.summary())


class ValidationWithdrawn(Exception):
    """The check was stopped between two windows because nobody waits for its answer any more."""


# Validation works through the trajectory in windows of samples, so its memory is fixed by
# WINDOW_BYTES whatever the duration (a 7000 s, 300-harmonic request once asked for 31 GiB).
WINDOW_BYTES = 24 * 2 ** 20
MIN_WINDOW, MAX_WINDOW = 256, 65_536
# per-sample cost of the predicted torque (RNEA), in the units of trajectory terms, per joint
TORQUE_TERMS_PER_JOINT = 12


def trajectory_terms(traj: Trajectory) -> int:
    """Terms evaluated per sample (all joints): the per-sample cost of evaluating ``traj``."""
    from robodyn.trajectory import (FourierPolyTrajectory, FourierTrajectory, PeriodicPolyTrajectory,
                                    SequenceTrajectory, SweepTrajectory)

    n = traj.dof
    if isinstance(traj, FourierPolyTrajectory):
        return n * (int(traj.a.shape[1]) + 6)
    if isinstance(traj, FourierTrajectory):
        return n * int(traj.a.shape[1])
    if isinstance(traj, PeriodicPolyTrajectory):
        return n * int(traj.coefficients.shape[1])
    if isinstance(traj, SweepTrajectory):
        return n * 8
    if isinstance(traj, SequenceTrajectory):
        return max(trajectory_terms(p) for p in traj.parts)
    return n * 6  # point to point quintic, sampled (quintic spline)


@dataclass
class ValidationCost:
    """What checking a trajectory costs, known before anything is evaluated."""

    samples: int  # duration x rate x oversample (+ the end point)
    terms: int  # per sample: trajectory terms + the torque prediction
    window: int  # samples evaluated at once

    @property
    def evaluations(self) -> float:
        return float(self.samples) * self.terms

    def to_dict(self) -> dict:
        return {"samples": self.samples, "terms_per_sample": self.terms, "evaluations": self.evaluations,
                "window": self.window}


def validation_cost(traj: Trajectory, rate_hz: float = 1000.0, oversample: int = 2,
                    check_torque: bool = True) -> ValidationCost:
    """duration x rate x terms, from the trajectory's parameters alone (no sample is computed),
    and the window size that keeps the working memory near WINDOW_BYTES."""
    step_rate = rate_hz * oversample
    if math.isfinite(traj.duration) and traj.duration * step_rate < 2 ** 62:
        count = int(math.floor(traj.duration * step_rate + 1e-9)) + 1
        samples = count + ((count - 1) / step_rate < traj.duration)  # the end point, when off the grid
    else:
        samples = 2 ** 62
    n = max(1, traj.dof)
    terms = trajectory_terms(traj)
    total = terms + (TORQUE_TERMS_PER_JOINT * n if check_torque else 0)
    # per row: sin, cos, angle (3 per Fourier term) + q, qd, qdd, jerk, tau and temporaries
    row_bytes = 8 * (4 * (terms // n + 6) + 24 * n)
    window = int(min(MAX_WINDOW, max(MIN_WINDOW, WINDOW_BYTES // row_bytes)))
    return ValidationCost(samples, total, window)


class _Peak:
    """Running per-joint peak of |value| over windows: first time over a bound, worst value."""

    def __init__(self, n: int, bound: np.ndarray):
        self.bound = bound
        self.peak = np.full(n, -1.0)
        self.worst = np.zeros(n)
        self.first: list[float | None] = [None] * n

    def add(self, t: np.ndarray, values: np.ndarray) -> None:
        mag = np.abs(values)
        idx = np.argmax(mag, axis=0)
        cols = np.arange(mag.shape[1])
        best = mag[idx, cols]
        better = best > self.peak  # strict: ties keep the earlier sample, as one pass would
        self.peak[better] = best[better]
        self.worst[better] = values[idx[better], cols[better]]
        over = mag > self.bound * (1 + 1e-12)
        for j in np.flatnonzero(over.any(axis=0)):
            if self.first[j] is None:
                self.first[j] = float(t[int(np.argmax(over[:, j]))])


def check_trajectory(model: RobotModel, traj: Trajectory, *, rate_hz: float = 1000.0, oversample: int = 2,
                     current_q=None, start_tolerance: float = DEFAULT_START_TOLERANCE,
                     check_torque: bool = True, friction: dict | None = None,
                     scale: float = 1.0, window: int | None = None,
                     withdrawn: Callable[[], bool] | None = None) -> LimitReport:
    """Check every limit of ``model`` on ``traj`` sampled at ``rate_hz * oversample``.

    ``current_q`` is the robot's present position: the trajectory must start there (within
    ``start_tolerance``). ``scale`` (0 < scale <= 1) shrinks every limit, for margins.
    Torque is predicted with the model's nominal inertia, rotor inertia and optional friction.
    The samples are evaluated ``window`` at a time (default: :func:`validation_cost`'s, about
    WINDOW_BYTES of working memory), so memory does not grow with the duration; the result is
    the same for any window. ``withdrawn`` is asked before each window; once it answers True the
    check raises :class:`ValidationWithdrawn` (a withdrawn submission stops costing CPU within one
    window instead of running to its end).
    """
    if not 0 < scale <= 1:
        raise ValueError(f"scale: must be in (0, 1], got {scale}")
    n = model.dof
    names = model.joint_names
    violations: list[Violation] = []
    if traj.dof != n:
        v = Violation("dof", None, None, None, f"trajectory has {traj.dof} joints, robot {model.name} has {n}", None)
        return LimitReport(False, [v], traj.duration, 0, rate_hz)
    for f in LIMIT_FIELDS:
        arr = getattr(model, f)
        if not np.all(np.isfinite(arr)):
            j = int(np.argmax(~np.isfinite(arr)))
            v = Violation("model", None, None, None,
                          f"robot {model.name} has no finite {f} for {names[j]}; set every limit before moving it",
                          None)
            return LimitReport(False, [v], traj.duration, 0, rate_hz)
    if not rate_hz > 0 or oversample < 1:
        raise ValueError(f"rate_hz: must be > 0 and oversample >= 1, got {rate_hz}, {oversample}")

    step_rate = rate_hz * oversample
    count = int(math.floor(traj.duration * step_rate + 1e-9)) + 1
    window = int(window or validation_cost(traj, rate_hz, oversample, check_torque).window)
    if window < 1:
        raise ValueError(f"window: must be >= 1 sample, got {window}")
    needs_end = (count - 1) / step_rate < traj.duration

    qlo = model.q_min + (1 - scale) * (model.q_max - model.q_min) / 2
    qhi = model.q_max - (1 - scale) * (model.q_max - model.q_min) / 2
    peaks = {"qd_max": _Peak(n, model.qd_max * scale), "qdd_max": _Peak(n, model.qdd_max * scale),
             "qddd_max": _Peak(n, model.qddd_max * scale)}
    if check_torque:
        peaks["tau_max"] = _Peak(n, model.tau_max * scale)
    q_lowest, q_highest = np.full(n, np.inf), np.full(n, -np.inf)
    first_low: list[float | None] = [None] * n
    first_high: list[float | None] = [None] * n
    first_state = last_state = None
    checked = 0
    for start in range(0, count, window):
        if withdrawn is not None and withdrawn():
            raise ValidationWithdrawn(f"stopped after {checked} of {count} samples")
        stop = min(count, start + window)
        t = np.arange(start, stop) / step_rate
        if stop == count and needs_end:
            t = np.append(t, traj.duration)
        q, qd, qdd, jerk = traj.evaluate(t)
        checked += t.shape[0]
        for name, arr in (("q", q), ("qd", qd), ("qdd", qdd), ("jerk", jerk)):
            if not np.all(np.isfinite(arr)):
                v = Violation("non_finite", None, None, None, f"trajectory evaluates to NaN/inf in {name}", None)
                return LimitReport(False, [v], traj.duration, checked, rate_hz)
        if first_state is None:
            first_state = (t[0], q[0].copy(), qd[0].copy(), qdd[0].copy())
        last_state = (t[-1], q[-1].copy(), qd[-1].copy(), qdd[-1].copy())
        np.minimum(q_lowest, q.min(axis=0), out=q_lowest)
        np.maximum(q_highest, q.max(axis=0), out=q_highest)
        low = q < qlo - 1e-12
        high = q > qhi + 1e-12
        for j in range(n):
            if first_low[j] is None and low[:, j].any():
                first_low[j] = float(t[int(np.argmax(low[:, j]))])
            if first_high[j] is None and high[:, j].any():
                first_high[j] = float(t[int(np.argmax(high[:, j]))])
        peaks["qd_max"].add(t, qd)
        peaks["qdd_max"].add(t, qdd)
        peaks["qddd_max"].add(t, jerk)
        if check_torque:
            tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=friction)
            peaks["tau_max"].add(t, tau)
        del q, qd, qdd, jerk  # the next window reuses the memory

    util: dict[str, list[float]] = {}
    for j in range(n):
        if first_low[j] is not None:
            violations.append(Violation("q_min", names[j], j, first_low[j], float(q_lowest[j]), float(qlo[j])))
        if first_high[j] is not None:
            violations.append(Violation("q_max", names[j], j, first_high[j], float(q_highest[j]), float(qhi[j])))
    span = model.q_max - model.q_min
    util["q_range"] = (np.maximum((q_highest - model.q_min), (model.q_max - q_lowest)) / span).tolist()
    for limit, peak in peaks.items():
        util[limit] = (peak.peak / peak.bound).tolist()
        for j in range(n):
            if peak.first[j] is not None:
                violations.append(Violation(limit, names[j], j, peak.first[j], float(peak.worst[j]),
                                            float(peak.bound[j])))

    if isinstance(traj, SampledTrajectory):
        # the client's own derivative arrays must respect the limits too
        for name, arr, limit, bound in (("qd", traj.qd, "qd_max", model.qd_max),
                                        ("qdd", traj.qdd, "qdd_max", model.qdd_max)):
            if arr is None:
                continue
            over = np.abs(arr) > bound * scale * (1 + 1e-12)
            for j in np.flatnonzero(over.any(axis=0)):
                k = int(np.argmax(over[:, j]))
                violations.append(Violation(limit, names[j], int(j), float(traj.t[k] - traj.t[0]),
                                            float(arr[k, j]), float(bound[j] * scale)))

    # rest-to-rest: the robot is standing still before and after
    for label, (t_at, _q, v_at, a_at) in (("start", first_state), ("end", last_state)):
        for limit, arr, tol in ((f"{label}_velocity", v_at, REST_VELOCITY_TOL),
                                (f"{label}_acceleration", a_at, REST_ACCELERATION_TOL)):
            for j in np.flatnonzero(np.abs(arr) > tol):
                violations.append(Violation(limit, names[j], int(j), float(t_at), float(arr[j]), tol))
    if current_q is not None:
        cq = np.asarray(current_q, float)
        if cq.shape != (n,) or not np.all(np.isfinite(cq)):
            raise ValueError(f"current_q: expected {n} finite joint positions, got {cq!r}")
        gap = np.abs(first_state[1] - cq)
        for j in np.flatnonzero(gap > start_tolerance):
            violations.append(Violation("start_position", names[j], int(j), 0.0, float(first_state[1][j] - cq[j]),
                                        start_tolerance))
    return LimitReport(not violations, violations, traj.duration, checked, rate_hz, util, check_torque)
