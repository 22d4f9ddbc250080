"""The calibration parameter model: a DH table as one parameter vector, plus an optional base
transform (the robot in the measurement frame) and tool offset (the target ball on the flange).

Vector layout (names are 1-based like the papers): for each DH row i
``alpha{i} a{i} d{i} theta{i}`` (and ``beta{i}`` for a Hayati row), then the six base
corrections ``base_x base_y base_z base_rx base_ry base_rz`` and the ball position in the flange
frame ``tool_x tool_y tool_z``. Lengths in metres, angles in radians.

The geometry is built with the shared kinematics only: ``chain_from_dh`` turns the row values into
joint-frame transforms and ``chain_frames`` evaluates them, so the calibrated chain is the very
chain every other part of robodyn uses. Both conventions of ``dh_transform`` are supported:
``mdh`` (Craig order, seed 004 eq. 1) and ``dh`` (standard). A Hayati row adds a rotation
``beta`` about y, the parameter that MDH lacks for (nearly) parallel consecutive axes.

The measured point is ``p = C · B0 · T_flange(q) · [t; 1]`` with B0 the nominal base pose, C the
small base correction ``Trans(base_x, base_y, base_z) · Rz(base_rz) · Ry(base_ry) · Rx(base_rx)``
applied in the measurement frame (so any nominal base orientation works without gimbal lock),
and t the tool offset.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from robodyn.robot.kinematics import chain_frames, chain_from_dh, rot_x, rot_y, rot_z, trans
from robodyn.robot.model import RobotModel

ROW_FIELDS = ("alpha", "a", "d", "theta")
BASE_NAMES = ("base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz")
TOOL_NAMES = ("tool_x", "tool_y", "tool_z")
ANGLE_PREFIXES = ("alpha", "theta", "beta", "base_r")


def is_angle_name(name: str) -> bool:
    return name.startswith(ANGLE_PREFIXES)


@dataclass(frozen=True)
class GeometricModel:
    """Which numbers describe the measured point, and their nominal values.

    ``robot`` supplies the joint types, the flange row, the limits and the link inertia (used for
    gravity); ``base_nominal`` is the robot base pose in the measurement frame.
    """

    robot: RobotModel
    convention: str
    names: tuple[str, ...]
    nominal: np.ndarray
    hayati_rows: tuple[int, ...]  # 0-based DH rows that carry a beta parameter
    base_nominal: np.ndarray

    @property
    def dof(self) -> int:
        return self.robot.dof

    @property
    def size(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"parameters: unknown parameter {name!r}; known: {', '.join(self.names)}") from None

    def indices(self, names) -> np.ndarray:
        return np.array([self.index(n) for n in names], dtype=int)

    @property
    def angle_mask(self) -> np.ndarray:
        return np.array([is_angle_name(n) for n in self.names])

    def row_index(self, field: str) -> np.ndarray:
        """Vector indices of one DH field for rows 1..n."""
        return np.array([self.index(f"{field}{i + 1}") for i in range(self.dof)])


def _vector3(field: str, value) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{field}: expected 3 finite numbers, got {value!r}")
    return arr


def geometric_model(robot: RobotModel, *, tool_offset=(0.0, 0.0, 0.0), base=None,
                    hayati_rows=()) -> GeometricModel:
    """The parameter model of a robot built from a DH table (MDH or standard DH)."""
    if robot.dh is None:
        raise ValueError(f"robot: {robot.name} has no DH table (URDF models cannot be calibrated by DH parameters)")
    dh = robot.dh
    n = robot.dof
    hayati = tuple(sorted({int(r) for r in hayati_rows}))
    for r in hayati:
        if not 0 <= r < n:
            raise ValueError(f"hayati_rows: row {r + 1} is outside 1..{n}")
    names: list[str] = []
    values: list[float] = []
    for i in range(n):
        for f in ROW_FIELDS:
            names.append(f"{f}{i + 1}")
            values.append(float(getattr(dh, f)[i]))
        if i in hayati:
            names.append(f"beta{i + 1}")
            values.append(0.0)
    names += BASE_NAMES
    values += [0.0] * 6
    names += TOOL_NAMES
    values += list(_vector3("tool_offset", tool_offset))
    B0 = np.eye(4) if base is None else np.asarray(base, dtype=float)
    if B0.shape != (4, 4) or not np.all(np.isfinite(B0)):
        raise ValueError(f"base: expected a finite 4x4 transform, got shape {B0.shape}")
    if not np.allclose(B0[:3, :3] @ B0[:3, :3].T, np.eye(3), atol=1e-9):
        raise ValueError("base: the rotation part is not orthonormal")
    return GeometricModel(robot=robot, convention=dh.convention, names=tuple(names),
                          nominal=np.array(values), hayati_rows=hayati, base_nominal=B0.copy())


# --------------------------------------------------------------------------- geometry from a vector


def _rows(gm: GeometricModel, params: np.ndarray):
    alpha, a, d, theta = (params[gm.row_index(f)] for f in ROW_FIELDS)
    beta = {r: params[gm.index(f"beta{r + 1}")] for r in gm.hayati_rows}
    return alpha, a, d, theta, beta


def chain_for(gm: GeometricModel, params: np.ndarray):
    """Joint-frame transforms and flange transform for a parameter vector: (fixed, flange)."""
    alpha, a, d, theta, beta = _rows(gm, params)
    fixed, flange, offsets = chain_from_dh(gm.convention, alpha, a, d, theta, gm.robot.joint_types,
                                           gm.robot.dh.tool)
    for r, b in beta.items():
        if gm.convention == "mdh":
            # RotX(a) TransX(a) RotY(b) RotZ(theta) TransZ(d): tilt inserted after the common normal
            A = rot_x(alpha[r]) @ trans(x=a[r])
            fixed[r] = A @ rot_y(b) @ np.linalg.inv(A) @ fixed[r]
        else:
            # RotZ TransZ TransX(a) RotX(alpha) RotY(b): the row's tail (offsets[r]) moves into the next frame
            M = offsets[r] @ rot_y(b) @ np.linalg.inv(offsets[r])
            if r + 1 < gm.dof:
                fixed[r + 1] = M @ fixed[r + 1]
            else:
                flange = M @ flange
    return fixed, flange


def robot_for(gm: GeometricModel, params: np.ndarray) -> RobotModel:
    """The robot model with this geometry (same inertia, limits): for gravity, Jacobians, IK, URDF."""
    fixed, flange = chain_for(gm, params)
    return replace(gm.robot, fixed=fixed, tool=flange)


def base_correction(params_base: np.ndarray) -> np.ndarray:
    x, y, z, rx, ry, rz = params_base
    return trans(x, y, z) @ rot_z(rz) @ rot_y(ry) @ rot_x(rx)


def base_transform(gm: GeometricModel, params: np.ndarray) -> np.ndarray:
    """Robot base pose in the measurement frame."""
    return base_correction(params[gm.indices(BASE_NAMES)]) @ gm.base_nominal


def tool_offset(gm: GeometricModel, params: np.ndarray) -> np.ndarray:
    return params[gm.indices(TOOL_NAMES)]


def _as_batch(gm: GeometricModel, q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[1] != gm.dof:
        raise ValueError(f"q: expected joint angles of shape (N, {gm.dof}), got {np.shape(q)}")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"q: non-finite joint angle in pose {int(np.argwhere(~np.isfinite(q))[0, 0])}")
    return q


def flange_poses(gm: GeometricModel, params: np.ndarray, q) -> np.ndarray:
    """Flange poses in the measurement frame, (N, 4, 4)."""
    q = _as_batch(gm, q)
    fixed, flange = chain_for(gm, params)
    frames = chain_frames(fixed, gm.robot.joint_types, q)
    return base_transform(gm, params) @ frames[:, -1] @ flange


def target_positions(gm: GeometricModel, params: np.ndarray, q) -> np.ndarray:
    """Positions of the target ball in the measurement frame (seed 004 eq. 9), (N, 3)."""
    T = flange_poses(gm, params, q)
    t = tool_offset(gm, params)
    return T[:, :3, :3] @ t + T[:, :3, 3]


def parameter_jacobian(gm: GeometricModel, params: np.ndarray, q) -> np.ndarray:
    """d(target position)/d(parameters), (N, 3, P), analytic (seed 004 eqs. 10-13).

    MDH row i moves frame i-1 by RotX(alpha) TransX(a) [RotY(beta)] RotZ(theta) TransZ(d):
    alpha turns everything beyond about x_{i-1} through o_{i-1}, a slides along x_{i-1}, theta
    turns about z_i and d slides along z_i. Standard DH is the same with the roles of the frames
    swapped (theta, d act on joint axis i = z_{i-1}; a, alpha act along/about x_i).
    """
    q = _as_batch(gm, q)
    N, n = q.shape
    fixed, flange = chain_for(gm, params)
    frames = chain_frames(fixed, gm.robot.joint_types, q)  # joint frame i (z = joint axis i)
    tip = frames[:, -1] @ flange
    t = tool_offset(gm, params)
    p = tip[:, :3, :3] @ t + tip[:, :3, 3]  # in the robot base frame
    J = np.zeros((N, 3, gm.size))
    alpha, a, d, theta, beta = _rows(gm, params)
    base_prev = np.broadcast_to(np.eye(4), (N, 4, 4))
    for i in range(n):
        Fi = frames[:, i]
        z_i, o_i, x_i = Fi[:, :3, 2], Fi[:, :3, 3], Fi[:, :3, 0]
        cols = {}
        if gm.convention == "mdh":
            prev = base_prev if i == 0 else frames[:, i - 1]
            x_prev, o_prev = prev[:, :3, 0], prev[:, :3, 3]
            cols["alpha"] = np.cross(x_prev, p - o_prev)
            cols["a"] = x_prev
            if i in beta:
                after_a = prev @ rot_x(alpha[i]) @ trans(x=a[i])
                cols["beta"] = np.cross(after_a[:, :3, 1], p - after_a[:, :3, 3])
        else:
            o_link = o_i + a[i] * x_i  # origin of DH frame i, where RotX(alpha) acts
            cols["alpha"] = np.cross(x_i, p - o_link)
            cols["a"] = x_i
            if i in beta:
                after_alpha = Fi @ trans(x=a[i]) @ rot_x(alpha[i])
                cols["beta"] = np.cross(after_alpha[:, :3, 1], p - after_alpha[:, :3, 3])
        cols["theta"] = np.cross(z_i, p - o_i)
        cols["d"] = z_i
        for f, col in cols.items():
            J[:, :, gm.index(f"{f}{i + 1}")] = col
    J[:, :, gm.indices(TOOL_NAMES)] = tip[:, :3, :3]
    # into the measurement frame: u = B0 p is the point before the base correction C
    B = base_transform(gm, params)
    J = np.einsum("ij,njk->nik", B[:3, :3], J)
    pb = params[gm.indices(BASE_NAMES)]
    C = base_correction(pb)
    w = (p @ B[:3, :3].T + B[:3, 3]) - C[:3, 3]  # C_rot · u, the rotated point before translation
    ez, ey, ex = np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])
    Rz = rot_z(pb[5])[:3, :3]
    Rzy = Rz @ rot_y(pb[4])[:3, :3]
    bi = gm.indices(BASE_NAMES)
    J[:, :, bi[0]] = ex
    J[:, :, bi[1]] = ey
    J[:, :, bi[2]] = ez
    J[:, :, bi[3]] = np.cross(Rzy @ ex, w)
    J[:, :, bi[4]] = np.cross(Rz @ ey, w)
    J[:, :, bi[5]] = np.cross(ez, w)
    return J


def numeric_parameter_jacobian(gm: GeometricModel, params: np.ndarray, q, step: float = 1e-7) -> np.ndarray:
    """Central differences of target_positions; a check on parameter_jacobian."""
    q = _as_batch(gm, q)
    J = np.zeros((q.shape[0], 3, gm.size))
    for k in range(gm.size):
        dp = np.zeros(gm.size)
        dp[k] = step
        J[:, :, k] = (target_positions(gm, params + dp, q) - target_positions(gm, params - dp, q)) / (2 * step)
    return J


# --------------------------------------------------------------------------- which parameters move


def preset_free_names(gm: GeometricModel, preset: str, *, identify_base: bool = False,
                      identify_tool: bool = False) -> list[str]:
    """Names of the parameters to identify.

    ``seed004``: the frame 0 is built on joint 1 and the end frame on joint 6 (seed 004 section
    1.1.1), so row 1 and d/theta of the last row are exact by construction; every other row value
    is identified (18 for a 6-axis arm). ``all``: every DH value. Hayati betas are always free.
    Structurally redundant parameters are removed later by the identifiability analysis.
    """
    n = gm.dof
    if preset == "seed004":
        names = []
        for i in range(1, n):
            names += [f"alpha{i + 1}", f"a{i + 1}"]
            if i < n - 1:
                names += [f"d{i + 1}", f"theta{i + 1}"]
    elif preset == "all":
        names = [f"{f}{i + 1}" for i in range(n) for f in ROW_FIELDS]
    else:
        raise ValueError(f"preset: unknown parameter preset {preset!r}; expected 'seed004' or 'all'")
    names += [f"beta{r + 1}" for r in gm.hayati_rows]
    if identify_base:
        names += list(BASE_NAMES)
    if identify_tool:
        names += list(TOOL_NAMES)
    order = {nm: k for k, nm in enumerate(gm.names)}
    return sorted(names, key=order.__getitem__)


def parallel_axis_rows(gm: GeometricModel, tol_deg: float = 1.0) -> list[int]:
    """0-based DH rows that join two (nominally) parallel consecutive joint axes.

    MDH row i connects joint axis i-1 to joint axis i; standard-DH row i-1 does.
    """
    q = np.zeros((1, gm.dof))
    fixed, _ = chain_for(gm, gm.nominal)
    frames = chain_frames(fixed, gm.robot.joint_types, q)[0]
    z = frames[:, :3, 2]
    rows = []
    for i in range(1, gm.dof):
        if abs(float(z[i] @ z[i - 1])) > np.cos(np.deg2rad(tol_deg)):
            rows.append(i if gm.convention == "mdh" else i - 1)
    return rows
