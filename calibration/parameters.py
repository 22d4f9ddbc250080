"""The calibration parameter model: a DH table as one parameter vector, plus an optional base
transform (the robot in the measurement frame) and tool offset (the target ball on the flange).

Vector layout (names are 1-based like the papers): for each DH row i
``alpha{i} a{i} d{i} theta{i}`` (and ``beta{i}`` for a Hayati row), then the six base
corrections ``base_x base_y base_z base_rx base_ry base_rz``, then for every measured target its
position in the flange frame (``tool_x tool_y tool_z`` for the first, ``tool2_x ...`` for the
next: several SMRs on a nest) and, for a target whose orientation is measured too (a 6-DOF probe,
a camera or mocap marker frame), a small rotation ``tool_rx tool_ry tool_rz``; last, for every
plane that a target is held against (a planar constraint), its two tilts and its offset
``plane_A_rx plane_A_ry plane_A_z``. Lengths in metres, angles in radians.

The geometry is built with the shared kinematics only: ``chain_from_dh`` turns the row values into
joint-frame transforms and ``chain_frames`` evaluates them, so the calibrated chain is the very
chain every other part of robodyn uses. Both conventions of ``dh_transform`` are supported:
``mdh`` (Craig order, Li et al. 2023 eq. 1) and ``dh`` (standard). A Hayati row adds a rotation
``beta`` about y, the parameter that MDH lacks for (nearly) parallel consecutive axes.

The measured point is ``p = C · B0 · T_flange(q) · [t; 1]`` with B0 the nominal base pose, C the
small base correction ``Trans(base_x, base_y, base_z) · Rz(base_rz) · Ry(base_ry) · Rx(base_rx)``
applied in the measurement frame (so any nominal base orientation works without gimbal lock),
and t the tool offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from robodyn.robot.kinematics import chain_frames, chain_from_dh, rot_x, rot_y, rot_z, trans
from robodyn.robot.model import RobotModel

ROW_FIELDS = ("alpha", "a", "d", "theta")
BASE_NAMES = ("base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz")
TOOL_NAMES = ("tool_x", "tool_y", "tool_z")  # the first target's position
ANGLE_PREFIXES = ("alpha", "theta", "beta", "base_r")
ANGLE_SUFFIXES = ("_rx", "_ry", "_rz")


def is_angle_name(name: str) -> bool:
    return name.startswith(ANGLE_PREFIXES) or name.endswith(ANGLE_SUFFIXES)


def target_prefix(k: int) -> str:
    """Parameter prefix of target k (0-based): ``tool`` for the first, ``tool2``, ``tool3`` ..."""
    return "tool" if k == 0 else f"tool{k + 1}"


@dataclass(frozen=True)
class Target:
    """A measured target on the flange: an SMR, a probe tip or a marker frame.

    ``offset`` is its nominal position in the flange frame (m). ``oriented`` targets have their
    orientation measured too (a 6-DOF probe, a camera's or a mocap marker set's frame); their
    nominal orientation in the flange frame is ``rotation``.
    """

    name: str
    offset: tuple
    oriented: bool = False
    rotation: tuple = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))

    def to_dict(self) -> dict:
        return {"name": self.name, "offset_m": [float(v) for v in self.offset], "oriented": bool(self.oriented),
                "rotation": [list(map(float, r)) for r in self.rotation]}

    @classmethod
    def from_dict(cls, d: dict) -> "Target":
        return cls(str(d["name"]), tuple(float(v) for v in d["offset_m"]), bool(d.get("oriented", False)),
                   tuple(tuple(float(v) for v in r) for r in d.get("rotation", np.eye(3).tolist())))


def plane_prefix(name: str) -> str:
    return f"plane_{name}"


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
    targets: tuple[Target, ...] = (Target("ball", (0.0, 0.0, 0.0)),)
    planes: tuple[str, ...] = ()
    plane_nominal: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 4)))  # nominal plane frames (z = normal) in the measurement frame

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

    def tool_names(self, k: int) -> tuple[str, ...]:
        """Position parameters of target k (0-based)."""
        pre = target_prefix(k)
        return (f"{pre}_x", f"{pre}_y", f"{pre}_z")

    def tool_rotation_names(self, k: int) -> tuple[str, ...]:
        if not self.targets[k].oriented:
            return ()
        pre = target_prefix(k)
        return (f"{pre}_rx", f"{pre}_ry", f"{pre}_rz")

    def plane_names(self, j: int) -> tuple[str, ...]:
        pre = plane_prefix(self.planes[j])
        return (f"{pre}_rx", f"{pre}_ry", f"{pre}_z")

    def all_tool_names(self) -> list[str]:
        names = []
        for k in range(len(self.targets)):
            names += list(self.tool_names(k)) + list(self.tool_rotation_names(k))
        return names

    def all_plane_names(self) -> list[str]:
        return [n for j in range(len(self.planes)) for n in self.plane_names(j)]

    @property
    def target_names(self) -> list[str]:
        return [t.name for t in self.targets]


def _vector3(field: str, value) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{field}: expected 3 finite numbers, got {value!r}")
    return arr


def _rotation3(field: str, value) -> np.ndarray:
    R = np.asarray(value, dtype=float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)) or not np.allclose(R @ R.T, np.eye(3), atol=1e-9) \
            or np.linalg.det(R) < 0:
        raise ValueError(f"{field}: expected a 3x3 rotation matrix")
    return R


def geometric_model(robot: RobotModel, *, tool_offset=(0.0, 0.0, 0.0), base=None,
                    hayati_rows=(), targets=None, planes=None) -> GeometricModel:
    """The parameter model of a robot built from a DH table (MDH or standard DH).

    ``targets`` (a list of :class:`Target`) replaces the single target at ``tool_offset``;
    ``planes`` is a list of (name, nominal 4x4 frame in the measurement frame, z = normal) for
    planar constraints.
    """
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
    if targets is None:
        targets = [Target("ball", tuple(_vector3("tool_offset", tool_offset)))]
    targets = tuple(targets)
    if not targets:
        raise ValueError("targets: at least one measured target is needed")
    if len({t.name for t in targets}) != len(targets):
        raise ValueError(f"targets: names must differ, got {[t.name for t in targets]}")
    checked = []
    for k, t in enumerate(targets):
        off = _vector3(f"targets[{t.name}].offset", t.offset)
        R = _rotation3(f"targets[{t.name}].rotation", t.rotation)
        checked.append(Target(t.name, tuple(off.tolist()), bool(t.oriented), tuple(map(tuple, R.tolist()))))
        pre = target_prefix(k)
        names += [f"{pre}_x", f"{pre}_y", f"{pre}_z"]
        values += list(off)
        if t.oriented:
            names += [f"{pre}_rx", f"{pre}_ry", f"{pre}_rz"]
            values += [0.0, 0.0, 0.0]
    plane_labels, plane_frames = [], []
    for name, frame in (planes or ()):
        name = str(name)
        if not re.fullmatch(r"[A-Za-z0-9]+", name):
            raise ValueError(f"planes: a plane label is letters and digits, got {name!r}")
        F = np.asarray(frame, dtype=float)
        if F.shape != (4, 4):
            raise ValueError(f"planes[{name}]: expected a 4x4 frame")
        _rotation3(f"planes[{name}].rotation", F[:3, :3])
        plane_labels.append(name)
        plane_frames.append(F.copy())
        pre = plane_prefix(name)
        names += [f"{pre}_rx", f"{pre}_ry", f"{pre}_z"]
        values += [0.0, 0.0, 0.0]
    if len(set(plane_labels)) != len(plane_labels):
        raise ValueError(f"planes: labels must differ, got {plane_labels}")
    B0 = np.eye(4) if base is None else np.asarray(base, dtype=float)
    if B0.shape != (4, 4) or not np.all(np.isfinite(B0)):
        raise ValueError(f"base: expected a finite 4x4 transform, got shape {B0.shape}")
    if not np.allclose(B0[:3, :3] @ B0[:3, :3].T, np.eye(3), atol=1e-9):
        raise ValueError("base: the rotation part is not orthonormal")
    return GeometricModel(robot=robot, convention=dh.convention, names=tuple(names),
                          nominal=np.array(values), hayati_rows=hayati, base_nominal=B0.copy(),
                          targets=tuple(checked), planes=tuple(plane_labels),
                          plane_nominal=np.array(plane_frames).reshape(-1, 4, 4))


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


def tool_offset(gm: GeometricModel, params: np.ndarray, target: int = 0) -> np.ndarray:
    """Position of target ``target`` (0-based) in the flange frame."""
    return params[gm.indices(gm.tool_names(target))]


def tool_rotation(gm: GeometricModel, params: np.ndarray, target: int = 0) -> np.ndarray:
    """Orientation of target ``target`` in the flange frame: Rz Ry Rx(correction) @ nominal."""
    R0 = np.asarray(gm.targets[target].rotation, dtype=float)
    if not gm.targets[target].oriented:
        return R0
    rx, ry, rz = params[gm.indices(gm.tool_rotation_names(target))]
    return (rot_z(rz) @ rot_y(ry) @ rot_x(rx))[:3, :3] @ R0


def tool_transform(gm: GeometricModel, params: np.ndarray, target: int = 0) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = tool_rotation(gm, params, target)
    T[:3, 3] = tool_offset(gm, params, target)
    return T


def plane_frame(gm: GeometricModel, params: np.ndarray, j: int) -> np.ndarray:
    """Plane j in the measurement frame: nominal frame tilted about its x and y, shifted along its z."""
    rx, ry, z = params[gm.indices(gm.plane_names(j))]
    return gm.plane_nominal[j] @ rot_x(rx) @ rot_y(ry) @ trans(z=z)


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


def target_positions(gm: GeometricModel, params: np.ndarray, q, target: int = 0) -> np.ndarray:
    """Positions of a target in the measurement frame (Li et al. 2023 eq. 9), (N, 3)."""
    T = flange_poses(gm, params, q)
    t = tool_offset(gm, params, target)
    return T[:, :3, :3] @ t + T[:, :3, 3]


def all_target_positions(gm: GeometricModel, params: np.ndarray, q) -> np.ndarray:
    """Positions of every target, (N, K, 3)."""
    T = flange_poses(gm, params, q)
    t = np.array([tool_offset(gm, params, k) for k in range(len(gm.targets))])
    return np.einsum("nij,kj->nki", T[:, :3, :3], t) + T[:, None, :3, 3]


def target_rotations(gm: GeometricModel, params: np.ndarray, q, target: int = 0) -> np.ndarray:
    """Orientation of a target's frame in the measurement frame, (N, 3, 3)."""
    return flange_poses(gm, params, q)[:, :3, :3] @ tool_rotation(gm, params, target)


def _chain_twists(gm: GeometricModel, params: np.ndarray, q: np.ndarray):
    """How every row parameter moves the flange: angular axis w and v0 with dp = v0 + w x p for any
    point p beyond the parameter (robot base frame), plus the joint frames and the flange pose.

    MDH row i moves frame i-1 by RotX(alpha) TransX(a) [RotY(beta)] RotZ(theta) TransZ(d): alpha
    turns everything beyond about x_{i-1} through o_{i-1}, a slides along x_{i-1}, theta turns about
    z_i and d slides along z_i (Li et al. 2023 eqs. 10-13). Standard DH is the same with the roles of the
    frames swapped (theta, d act on joint axis i; a, alpha act along/about x_i). A rotation about
    axis w through point o has v0 = o x w.
    """
    N, n = q.shape
    fixed, flange = chain_for(gm, params)
    frames = chain_frames(fixed, gm.robot.joint_types, q)  # joint frame i (z = joint axis i)
    W = np.zeros((N, 3, gm.size))
    V = np.zeros((N, 3, gm.size))
    alpha, a, d, theta, beta = _rows(gm, params)
    base_prev = np.broadcast_to(np.eye(4), (N, 4, 4))

    def rotation(name, axis, point):
        k = gm.index(name)
        W[:, :, k] = axis
        V[:, :, k] = np.cross(point, axis)

    def translation(name, direction):
        V[:, :, gm.index(name)] = direction

    for i in range(n):
        Fi = frames[:, i]
        z_i, o_i, x_i = Fi[:, :3, 2], Fi[:, :3, 3], Fi[:, :3, 0]
        if gm.convention == "mdh":
            prev = base_prev if i == 0 else frames[:, i - 1]
            rotation(f"alpha{i + 1}", prev[:, :3, 0], prev[:, :3, 3])
            translation(f"a{i + 1}", prev[:, :3, 0])
            if i in beta:
                after_a = prev @ rot_x(alpha[i]) @ trans(x=a[i])
                rotation(f"beta{i + 1}", after_a[:, :3, 1], after_a[:, :3, 3])
        else:
            rotation(f"alpha{i + 1}", x_i, o_i + a[i] * x_i)  # about x_i through the DH frame origin
            translation(f"a{i + 1}", x_i)
            if i in beta:
                after_alpha = Fi @ trans(x=a[i]) @ rot_x(alpha[i])
                rotation(f"beta{i + 1}", after_alpha[:, :3, 1], after_alpha[:, :3, 3])
        rotation(f"theta{i + 1}", z_i, o_i)
        translation(f"d{i + 1}", z_i)
    return W, V, frames[:, -1] @ flange


def measurement_jacobians(gm: GeometricModel, params: np.ndarray, q, targets=None):
    """d(position)/d(parameters) (N, K, 3, P) and d(orientation)/d(parameters) (N, K, 3, P, as small
    rotations in the measurement frame) of the targets (default: all), analytic."""
    q = _as_batch(gm, q)
    targets = list(range(len(gm.targets))) if targets is None else list(targets)
    W, V, tip = _chain_twists(gm, params, q)
    B = base_transform(gm, params)
    R_B, t_B = B[:3, :3], B[:3, 3]
    W = np.einsum("ij,njk->nik", R_B, W)
    V = np.einsum("ij,njk->nik", R_B, V) + np.cross(t_B[None, :, None], W, axis=1)
    T = B @ tip  # flange in the measurement frame
    N, K = q.shape[0], len(targets)
    # base correction C = Trans(x, y, z) Rz Ry Rx, acting in the measurement frame
    pb = params[gm.indices(BASE_NAMES)]
    c = pb[:3]
    Rz = rot_z(pb[5])[:3, :3]
    Rzy = Rz @ rot_y(pb[4])[:3, :3]
    base_axes = {"base_rx": Rzy @ np.array([1.0, 0.0, 0.0]), "base_ry": Rz @ np.array([0.0, 1.0, 0.0]),
                 "base_rz": np.array([0.0, 0.0, 1.0])}
    tool_cols = [gm.indices(gm.tool_names(k)) for k in range(len(gm.targets))]
    rot_cols = [gm.indices(gm.tool_rotation_names(k)) for k in range(len(gm.targets))]
    plane_cols = gm.indices(gm.all_plane_names())
    Jp = np.zeros((N, K, 3, gm.size))
    Jr = np.zeros((N, K, 3, gm.size))
    for slot, k in enumerate(targets):
        p = T[:, :3, :3] @ tool_offset(gm, params, k) + T[:, :3, 3]
        jp = V + np.cross(W, p[:, :, None], axis=1)
        jr = W.copy()
        for axis_k, name in enumerate(("base_x", "base_y", "base_z")):
            jp[:, :, gm.index(name)] = np.eye(3)[axis_k]
            jr[:, :, gm.index(name)] = 0.0
        for name, w in base_axes.items():
            jp[:, :, gm.index(name)] = np.cross(w, p - c)
            jr[:, :, gm.index(name)] = w
        for other in range(len(gm.targets)):  # only a target's own parameters move it
            jp[:, :, tool_cols[other]] = T[:, :3, :3] if other == k else 0.0
            jr[:, :, tool_cols[other]] = 0.0
            if rot_cols[other].size:
                jp[:, :, rot_cols[other]] = 0.0
                jr[:, :, rot_cols[other]] = 0.0
        if rot_cols[k].size:
            rx, ry, rz = params[rot_cols[k]]
            Rz_t = rot_z(rz)[:3, :3]
            Rzy_t = Rz_t @ rot_y(ry)[:3, :3]
            for col, axis in zip(rot_cols[k], (Rzy_t[:, 0], Rz_t[:, 1], np.array([0.0, 0.0, 1.0]))):
                jr[:, :, col] = T[:, :3, :3] @ axis
        if plane_cols.size:
            jp[:, :, plane_cols] = 0.0
            jr[:, :, plane_cols] = 0.0
        Jp[:, slot], Jr[:, slot] = jp, jr
    return Jp, Jr


def parameter_jacobian(gm: GeometricModel, params: np.ndarray, q, target: int = 0) -> np.ndarray:
    """d(target position)/d(parameters), (N, 3, P), analytic (Li et al. 2023 eqs. 10-13)."""
    return measurement_jacobians(gm, params, q, [target])[0][:, 0]


def plane_distance(gm: GeometricModel, params: np.ndarray, points: np.ndarray, j: int) -> np.ndarray:
    """Signed distance of points (M, 3) from plane j."""
    F = plane_frame(gm, params, j)
    return (points - F[:3, 3]) @ F[:3, 2]


def plane_jacobian(gm: GeometricModel, params: np.ndarray, points: np.ndarray, j: int) -> np.ndarray:
    """d(signed distance)/d(plane j's own parameters rx, ry, z) for points (M, 3): (M, 3)."""
    rx, ry, z = params[gm.indices(gm.plane_names(j))]
    F0 = gm.plane_nominal[j]
    R0, t0 = F0[:3, :3], F0[:3, 3]
    Rx, Ry = rot_x(rx)[:3, :3], rot_y(ry)[:3, :3]
    ez = np.array([0.0, 0.0, 1.0])
    d_rx = R0 @ Rx @ np.cross([1.0, 0.0, 0.0], Ry @ ez)
    d_ry = R0 @ Rx @ Ry @ np.cross([0.0, 1.0, 0.0], ez)
    rel = points - t0
    return np.column_stack([rel @ d_rx, rel @ d_ry, -np.ones(len(points))])


def numeric_parameter_jacobian(gm: GeometricModel, params: np.ndarray, q, step: float = 1e-7,
                               target: int = 0) -> np.ndarray:
    """Central differences of target_positions; a check on parameter_jacobian."""
    q = _as_batch(gm, q)
    J = np.zeros((q.shape[0], 3, gm.size))
    for k in range(gm.size):
        dp = np.zeros(gm.size)
        dp[k] = step
        J[:, :, k] = (target_positions(gm, params + dp, q, target)
                      - target_positions(gm, params - dp, q, target)) / (2 * step)
    return J


# --------------------------------------------------------------------------- which parameters move


def preset_free_names(gm: GeometricModel, preset: str, *, identify_base: bool = False,
                      identify_tool: bool = False) -> list[str]:
    """Names of the parameters to identify.

    ``li2023``: the frame 0 is built on joint 1 and the end frame on joint 6 (Li et al. 2023 section
    1.1.1), so row 1 and d/theta of the last row are exact by construction; every other row value
    is identified (18 for a 6-axis arm). ``all``: every DH value. Hayati betas are always free.
    Structurally redundant parameters are removed later by the identifiability analysis.
    """
    n = gm.dof
    if preset == "li2023":
        names = []
        for i in range(1, n):
            names += [f"alpha{i + 1}", f"a{i + 1}"]
            if i < n - 1:
                names += [f"d{i + 1}", f"theta{i + 1}"]
    elif preset == "all":
        names = [f"{f}{i + 1}" for i in range(n) for f in ROW_FIELDS]
    else:
        raise ValueError(f"preset: unknown parameter preset {preset!r}; expected 'li2023' or 'all'")
    names += [f"beta{r + 1}" for r in gm.hayati_rows]
    if identify_base:
        names += list(BASE_NAMES)
    if identify_tool:
        names += gm.all_tool_names()
    names += gm.all_plane_names()  # a plane's pose is never known beforehand
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
