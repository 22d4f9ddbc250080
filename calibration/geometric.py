"""Geometric identification: the nonlinear position model (seed 004 eq. 9) fitted directly by
scipy's least squares, with the analytic Jacobian of eqs. 10-13.

Levenberg-Marquardt ('lm') is used for the plain squared loss; a robust loss ('huber',
'soft_l1', 'cauchy', 'arctan') switches to the trust-region reflective method, which scipy requires
for robust losses. Parameter standard deviations come from the residual variance and the Jacobian at
the solution: cov = s^2 (J^T J)^-1 with s^2 = RSS / (3N - P).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from .identifiability import RANK_TOL, sequential_redundancies, unit_columns
from .parameters import GeometricModel, parameter_jacobian, target_positions

LOSSES = ("linear", "huber", "soft_l1", "cauchy", "arctan")
MIN_EQUATION_MARGIN = 1.5  # demand 50 % more equations than unknowns: a bare square system fits noise


@dataclass
class GeometricFit:
    params: np.ndarray  # full parameter vector
    std: np.ndarray  # full vector; nan for fixed parameters
    free: np.ndarray  # bool mask
    residuals: np.ndarray  # (N, 3) measured - model, m
    sigma: float  # residual standard deviation per coordinate, m
    nfev: int
    success: bool
    message: str

    @property
    def errors(self) -> np.ndarray:
        return np.linalg.norm(self.residuals, axis=1)


def check_positions(q: np.ndarray, p: np.ndarray, dof: int, label: str = "measurements") -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(q, dtype=float)
    p = np.asarray(p, dtype=float)
    if q.ndim != 2 or q.shape[1] != dof:
        raise ValueError(f"{label}.q: expected joint angles of shape (N, {dof}), got {q.shape}")
    if p.shape != (q.shape[0], 3):
        raise ValueError(f"{label}.xyz: expected {q.shape[0]} positions of 3 coordinates, got shape {p.shape}")
    for name, arr in (("q", q), ("xyz", p)):
        if not np.all(np.isfinite(arr)):
            row = int(np.argwhere(~np.isfinite(arr))[0, 0])
            raise ValueError(f"{label}.{name}: non-finite value in pose {row}")
    return q, p


def minimum_poses(free_count: int) -> int:
    return int(np.ceil(MIN_EQUATION_MARGIN * free_count / 3.0))


def fit_geometry(gm: GeometricModel, q, p_measured, free_names, *, initial: np.ndarray | None = None,
                 loss: str = "linear", f_scale: float = 5e-5, max_nfev: int = 100) -> GeometricFit:
    """Identify the free parameters so that the model reproduces the measured positions."""
    q, p_measured = check_positions(q, p_measured, gm.dof)
    if loss not in LOSSES:
        raise ValueError(f"loss: unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    idx = gm.indices(free_names)
    if idx.size == 0:
        raise ValueError("parameters: nothing to identify (the free parameter list is empty)")
    need = minimum_poses(idx.size)
    if q.shape[0] < need:
        raise ValueError(f"poses: {q.shape[0]} poses give {3 * q.shape[0]} equations for {idx.size} parameters; "
                         f"at least {need} poses are needed (seed 004 asks for 3 equations per pose and "
                         "robodyn for 50 % more equations than unknowns)")
    x0_full = gm.nominal.copy() if initial is None else np.asarray(initial, dtype=float).copy()

    def full(x):
        v = x0_full.copy()
        v[idx] = x
        return v

    def residual(x):
        return (target_positions(gm, full(x), q) - p_measured).reshape(-1)

    def jacobian(x):
        return parameter_jacobian(gm, full(x), q)[:, :, idx].reshape(-1, idx.size)

    _require_excitation(gm, jacobian(x0_full[idx]), idx)
    method = "lm" if loss == "linear" else "trf"
    kwargs = {} if loss == "linear" else {"loss": loss, "f_scale": f_scale}
    sol = least_squares(residual, x0_full[idx], jac=jacobian, method=method, x_scale="jac",
                        max_nfev=max_nfev, xtol=1e-12, ftol=1e-12, gtol=1e-12, **kwargs)
    params = full(sol.x)
    res = -residual(sol.x).reshape(-1, 3)  # measured - model
    dof = max(res.size - idx.size, 1)
    sigma2 = float(np.sum(res ** 2)) / dof
    J = jacobian(sol.x)
    std = np.full(gm.size, np.nan)
    std[idx] = np.sqrt(np.diag(sigma2 * np.linalg.pinv(J.T @ J)))
    free = np.zeros(gm.size, dtype=bool)
    free[idx] = True
    return GeometricFit(params, std, free, res, float(np.sqrt(sigma2)), int(sol.nfev), bool(sol.success),
                        str(sol.message))


def _require_excitation(gm: GeometricModel, J: np.ndarray, idx: np.ndarray) -> None:
    """Refuse pose sets that cannot determine the free parameters (identical or singular poses)."""
    Js, _ = unit_columns(J)
    s = np.linalg.svd(Js, compute_uv=False)
    rank = int(np.sum(s > RANK_TOL * s[0])) if s.size else 0
    if rank < idx.size:
        _, lost = sequential_redundancies(J, [gm.names[i] for i in idx])
        raise ValueError(
            f"poses: the identification Jacobian has rank {rank} for {idx.size} parameters, so "
            f"{', '.join(r.name for r in lost)} cannot be told apart from the others with these poses "
            "(too few distinct poses, or poses at a singularity); plan poses spread over the test cube")
