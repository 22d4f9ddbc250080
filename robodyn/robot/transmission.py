"""Motors and joints: the transmission of a robot.

Each motor turns with its joint through a gear ratio; on some arms a motor also turns with another
joint (a coupled wrist: the Stäubli TX40's motor 6 turns with joints 5 and 6). The transmission is
linear, in the controller's joint values q (see joint_map.py for those against the model's):

    q_motor = R q,    tau_joint = R^T tau_motor   (power: tau_joint . qd = tau_motor . qd_motor)

with R = diag(gear_ratio) plus coupling terms. It matters twice:

- identification: a motor's rotor inertia and friction act on the motor's velocity, so a motor
  shared by several joints needs its own columns (``motor_couplings``, in model variables);
- data: motor-side logs (motor encoder angles and motor torques) become joint values.

A model file states coupling terms in a ``[transmission]`` table (robodyn/robot/data/FORMAT.md);
without one, R is diagonal and no motor is shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRANSMISSION_KEYS = ("coupling",)


@dataclass(frozen=True)
class Transmission:
    matrix: np.ndarray  # R: motor positions from controller joint values

    def __post_init__(self):
        R = np.array(self.matrix, dtype=float)
        if R.ndim != 2 or R.shape[0] != R.shape[1] or not np.all(np.isfinite(R)):
            raise ValueError(f"transmission: expected a finite square matrix, got shape {R.shape}")
        if not np.linalg.cond(R) < 1e10:
            raise ValueError("transmission: the motor-from-joint matrix is singular; joints could not be recovered "
                             "from motor positions")
        R.setflags(write=False)
        object.__setattr__(self, "matrix", R)

    @classmethod
    def from_terms(cls, gear_ratio, coupling=()) -> "Transmission":
        """R = diag(gear_ratio) plus ``(motor, joint, factor)`` terms (0-based): motor also turns by
        factor x that joint's angle."""
        ratio = np.asarray(gear_ratio, float)
        n = ratio.shape[0]
        if np.any(ratio == 0):
            raise ValueError(f"transmission: a gear ratio of 0 disconnects its motor ({ratio.tolist()})")
        R = np.diag(ratio)
        for motor, joint, factor in coupling:
            if not (0 <= motor < n and 0 <= joint < n) or motor == joint:
                raise ValueError(f"transmission.coupling: motor {motor + 1} and joint {joint + 1} must be two "
                                 f"different numbers in 1..{n}")
            R[motor, joint] += float(factor)
        return cls(R)

    @classmethod
    def from_dict(cls, table: dict, gear_ratio) -> "Transmission":
        """The ``[transmission]`` table of a model file."""
        if not isinstance(table, dict):
            raise ValueError("transmission: expected a table")
        unknown = sorted(set(table) - set(TRANSMISSION_KEYS))
        if unknown:
            raise ValueError(f"transmission.{unknown[0]}: unknown key; expected {', '.join(TRANSMISSION_KEYS)}")
        terms = []
        for k, c in enumerate(table.get("coupling", [])):
            if not isinstance(c, dict) or set(c) != {"motor", "joint", "factor"}:
                raise ValueError(f"transmission.coupling[{k}]: expected {{motor = M, joint = J, factor = F}} "
                                 f"(1-based; motor M also turns by F per radian of joint J), got {c!r}")
            try:
                terms.append((int(c["motor"]) - 1, int(c["joint"]) - 1, float(c["factor"])))
            except (TypeError, ValueError):
                raise ValueError(f"transmission.coupling[{k}]: motor and joint are numbers, factor a number") from None
        return cls.from_terms(gear_ratio, terms)

    @property
    def dof(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def coupled(self) -> bool:
        R = self.matrix
        return bool(np.any(R - np.diag(np.diag(R))))

    def motor_couplings(self, joint_map=None) -> tuple[tuple[float, ...], ...]:
        """Shared motors as identification columns: for every motor that turns with more than one
        joint, its velocity per unit of its own joint's, as weights on the *model's* joint
        velocities (qd_motor = R M^-1 qd_model with the joint map's M)."""
        R = self.matrix
        if joint_map is not None:
            R = R @ np.linalg.inv(joint_map.matrix)
        out = []
        for k in range(R.shape[0]):
            row = R[k]
            if np.count_nonzero(np.abs(row) > 1e-12 * np.abs(row).max()) > 1:
                out.append(tuple(float(x) for x in row / row[k]))
        return tuple(out)

    def joint_positions(self, q_motor: np.ndarray) -> np.ndarray:
        """Controller joint values from motor positions (N, n) or (n,)."""
        return np.linalg.solve(self.matrix, np.asarray(q_motor, float).T).T

    def joint_torques(self, tau_motor: np.ndarray) -> np.ndarray:
        """Joint torques (controller joints) from motor torques: R^T tau_motor."""
        return np.asarray(tau_motor, float) @ self.matrix

    def to_dict(self) -> dict:
        return {"motor_from_joint": self.matrix.tolist()}
