"""Controller joint values and model joint variables: the joint map of a robot.

A robot controller reports and takes its own joint values: the angles on its teach pendant, in its
logs and in its drivers. The model (a DH table, a URDF) has its own joint variables. They differ by
a sign where an axis turns the other way, by a scale where an encoder sits behind a transmission,
by an offset where the zero positions differ, and on some arms by a coupling: a FANUC reports J3 as
the forearm's angle to the horizontal, so the model's elbow variable depends on J2 and J3. The map
is affine:

    q_model = M q_controller + offset

with M invertible. Everything else follows from it, for batches of shape (N, n) or single vectors:

- positions: :meth:`JointMap.to_model`, :meth:`JointMap.to_controller`;
- velocities and accelerations map with M alone (the offset is constant):
  :meth:`velocity_to_model`, :meth:`velocity_to_controller`;
- torques by conservation of power, tau_model . qd_model = tau_controller . qd_controller:
  tau_model = M^-T tau_controller and tau_controller = M^T tau_model
  (:meth:`torque_to_model`, :meth:`torque_to_controller`);
- Jacobians by the chain rule: d(.)/dq_controller = d(.)/dq_model M
  (:meth:`jacobian_to_controller`).

A model file states its map in a ``[joint_map]`` table (robodyn/robot/data/FORMAT.md); without
one the map is the identity and nothing changes. :func:`robodyn.robot.absorb.absorb_joint_map`
rewrites a model whose map is a sign and offset per joint into an equivalent model that takes
controller values directly (what a URDF export needs); a coupling or a scale cannot be written into
a URDF joint. It lives in its own module because it needs the kinematics and the model, both of
which sit above this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CONDITION_LIMIT = 1e10  # a map whose matrix is this close to singular loses joint values to round-off
MAP_KEYS = ("sign", "scale", "offset", "coupling", "matrix")


def _vector(field_name: str, value, n: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{field_name}: expected {n} numbers, got {value!r}") from None
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{field_name}: expected {n} numbers (one per joint), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{field_name}: non-finite value in {arr.tolist()}")
    return arr


@dataclass(frozen=True)
class JointMap:
    """q_model = matrix @ q_controller + offset (see the module docstring)."""

    matrix: np.ndarray
    offset: np.ndarray
    _inverse: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        M = np.array(self.matrix, dtype=float)
        if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
            raise ValueError(f"joint_map.matrix: expected a square n x n matrix, got shape {M.shape}")
        if not np.all(np.isfinite(M)):
            raise ValueError("joint_map.matrix: non-finite entry")
        n = M.shape[0]
        off = _vector("joint_map.offset", self.offset, n)
        cond = np.linalg.cond(M)
        if not cond < CONDITION_LIMIT:
            raise ValueError(f"joint_map.matrix: singular (condition number {cond:.3g}); controller values could "
                             "not be recovered from model values")
        M.setflags(write=False)
        off.setflags(write=False)
        inv = np.linalg.inv(M)
        inv.setflags(write=False)
        object.__setattr__(self, "matrix", M)
        object.__setattr__(self, "offset", off)
        object.__setattr__(self, "_inverse", inv)

    # ----------------------------------------------------------------- construction

    @classmethod
    def identity(cls, n: int) -> "JointMap":
        return cls(np.eye(n), np.zeros(n))

    @classmethod
    def from_terms(cls, n: int, *, sign=None, scale=None, offset=None, coupling=()) -> "JointMap":
        """M = diag(sign * scale) plus coupling terms ``(model_joint, controller_joint, factor)``
        (0-based): model joint i also moves by factor * controller joint j."""
        s = np.ones(n) if sign is None else _vector("joint_map.sign", sign, n)
        if not np.all(np.isin(s, (-1.0, 1.0))):
            raise ValueError(f"joint_map.sign: each sign must be 1 or -1, got {s.tolist()}")
        k = np.ones(n) if scale is None else _vector("joint_map.scale", scale, n)
        if not np.all(k > 0):
            raise ValueError(f"joint_map.scale: each scale must be > 0 (a reversed joint takes sign = -1), got {k.tolist()}")
        M = np.diag(s * k)
        for term in coupling:
            i, j, factor = term
            if not (0 <= i < n and 0 <= j < n):
                raise ValueError(f"joint_map.coupling: joints must be in 1..{n}, got joint {i + 1} from controller {j + 1}")
            if i == j:
                raise ValueError(f"joint_map.coupling: joint {i + 1} coupled to itself; use scale (and sign) instead")
            if not np.isfinite(factor):
                raise ValueError(f"joint_map.coupling: non-finite factor for joint {i + 1}")
            M[i, j] += float(factor)
        return cls(M, np.zeros(n) if offset is None else _vector("joint_map.offset", offset, n))

    @classmethod
    def from_dict(cls, doc: dict, n: int) -> "JointMap":
        """The ``[joint_map]`` table of a model file (robodyn/robot/data/FORMAT.md)."""
        if not isinstance(doc, dict):
            raise ValueError("joint_map: expected a table")
        unknown = sorted(set(doc) - set(MAP_KEYS))
        if unknown:
            raise ValueError(f"joint_map.{unknown[0]}: unknown key; expected {', '.join(MAP_KEYS)}")
        offset = doc.get("offset")
        if "matrix" in doc:
            clash = [k for k in ("sign", "scale", "coupling") if k in doc]
            if clash:
                raise ValueError(f"joint_map.{clash[0]}: give either matrix or sign/scale/coupling, not both")
            rows = doc["matrix"]
            if not isinstance(rows, list) or len(rows) != n:
                raise ValueError(f"joint_map.matrix: expected {n} rows of {n} numbers")
            M = np.array([_vector(f"joint_map.matrix[{i}]", r, n) for i, r in enumerate(rows)])
            return cls(M, np.zeros(n) if offset is None else _vector("joint_map.offset", offset, n))
        terms = []
        coupling = doc.get("coupling", [])
        if not isinstance(coupling, list):
            raise ValueError("joint_map.coupling: expected a list of {joint, controller, factor} tables")
        for k, c in enumerate(coupling):
            if not isinstance(c, dict) or set(c) - {"joint", "controller", "factor"} or not {"joint", "controller"} <= set(c):
                raise ValueError(f"joint_map.coupling[{k}]: expected {{joint = I, controller = J, factor = F}} "
                                 f"(1-based joints), got {c!r}")
            try:
                i, j = int(c["joint"]), int(c["controller"])
                factor = float(c.get("factor", 1.0))
            except (TypeError, ValueError):
                raise ValueError(f"joint_map.coupling[{k}]: joint and controller are joint numbers, factor a number") from None
            terms.append((i - 1, j - 1, factor))
        return cls.from_terms(n, sign=doc.get("sign"), scale=doc.get("scale"), offset=offset, coupling=terms)

    def to_dict(self) -> dict:
        """A ``[joint_map]`` table that :meth:`from_dict` reads back exactly."""
        return {"matrix": self.matrix.tolist(), "offset": self.offset.tolist()}

    # ----------------------------------------------------------------- properties

    @property
    def dof(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def inverse_matrix(self) -> np.ndarray:
        return self._inverse

    @property
    def is_identity(self) -> bool:
        return bool(np.array_equal(self.matrix, np.eye(self.dof)) and not np.any(self.offset))

    @property
    def is_diagonal(self) -> bool:
        return bool(np.count_nonzero(self.matrix - np.diag(np.diag(self.matrix))) == 0)

    def describe(self, controller_prefix: str = "J", model_prefix: str = "q") -> list[str]:
        """One readable line per model joint, e.g. ``q3 = J3 + J2`` or ``q2 = -J2 + 1.5708``."""
        lines = []
        for i in range(self.dof):
            terms = []
            for j in np.flatnonzero(self.matrix[i]):
                c = float(self.matrix[i, j])
                name = f"{controller_prefix}{j + 1}"
                if c == 1.0:
                    terms.append(f"+ {name}")
                elif c == -1.0:
                    terms.append(f"- {name}")
                else:
                    terms.append(f"{'-' if c < 0 else '+'} {abs(c):.6g}*{name}")
            if self.offset[i]:
                terms.append(f"{'-' if self.offset[i] < 0 else '+'} {abs(float(self.offset[i])):.6g}")
            text = " ".join(terms) if terms else "0"
            text = text[2:] if text.startswith("+ ") else "-" + text[2:] if text.startswith("- ") else text
            lines.append(f"{model_prefix}{i + 1} = {text}")
        return lines

    # ----------------------------------------------------------------- mapping

    def _batch(self, field_name: str, values) -> tuple[np.ndarray, bool]:
        arr = np.asarray(values, dtype=float)
        single = arr.ndim == 1
        if single:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.dof:
            raise ValueError(f"{field_name}: expected shape (N, {self.dof}) or ({self.dof},), got {np.shape(values)}")
        return arr, single

    def _out(self, arr: np.ndarray, single: bool) -> np.ndarray:
        return arr[0] if single else arr

    def to_model(self, q_controller) -> np.ndarray:
        """Model joint variables for controller joint values."""
        q, single = self._batch("q_controller", q_controller)
        return self._out(q @ self.matrix.T + self.offset, single)

    def to_controller(self, q_model) -> np.ndarray:
        """Controller joint values for model joint variables."""
        q, single = self._batch("q_model", q_model)
        return self._out((q - self.offset) @ self._inverse.T, single)

    def velocity_to_model(self, qd_controller) -> np.ndarray:
        """Velocities (and accelerations, jerks): M qd, no offset."""
        v, single = self._batch("qd_controller", qd_controller)
        return self._out(v @ self.matrix.T, single)

    def velocity_to_controller(self, qd_model) -> np.ndarray:
        v, single = self._batch("qd_model", qd_model)
        return self._out(v @ self._inverse.T, single)

    acceleration_to_model = velocity_to_model
    acceleration_to_controller = velocity_to_controller

    def torque_to_model(self, tau_controller) -> np.ndarray:
        """tau_model = M^-T tau_controller: the same power at every velocity."""
        t, single = self._batch("tau_controller", tau_controller)
        return self._out(t @ self._inverse, single)

    def torque_to_controller(self, tau_model) -> np.ndarray:
        """tau_controller = M^T tau_model."""
        t, single = self._batch("tau_model", tau_model)
        return self._out(t @ self.matrix, single)

    def jacobian_to_controller(self, jacobian_model) -> np.ndarray:
        """Chain rule: a Jacobian with respect to model joints (..., k, n) becomes one with respect to
        controller joints, J_model @ M."""
        J = np.asarray(jacobian_model, dtype=float)
        if J.shape[-1] != self.dof:
            raise ValueError(f"jacobian: expected {self.dof} joint columns, got shape {J.shape}")
        return J @ self.matrix

    def jacobian_to_model(self, jacobian_controller) -> np.ndarray:
        J = np.asarray(jacobian_controller, dtype=float)
        if J.shape[-1] != self.dof:
            raise ValueError(f"jacobian: expected {self.dof} joint columns, got shape {J.shape}")
        return J @ self._inverse

    def limits_to_controller(self, q_min, q_max) -> tuple[np.ndarray, np.ndarray]:
        """Controller-side bounds of a box of model limits; exact only for a diagonal map (a coupled
        map turns the box into a parallelogram, which has no per-joint bounds)."""
        if not self.is_diagonal:
            raise ValueError("joint_map: a coupled map has no per-joint controller limits")
        d = np.diag(self.matrix)
        a = (np.asarray(q_min, float) - self.offset) / d
        b = (np.asarray(q_max, float) - self.offset) / d
        return np.minimum(a, b), np.maximum(a, b)
