"""Geometric identification: the nonlinear measurement model (Li et al. 2023 eq. 9, extended to several
targets, orientations and planar contacts) fitted directly by scipy's least squares, with the
analytic Jacobian of eqs. 10-13.

Every observation is weighted by its stated noise (``measurements.py``). Levenberg-Marquardt
('lm') is used for the plain squared loss; a robust loss ('huber', 'soft_l1', 'cauchy', 'arctan')
switches to the trust-region reflective method, which scipy requires for robust losses. Its scale
is ROBUST_SCALE times the spread of the residuals the robust fit starts from (the least-squares
fit's, 1.4826 times their median absolute deviation, never below the stated noise): a fixed
multiple of the stated noise would call every point an outlier when the model misses the arm by
more than the tracker's noise (a heavy arm's sag), and the fit then follows a few points anywhere. Parameter standard
deviations come from the residual variance and the Jacobian at the solution:
cov = s^2 (J^T J)^-1 with s^2 = RSS_w / (M - P) on the weighted residual (s^2 near 1 says that
the stated noise was right).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from .identifiability import RANK_TOL, sequential_redundancies, unit_columns
from .measurements import MeasurementSet, Residual
from .parameters import GeometricModel

LOSSES = ("linear", "huber", "soft_l1", "cauchy", "arctan")
MIN_EQUATION_MARGIN = 1.5  # demand 50 % more equations than unknowns: a bare square system fits noise
ROBUST_SCALE = 3.0  # residual spreads (1.4826 MAD of the start) at which a robust loss starts to down-weight
MAD_TO_SIGMA = 1.4826  # median absolute deviation of a normal distribution -> its standard deviation


def robust_scale(start_residual: np.ndarray) -> float:
    """A robust loss's scale, in stated-noise units (the residuals are weighted by the stated noise):
    ROBUST_SCALE robust standard deviations of the residuals it starts from, at least ROBUST_SCALE."""
    r = np.asarray(start_residual, float)
    r = r[np.isfinite(r)]
    spread = MAD_TO_SIGMA * float(np.median(np.abs(r - np.median(r)))) if r.size else 1.0
    return ROBUST_SCALE * max(spread, 1.0)


def robust_cost(r: np.ndarray, loss: str, f_scale: float) -> float:
    """The objective scipy's least_squares minimises: 0.5 sum f_scale^2 rho((r / f_scale)^2)."""
    z = (np.asarray(r, float) / f_scale) ** 2
    rho = {"linear": lambda z: z, "huber": lambda z: np.where(z <= 1, z, 2 * np.sqrt(z) - 1),
           "soft_l1": lambda z: 2 * (np.sqrt(1 + z) - 1), "cauchy": np.log1p, "arctan": np.arctan}[loss](z)
    return 0.5 * f_scale ** 2 * float(np.sum(rho))


def loss_weights(r: np.ndarray, loss: str, f_scale: float | None) -> np.ndarray:
    """The weight a loss gives each residual at the solution relative to least squares, rho'(z) with
    z = (r / f_scale)^2 (scipy's convention): 1 keeps the residual as least squares would, 0 discards it."""
    r = np.asarray(r, float)
    if loss == "linear" or f_scale is None:
        return np.ones_like(r)
    z = (r / f_scale) ** 2
    return {"huber": lambda z: np.where(z <= 1, 1.0, 1.0 / np.sqrt(np.maximum(z, 1.0))),
            "soft_l1": lambda z: 1.0 / np.sqrt(1 + z), "cauchy": lambda z: 1.0 / (1 + z),
            "arctan": lambda z: 1.0 / (1 + z ** 2)}[loss](z)


@dataclass
class GeometricFit:
    params: np.ndarray  # full parameter vector
    std: np.ndarray  # full vector; nan for fixed parameters
    free: np.ndarray  # bool mask
    residual: np.ndarray  # weighted residual (model - measured) / sigma at the solution
    sigma: float  # RMS point residual per coordinate, m (nan without points)
    chi2: float  # RSS_w / (M - P): near 1 when the stated noise is right
    nfev: int
    success: bool
    message: str
    point_errors: np.ndarray  # distance model - measured of every point, m
    cost: float = float("nan")  # the objective (with the loss) at the solution
    start_cost: float = float("nan")  # the same objective where the fit started
    f_scale: float | None = None  # the robust loss's scale, stated-noise units (None: squared loss)

    @property
    def failure(self) -> str | None:
        """Why this fit is not a result (None when it is): not converged, or worse than its start."""
        if not self.success:
            return f"the geometric fit did not converge ({self.message})"
        if self.cost > self.start_cost * (1 + 1e-9):
            return (f"the geometric fit ended worse than it started (objective {self.cost:.4g} > "
                    f"{self.start_cost:.4g})")
        return None


def check_positions(q: np.ndarray, p: np.ndarray, dof: int, label: str = "measurements") -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(q, dtype=float)
    p = np.asarray(p, dtype=float)
    if q.ndim != 2 or q.shape[1] != dof:
        raise ValueError(f"{label}.q: expected joint angles of shape (N, {dof}), got {q.shape}")
    if p.shape[0] != q.shape[0] or p.shape[-1] != 3:
        raise ValueError(f"{label}.xyz: expected {q.shape[0]} positions of 3 coordinates, got shape {p.shape}")
    for name, arr in (("q", q), ("xyz", p)):
        if not np.all(np.isfinite(arr)):
            row = int(np.argwhere(~np.isfinite(arr))[0, 0])
            raise ValueError(f"{label}.{name}: non-finite value in pose {row}")
    return q, p


def minimum_equations(free_count: int) -> int:
    return int(np.ceil(MIN_EQUATION_MARGIN * free_count))


def minimum_poses(free_count: int) -> int:
    return int(np.ceil(MIN_EQUATION_MARGIN * free_count / 3.0))


def as_measurements(gm: GeometricModel, q, observations) -> MeasurementSet:
    """A MeasurementSet at joint angles q: ``observations`` is one, or positions (N, 3) / (N, K, 3)."""
    if isinstance(observations, MeasurementSet):
        return observations if q is None or q is observations.q else observations.with_q(q)
    q = np.atleast_2d(np.asarray(q, dtype=float))
    p = np.asarray(observations, dtype=float)
    check_positions(q, p.reshape(p.shape[0], -1, 3)[:, 0], gm.dof)
    return MeasurementSet(q, p)


def fit_geometry(gm: GeometricModel, q, observations, free_names, *, initial: np.ndarray | None = None,
                 loss: str = "linear", f_scale: float | None = None, max_nfev: int = 100) -> GeometricFit:
    """Identify the free parameters so that the model reproduces the measurements.

    ``q`` are the joint angles the model is evaluated at (the measured ones, or those corrected
    for the elastic deflection); ``observations`` is a MeasurementSet or positions. A robust loss
    starts from the least-squares fit and takes its scale from that fit's residuals
    (:func:`robust_scale`) unless ``f_scale`` (stated-noise units) is given.
    """
    meas = as_measurements(gm, q, observations)
    if loss not in LOSSES:
        raise ValueError(f"loss: unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    idx = gm.indices(free_names)
    if idx.size == 0:
        raise ValueError("parameters: nothing to identify (the free parameter list is empty)")
    res = Residual(gm, meas)
    need = minimum_equations(idx.size)
    if res.size < need:
        raise ValueError(f"poses: {len(meas)} poses give {res.size} equations for {idx.size} parameters; "
                         f"at least {need} equations ({minimum_poses(idx.size)} poses of one point) are needed "
                         "(Li et al. 2023 ask for 3 equations per pose and robodyn for 50 % more equations than unknowns)")
    x0_full = gm.nominal.copy() if initial is None else np.asarray(initial, dtype=float).copy()

    def full(x):
        v = x0_full.copy()
        v[idx] = x
        return v

    def residual(x):
        return res(full(x))

    def jacobian(x):
        return res.jacobian(full(x))[:, idx]

    require_excitation(jacobian(x0_full[idx]), [gm.names[i] for i in idx])
    x_start = x0_full[idx]
    kwargs = {}
    if loss != "linear":
        ls = least_squares(residual, x_start, jac=jacobian, method="lm", x_scale="jac", max_nfev=max_nfev,
                           xtol=1e-12, ftol=1e-12, gtol=1e-12)
        x_start = ls.x
        f_scale = robust_scale(ls.fun) if f_scale is None else float(f_scale)
        kwargs = {"loss": loss, "f_scale": f_scale}
    else:
        f_scale = None
    start_cost = robust_cost(residual(x_start), loss, f_scale or 1.0)
    method = "lm" if loss == "linear" else "trf"
    sol = least_squares(residual, x_start, jac=jacobian, method=method, x_scale="jac",
                        max_nfev=max_nfev, xtol=1e-12, ftol=1e-12, gtol=1e-12, **kwargs)
    params = full(sol.x)
    r = residual(sol.x)
    chi2 = float(r @ r) / max(r.size - idx.size, 1)
    J = jacobian(sol.x)
    std = np.full(gm.size, np.nan)
    std[idx] = np.sqrt(np.diag(chi2 * np.linalg.pinv(J.T @ J)))
    free = np.zeros(gm.size, dtype=bool)
    free[idx] = True
    raw = res.raw(params)
    npts = 3 * len(res.points)
    sigma = float(np.sqrt(np.mean(raw[:npts] ** 2) * r.size / max(r.size - idx.size, 1))) if npts else float("nan")
    return GeometricFit(params, std, free, r, sigma, chi2, int(sol.nfev), bool(sol.success), str(sol.message),
                        res.point_errors(params), robust_cost(r, loss, f_scale or 1.0), start_cost, f_scale)


def require_excitation(J: np.ndarray, names: list[str]) -> None:
    """Refuse pose sets that cannot determine the free parameters (identical or singular poses)."""
    Js, _ = unit_columns(J)
    s = np.linalg.svd(Js, compute_uv=False)
    rank = int(np.sum(s > RANK_TOL * s[0])) if s.size else 0
    if rank < len(names):
        _, lost = sequential_redundancies(J, names)
        raise ValueError(
            f"poses: the identification Jacobian has rank {rank} for {len(names)} parameters, so "
            f"{', '.join(r.name for r in lost)} cannot be told apart from the others with these poses "
            "(too few distinct poses, or poses at a singularity); plan poses spread over the test cube")
