"""Robot model: a serial chain of revolute and prismatic joints, as plain arrays.

Every joint i owns a *joint frame* whose z axis is the joint axis. The chain is

    base -> F_0 · Z(q_0) -> F_1 · Z(q_1) -> ... -> F_{n-1} · Z(q_{n-1}) -> tool

where ``F_i`` (``model.fixed[i]``) is a constant 4x4 transform from the previous
joint frame (the base for i = 0) and ``Z(q)`` is a rotation about z (revolute) or a
translation along z (prismatic). Link i, the body moved by joint i, has its standard
inertial parameters ``XX XY XZ YY YZ ZZ MX MY MZ M`` expressed about the origin of
joint frame i. For a modified-DH table these frames are exactly the MDH frames; a
standard-DH table or a URDF is converted into this one form, so every algorithm
(kinematics, regressor, RNEA, simulator) is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from .joint_map import JointMap
from .log_names import check_log_names, with_aliases
from .transmission import Transmission

REVOLUTE = 0
PRISMATIC = 1
JOINT_TYPE_CODES = {"revolute": REVOLUTE, "prismatic": PRISMATIC}
JOINT_TYPE_NAMES = {v: k for k, v in JOINT_TYPE_CODES.items()}

INERTIAL_NAMES = ("XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M")
LIMIT_FIELDS = ("q_min", "q_max", "qd_max", "qdd_max", "qddd_max", "tau_max")


@dataclass(frozen=True)
class DHTable:
    """The geometric table a model was built from, kept for calibration and export.

    ``convention`` is ``"mdh"`` (Craig/Khalil: RotX(alpha) TransX(a) RotZ(theta) TransZ(d))
    or ``"dh"`` (standard: RotZ(theta) TransZ(d) TransX(a) RotX(alpha)). ``theta`` and ``d``
    hold the constant offsets; the joint variable adds to theta (revolute) or d (prismatic).
    ``tool`` is one more row (alpha, a, d, theta) in the same convention, or None.
    """

    convention: str
    alpha: np.ndarray
    a: np.ndarray
    d: np.ndarray
    theta: np.ndarray
    tool: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class RobotModel:
    name: str
    joint_names: tuple[str, ...]
    joint_types: np.ndarray  # (n,) int8: REVOLUTE or PRISMATIC
    fixed: np.ndarray  # (n, 4, 4) previous joint frame -> this joint frame at q = 0
    tool: np.ndarray  # (4, 4) last joint frame -> flange / tool point
    gravity: np.ndarray  # (3,) gravity acceleration in the base frame
    inertial: np.ndarray  # (n, 10) standard parameters about each joint frame origin
    q_min: np.ndarray
    q_max: np.ndarray
    qd_max: np.ndarray
    qdd_max: np.ndarray
    qddd_max: np.ndarray
    tau_max: np.ndarray
    gear_ratio: np.ndarray
    rotor_inertia: np.ndarray  # (n,) referred to the joint side
    dh: DHTable | None = None
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    # controller joint values -> the joint variables above (q_model = M q_controller + offset);
    # None means the identity: the controller's values are the model's
    joint_map: JointMap | None = None
    # motors from the controller's joint values (gear ratios and any shared motor); None means
    # diag(gear_ratio): one motor per joint
    transmission: Transmission | None = None
    # per joint, the names a log may give it: its own name, then its aliases (log_names.py);
    # empty means the joint names alone
    log_names: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "log_names", check_log_names(self.joint_names, self.log_names))
        if self.joint_map is None:
            object.__setattr__(self, "joint_map", JointMap.identity(self.dof))
        elif self.joint_map.dof != self.dof:
            raise ValueError(f"joint_map: maps {self.joint_map.dof} joints but the model has {self.dof}")
        if self.transmission is None:
            ratio = np.where(np.asarray(self.gear_ratio, float) != 0, self.gear_ratio, 1.0)
            object.__setattr__(self, "transmission", Transmission.from_terms(ratio))
        elif self.transmission.dof != self.dof:
            raise ValueError(f"transmission: drives {self.transmission.dof} joints but the model has {self.dof}")

    @property
    def dof(self) -> int:
        return int(self.joint_types.shape[0])

    @property
    def motor_couplings(self) -> tuple[tuple[float, ...], ...]:
        """Motors shared by several joints, as identification columns (transmission.py)."""
        return self.transmission.motor_couplings(self.joint_map)

    def with_joint_map(self, joint_map: JointMap | None) -> "RobotModel":
        """The same robot whose controller reports joint values through ``joint_map``."""
        return replace(self, joint_map=joint_map)

    def with_log_names(self, log_names) -> "RobotModel":
        """The same robot whose logs name joint i by one of ``log_names[i]`` (and no other)."""
        return replace(self, log_names=tuple((s,) if isinstance(s, str) else tuple(s) for s in log_names))

    def with_gravity(self, gravity: Sequence[float]) -> "RobotModel":
        """The same robot with another gravity vector (mounted or tilted base)."""
        g = _finite_vector("gravity", gravity, 3)
        return replace(self, gravity=g)

    def with_inertial(self, inertial: np.ndarray) -> "RobotModel":
        arr = np.asarray(inertial, dtype=float)
        if arr.shape != (self.dof, 10):
            raise ValueError(f"inertial: expected shape ({self.dof}, 10), got {arr.shape}")
        _require_finite("inertial", arr)
        return replace(self, inertial=arr.copy())

    def limits_are_finite(self) -> bool:
        return all(np.all(np.isfinite(getattr(self, f))) for f in LIMIT_FIELDS)

    def summary(self) -> dict:
        """A JSON-ready description: joints and limits."""
        joints = []
        for i, name in enumerate(self.joint_names):
            joints.append(
                {
                    "name": name,
                    "type": JOINT_TYPE_NAMES[int(self.joint_types[i])],
                    **{f: _json_float(getattr(self, f)[i]) for f in LIMIT_FIELDS},
                    "gear_ratio": float(self.gear_ratio[i]),
                    "rotor_inertia": float(self.rotor_inertia[i]),
                    "mass": float(self.inertial[i, 9]),
                }
            )
        return {
            "name": self.name,
            "description": self.description,
            "dof": self.dof,
            "gravity": self.gravity.tolist(),
            "convention": self.dh.convention if self.dh is not None else "urdf",
            "joints": joints,
            "sources": dict(self.sources),
        } | ({} if self.joint_map.is_identity else {"joint_map": self.joint_map.to_dict(),
                                                    "joint_map_text": self.joint_map.describe()})


def _json_float(x: float):
    x = float(x)
    return x if np.isfinite(x) else ("inf" if x > 0 else "-inf")


# --------------------------------------------------------------------------- validation


def _require_finite(field_name: str, arr: np.ndarray) -> None:
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(np.atleast_1d(arr)))[0].tolist()
        raise ValueError(f"{field_name}: non-finite value at index {bad}")


def _finite_vector(field_name: str, values, length: int) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field_name}: expected {length} numbers, got {values!r}") from exc
    if arr.shape != (length,):
        raise ValueError(f"{field_name}: expected {length} numbers, got shape {arr.shape}")
    _require_finite(field_name, arr)
    return arr


def _per_joint(field_name: str, values, n: int, allow_inf: bool = False) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field_name}: expected {n} numbers, got {values!r}") from exc
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{field_name}: expected {n} values (one per joint), got shape {arr.shape}")
    if np.any(np.isnan(arr)) or (not allow_inf and not np.all(np.isfinite(arr))):
        raise ValueError(f"{field_name}: non-finite value in {arr.tolist()}")
    return arr


# --------------------------------------------------------------------------- inertia helpers


def inertia_matrix(xx, xy, xz, yy, yz, zz) -> np.ndarray:
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


def standard_parameters(mass: float, com: np.ndarray, inertia_com: np.ndarray,
                        rotation: np.ndarray | None = None,
                        translation: np.ndarray | None = None) -> np.ndarray:
    """Standard parameters [XX XY XZ YY YZ ZZ MX MY MZ M] about a target frame.

    ``com`` and ``inertia_com`` are given in a source frame whose pose in the target
    frame is (rotation, translation); the inertia is moved to the target origin by
    the parallel-axis (Huygens-Steiner) theorem.
    """
    R = np.eye(3) if rotation is None else np.asarray(rotation, float)
    p = np.zeros(3) if translation is None else np.asarray(translation, float)
    c = R @ np.asarray(com, float) + p
    I_c = R @ np.asarray(inertia_com, float) @ R.T
    I_o = I_c + mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
    return np.array([I_o[0, 0], I_o[0, 1], I_o[0, 2], I_o[1, 1], I_o[1, 2], I_o[2, 2],
                     mass * c[0], mass * c[1], mass * c[2], mass])


def com_inertia(params: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Inverse of :func:`standard_parameters` in the same frame: (mass, com, inertia about com)."""
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = (float(v) for v in params)
    I_o = inertia_matrix(XX, XY, XZ, YY, YZ, ZZ)
    if M <= 0.0:
        return M, np.zeros(3), I_o
    c = np.array([MX, MY, MZ]) / M
    I_c = I_o - M * (float(c @ c) * np.eye(3) - np.outer(c, c))
    return M, c, I_c


def transform_standard_parameters(params: np.ndarray, rotation: np.ndarray,
                                  translation: np.ndarray) -> np.ndarray:
    """Re-express standard parameters given about frame S in frame T, where S has pose (R, p) in T."""
    mass, c, I_c = com_inertia(params)
    if mass <= 0.0:
        I_o = np.asarray(rotation) @ I_c @ np.asarray(rotation).T
        return np.array([I_o[0, 0], I_o[0, 1], I_o[0, 2], I_o[1, 1], I_o[1, 2], I_o[2, 2], 0, 0, 0, 0.0])
    return standard_parameters(mass, c, I_c, rotation, translation)


def check_inertia_com(field_name: str, inertia_com: np.ndarray, tol: float = 1e-9) -> None:
    eig = np.linalg.eigvalsh(inertia_com)
    scale = max(1.0, float(np.max(np.abs(eig))))
    if eig[0] < -tol * scale:
        raise ValueError(f"{field_name}: inertia about the COM is not positive semi-definite "
                         f"(eigenvalues {eig.tolist()})")


# --------------------------------------------------------------------------- construction


def build_model(*, name: str, joint_names: Sequence[str], joint_types: Sequence[str],
                fixed: np.ndarray, tool: np.ndarray | None = None,
                inertial: np.ndarray | None = None, gravity=(0.0, 0.0, -9.81),
                limits: Mapping[str, Sequence[float]] | None = None,
                gear_ratio=None, rotor_inertia=None, dh: DHTable | None = None,
                description: str = "", sources: Mapping[str, str] | None = None,
                allow_infinite_limits: bool = False, joint_map: JointMap | None = None,
                transmission: Transmission | None = None,
                joint_aliases: Sequence[Sequence[str]] | None = None) -> RobotModel:
    """Validate every field and assemble a :class:`RobotModel`.

    ``joint_aliases[i]``: other names a log may give joint i (log_names.py).
    Raises ``ValueError`` naming the offending field on any inconsistency.
    """
    n = len(joint_names)
    if n == 0:
        raise ValueError("joints: a model needs at least one joint")
    if len(joint_types) != n:
        raise ValueError(f"joint_types: expected {n} entries, got {len(joint_types)}")
    codes = []
    for i, t in enumerate(joint_types):
        if t not in JOINT_TYPE_CODES:
            raise ValueError(f"joints[{i}].type: unknown joint type {t!r}; expected 'revolute' or 'prismatic'")
        codes.append(JOINT_TYPE_CODES[t])
    fixed = np.asarray(fixed, dtype=float)
    if fixed.shape != (n, 4, 4):
        raise ValueError(f"fixed: expected shape ({n}, 4, 4), got {fixed.shape}")
    _require_finite("fixed", fixed)
    tool = np.eye(4) if tool is None else np.asarray(tool, dtype=float)
    if tool.shape != (4, 4):
        raise ValueError(f"tool: expected a 4x4 transform, got shape {tool.shape}")
    _require_finite("tool", tool)
    inertial = np.zeros((n, 10)) if inertial is None else np.asarray(inertial, dtype=float)
    if inertial.shape != (n, 10):
        raise ValueError(f"inertial: expected shape ({n}, 10), got {inertial.shape}")
    _require_finite("inertial", inertial)
    g = _finite_vector("gravity", gravity, 3)

    limits = dict(limits or {})
    unknown = set(limits) - set(LIMIT_FIELDS)
    if unknown:
        raise ValueError(f"limits: unknown field(s) {sorted(unknown)}; expected {list(LIMIT_FIELDS)}")
    lim = {}
    for f in LIMIT_FIELDS:
        if f in limits:
            lim[f] = _per_joint(f, limits[f], n, allow_inf=allow_infinite_limits)
        elif allow_infinite_limits:
            lim[f] = np.full(n, -np.inf if f == "q_min" else np.inf)
        else:
            raise ValueError(f"{f}: missing joint limit")
    for i in range(n):
        if not lim["q_min"][i] < lim["q_max"][i]:
            raise ValueError(f"joints[{i}].q_min: {lim['q_min'][i]} must be below q_max {lim['q_max'][i]}")
        for f in LIMIT_FIELDS[2:]:
            if not lim[f][i] > 0:
                raise ValueError(f"joints[{i}].{f}: must be > 0, got {lim[f][i]}")
    gear = _per_joint("gear_ratio", 1.0 if gear_ratio is None else gear_ratio, n)
    if np.any(gear == 0):
        raise ValueError(f"gear_ratio: must be non-zero, got {gear.tolist()}")
    rotor = _per_joint("rotor_inertia", 0.0 if rotor_inertia is None else rotor_inertia, n)
    if np.any(rotor < 0):
        raise ValueError(f"rotor_inertia: must be >= 0, got {rotor.tolist()}")
    for i in range(n):
        if inertial[i, 9] < 0:
            raise ValueError(f"joints[{i}].link.mass: must be >= 0, got {inertial[i, 9]}")

    return RobotModel(
        name=name, joint_names=tuple(joint_names), joint_types=np.asarray(codes, dtype=np.int8),
        fixed=fixed.copy(), tool=tool.copy(), gravity=g, inertial=inertial.copy(),
        gear_ratio=gear, rotor_inertia=rotor, dh=dh, description=description,
        sources=dict(sources or {}), joint_map=joint_map, transmission=transmission,
        log_names=() if joint_aliases is None else with_aliases(joint_names, joint_aliases), **lim,
    )


def check_states(model: RobotModel, q, qd, qdd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a batch of states: 2-D (N, n) float arrays, all finite. Raises ValueError naming the field."""
    out = []
    n = model.dof
    shape = None
    for name, arr in (("q", q), ("qd", qd), ("qdd", qdd)):
        try:
            a = np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: not a numeric array") from exc
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != n:
            raise ValueError(f"{name}: expected shape (N, {n}) for a {n}-joint robot, got {np.shape(arr)}")
        if shape is not None and a.shape != shape:
            raise ValueError(f"{name}: shape {a.shape} does not match q's {shape}")
        shape = a.shape
        if not np.all(np.isfinite(a)):
            row = int(np.argwhere(~np.isfinite(a))[0][0])
            raise ValueError(f"{name}: non-finite value (NaN or inf) in sample {row}")
        out.append(np.ascontiguousarray(a))
    return out[0], out[1], out[2]
