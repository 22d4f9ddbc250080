"""Inverse kinematics for calibration: closed form for UR-type arms (Li et al. 2023 eqs. 3-8), numeric
(the shared damped least squares) for any other chain.

The closed form is written for the Li et al. 2023 frame assignment (Table 2 structure: d2 along the
three parallel axes, a3 and a4 the upper arm and forearm, d5 the wrist offset, frame 6 at the
wrist centre). A robot is accepted when its nominal table has that structure in either convention
(the Li et al. 2023 MDH table or UR's own standard DH table); the base shift and the flange transform are
then measured from its forward kinematics and checked at random configurations, so the sign
conventions cannot silently differ. Every returned solution is verified by forward kinematics.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from robodyn.robot.kinematics import (chain_frames, chain_from_dh, forward_kinematics,
                                      inverse_kinematics, trans)
from robodyn.robot.model import RobotModel

# the Li et al. 2023 MDH frame assignment of a UR arm (their Table 2 structure)
UR_MDH_ALPHA = np.array([0.0, np.pi / 2, 0.0, 0.0, -np.pi / 2, -np.pi / 2])
UR_MDH_THETA = np.array([0.0, np.pi, 0.0, 0.0, -np.pi, 0.0])
UR_DH_ALPHA = np.array([np.pi / 2, 0.0, 0.0, np.pi / 2, -np.pi / 2, 0.0])
VERIFY_TOL = 1e-8
BRANCHES = np.array(list(itertools.product((1.0, -1.0), repeat=3)))  # (shoulder, wrist, elbow) signs


@dataclass(frozen=True)
class URGeometry:
    d2: float
    a3: float
    a4: float
    d5: float
    base: np.ndarray  # Li et al. 2023 frame 0 in the robot base frame
    flange: np.ndarray  # robot flange in Li et al. 2023 frame 6


def _ur_mdh_chain(d2, a3, a4, d5):
    return chain_from_dh("mdh", UR_MDH_ALPHA, [0, 0, a3, a4, 0, 0], [0, d2, 0, 0, d5, 0], UR_MDH_THETA,
                         ["revolute"] * 6)[0]


_GEOMETRY_CACHE: dict = {}


def ur_geometry(robot: RobotModel) -> URGeometry | None:
    """The closed-form IK geometry of a UR-type nominal model, or None (memoised per chain)."""
    key = (robot.fixed.tobytes(), robot.tool.tobytes(), robot.joint_types.tobytes(),
           None if robot.dh is None else (robot.dh.convention, np.asarray(robot.dh.alpha).tobytes(),
                                          np.asarray(robot.dh.a).tobytes(), np.asarray(robot.dh.d).tobytes(),
                                          np.asarray(robot.dh.theta).tobytes()))
    if key not in _GEOMETRY_CACHE:
        if len(_GEOMETRY_CACHE) > 64:  # bounded: calibration loops build many perturbed models
            _GEOMETRY_CACHE.clear()
        _GEOMETRY_CACHE[key] = _detect_ur_geometry(robot)
    return _GEOMETRY_CACHE[key]


def _detect_ur_geometry(robot: RobotModel) -> URGeometry | None:
    dh = robot.dh
    if dh is None or robot.dof != 6 or np.any(robot.joint_types != 0):
        return None
    al, a, d, th = (np.asarray(v, float) for v in (dh.alpha, dh.a, dh.d, dh.theta))
    close = lambda x, y: np.allclose(x, y, atol=1e-9)  # noqa: E731
    if dh.convention == "mdh" and close(al, UR_MDH_ALPHA) and close(th, UR_MDH_THETA) \
            and close(a[[0, 1, 4, 5]], 0) and close(d[[2, 3, 5]], 0):
        d1, d2, a3, a4, d5 = d[0], d[1], a[2], a[3], d[4]
    elif dh.convention == "dh" and close(al, UR_DH_ALPHA) and close(th, 0) \
            and close(a[[0, 3, 4, 5]], 0) and close(d[[1, 2]], 0):
        d1, d2, a3, a4, d5 = d[0], d[3], -a[1], -a[2], d[4]
    else:
        return None
    fixed = _ur_mdh_chain(d2, a3, a4, d5)
    base = trans(z=d1)
    zero = np.zeros(6)
    flange = np.linalg.inv(base @ chain_frames(fixed, np.zeros(6, np.int8), zero)[-1]) @ forward_kinematics(robot, zero)
    q_check = np.random.default_rng(0).uniform(-3.0, 3.0, size=(4, 6))
    ours = base @ chain_frames(fixed, np.zeros(6, np.int8), q_check)[:, -1] @ flange
    if not np.allclose(ours, forward_kinematics(robot, q_check), atol=1e-9):
        return None
    return URGeometry(float(d2), float(a3), float(a4), float(d5), base, flange)


def _frame6_solutions(g: URGeometry, T06: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Li et al. 2023 eqs. 3-8 for all 8 branches: joint angles (M, 8, 6) and a validity mask (M, 8)."""
    M = T06.shape[0]
    n, o, a, p = (T06[:, :3, k][:, None, :] for k in range(4))
    s_sh, s_wr, s_el = (BRANCHES[None, :, k] for k in range(3))
    px, py, pz = p[..., 0], p[..., 1], p[..., 2]
    r2 = np.broadcast_to(px ** 2 + py ** 2 - g.d2 ** 2, (M, 8))
    ok = np.broadcast_to(r2 >= 0, (M, 8)).copy()
    t1 = np.arctan2(py, px) + np.arctan2(g.d2, s_sh * np.sqrt(np.clip(r2, 0, None)))  # eq. 3
    c1, s1 = np.cos(t1), np.sin(t1)
    v = a[..., 1] * c1 - a[..., 0] * s1
    t5 = np.arctan2(s_wr * np.sqrt(np.clip(1 - v ** 2, 0, None)), v)  # eq. 4
    c5, s5 = np.cos(t5), np.sin(t5)
    ok &= np.abs(s5) > 1e-12  # wrist singularity: joint 6 is undetermined there
    s5_safe = np.where(np.abs(s5) > 1e-12, s5, 1.0)
    t6 = np.arctan2((o[..., 0] * s1 - o[..., 1] * c1) / s5_safe, (n[..., 1] * c1 - n[..., 0] * s1) / s5_safe)  # eq. 5
    c6, s6 = np.cos(t6), np.sin(t6)
    s234 = n[..., 2] * c5 * c6 - a[..., 2] * s5 - o[..., 2] * c5 * s6
    c234 = -o[..., 2] * c6 - n[..., 2] * s6
    M4 = px * c1 + py * s1 + g.d5 * s234
    M3 = pz - g.d5 * c234
    M1 = M4 ** 2 + M3 ** 2 - g.a3 ** 2 - g.a4 ** 2
    disc = 4 * g.a3 ** 2 * g.a4 ** 2 - M1 ** 2
    ok &= disc >= 0
    t3 = np.arctan2(s_el * np.sqrt(np.clip(disc, 0, None)), M1)  # eq. 6
    M2 = g.a3 + g.a4 * np.cos(t3)
    s3 = np.sin(t3)
    t2 = np.arctan2(M2 * M3 - g.a4 * s3 * M4, M2 * M4 + g.a4 * s3 * M3)  # eq. 7
    t4 = np.arctan2(s234, c234) - t2 - t3  # eq. 8
    theta = np.stack([t1, t2, t3, t4, t5, t6], axis=-1)
    q = _wrap(theta - UR_MDH_THETA)  # the equations give the DH angle; the joint angle excludes the offset
    return q.reshape(M, 8, 6), ok.reshape(M, 8)


def _wrap(x):
    return (np.asarray(x) + np.pi) % (2 * np.pi) - np.pi


def closest_representation(q: np.ndarray, q_ref: np.ndarray, q_min: np.ndarray, q_max: np.ndarray) -> np.ndarray:
    """Each angle moved by whole turns to the value nearest q_ref inside the limits (where possible)."""
    near = q_ref + _wrap(q - q_ref)
    for shift in (0.0, -2 * np.pi, 2 * np.pi):
        cand = near + shift
        inside = (cand >= q_min) & (cand <= q_max)
        near = np.where(~((near >= q_min) & (near <= q_max)) & inside, cand, near)
    return near


def ur_ik(robot: RobotModel, geometry: URGeometry, targets: np.ndarray, q_ref=None) -> tuple[np.ndarray, np.ndarray]:
    """All closed-form flange-pose solutions, (M, 8, 6), and a mask of the verified ones (M, 8)."""
    targets = np.asarray(targets, dtype=float).reshape(-1, 4, 4)
    T06 = np.linalg.inv(geometry.base) @ targets @ np.linalg.inv(geometry.flange)
    q, ok = _frame6_solutions(geometry, T06)
    ref = np.zeros(6) if q_ref is None else np.asarray(q_ref, float)
    q = closest_representation(q, ref, robot.q_min, robot.q_max)
    T = forward_kinematics(robot, q)
    pos_err = np.linalg.norm(T[..., :3, 3] - targets[:, None, :3, 3], axis=-1)
    rot_err = np.linalg.norm(T[..., :3, :3] - targets[:, None, :3, :3], axis=(-2, -1))
    ok &= (pos_err < VERIFY_TOL) & (rot_err < VERIFY_TOL)
    return q, ok


def ur_branch(robot: RobotModel, geometry: URGeometry, q: np.ndarray) -> int:
    """Index (0..7) of the closed-form branch (shoulder, wrist, elbow signs) that q lies on."""
    q = np.asarray(q, dtype=float)
    sols, ok = ur_ik(robot, geometry, forward_kinematics(robot, q)[None], q)
    dist = np.where(ok[0], np.max(np.abs(_wrap(sols[0] - q)), axis=1), np.inf)
    k = int(np.argmin(dist))
    if not dist[k] < 1e-6:
        raise ValueError("q_ref: the reference configuration is singular (its IK branch is ambiguous)")
    return k


def ik_solutions(robot: RobotModel, target: np.ndarray, q_ref: np.ndarray, *, attempts: int = 6,
                 seed: int = 0) -> np.ndarray:
    """Distinct IK solutions for one flange pose: closed form when available, else numeric (K, n)."""
    geometry = ur_geometry(robot)
    if geometry is not None:
        q, ok = ur_ik(robot, geometry, target[None], q_ref)
        return q[0][ok[0]]
    rng = np.random.default_rng(seed)
    found = []
    for k in range(attempts):
        q0 = q_ref if k == 0 else np.clip(q_ref + rng.normal(scale=0.6, size=robot.dof), robot.q_min, robot.q_max)
        res = inverse_kinematics(robot, target, q0, tol_position=1e-10, tol_orientation=1e-10)
        if res.success and not any(np.allclose(res.q, f, atol=1e-6) for f in found):
            found.append(res.q)
    return np.array(found).reshape(-1, robot.dof)


def nominal_ik(robot: RobotModel, target: np.ndarray, q_ref, *, position_only: bool = False,
               point_in_tool=None) -> np.ndarray:
    """The IK solution nearest q_ref (Li et al. 2023 section 2.2 step 1). Raises ValueError if none."""
    q_ref = np.asarray(q_ref, dtype=float)
    if position_only:
        res = inverse_kinematics(robot, np.asarray(target, float), q_ref, position_only=True,
                                 point_in_tool=point_in_tool, tol_position=1e-10)
        if not res.success:
            raise ValueError(f"target: no inverse kinematics solution near q0 (residual {res.position_error:.3g} m)")
        return res.q
    sols = ik_solutions(robot, np.asarray(target, float), q_ref)
    if sols.shape[0] == 0:
        raise ValueError("target: the pose is out of reach of the nominal robot (no inverse kinematics solution)")
    return sols[int(np.argmin(np.linalg.norm(sols - q_ref, axis=1)))]
