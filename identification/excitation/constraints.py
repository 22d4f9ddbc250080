"""Constraints of the excitation design, on the linear family form of families.py.

- Joint limits (q range, |qd|, |qdd|, |jerk|) are LINEAR in the decision vector
  z = [offsets, shapes], so SLSQP gets them as ``A z <= ub`` on a time grid with exact Jacobian,
  and metaheuristics get an exact *repair* (shrink each joint's shape until its peaks fit, then
  slide its offset into the range) instead of a penalty.
- Boundary conditions are built into the family basis, except a fixed start position, which
  pins the offsets.
- Cartesian constraints (tool above a floor plane, tool inside a box) and torque limits from the
  nominal dynamics are nonlinear; they go through robodyn.robot.kinematics.forward_kinematics and
  robodyn.robot.dynamics.inverse_dynamics on the same grid.

Limits are applied with a relative ``margin`` (0.02 = stay 2 % inside every limit): the grid only
samples the trajectory, and the final proof is robodyn.limits.check_trajectory at the full rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.kinematics import forward_kinematics
from robodyn.robot.model import RobotModel

from ..optimizers import LinearConstraint, NonlinearConstraint
from .families import Family

KINEMATIC_LIMITS = ("qd_max", "qdd_max", "qddd_max")  # derivative d = 1, 2, 3
ROUNDOFF = 1e-9  # relative size below which a basis value is floating-point noise around an exact 0


class InfeasibleDesign(ValueError):
    """The request cannot be met; ``.report`` lists every constraint that fails, each a dict with
    ``constraint``, ``joint`` (or None) and ``detail``."""

    def __init__(self, report: list[dict]):
        self.report = report
        super().__init__("; ".join(f"{r['constraint']}" + (f" ({r['joint']})" if r.get("joint") else "") +
                                   f": {r['detail']}" for r in report))


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits used by the design (already shrunk by the margin)."""

    q_min: np.ndarray
    q_max: np.ndarray
    derivative_max: np.ndarray  # (3, n): qd, qdd, jerk
    names: tuple[str, ...]

    @classmethod
    def from_model(cls, model: RobotModel, margin: float = 0.02, overrides: dict | None = None) -> "JointLimits":
        if not 0 <= margin < 0.5:
            raise ValueError(f"margin: must be in [0, 0.5), got {margin}")
        values = {f: np.array(getattr(model, f), float) for f in ("q_min", "q_max") + KINEMATIC_LIMITS}
        for key, v in (overrides or {}).items():
            if key not in values:
                raise ValueError(f"limits: unknown limit {key!r}; expected one of {list(values)}")
            values[key] = np.broadcast_to(np.asarray(v, float), (model.dof,)).copy()
        report = []
        for f, arr in values.items():
            for j in np.flatnonzero(~np.isfinite(arr)):
                report.append({"constraint": f, "joint": model.joint_names[j],
                               "detail": "no finite limit; the design needs every joint limit"})
        for f in KINEMATIC_LIMITS:
            for j in np.flatnonzero(np.isfinite(values[f]) & (values[f] <= 0)):
                report.append({"constraint": f, "joint": model.joint_names[j],
                               "detail": f"limit {values[f][j]:g} leaves no motion; it must be > 0"})
        for j in np.flatnonzero(values["q_max"] <= values["q_min"]):
            report.append({"constraint": "q_range", "joint": model.joint_names[j],
                           "detail": f"q_min {values['q_min'][j]:g} >= q_max {values['q_max'][j]:g}"})
        if report:
            raise InfeasibleDesign(report)
        half = (values["q_max"] - values["q_min"]) / 2 * (1 - margin)
        mid = (values["q_max"] + values["q_min"]) / 2
        deriv = np.vstack([values[f] * (1 - margin) for f in KINEMATIC_LIMITS])
        return cls(mid - half, mid + half, deriv, tuple(model.joint_names))


def check_fixed_start(limits: JointLimits, start: np.ndarray | None) -> None:
    """A fixed start (Chen et al. 2021's a_init, Zhong et al. 2023's q_sf) must lie inside the usable range."""
    if start is None:
        return
    report = []
    for j, s in enumerate(start):
        if not limits.q_min[j] <= s <= limits.q_max[j]:
            report.append({"constraint": "start_position", "joint": limits.names[j],
                           "detail": f"fixed start {s:.6g} is outside the usable range "
                                     f"[{limits.q_min[j]:.6g}, {limits.q_max[j]:.6g}] (limits minus margin)"})
    if report:
        raise InfeasibleDesign(report)


def joint_limit_constraint(family: Family, limits: JointLimits, basis: np.ndarray,
                           start: np.ndarray | None = None) -> LinearConstraint:
    """All joint limits on the grid of ``basis`` as one ``A z <= ub``."""
    n, m = family.dof, family.shape_count
    N = basis.shape[1]
    rows, ub = [], []
    for j in range(n):
        cols = slice(n + j * m, n + (j + 1) * m)
        for d in range(4):
            A = np.zeros((N, family.dim))
            A[:, cols] = basis[d]
            if d == 0:
                A[:, j] = 1.0
                hi, lo = limits.q_max[j], limits.q_min[j]
            else:
                hi, lo = limits.derivative_max[d - 1, j], -limits.derivative_max[d - 1, j]
            rows += [A, -A]
            ub += [np.full(N, hi), np.full(N, -lo)]
    A = np.vstack(rows)
    ub = np.concatenate(ub)
    if start is not None:  # offsets pinned: two inequalities each (SLSQP has no separate equality path here)
        E = np.zeros((n, family.dim))
        E[np.arange(n), np.arange(n)] = 1.0
        A = np.vstack([A, E, -E])
        ub = np.concatenate([ub, start, -start])
    return LinearConstraint(A, ub)


def repair_population(Z: np.ndarray, family: Family, limits: JointLimits, basis: np.ndarray,
                      start: np.ndarray | None = None) -> np.ndarray:
    """Map any decision vectors (pop, dim) onto the joint-limit-feasible set on the grid.

    Each joint's shape is shrunk by the largest factor <= 1 that brings its velocity,
    acceleration, jerk peaks and position excursion within the limits; its offset is then
    clipped into the interval that keeps the whole excursion inside [q_min, q_max] (or kept at
    the fixed start, which also caps the excursion on each side).
    """
    offsets, shapes = family.split(np.atleast_2d(Z))
    values = np.einsum("dtm,pjm->dpjt", basis, shapes)  # (4, pop, n, N)
    top, bottom = values[0].max(axis=-1), values[0].min(axis=-1)
    # a basis that is exactly 0 at the ends evaluates to +-1e-16 there: such an excursion is round-off,
    # and against a fixed start on a range limit it would shrink the whole shape to nothing
    roundoff = ROUNDOFF * np.maximum(top - bottom, 0.0)
    top = np.where(top <= roundoff, 0.0, top)
    bottom = np.where(bottom >= -roundoff, 0.0, bottom)
    tiny = 1e-300
    ratios = [np.full(top.shape, 1.0), (limits.q_max - limits.q_min) / np.maximum(top - bottom, tiny)]
    for d in range(1, 4):
        ratios.append(limits.derivative_max[d - 1] / np.maximum(np.abs(values[d]).max(axis=-1), tiny))
    if start is not None:
        ratios.append(np.where(top > 0, (limits.q_max - start) / np.maximum(top, tiny), np.inf))
        ratios.append(np.where(bottom < 0, (start - limits.q_min) / np.maximum(-bottom, tiny), np.inf))
    scale = np.min(np.stack(ratios), axis=0)  # (pop, n)
    shapes = shapes * scale[..., None]
    top, bottom = top * scale, bottom * scale
    if start is not None:
        offsets = np.broadcast_to(start, offsets.shape)
    else:
        offsets = np.clip(offsets, limits.q_min - bottom, np.maximum(limits.q_max - top, limits.q_min - bottom))
    return family.join(offsets, shapes)


def shape_bounds(family: Family, limits: JointLimits, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Search bounds: each shape coordinate alone may reach its joint's tightest limit, so the box
    contains every feasible design; offsets range over the joint range."""
    n, m = family.dof, family.shape_count
    peak = np.abs(basis).max(axis=1)  # (4, m)
    peak[0] = basis[0].max(axis=0) - basis[0].min(axis=0)
    reach = np.empty((n, m))
    for j in range(n):
        lim = np.concatenate([[limits.q_max[j] - limits.q_min[j]], limits.derivative_max[:, j]])
        reach[j] = np.min(lim[:, None] / np.maximum(peak, 1e-300), axis=0)
    lo = family.join(limits.q_min, -reach)
    hi = family.join(limits.q_max, reach)
    return lo, np.maximum(hi, lo + 1e-12)


# --------------------------------------------------------------------------- nonlinear constraints


@dataclass(frozen=True)
class CartesianLimits:
    """Tool-point constraints in the base frame: ``floor_z`` (tool z >= floor_z) and/or a box."""

    floor_z: float | None = None
    box_min: np.ndarray | None = None
    box_max: np.ndarray | None = None

    def __post_init__(self):
        if (self.box_min is None) != (self.box_max is None):
            raise ValueError("box: give both corners")
        if self.box_min is not None:
            lo, hi = np.asarray(self.box_min, float), np.asarray(self.box_max, float)
            if lo.shape != (3,) or hi.shape != (3,) or np.any(hi <= lo):
                raise ValueError(f"box: expected two 3-D corners with min < max, got {lo} and {hi}")
            object.__setattr__(self, "box_min", lo)
            object.__setattr__(self, "box_max", hi)

    @property
    def active(self) -> bool:
        return self.floor_z is not None or self.box_min is not None

    def excess(self, p: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """Signed excess (..., k) of tool positions p (..., 3); > 0 is a violation."""
        parts, names = [], []
        if self.floor_z is not None:
            parts.append(self.floor_z - p[..., 2:3])
            names.append("cartesian_floor")
        if self.box_min is not None:
            parts += [self.box_min - p, p - self.box_max]
            names += [f"cartesian_box_{s}_{a}" for s in ("min", "max") for a in "xyz"]
        return np.concatenate(parts, axis=-1), names


def states_on_grid(Z: np.ndarray, family: Family, basis: np.ndarray):
    """q, qd, qdd, jerk (pop, N, n) for decision vectors Z (pop, dim).

    Velocities within round-off of zero (|qd| <= 1e-9 of the joint's peak, e.g. +-1e-19 where the
    family is at rest) are set to exactly 0, so that a Coulomb column sgn(qd) reads 0 at rest, not
    a random +-1."""
    offsets, shapes = family.split(np.atleast_2d(Z))
    values = np.einsum("dtm,pjm->dptj", basis, shapes)
    values[0] += offsets[:, None, :]
    qd = values[1]
    peak = np.abs(qd).max(axis=1, keepdims=True)
    values[1] = np.where(np.abs(qd) <= ROUNDOFF * peak, 0.0, qd)
    return values[0], values[1], values[2], values[3]


def cartesian_constraint(model: RobotModel, family: Family, basis: np.ndarray,
                         cart: CartesianLimits) -> NonlinearConstraint:
    def excess(Z):
        q = states_on_grid(Z, family, basis)[0]
        p = forward_kinematics(model, q)[..., :3, 3]
        e, _ = cart.excess(p)
        return e.reshape(q.shape[0], -1)

    return NonlinearConstraint(excess)


def torque_constraint(model: RobotModel, family: Family, basis: np.ndarray, margin: float,
                      friction: dict | None = None) -> NonlinearConstraint:
    """|tau| <= tau_max (1 - margin) with the nominal model (RNEA incl. rotor inertia)."""
    bound = model.tau_max * (1 - margin)

    def excess(Z):
        q, qd, qdd, _ = states_on_grid(Z, family, basis)
        pop, N, n = q.shape
        tau = inverse_dynamics(model, q.reshape(-1, n), qd.reshape(-1, n), qdd.reshape(-1, n),
                               rotor_inertia=model.rotor_inertia, friction=friction)
        return (np.abs(tau) - bound).reshape(pop, -1)

    return NonlinearConstraint(excess)


def nonlinear_report(model: RobotModel, family: Family, basis: np.ndarray, z: np.ndarray,
                     cart: CartesianLimits | None, torque: bool, margin: float,
                     friction: dict | None = None) -> list[dict]:
    """Which Cartesian/torque constraints the design ``z`` still violates, and by how much."""
    report = []
    q, qd, qdd, _ = (a[0] for a in states_on_grid(z[None], family, basis))
    if cart is not None and cart.active:
        p = forward_kinematics(model, q)[..., :3, 3]
        e, names = cart.excess(p)
        for k, name in enumerate(names):
            worst = float(e[:, k].max())
            if worst > 1e-9:
                report.append({"constraint": name, "joint": None,
                               "detail": f"best design still exceeds it by {worst:.4g} m (tool position)"})
    if torque:
        tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=friction)
        for j in range(model.dof):
            peak = float(np.abs(tau[:, j]).max())
            if peak > model.tau_max[j] * (1 - margin) * (1 + 1e-9):
                report.append({"constraint": "tau_max", "joint": model.joint_names[j],
                               "detail": f"nominal torque reaches {peak:.4g} N.m, limit {model.tau_max[j]:.4g} "
                                         f"N.m (minus {margin:.0%} margin)"})
    return report
