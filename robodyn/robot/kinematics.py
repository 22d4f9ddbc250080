"""The one kinematics implementation: DH transforms, forward kinematics, Jacobians, IK.

Shared by identification (regressor geometry), calibration (the geometric model and its
parameter Jacobian) and the simulator. Functions take plain arrays or a RobotModel and are
vectorised over a leading batch axis of joint configurations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import PRISMATIC, RobotModel


# --------------------------------------------------------------------------- elementary transforms


def rot_x(angle) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    T = np.zeros(np.shape(angle) + (4, 4))
    T[..., 0, 0] = 1.0
    T[..., 1, 1] = c
    T[..., 1, 2] = -s
    T[..., 2, 1] = s
    T[..., 2, 2] = c
    T[..., 3, 3] = 1.0
    return T


def rot_y(angle) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    T = np.zeros(np.shape(angle) + (4, 4))
    T[..., 0, 0] = c
    T[..., 0, 2] = s
    T[..., 1, 1] = 1.0
    T[..., 2, 0] = -s
    T[..., 2, 2] = c
    T[..., 3, 3] = 1.0
    return T


def rot_z(angle) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    T = np.zeros(np.shape(angle) + (4, 4))
    T[..., 0, 0] = c
    T[..., 0, 1] = -s
    T[..., 1, 0] = s
    T[..., 1, 1] = c
    T[..., 2, 2] = 1.0
    T[..., 3, 3] = 1.0
    return T


def trans(x=0.0, y=0.0, z=0.0) -> np.ndarray:
    shape = np.broadcast(np.asarray(x), np.asarray(y), np.asarray(z)).shape
    T = np.zeros(shape + (4, 4))
    T[..., 0, 0] = T[..., 1, 1] = T[..., 2, 2] = T[..., 3, 3] = 1.0
    T[..., 0, 3] = x
    T[..., 1, 3] = y
    T[..., 2, 3] = z
    return T


def dh_transform(convention: str, alpha, a, d, theta) -> np.ndarray:
    """One DH row as a 4x4 transform (broadcasts over arrays).

    mdh (Craig/Khalil, Li et al. 2023 eq. 1): RotX(alpha) TransX(a) RotZ(theta) TransZ(d)
    dh  (standard):                     RotZ(theta) TransZ(d) TransX(a) RotX(alpha)
    """
    if convention == "mdh":
        return rot_x(alpha) @ trans(x=a) @ rot_z(theta) @ trans(z=d)
    if convention == "dh":
        return rot_z(theta) @ trans(z=d) @ trans(x=a) @ rot_x(alpha)
    raise ValueError(f"convention: unknown DH convention {convention!r}; expected 'mdh' or 'dh'")


def chain_from_dh(convention: str, alpha, a, d, theta, joint_types, tool_row=None):
    """Fixed transforms F_i and tool transform for a DH table, in the joint-frame form.

    For MDH the joint frame of joint i is MDH frame i, so F_i = RotX TransX RotZ(theta0) TransZ(d0).
    For standard DH the joint of row i turns about z_{i-1}; its joint frame is DH frame i-1 moved by
    RotZ(theta0) TransZ(d0), and the remaining TransX(a_i) RotX(alpha_i) of row i is carried into
    F_{i+1} (or the tool). Returns (fixed (n,4,4), tool (4,4), link_offsets (n,4,4)) where
    link_offsets[i] is the pose of the convention's link frame i in joint frame i (identity for MDH),
    used to move inertial data given in DH frames into joint frames.
    """
    alpha, a, d, theta = (np.asarray(v, dtype=float) for v in (alpha, a, d, theta))
    n = alpha.shape[0]
    joint_types = np.asarray(joint_types)
    fixed = np.empty((n, 4, 4))
    offsets = np.empty((n, 4, 4))
    if convention == "mdh":
        for i in range(n):
            fixed[i] = dh_transform("mdh", alpha[i], a[i], d[i], theta[i])
            offsets[i] = np.eye(4)
        tool = np.eye(4) if tool_row is None else dh_transform("mdh", *tool_row)
    elif convention == "dh":
        carry = np.eye(4)
        for i in range(n):
            fixed[i] = carry @ rot_z(theta[i]) @ trans(z=d[i])
            carry = trans(x=a[i]) @ rot_x(alpha[i])
            offsets[i] = carry
        tool = carry if tool_row is None else carry @ dh_transform("dh", *tool_row)
    else:
        raise ValueError(f"convention: unknown DH convention {convention!r}; expected 'mdh' or 'dh'")
    return fixed, tool, offsets


def joint_motion(joint_type: int, q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    return trans(z=q) if joint_type == PRISMATIC else rot_z(q)


# --------------------------------------------------------------------------- forward kinematics


def chain_frames(fixed: np.ndarray, joint_types: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Poses of every joint frame in the base frame: (..., n, 4, 4) for q of shape (..., n)."""
    q = np.asarray(q, dtype=float)
    n = fixed.shape[0]
    if q.shape[-1] != n:
        raise ValueError(f"q: expected {n} joint values in the last axis, got shape {q.shape}")
    batch = q.shape[:-1]
    out = np.empty(batch + (n, 4, 4))
    T = np.broadcast_to(np.eye(4), batch + (4, 4))
    for i in range(n):
        T = T @ fixed[i] @ joint_motion(int(joint_types[i]), q[..., i])
        out[..., i, :, :] = T
    return out


def forward_kinematics(model: RobotModel, q: np.ndarray) -> np.ndarray:
    """Pose of the tool (flange) frame in the base frame: (..., 4, 4)."""
    frames = chain_frames(model.fixed, model.joint_types, q)
    return frames[..., -1, :, :] @ model.tool


def joint_frames(model: RobotModel, q: np.ndarray) -> np.ndarray:
    return chain_frames(model.fixed, model.joint_types, q)


def geometric_jacobian(model: RobotModel, q: np.ndarray, point_in_tool=None) -> np.ndarray:
    """Geometric Jacobian (..., 6, n) of the tool point: rows [v; omega] in the base frame.

    ``point_in_tool`` (3,) is an optional point fixed in the tool frame (default: tool origin).
    """
    frames = chain_frames(model.fixed, model.joint_types, q)
    tip = frames[..., -1, :, :] @ model.tool
    if point_in_tool is None:
        p = tip[..., :3, 3]
    else:
        p = (tip @ np.append(np.asarray(point_in_tool, float), 1.0))[..., :3]
    z = frames[..., :, :3, 2]  # (..., n, 3)
    o = frames[..., :, :3, 3]
    prismatic = (model.joint_types == PRISMATIC)
    lin = np.where(prismatic[:, None], z, np.cross(z, p[..., None, :] - o))
    ang = np.where(prismatic[:, None], 0.0, z)
    return np.concatenate([np.swapaxes(lin, -1, -2), np.swapaxes(ang, -1, -2)], axis=-2)


def rotation_error(R_target: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Axis-angle vector (base frame) rotating R onto R_target; batched over leading axes."""
    R_err = R_target @ np.swapaxes(R, -1, -2)
    cos = np.clip((np.trace(R_err, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    v = np.stack([R_err[..., 2, 1] - R_err[..., 1, 2], R_err[..., 0, 2] - R_err[..., 2, 0],
                  R_err[..., 1, 0] - R_err[..., 0, 1]], axis=-1)
    s = np.sin(angle)
    small = s < 1e-9
    factor = np.where(small, 0.5, angle / (2.0 * np.where(small, 1.0, s)))
    out = v * factor[..., None]
    near_pi = small & (angle > 1.0)
    if np.any(near_pi):
        # sin(angle) ~ 0 with angle ~ pi: the axis is the dominant column of (R_err + I) / 2 = a a^T
        B = (R_err + np.eye(3)) / 2.0
        diag = np.diagonal(B, axis1=-2, axis2=-1)
        k = np.argmax(diag, axis=-1)
        column = np.take_along_axis(B, k[..., None, None], axis=-1)[..., 0]
        axis = column / np.linalg.norm(column, axis=-1, keepdims=True)
        out = np.where(near_pi[..., None], axis * angle[..., None], out)
    return out


@dataclass
class IKResult:
    q: np.ndarray
    success: bool
    iterations: int
    position_error: float
    orientation_error: float
    message: str


def inverse_kinematics(model: RobotModel, target: np.ndarray, q0: np.ndarray, *,
                       position_only: bool = False, point_in_tool=None, tol_position: float = 1e-9,
                       tol_orientation: float = 1e-9, max_iterations: int = 200,
                       damping: float = 1e-6, respect_limits: bool = True) -> IKResult:
    """Numeric IK by damped least squares (Levenberg-Marquardt style) from q0.

    ``target`` is a 4x4 pose, or a 3-vector when ``position_only``. Joint limits are
    enforced by clipping each step when ``respect_limits``.
    """
    q = np.array(q0, dtype=float)
    if q.shape != (model.dof,):
        raise ValueError(f"q0: expected {model.dof} joint values, got shape {q.shape}")
    target = np.asarray(target, dtype=float)
    if position_only and target.shape != (3,):
        raise ValueError(f"target: expected a position (3,), got shape {target.shape}")
    if not position_only and target.shape != (4, 4):
        raise ValueError(f"target: expected a 4x4 pose, got shape {target.shape}")
    lam = damping
    lo = np.where(np.isfinite(model.q_min), model.q_min, -np.inf)
    hi = np.where(np.isfinite(model.q_max), model.q_max, np.inf)

    def error(qv):
        T = forward_kinematics(model, qv)
        if point_in_tool is not None:
            p = (T @ np.append(np.asarray(point_in_tool, float), 1.0))[:3]
        else:
            p = T[:3, 3]
        if position_only:
            return target - p
        return np.concatenate([target[:3, 3] - p, rotation_error(target[:3, :3], T[:3, :3])])

    e = error(q)
    it = 0
    for it in range(1, max_iterations + 1):
        pos_err = float(np.linalg.norm(e[:3]))
        ori_err = 0.0 if position_only else float(np.linalg.norm(e[3:]))
        if pos_err <= tol_position and ori_err <= tol_orientation:
            return IKResult(q, True, it - 1, pos_err, ori_err, "converged")
        J = geometric_jacobian(model, q, point_in_tool)
        if position_only:
            J = J[:3]
        JJt = J @ J.T
        step = J.T @ np.linalg.solve(JJt + lam * np.eye(JJt.shape[0]), e)
        q_new = q + step
        if respect_limits:
            q_new = np.clip(q_new, lo, hi)
        e_new = error(q_new)
        if np.linalg.norm(e_new) < np.linalg.norm(e):
            q, e = q_new, e_new
            lam = max(lam / 10.0, 1e-12)
        else:
            lam = min(lam * 10.0, 1e6)
            if lam >= 1e6:
                break
    pos_err = float(np.linalg.norm(e[:3]))
    ori_err = 0.0 if position_only else float(np.linalg.norm(e[3:]))
    ok = pos_err <= tol_position and ori_err <= tol_orientation
    return IKResult(q, ok, it, pos_err, ori_err, "converged" if ok else "did not converge")
