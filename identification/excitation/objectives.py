"""Excitation criteria of the base regressor W_b stacked over a time grid.

- ``cond``         raw 2-norm condition number of W_b in SI units (Ni et al. 2024 eq. 8, Chen et
                   al. 2021 section 3, Zhong et al. 2023 eq. 8). Depends on the parameters' units: it is the number that
                   bounds the least-squares error amplification for THESE columns.
- ``cond_scaled``  condition number after scaling every column to unit norm. Unit-free: it
                   measures only how independent the columns are, not how big.
- ``logdet``       D-optimality: log det(W_b^T W_b / N), larger is better (minimised as its
                   negative, per parameter). Column scaling only adds a constant to it.

All criteria come from the eigenvalues of the Gram matrix G = W_b^T W_b (cond = sqrt of its
eigenvalue ratio), which for a few hundred samples is much cheaper than an SVD of W_b and is
accurate while cond < ~1e7, far beyond any design worth keeping. Final reports use the SVD.
A rank-deficient W_b gets ``RANK_DEFICIENT`` instead of infinity so optimizers can still rank it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.model import RobotModel

from ..base_params import BaseParameters, base_parameters
from ..regressor import ColumnSpec, regressor

OBJECTIVES = ("cond", "cond_scaled", "logdet")
RANK_DEFICIENT = 1e12


def gram_eigenvalues(Wb: np.ndarray, scaled: bool) -> np.ndarray:
    """Ascending eigenvalues (pop, b) of W^T W for stacked base regressors Wb (pop, rows, b)."""
    G = np.matmul(Wb.transpose(0, 2, 1), Wb)  # batched BLAS; einsum here is 10x slower
    if scaled:
        d = 1.0 / np.sqrt(np.maximum(np.einsum("pii->pi", G), 1e-300))
        G = G * d[:, :, None] * d[:, None, :]
    return np.linalg.eigvalsh(G)


def criterion_from_eigenvalues(ev: np.ndarray, objective: str, rows: int) -> np.ndarray:
    """Value to MINIMISE per candidate: cond, or -logdet/b."""
    top = ev[:, -1]
    low = ev[:, 0]
    degenerate = low <= top * 1e-24  # cond > 1e12: numerically rank deficient
    if objective in ("cond", "cond_scaled"):
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.sqrt(top / low)
        return np.where(degenerate | ~np.isfinite(c), RANK_DEFICIENT, c)
    b = ev.shape[1]
    logdet = np.sum(np.log(np.maximum(ev / rows, 1e-300)), axis=1) / b
    return np.where(degenerate, RANK_DEFICIENT, -logdet)


@dataclass(frozen=True)
class RegressorGrid:
    """What the criteria need: model, columns, base parameters."""

    model: RobotModel
    spec: ColumnSpec
    base: BaseParameters

    @classmethod
    def build(cls, model: RobotModel, spec: ColumnSpec) -> "RegressorGrid":
        return cls(model, spec, base_parameters(model, spec))

    def stacked_base_regressor(self, q, qd, qdd) -> np.ndarray:
        """(pop, N n, b) base regressors for states (pop, N, n), in ONE regressor call."""
        pop, N, n = q.shape
        W = regressor(self.model, q.reshape(-1, n), qd.reshape(-1, n), qdd.reshape(-1, n), self.spec)
        return self.base.base_regressor(W).reshape(pop, N * n, self.base.count)

    def criterion(self, q, qd, qdd, objective: str, selection=None) -> np.ndarray:
        """Criterion per candidate; ``selection`` = (rows, cols) restricts W_b to the torques of
        those joints and those base parameters (a sub-experiment, see subsystems.py)."""
        if objective not in OBJECTIVES:
            raise ValueError(f"objective: unknown {objective!r}; expected one of {list(OBJECTIVES)}")
        Wb = select_block(self.stacked_base_regressor(q, qd, qdd), q.shape[2], selection)
        ev = gram_eigenvalues(Wb, objective == "cond_scaled")
        return criterion_from_eigenvalues(ev, objective, Wb.shape[1])


def select_block(Wb: np.ndarray, dof: int, selection=None) -> np.ndarray:
    """Rows of the joints ``selection[0]`` and columns ``selection[1]`` of stacked base regressors
    Wb (pop, N dof, b) or (N dof, b), rows sample-major."""
    if selection is None:
        return Wb
    rows, cols = selection
    single = Wb.ndim == 2
    W = Wb[None] if single else Wb
    pop, R, b = W.shape
    W = W.reshape(pop, R // dof, dof, b)[:, :, rows][..., cols].reshape(pop, -1, len(cols))
    return W[0] if single else W


def excitation_metrics(model: RobotModel, spec: ColumnSpec, q, qd, qdd, base: BaseParameters | None = None,
                       selection=None) -> dict:
    """Report raw and column-scaled cond, log det and rank of W_b (or of its ``selection`` block)
    for one sampled trajectory (N, n)."""
    base = base or base_parameters(model, spec)
    W = select_block(base.base_regressor(regressor(model, q, qd, qdd, spec)), model.dof, selection)
    s = np.linalg.svd(W, compute_uv=False)
    norms = np.linalg.norm(W, axis=0)
    s_scaled = np.linalg.svd(W / np.maximum(norms, 1e-300), compute_uv=False)
    tol = s[0] * max(W.shape) * np.finfo(float).eps
    rank = int(np.sum(s > tol))
    return {
        "cond_raw": float(s[0] / s[-1]) if s[-1] > tol else float("inf"),
        "cond_scaled": float(s_scaled[0] / s_scaled[-1]) if s_scaled[-1] > 0 else float("inf"),
        "logdet": float(np.sum(np.log(np.maximum(s, 1e-300) ** 2 / q.shape[0]))),
        "rank": rank,
        "base_parameters": base.count if selection is None else len(selection[1]),
        "samples": int(q.shape[0]),
        "columns": {"rotor_inertia": spec.rotor_inertia, "friction": list(spec.friction)},
    }
