"""Base (identifiable) parameters by numerical QR decomposition (Gautier 1991; Mamedov & Mikhel 2020).

1. Stack the regressor W over random states (fixed seed, so the result is deterministic).
2. Drop columns that are zero to a tolerance relative to the matrix scale.
3. The rank b comes from QR with column pivoting.
4. The independent set is chosen with Gautier's unpivoted QR in the natural column order
   (link 1 first, XX..M, IA, FV, FC, FO within a joint): a column is independent when it adds
   a new direction to the columns before it. This keeps the parameters of the links nearest the
   base and eliminates YY_j, MZ_j, M_j, IA_j into them, the grouping SYMORO+ prints, so the
   expressions read like Ni et al. 2024 Table 3 (ZZ1R = ZZ1 + IA1 + YY2 + ...). When the two QRs
   disagree on the rank (a numerically ambiguous case) the pivoted choice is used.
5. beta solves W2 = W1 beta; entries below sqrt(eps) are zeroed (Mamedov & Mikhel 2020); the fit is asserted.

pi_b = pi_1 + beta pi_2 = P pi, and W pi = W_b pi_b with W_b = W[:, independent].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from robodyn.robot.model import RobotModel

from .regressor import ColumnSpec, parameter_names, regressor, sample_states

BETA_ZERO = float(np.sqrt(np.finfo(float).eps))


@dataclass(frozen=True)
class BaseParameters:
    standard_names: tuple[str, ...]
    independent: np.ndarray  # indices into the standard columns, length b
    dependent: np.ndarray  # indices of non-zero dependent columns
    unidentifiable: np.ndarray  # indices of zero columns (no effect on any torque)
    beta: np.ndarray  # (b, len(dependent))
    tolerance: float
    residual: float  # ||W2 - W1 beta|| / ||W2||
    spec: ColumnSpec

    @property
    def count(self) -> int:
        return int(self.independent.shape[0])

    @property
    def names(self) -> list[str]:
        return list(self._names)

    @functools.cached_property
    def _names(self) -> tuple[str, ...]:
        # made once: model selection asks every candidate's estimate for them (a frozen dataclass's
        # fields never change, so neither do these)
        grouped = np.any(self.beta != 0.0, axis=1) if self.beta.shape[1] > 0 else np.zeros(self.count, bool)
        return tuple(self.standard_names[idx] + ("R" if g else "") for idx, g in zip(self.independent, grouped))

    @property
    def projection(self) -> np.ndarray:
        """P (b, P_std) such that pi_b = P @ pi."""
        P = np.zeros((self.count, len(self.standard_names)))
        P[np.arange(self.count), self.independent] = 1.0
        if self.dependent.size:
            P[:, self.dependent] = self.beta
        return P

    def base_values(self, pi: np.ndarray) -> np.ndarray:
        pi = np.asarray(pi, float)
        if pi.shape != (len(self.standard_names),):
            raise ValueError(f"pi: expected {len(self.standard_names)} standard parameters, got shape {pi.shape}")
        return self.projection @ pi

    def base_regressor(self, W: np.ndarray) -> np.ndarray:
        if W.shape[-1] != len(self.standard_names):
            raise ValueError(f"W: expected {len(self.standard_names)} columns, got {W.shape[-1]}")
        return W[..., self.independent]

    def expressions(self, precision: int = 6) -> list[str]:
        names = self.names
        exprs = []
        for k, idx in enumerate(self.independent):
            terms = [self.standard_names[idx]]
            for c, d in zip(self.beta[k] if self.dependent.size else [], self.dependent):
                if c == 0.0:
                    continue
                name = self.standard_names[d]
                if abs(c - 1.0) < 1e-9:
                    terms.append(f"+ {name}")
                elif abs(c + 1.0) < 1e-9:
                    terms.append(f"- {name}")
                else:
                    terms.append(f"{'+' if c > 0 else '-'} {abs(c):.{precision}g}*{name}")
            exprs.append(f"{names[k]} = " + " ".join(terms))
        return exprs

    def to_dict(self) -> dict:
        return {
            "count": self.count,
            "names": self.names,
            "expressions": self.expressions(),
            "standard_names": list(self.standard_names),
            "independent": self.independent.tolist(),
            "dependent": self.dependent.tolist(),
            "unidentifiable": [self.standard_names[i] for i in self.unidentifiable],
            "unidentifiable_indices": self.unidentifiable.tolist(),
            "beta": self.beta.tolist(),
            "tolerance": self.tolerance,
            "residual": self.residual,
            "columns": {"rotor_inertia": self.spec.rotor_inertia, "friction": list(self.spec.friction),
                        "motor_couplings": [list(c) for c in self.spec.motor_couplings]},
        }

    @classmethod
    def from_dict(cls, d: dict) -> "BaseParameters":
        dep = np.asarray(d["dependent"], dtype=np.int64)
        beta = np.asarray(d["beta"], float).reshape(len(d["independent"]), dep.size)
        return cls(tuple(d["standard_names"]), np.asarray(d["independent"], np.int64), dep,
                   np.asarray(d["unidentifiable_indices"], np.int64), beta, float(d["tolerance"]),
                   float(d["residual"]),
                   ColumnSpec(d["columns"]["rotor_inertia"], tuple(d["columns"]["friction"]),
                              tuple(tuple(c) for c in d["columns"].get("motor_couplings", ()))))


def base_parameters(model: RobotModel, spec: ColumnSpec = ColumnSpec(), *, samples: int | None = None,
                    seed: int = 20240101, tolerance: float = 1e-8) -> BaseParameters:
    """Base parameters of ``model`` with the selected columns (deterministic for a seed).

    ``tolerance`` is relative: a column or an R diagonal counts as zero below
    ``tolerance * max(|R_kk|)``.
    """
    names = parameter_names(model, spec)
    P = len(names)
    if samples is None:
        samples = max(64, 4 * P // model.dof + 16)
    q, qd, qdd = sample_states(model, samples, seed=seed)
    W = regressor(model, q, qd, qdd, spec)
    return base_parameters_from_regressor(W, names, spec, tolerance=tolerance)


def base_parameters_from_regressor(W: np.ndarray, names, spec: ColumnSpec = ColumnSpec(), *,
                                   tolerance: float = 1e-8) -> BaseParameters:
    W = np.asarray(W, float)
    if W.ndim != 2 or W.shape[1] != len(names):
        raise ValueError(f"W: expected shape (rows, {len(names)}), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W: contains non-finite values")
    # normalise columns so that the tolerance is scale-free per column family (m vs kg.m^2 columns)
    col_norm = np.linalg.norm(W, axis=0)
    scale = float(col_norm.max()) if col_norm.size else 0.0
    if scale == 0.0:
        raise ValueError("W: all columns are zero; no parameter is identifiable")
    nonzero = np.flatnonzero(col_norm > tolerance * scale)
    zero = np.flatnonzero(col_norm <= tolerance * scale)
    Wn = W[:, nonzero] / col_norm[nonzero]

    _, R_piv, _ = scipy.linalg.qr(Wn, mode="economic", pivoting=True)
    d_piv = np.abs(np.diag(R_piv))
    rank = int(np.sum(d_piv > tolerance * d_piv[0]))

    R = scipy.linalg.qr(Wn, mode="r")[0]
    d = np.abs(np.diag(R))[: Wn.shape[1]]
    natural = np.flatnonzero(d > tolerance * d.max())
    if natural.size == rank:
        chosen = natural
    else:  # ambiguous near the tolerance: trust the rank-revealing factorisation
        _, _, piv = scipy.linalg.qr(Wn, mode="economic", pivoting=True)
        chosen = np.sort(piv[:rank])
    independent = nonzero[chosen]
    dependent = np.setdiff1d(nonzero, independent)
    W1 = W[:, independent]
    if dependent.size:
        W2 = W[:, dependent]
        beta, *_ = np.linalg.lstsq(W1, W2, rcond=None)
        beta[np.abs(beta) < BETA_ZERO] = 0.0
        residual = float(np.linalg.norm(W2 - W1 @ beta) / max(np.linalg.norm(W2), 1e-300))
        if residual > 1e-6:
            raise ValueError(f"base parameters: dependent columns are not reproduced (relative residual "
                             f"{residual:.2e} > 1e-6); increase samples or check the model")
    else:
        beta = np.zeros((independent.size, 0))
        residual = 0.0
    return BaseParameters(tuple(names), independent.astype(np.int64), dependent.astype(np.int64),
                          zero.astype(np.int64), beta, tolerance, residual, spec)
