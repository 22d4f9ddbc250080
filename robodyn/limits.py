"""The one trajectory validator: position, velocity, acceleration, jerk, torque and start state.

Used by the excitation designer (to report feasibility), the daemon (before any motion) and
the drivers (as a last guard). A rejection names the violated limit, the joint and the time.
"""

from __future__ import annotations

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


def check_trajectory(model: RobotModel, traj: Trajectory, *, rate_hz: float = 1000.0, oversample: int = 2,
                     current_q=None, start_tolerance: float = DEFAULT_START_TOLERANCE,
                     check_torque: bool = True, friction: dict | None = None,
                     scale: float = 1.0) -> LimitReport:
    """Check every limit of ``model`` on ``traj`` sampled at ``rate_hz * oversample``.

    ``current_q`` is the robot's present position: the trajectory must start there (within
    ``start_tolerance``). ``scale`` (0 < scale <= 1) shrinks every limit, for margins.
    Torque is predicted with the model's nominal inertia, rotor inertia and optional friction.
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
    t, q, qd, qdd, jerk = traj.sample(step_rate)
    if t[-1] < traj.duration:
        t_end = np.array([traj.duration])
        extra = traj.evaluate(t_end)
        t = np.concatenate([t, t_end])
        q, qd, qdd, jerk = (np.vstack([a, b]) for a, b in zip((q, qd, qdd, jerk), extra))
    for name, arr in (("q", q), ("qd", qd), ("qdd", qdd), ("jerk", jerk)):
        if not np.all(np.isfinite(arr)):
            v = Violation("non_finite", None, None, None, f"trajectory evaluates to NaN/inf in {name}", None)
            return LimitReport(False, [v], traj.duration, len(t), rate_hz)

    util: dict[str, list[float]] = {}

    def check_upper(limit: str, values: np.ndarray, bound: np.ndarray):
        mag = np.abs(values)
        util[limit] = (np.max(mag, axis=0) / bound).tolist()
        for j in range(n):
            over = mag[:, j] > bound[j] * (1 + 1e-12)
            if np.any(over):
                k = int(np.argmax(over))
                worst = int(np.argmax(mag[:, j]))
                violations.append(Violation(limit, names[j], j, float(t[k]), float(values[worst, j]),
                                            float(bound[j])))

    qlo = model.q_min + (1 - scale) * (model.q_max - model.q_min) / 2
    qhi = model.q_max - (1 - scale) * (model.q_max - model.q_min) / 2
    for j in range(n):
        low = q[:, j] < qlo[j] - 1e-12
        high = q[:, j] > qhi[j] + 1e-12
        if np.any(low):
            k = int(np.argmax(low))
            violations.append(Violation("q_min", names[j], j, float(t[k]), float(q[:, j].min()), float(qlo[j])))
        if np.any(high):
            k = int(np.argmax(high))
            violations.append(Violation("q_max", names[j], j, float(t[k]), float(q[:, j].max()), float(qhi[j])))
    span = model.q_max - model.q_min
    util["q_range"] = (np.maximum((q.max(axis=0) - model.q_min), (model.q_max - q.min(axis=0))) / span).tolist()
    check_upper("qd_max", qd, model.qd_max * scale)
    check_upper("qdd_max", qdd, model.qdd_max * scale)
    check_upper("qddd_max", jerk, model.qddd_max * scale)

    torque_checked = False
    if check_torque:
        tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=friction)
        check_upper("tau_max", tau, model.tau_max * scale)
        torque_checked = True

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
    for label, idx in (("start", 0), ("end", -1)):
        for limit, arr, tol in ((f"{label}_velocity", qd, REST_VELOCITY_TOL),
                                (f"{label}_acceleration", qdd, REST_ACCELERATION_TOL)):
            bad = np.flatnonzero(np.abs(arr[idx]) > tol)
            for j in bad:
                violations.append(Violation(limit, names[j], int(j), float(t[idx]), float(arr[idx, j]), tol))
    if current_q is not None:
        cq = np.asarray(current_q, float)
        if cq.shape != (n,) or not np.all(np.isfinite(cq)):
            raise ValueError(f"current_q: expected {n} finite joint positions, got {cq!r}")
        gap = np.abs(q[0] - cq)
        for j in np.flatnonzero(gap > start_tolerance):
            violations.append(Violation("start_position", names[j], int(j), 0.0, float(q[0, j] - cq[j]),
                                        start_tolerance))
    return LimitReport(not violations, violations, traj.duration, len(t), rate_hz, util, torque_checked)
