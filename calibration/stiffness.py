"""Joint stiffness (Li et al. 2023 eqs. 15-25): deflection under link gravity and a payload, and the
identification of joint compliances from loaded-minus-unloaded positions.

Model. Joint i is a torsional spring, tau_i = k_i dtheta_i (eq. 16). The encoder reads the motor
side q; the link side settles where the spring carries the static load:
    theta = q + C tau_ext(theta),   C = K^-1,  tau_ext = -(holding torque)
where the holding torque is what the joints must supply against link gravity (eqs. 21-24, computed
by the shared RNEA ``gravity_torques`` on the current geometry) and against the payload
(eq. 19, J_F^T F with J_F the Jacobian of the payload's centre of mass). The first iterate of this
fixed point, dX = J C tau, is Li et al.'s eq. 20/25; iterating to the fixed point removes the
second-order error of that linearisation (a few micrometres on a UR5) at a negligible cost.

Units: compliance in rad/(N·m); stiffness in N·m/rad.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares, lsq_linear

from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.kinematics import geometric_jacobian
from robodyn.robot.model import RobotModel

from .parameters import (GeometricModel, all_target_positions, base_transform, robot_for, target_positions,
                         tool_offset)
from .planning import select_d_optimal

# N·m/rad: the stiffness a joint keeps where the data cannot resolve it, and the scale of the
# compliance fit; Li et al. 2023 start every joint from this value (their Table 3)
PRIOR_STIFFNESS = 50000.0
DEFLECTION_TOL = 1e-13  # rad: fixed-point stop, far below any measurable angle
DEFLECTION_MAX_ITER = 50


@dataclass(frozen=True)
class Load:
    """A payload on the flange: mass (kg) and centre of mass in the flange frame (m)."""

    mass: float
    com: tuple[float, float, float]

    def __post_init__(self):
        if not np.isfinite(self.mass) or self.mass < 0:
            raise ValueError(f"load.mass: expected a finite mass >= 0 kg, got {self.mass!r}")
        com = np.asarray(self.com, dtype=float)
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise ValueError(f"load.com: expected 3 finite numbers (m, flange frame), got {self.com!r}")
        if np.max(np.abs(com)) > 2.0:
            raise ValueError(f"load.com: {com.tolist()} m is more than 2 m from the flange; "
                             "was it given in millimetres?")

    def to_dict(self) -> dict:
        return {"mass_kg": float(self.mass), "com_m": [float(c) for c in self.com]}

    @classmethod
    def from_dict(cls, d) -> "Load | None":
        if not d:
            return None
        return cls(float(d["mass_kg"]), tuple(float(c) for c in d["com_m"]))


def payload_holding_torques(robot: RobotModel, q: np.ndarray, load: Load) -> np.ndarray:
    """Joint torques that hold the payload against gravity (eq. 19 with F = m g), (N, n)."""
    q = np.atleast_2d(q)
    J = geometric_jacobian(robot, q, point_in_tool=np.asarray(load.com, float))[:, :3, :]
    weight = load.mass * np.asarray(robot.gravity, float)  # the force gravity puts on the payload
    return -np.einsum("nij,i->nj", J, weight)


def holding_torques(robot: RobotModel, q: np.ndarray, load: Load | None = None, *,
                    links: bool = True) -> np.ndarray:
    """Static joint torques against link gravity (eqs. 21-24) and/or a payload, (N, n)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if links:
        tau = gravity_torques(robot, q)
    else:
        tau = np.zeros_like(q)
    if load is not None and load.mass > 0:
        tau = tau + payload_holding_torques(robot, q, load)
    return tau


def backlash_lean(tau_hold: np.ndarray, backlash, scale) -> np.ndarray:
    """How far a joint with gear play leans under a static load: half the play, against the holding
    torque (the link rests on the flank gravity pushes it to), smoothed over +-``scale`` N·m so the
    model stays differentiable where the torque changes sign."""
    b = np.zeros(tau_hold.shape[-1]) if backlash is None else np.asarray(backlash, float)
    if not np.any(b):
        return np.zeros_like(tau_hold)
    s = np.maximum(np.asarray(scale, float), 1e-9)
    return -0.5 * b * np.tanh(tau_hold / s)


def joint_deflection(robot: RobotModel, q, compliance, load: Load | None = None, *,
                     links: bool = True, backlash=None, backlash_scale=None) -> np.ndarray:
    """Link-side minus encoder angles, solving theta = q - C tau_hold(theta) [- lean(theta)], (N, n).

    ``backlash`` (rad per joint) adds the gear-play lean of :func:`backlash_lean`.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    c = np.asarray(compliance, dtype=float)
    if c.shape != (robot.dof,):
        raise ValueError(f"compliance: expected {robot.dof} values, got shape {c.shape}")
    play = backlash is not None and np.any(backlash)
    if not links and (load is None or load.mass == 0) and not play:
        return np.zeros_like(q)
    dtheta = np.zeros_like(q)
    for _ in range(DEFLECTION_MAX_ITER):
        tau = holding_torques(robot, q + dtheta, load, links=links)
        new = -c * tau
        if play:
            new = new + backlash_lean(tau, backlash, backlash_scale)
        change = float(np.max(np.abs(new - dtheta))) if new.size else 0.0
        dtheta = new
        if change < DEFLECTION_TOL:
            break
    return dtheta


def deflected_positions(gm: GeometricModel, params: np.ndarray, q, compliance, load: Load | None = None, *,
                        links: bool = True, target: int = 0) -> np.ndarray:
    """Target positions with the joints deflected by gravity and/or the payload, (N, 3)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    robot = robot_for(gm, params)
    return target_positions(gm, params, q + joint_deflection(robot, q, compliance, load, links=links), target)


# --------------------------------------------------------------------------- identification


@dataclass
class ComplianceFit:
    compliance: np.ndarray  # (n,) rad/(N·m); prior value where not identified
    identified: np.ndarray  # (n,) bool
    std: np.ndarray  # (n,) standard deviation of the compliance (nan where not identified)
    rms_residual: float  # m
    excitation: np.ndarray  # (n,) relative column norm of the stiffness regressor

    @property
    def stiffness(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.compliance > 0, 1.0 / self.compliance, np.inf)


def compliance_regressor(gm: GeometricModel, params: np.ndarray, q: np.ndarray, load: Load,
                         target: int = 0) -> np.ndarray:
    """A (3N, n) with A c = position change of a target caused by the payload (eq. 20: J K^-1 J_F^T F)."""
    robot = robot_for(gm, params)
    tau_load = -payload_holding_torques(robot, q, load)  # the payload's torque on each joint
    J = joint_position_jacobian(gm, params, q, target)
    return (J * tau_load[:, None, :]).reshape(-1, gm.dof)


def joint_position_jacobian(gm: GeometricModel, params: np.ndarray, q: np.ndarray, target: int = 0) -> np.ndarray:
    """d(target position)/dq in the measurement frame, (N, 3, n): the shared geometric Jacobian."""
    robot = robot_for(gm, params)
    J = geometric_jacobian(robot, np.atleast_2d(q), point_in_tool=tool_offset(gm, params, target))[:, :3, :]
    return np.einsum("ij,njk->nik", base_transform(gm, params)[:3, :3], J)


def identify_compliance(gm: GeometricModel, params: np.ndarray, q: np.ndarray, delta_p: np.ndarray,
                        load: Load, prior: np.ndarray, *, refine: bool = True,
                        excitation_tol: float = 1e-3) -> ComplianceFit:
    """Joint compliances from the payload-induced displacement p_F - p_o at the same q (step 3).

    The linear least-squares solve of eq. 20 (compliances >= 0) gives the estimate; joints whose
    regressor column is below ``excitation_tol`` of the largest (joint 1 under a vertical load: its
    axis is parallel to gravity, so the load never twists it) keep their ``prior`` value. With
    ``refine`` the estimate is polished on the full fixed-point model including link gravity.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    delta_p = np.asarray(delta_p, dtype=float)
    if delta_p.ndim == 2:
        delta_p = delta_p[:, None, :]
    if delta_p.ndim != 3 or delta_p.shape[0] != q.shape[0] or delta_p.shape[2] != 3:
        raise ValueError(f"loaded: expected {q.shape[0]} displacement rows, got shape {delta_p.shape}")
    prior = np.asarray(prior, dtype=float)
    seen = np.isfinite(delta_p).all(-1)  # (N, K): measured both with and without the payload
    A = np.vstack([compliance_regressor(gm, params, q[seen[:, k]], load, k)
                   for k in range(delta_p.shape[1]) if seen[:, k].any()])
    targets = [k for k in range(delta_p.shape[1]) if seen[:, k].any()]
    delta_p = np.concatenate([delta_p[seen[:, k], k] for k in targets])  # rows in the order of A
    norms = np.linalg.norm(A, axis=0)
    excitation = norms / max(float(norms.max()), 1e-300)
    ident = excitation > excitation_tol
    if not np.any(ident):
        raise ValueError("loaded: the payload does not twist any joint at these poses (is its mass zero?)")
    b = delta_p.reshape(-1)
    scale = norms[ident]
    sol = lsq_linear(A[:, ident] / scale, b, bounds=(0.0, np.inf), method="bvls")
    c = prior.copy()
    c[ident] = sol.x / scale
    if refine:
        c = _refine_compliance(gm, params, q, seen, targets, delta_p, load, c, ident)
    # standard deviations from the linearised problem at the solution
    if refine:
        resid = (delta_p - _load_displacement(gm, params, q, seen, targets, load, c)).reshape(-1)
    else:
        resid = b - A[:, ident] @ c[ident]
    dof = max(b.size - int(ident.sum()), 1)
    sigma2 = float(resid @ resid) / dof
    Ai = A[:, ident]
    std = np.full(gm.dof, np.nan)
    std[ident] = np.sqrt(np.diag(sigma2 * np.linalg.pinv(Ai.T @ Ai)))
    return ComplianceFit(c, ident, std, float(np.sqrt(np.mean(resid ** 2))), excitation)


def _load_displacement(gm, params, q, seen, targets, load, compliance) -> np.ndarray:
    robot = robot_for(gm, params)
    q_with = q + joint_deflection(robot, q, compliance, load, links=True)
    q_without = q + joint_deflection(robot, q, compliance, None, links=True)
    with_load = all_target_positions(gm, params, q_with)
    without = all_target_positions(gm, params, q_without)
    return np.concatenate([(with_load - without)[seen[:, k], k] for k in targets])


def _refine_compliance(gm, params, q, seen, targets, delta_p, load, c0, ident) -> np.ndarray:
    idx = np.flatnonzero(ident)
    scale = np.maximum(c0[idx], 1e-9)

    def residual(x):
        c = c0.copy()
        c[idx] = x * scale
        return (_load_displacement(gm, params, q, seen, targets, load, c) - delta_p).reshape(-1)

    sol = least_squares(residual, c0[idx] / scale, bounds=(0.0, np.inf), method="trf", max_nfev=50,
                        x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12)
    c = c0.copy()
    c[idx] = sol.x * scale
    return c


def loaded_subset(gm, q: np.ndarray, load: Load, count: int) -> np.ndarray:
    """Indices of the ``count`` poses that best determine the joint compliances (D-optimal on the
    eq. 20 regressor at the nominal geometry; joints the payload never twists are left out)."""
    A = compliance_regressor(gm, gm.nominal, q, load).reshape(q.shape[0], 3, gm.dof)
    norms = np.linalg.norm(A, axis=(0, 1))
    excited = norms > 1e-3 * norms.max()
    return np.sort(select_d_optimal(A[:, :, excited] / norms[excited], count))
