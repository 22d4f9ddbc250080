"""Identifiability of the position-only calibration model (Li et al. 2023 eqs. 10-14).

The identification Jacobian J (3N x P) stacks d(target position)/d(parameter) over the poses.
Its columns have different units (m/m for lengths, m/rad for angles), so rank, singular values and
condition number are taken on J with every column scaled to unit norm: that makes them independent
of units and measures only how parallel the columns are.

* Exact redundancy: a column that lies in the span of the columns before it (checked in the
  parameter order, so the parameters nearest the base are kept, like the base-parameter QR of
  identification/base_params.py). It is reported with the combination that reproduces it.
* Poor identifiability: a parameter whose uncertainty, under the given measurement noise, moves
  the measured points by more than that noise (its standard deviation times the RMS length of its
  column). For well-conditioned columns that effect is about noise / sqrt(poses); it exceeds the
  noise only when the column is nearly a combination of the others, which the variance inflation
  factor (1 / (1 - R^2) of the column against the others) shows directly: near-parallel axes make
  the columns of their d parameters almost equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .parameters import GeometricModel, parameter_jacobian

RANK_TOL = 1e-9  # relative singular value below which a direction counts as exactly lost
REDUNDANT_TOL = 1e-7  # relative residual of a scaled column against the earlier ones
CHARACTERISTIC_LENGTH = 0.5  # m: converts angle columns to metres for observability indices


@dataclass
class Redundancy:
    name: str
    combination: dict[str, float]  # column(name) ~= sum coef * column(other), unit-scaled columns
    residual: float

    def describe(self) -> str:
        parts = [f"{c:+.4g}·{n}" for n, c in sorted(self.combination.items(), key=lambda kv: -abs(kv[1]))]
        return f"{self.name} ≈ {' '.join(parts) if parts else '0 (no effect on the measured point)'}"


@dataclass
class IdentifiabilityReport:
    names: list[str]
    singular_values: np.ndarray  # of the unit-column Jacobian, descending
    rank: int
    condition_number: float
    redundant: list[Redundancy]
    std: np.ndarray  # per parameter under noise_sigma (nan when redundant)
    effect_std: np.ndarray  # std times the RMS column length: how far it moves the points (m)
    vif: np.ndarray  # variance inflation factor per parameter (inf when redundant)
    poorly_identifiable: list[str]
    noise_sigma: float
    poses: int
    observability: dict = field(default_factory=dict)

    @property
    def identifiable(self) -> bool:
        return self.rank == len(self.names)

    def to_dict(self) -> dict:
        def num(x):
            x = float(x)
            return x if np.isfinite(x) else None

        return {
            "parameters": list(self.names),
            "poses": self.poses,
            "rank": self.rank,
            "parameter_count": len(self.names),
            "condition_number": num(self.condition_number),
            "singular_values": [num(s) for s in self.singular_values],
            "redundant": [{"name": r.name, "combination": r.combination, "residual": r.residual,
                           "text": r.describe()} for r in self.redundant],
            "noise_sigma_m": self.noise_sigma,
            "std": {n: num(s) for n, s in zip(self.names, self.std)},
            "effect_std_m": {n: num(s) for n, s in zip(self.names, self.effect_std)},
            "vif": {n: num(v) for n, v in zip(self.names, self.vif)},
            "poorly_identifiable": list(self.poorly_identifiable),
            "observability": {k: num(v) for k, v in self.observability.items()},
        }


def unit_columns(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.linalg.norm(J, axis=0)
    safe = np.where(norms > 0, norms, 1.0)
    return J / safe, norms


def sequential_redundancies(J: np.ndarray, names, tol: float = REDUNDANT_TOL) -> tuple[np.ndarray, list[Redundancy]]:
    """Columns kept (bool mask) and the redundant ones, scanning in the given order."""
    Js, norms = unit_columns(J)
    keep = np.zeros(J.shape[1], dtype=bool)
    basis = np.zeros((J.shape[0], 0))
    redundant = []
    for k in range(J.shape[1]):
        col = Js[:, k]
        if norms[k] == 0:
            redundant.append(Redundancy(names[k], {}, 0.0))
            continue
        r = col - basis @ (basis.T @ col)
        r = r - basis @ (basis.T @ r)  # second pass: Gram-Schmidt loses orthogonality otherwise
        res = float(np.linalg.norm(r))
        if res > tol:
            keep[k] = True
            basis = np.column_stack([basis, r / res])
        else:
            idx = np.flatnonzero(keep)
            coef, *_ = np.linalg.lstsq(Js[:, idx], col, rcond=None)
            combo = {names[i]: float(c) for i, c in zip(idx, coef) if abs(c) > 1e-6}
            redundant.append(Redundancy(names[k], combo, res))
    return keep, redundant


def metric_columns(J: np.ndarray, angle_mask: np.ndarray) -> np.ndarray:
    """J with angle parameters expressed as arc length at CHARACTERISTIC_LENGTH: all columns in m/m."""
    return J * np.where(np.asarray(angle_mask), 1.0 / CHARACTERISTIC_LENGTH, 1.0)


def observability_indices(J: np.ndarray, angle_mask: np.ndarray) -> dict:
    """Borm-Menq O1 and the related O2..O4 of the Jacobian with angles scaled to metres."""
    Jm = metric_columns(J, angle_mask)
    s = np.linalg.svd(Jm, compute_uv=False)
    m = J.shape[0] // 3
    if s.size == 0 or s[-1] <= 0:
        return {"O1": 0.0, "O2": 0.0, "O3": 0.0, "O4": 0.0, "log_det": -np.inf}
    return {
        "O1": float(np.exp(np.mean(np.log(s))) / np.sqrt(max(m, 1))),
        "O2": float(s[-1] / s[0]),
        "O3": float(s[-1]),
        "O4": float(s[-1] ** 2 / s[0]),
        "log_det": float(2.0 * np.sum(np.log(s))),
    }


def analyse_jacobian(J: np.ndarray, names, angle_mask: np.ndarray, noise_sigma: float) -> IdentifiabilityReport:
    """Rank, singular values, condition number, redundancies and standard deviations of J (3N x P)."""
    names = list(names)
    Js, norms = unit_columns(J)
    s = np.linalg.svd(Js, compute_uv=False)
    rank = int(np.sum(s > RANK_TOL * s[0])) if s.size else 0
    cond = float(s[0] / s[-1]) if s.size and s[-1] > 0 else np.inf
    keep, redundant = sequential_redundancies(J, names)
    std = np.full(len(names), np.nan)
    vif = np.full(len(names), np.inf)
    if keep.any():
        # through the SVD of the unit-column matrix: stays non-negative however ill-conditioned
        _, sk, Vt = np.linalg.svd(Js[:, keep], full_matrices=False)
        inv_diag = np.sum((Vt / sk[:, None]) ** 2, axis=0)  # diag((Js^T Js)^-1)
        vif[keep] = inv_diag
        std[keep] = noise_sigma * np.sqrt(inv_diag) / norms[keep]
    poses = J.shape[0] // 3
    effect = std * norms / np.sqrt(max(poses, 1))
    poor = [n for k, n in enumerate(names) if keep[k] and effect[k] > noise_sigma]
    return IdentifiabilityReport(names, s, rank, cond, redundant, std, effect, vif, poor, float(noise_sigma),
                                 poses, observability_indices(J[:, keep], np.asarray(angle_mask)[keep]))


def structure_measurements(gm: GeometricModel, q: np.ndarray, structure=None):
    """A measurement set with the rows of ``structure`` at poses q (the values do not matter for a
    Jacobian): every point target at every pose, every oriented target's orientation, and the
    planar contacts spread over the poses in turn."""
    from .measurements import MeasurementSet, Structure

    structure = structure or Structure()
    N, K = q.shape[0], len(gm.targets)
    p = np.full((N, K, 3), np.nan)
    for k in structure.point_targets:
        p[:, k] = 0.0
    rotation = None
    if structure.rotation_targets:
        rotation = np.full((N, K, 3, 3), np.nan)
        for k in structure.rotation_targets:
            rotation[:, k] = np.eye(3)
    plane = None
    if structure.plane_pairs:
        plane = np.full((N, K), -1, dtype=int)
        for n in range(N):
            k, j = structure.plane_pairs[n % len(structure.plane_pairs)]
            if not np.isfinite(p[n, k]).all():
                plane[n, k] = j
    keep = np.isfinite(p).all(-1).any(1) | (False if rotation is None else np.isfinite(rotation).all((-1, -2)).any(1)) \
        | (False if plane is None else (plane >= 0).any(1))
    keep = np.asarray(keep, bool)
    return MeasurementSet(q[keep], p[keep], load=None, rotation=None if rotation is None else rotation[keep],
                          sigma_rotation=1.0, plane=None if plane is None else plane[keep])


def observation_jacobian(gm: GeometricModel, params: np.ndarray, q: np.ndarray, free_idx: np.ndarray,
                         structure=None, meas=None) -> np.ndarray:
    """The identification Jacobian (rows in m: orientation rows as arc length) of the free
    parameters, for the rows of a real measurement set or of ``structure`` at poses q."""
    from .measurements import Residual

    if meas is None:
        meas = structure_measurements(gm, np.atleast_2d(q), structure)
    return Residual(gm, meas).metric_jacobian(params, meas.q)[:, free_idx]


def analyse_identifiability(gm: GeometricModel, params: np.ndarray, q: np.ndarray, free_names,
                            noise_sigma: float = 15e-6, *, structure=None, meas=None,
                            extra_columns: dict | None = None) -> IdentifiabilityReport:
    """The identifiability of ``free_names`` at ``params`` for the poses ``q`` (or the rows of
    ``meas``); ``extra_columns`` adds non-geometric parameters (name -> column in m/unit)."""
    idx = gm.indices(free_names)
    if meas is None and structure is None:
        J = parameter_jacobian(gm, params, q)[:, :, idx].reshape(-1, idx.size)
    else:
        J = observation_jacobian(gm, params, q, idx, structure, meas)
    names = [gm.names[i] for i in idx]
    angle = list(gm.angle_mask[idx])
    for name, col in (extra_columns or {}).items():
        J = np.column_stack([J, col])
        names.append(name)
        angle.append(False)
    return analyse_jacobian(J, names, np.array(angle, bool), noise_sigma)


def generic_configurations(gm: GeometricModel, count: int = 60, seed: int = 0) -> np.ndarray:
    """Deterministic random joint angles spread over the joint ranges (capped at +-pi)."""
    lo = np.maximum(gm.robot.q_min, -np.pi)
    hi = np.minimum(gm.robot.q_max, np.pi)
    return np.random.default_rng(seed).uniform(lo, hi, size=(count, gm.dof))


def structural_redundancies(gm: GeometricModel, free_names, params: np.ndarray | None = None,
                            structure=None) -> list[Redundancy]:
    """Parameters redundant for every pose set at the (nominal) geometry: checked on generic poses.

    These are properties of the model and of what is measured, not of the particular poses (e.g. d2,
    d3, d4 along three parallel axes all slide the rest of the arm along the same direction; with
    only planar contacts the base cannot be told from the planes).
    """
    params = gm.nominal if params is None else params
    idx = gm.indices(free_names)
    J = observation_jacobian(gm, params, generic_configurations(gm), idx, structure)
    _, redundant = sequential_redundancies(J, [gm.names[i] for i in idx])
    return redundant
