"""Least-squares estimators of base parameters: OLS, WLS (Gautier), IRLS (Huber), ridge (Tikhonov
on scaled columns, the strength chosen by generalised cross-validation) and total least squares.

Data arrive in chunks (regressor rows of N samples x n joints, sample-major, and the measured
torques (N, n)); only per-joint sufficient statistics are kept,

    A_j = W_j^T W_j,   b_j = W_j^T tau_j,   c_j = tau_j^T tau_j,   r_j = rows,

so memory is O(n p^2) however long the recording. OLS and WLS need one pass: the per-joint
residual sums of squares follow from the statistics, RSS_j = c_j - 2 theta^T b_j + theta^T A_j theta.
IRLS needs a pass per reweighting, so it takes a callable that yields the chunks again.

Which estimators exist, how each is called and where it is offered is the estimator table,
names.ESTIMATORS; :func:`estimate` runs any entry of it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dsyrk

from .names import ESTIMATORS
from .names import LEAST_SQUARES as METHODS  # noqa: F401  (re-exported: the table's names)


def torque_metrics_from_sums(joint_names, count, samples: int, *, measured, predicted, measured_squared,
                             predicted_squared, product, residual_squared) -> dict:
    """Per-joint RMSE and their sum (Ni et al. 2024 Table 4), relative error and the correlation
    coefficient of measured and predicted torque (Zhong et al. 2023 eqs. 20-21) from per-joint sums over
    ``count`` samples: of the measured and the predicted torque, their squares, their product and the
    squared residual. The one implementation behind the streaming metrics and the normal equations'."""
    rmse = np.sqrt(residual_squared / count)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.sqrt(residual_squared / measured_squared)
        cov = product - measured * predicted / count
        corr = cov / np.sqrt((measured_squared - measured**2 / count) * (predicted_squared - predicted**2 / count))
        # from running sums, rounding can put a perfect fit a few ulps past 1 (1.0000000003 was printed)
        corr = np.clip(corr, -1.0, 1.0)
    return {
        "joints": list(joint_names),
        "rmse": rmse.tolist(),
        "rmse_sum": float(rmse.sum()),
        "relative_error": [None if not np.isfinite(x) else float(x) for x in rel],
        "relative_error_total": float(np.sqrt(residual_squared.sum() / max(measured_squared.sum(), 1e-300))),
        "correlation": [None if not np.isfinite(x) else float(x) for x in corr],
        "samples": int(samples),
    }


@dataclass
class NormalEquations:
    dof: int
    params: int
    A: np.ndarray = None  # (n, p, p)
    b: np.ndarray = None  # (n, p)
    c: np.ndarray = None  # (n,)
    rows: np.ndarray = None  # (n,)
    column_sums: np.ndarray = None  # (n, p): sum of W_j rows, for prediction means
    torque_sums: np.ndarray = None  # (n,): sum of tau_j, for measurement means

    def __post_init__(self):
        n, p = self.dof, self.params
        self.A = np.zeros((n, p, p)) if self.A is None else self.A
        self.b = np.zeros((n, p)) if self.b is None else self.b
        self.c = np.zeros(n) if self.c is None else self.c
        self.rows = np.zeros(n, dtype=np.int64) if self.rows is None else self.rows
        self.column_sums = np.zeros((n, p)) if self.column_sums is None else self.column_sums
        self.torque_sums = np.zeros(n) if self.torque_sums is None else self.torque_sums

    def add(self, W: np.ndarray, tau: np.ndarray, row_weights: np.ndarray | None = None) -> None:
        """Accumulate one chunk of N samples.

        ``W`` is joint-major (n, N, p) (preferred: each joint's rows contiguous) or the regressor's
        sample-major (N*n, p); ``tau`` is (N, n); optional ``row_weights`` (N, n).
        """
        N = tau.shape[0]
        if W.ndim == 2:
            if W.shape != (N * self.dof, self.params):
                raise ValueError(f"W: expected shape {(N * self.dof, self.params)}, got {W.shape}")
            W = joint_major(W, self.dof)
        if W.shape != (self.dof, N, self.params):
            raise ValueError(f"W: expected joint-major shape {(self.dof, N, self.params)}, got {W.shape}")
        for j in range(self.dof):
            Wj = W[j]
            tj = tau[:, j]
            if row_weights is not None:
                w = row_weights[:, j]
                Wj = Wj * np.sqrt(w)[:, None]
                tj_w = tj * w
                self.b[j] += Wj.T @ (tj * np.sqrt(w))
                self.c[j] += float(np.dot(tj_w, tj))
            else:
                self.b[j] += Wj.T @ tj
                self.c[j] += float(np.dot(tj, tj))
            # BLAS rank-k update on the transposed (Fortran-ordered) view: no copy, half the flops
            upper = dsyrk(1.0, np.ascontiguousarray(Wj).T, trans=0)
            self.A[j] += upper + np.triu(upper, 1).T
            self.rows[j] += N
            if row_weights is None:
                self.column_sums[j] += Wj.sum(axis=0)
                self.torque_sums[j] += tj.sum()

    def add_gram(self, columns, G: np.ndarray, samples: int) -> None:
        """Accumulate per-joint augmented Gram blocks (regressor.gram_blocks): for joint j whose
        row reaches the r columns ``columns[j]``, the upper triangle of G[j, :r+2, :r+2] is that
        of [W_j tau_j 1]^T [W_j tau_j 1] over ``samples`` samples. The other entries of A_j are
        structurally zero: joint j's row never touches those columns."""
        for j in range(self.dof):
            cols = np.asarray(columns[j], dtype=np.int64)
            r = cols.size
            U = G[j, : r + 2, : r + 2]
            S = np.triu(U) + np.triu(U, 1).T
            if S[r + 1, r + 1] != samples:
                raise ValueError(f"G: joint {j} holds {S[r + 1, r + 1]:g} samples, expected {samples}")
            self.A[j][np.ix_(cols, cols)] += S[:r, :r]
            self.b[j][cols] += S[:r, r]
            self.column_sums[j][cols] += S[:r, r + 1]
            self.c[j] += S[r, r]
            self.torque_sums[j] += S[r, r + 1]
            self.rows[j] += samples

    def subset(self, columns) -> "NormalEquations":
        """The normal equations of the regressor's columns ``columns`` alone: the same sums over
        the same rows, restricted (a model whose columns are a subset of these ones' shares them)."""
        cols = np.asarray(columns, dtype=np.int64)
        return NormalEquations(self.dof, int(cols.size), self.A[:, cols[:, None], cols[None, :]].copy(),
                               self.b[:, cols].copy(), self.c.copy(), self.rows.copy(),
                               self.column_sums[:, cols].copy(), self.torque_sums.copy())

    def merge(self, other: "NormalEquations") -> "NormalEquations":
        return NormalEquations(self.dof, self.params, self.A + other.A, self.b + other.b, self.c + other.c,
                               self.rows + other.rows, self.column_sums + other.column_sums,
                               self.torque_sums + other.torque_sums)

    def metrics(self, theta: np.ndarray, joint_names) -> dict:
        """Torque metrics of theta on the accumulated data without another pass over it:
        per-joint RMSE and their sum (Ni et al. 2024 Table 4), relative error, and the correlation
        coefficient of measured and predicted torque (Zhong et al. 2023 eqs. 20-21)."""
        return torque_metrics_from_sums(
            joint_names, np.maximum(self.rows, 1).astype(float), int(self.rows.max()),
            measured=self.torque_sums, predicted=self.column_sums @ theta, measured_squared=self.c,
            predicted_squared=np.einsum("p,jpq,q->j", theta, self.A, theta), product=self.b @ theta,
            residual_squared=self.joint_rss(theta))

    def joint_rss(self, theta: np.ndarray) -> np.ndarray:
        """Per-joint residual sum of squares of theta, from the statistics alone."""
        quad = np.einsum("p,jpq,q->j", theta, self.A, theta)
        return np.maximum(self.c - 2.0 * self.b @ theta + quad, 0.0)

    def total(self, weights: np.ndarray | None = None):
        w = np.ones(self.dof) if weights is None else weights
        return np.einsum("j,jpq->pq", w, self.A), np.einsum("j,jp->p", w, self.b), float(w @ self.c)


def joint_major(W: np.ndarray, dof: int) -> np.ndarray:
    """Sample-major regressor rows (N*n, p) as contiguous per-joint blocks (n, N, p)."""
    N = W.shape[0] // dof
    return np.ascontiguousarray(W.reshape(N, dof, W.shape[1]).transpose(1, 0, 2))


@dataclass
class Estimate:
    method: str
    theta: np.ndarray
    covariance: np.ndarray
    sigma: np.ndarray  # per-joint residual standard deviation (N.m)
    rank: int
    cond: float  # condition number of the (weighted) stacked base regressor
    rows: int
    relative_residual: float  # ||tau - W theta|| / ||tau||
    iterations: int = 1
    weights: np.ndarray | None = None  # per-joint weights (WLS)
    notes: list[str] = field(default_factory=list)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))

    @property
    def relative_std_percent(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.abs(self.theta) > 0, 100.0 * self.std / np.abs(self.theta), np.inf)


UNEXCITED_SHARE = 0.1  # a parameter whose unit direction lies this much in the unexcited subspace is named


def _condition(A: np.ndarray) -> float:
    """Condition number of the (weighted) stacked regressor whose normal matrix is A."""
    eig = np.linalg.eigvalsh(A)
    return float(np.sqrt(eig.max() / eig.min())) if eig.min() > 0 else float("inf")


def _solve(A: np.ndarray, b: np.ndarray, names=None,
           condition: bool = True) -> tuple[np.ndarray, np.ndarray, int, float, str | None]:
    """Solve A x = b for symmetric PSD A with a rank check; returns x, A^-1, rank, cond(W) and a
    note (None when the rank is full).

    A rank-deficient A (the data do not excite some combinations of the parameters: a real arm's
    short or slow excitation often leaves one to three) is solved in the excited subspace only,
    the minimum-norm solution in unit-scaled parameters, as a least-squares script's ``lstsq``
    does; its inverse there stands for A^-1. Predictions on motions like the data's are then as
    good as the data allow; the parameters involved in the unexcited directions are not
    identified, and the note names them. ``condition=False`` skips cond(W) (NaN; an iteration's
    intermediate solve, whose conditioning nobody reads)."""
    # scale columns so the rank test is unit-free (kg vs kg.m^2 vs N.m columns)
    d = np.sqrt(np.maximum(np.diag(A), 1e-300))
    As = A / np.outer(d, d)
    p = A.shape[0]
    try:
        # full rank is certain, without the eigendecomposition, when the Cholesky factor's
        # estimated reciprocal condition number (LAPACK dpocon, 1-norm) is far above the rank
        # test's 1e-12: kappa_2 <= p kappa_1, and the estimate is rarely off by more than 10
        factor = scipy.linalg.cho_factor(As)
        rcond, info = scipy.linalg.lapack.dpocon(factor[0], np.abs(As).sum(axis=0).max())
        if info == 0 and rcond > 1e3 * p * 1e-12:
            xs = scipy.linalg.cho_solve(factor, b / d)
            inv_s = scipy.linalg.cho_solve(factor, np.eye(p))
            return xs / d, inv_s / np.outer(d, d), p, _condition(A) if condition else float("nan"), None
    except np.linalg.LinAlgError:
        pass
    eig_s, vec_s = np.linalg.eigh(As)
    keep = eig_s > eig_s.max() * 1e-12
    rank = int(np.sum(keep))
    cond = _condition(A) if condition else float("nan")
    if rank < A.shape[0]:
        V = vec_s[:, keep]
        inv_s = (V / eig_s[keep]) @ V.T
        xs = inv_s @ (b / d)
        share = np.sum(vec_s[:, ~keep] ** 2, axis=1)
        involved = np.argsort(share)[::-1]
        involved = [i for i in involved if share[i] > UNEXCITED_SHARE][:8] or list(involved[:3])
        which = ", ".join(names[i] if names is not None else str(i) for i in involved)
        note = (f"excitation: the data do not excite {A.shape[0] - rank} of the {A.shape[0]} parameter directions "
                f"(rank {rank}); those involving {which} are not identified (left at the minimum-norm solution). "
                "Predictions hold for motions like the identification data; a richer excitation (robodyn excitation "
                "design) identifies them")
        return xs / d, inv_s / np.outer(d, d), rank, cond, note
    c, low = scipy.linalg.cho_factor(As)
    xs = scipy.linalg.cho_solve((c, low), b / d)
    inv_s = scipy.linalg.cho_solve((c, low), np.eye(A.shape[0]))
    return xs / d, inv_s / np.outer(d, d), rank, cond, None


def ols(ne: NormalEquations, names=None, condition: bool = True) -> Estimate:
    """Ordinary least squares. ``condition=False`` leaves cond(W) out (NaN): model selection's
    candidates, whose conditioning nobody reads, skip its eigendecomposition."""
    A, b, cc = ne.total()
    theta, inv, rank, cond, note = _solve(A, b, names, condition)
    rows = int(ne.rows.sum())
    rss = ne.joint_rss(theta)
    dof_res = max(rows - ne.params, 1)
    sigma2 = float(rss.sum()) / dof_res
    sigma_j = np.sqrt(rss / np.maximum(ne.rows - ne.params / ne.dof, 1))
    return Estimate("ols", theta, sigma2 * inv, sigma_j, rank, cond, rows,
                    float(np.sqrt(rss.sum() / cc)) if cc > 0 else 0.0, notes=[note] if note else [])


def wls(ne: NormalEquations, names=None, condition: bool = True) -> Estimate:
    """Gautier's weighted least squares: each joint's rows weighted by 1/sigma_j^2, with sigma_j
    from that joint's OLS residuals (sigma_j^2 = RSS_j / (r_j - p/n))."""
    first = ols(ne, names, condition=False)  # only its residuals are read
    rss = ne.joint_rss(first.theta)
    sigma2 = rss / np.maximum(ne.rows - ne.params / ne.dof, 1)
    if np.any(sigma2 <= 0):
        sigma2 = np.maximum(sigma2, 1e-30)
    w = 1.0 / sigma2
    A, b, _ = ne.total(w)
    theta, inv, rank, cond, note = _solve(A, b, names, condition)
    rss2 = ne.joint_rss(theta)
    cc = float(ne.c.sum())
    est = Estimate("wls", theta, inv, np.sqrt(rss2 / np.maximum(ne.rows - ne.params / ne.dof, 1)), rank, cond,
                   int(ne.rows.sum()), float(np.sqrt(rss2.sum() / cc)) if cc > 0 else 0.0, weights=w,
                   notes=[note] if note else [])
    return est


RIDGE_GRID = np.logspace(-10, -1, 28)  # ridge strengths tried, relative to the scaled normal matrix


def ridge(ne: NormalEquations, names=None, condition: bool = True) -> Estimate:
    """Ridge regression (Tikhonov) on unit-scaled columns: theta = D^-1 (As + lam I)^-1 bs, where
    As = D^-1 A D^-1 with D the column norms. The strength lam is chosen by generalised
    cross-validation, GCV(lam) = RSS / (rows - tr H)^2 with tr H = tr(As (As + lam I)^-1), all from
    the normal-equation statistics. lam -> 0 is ordinary least squares; a larger lam trades bias
    for variance in poorly excited directions (the covariance reported is the sandwich form)."""
    A, b, cc = ne.total()
    rows = int(ne.rows.sum())
    d = np.sqrt(np.maximum(np.diag(A), 1e-300))
    As = A / np.outer(d, d)
    bs = b / d
    evals, evecs = np.linalg.eigh(As)
    evals = np.maximum(evals, 0.0)
    proj = evecs.T @ bs
    best = None
    for lam in RIDGE_GRID * max(evals.max(), 1e-300):
        coef = proj / (evals + lam)
        xs = evecs @ coef
        theta = xs / d
        rss = max(cc - 2.0 * theta @ b + theta @ A @ theta, 0.0)
        trace = float(np.sum(evals / (evals + lam)))
        gcv = rss / max(rows - trace, 1.0) ** 2
        if best is None or gcv < best[0]:
            best = (gcv, lam, theta, trace)
    _, lam, theta, trace = best
    rank = int(np.sum(evals > evals.max() * 1e-12))
    eig = np.linalg.eigvalsh(A) if condition else None
    cond = float(np.sqrt(eig.max() / max(eig.min(), 1e-300))) if condition else float("nan")
    rss_j = ne.joint_rss(theta)
    sigma2 = float(rss_j.sum()) / max(rows - trace, 1.0)
    inv_s = (evecs / (evals + lam)) @ evecs.T
    cov_s = sigma2 * inv_s @ As @ inv_s  # Var of the ridge estimate (sandwich)
    est = Estimate("ridge", theta, cov_s / np.outer(d, d), np.sqrt(rss_j / np.maximum(ne.rows - trace / ne.dof, 1)),
                   rank, cond, rows, float(np.sqrt(rss_j.sum() / cc)) if cc > 0 else 0.0)
    est.notes.append(f"ridge strength {lam / max(evals.max(), 1e-300):.3g} of the largest scaled eigenvalue "
                     f"(generalised cross-validation), effective parameters {trace:.1f} of {len(theta)}")
    return est


def tls(ne: NormalEquations, names=None, condition: bool = True) -> Estimate:
    """Total least squares: errors in the regressor as well as the torque. Columns and torque are
    scaled to unit norm (TLS is not unit-free), and theta comes from the right singular vector of
    the smallest singular value of [W tau], i.e. the eigenvector of the smallest eigenvalue of its
    normal matrix [[A, b], [b^T, c]]; no second pass over the data."""
    A, b, cc = ne.total()
    rows = int(ne.rows.sum())
    p = A.shape[0]
    d = np.sqrt(np.maximum(np.diag(A), 1e-300))
    s_tau = np.sqrt(max(cc, 1e-300))
    M = np.empty((p + 1, p + 1))
    M[:p, :p] = A / np.outer(d, d)
    M[:p, p] = M[p, :p] = b / (d * s_tau)
    M[p, p] = cc / s_tau**2
    evals, evecs = np.linalg.eigh(M)
    v = evecs[:, 0]
    if abs(v[p]) < 1e-12:
        raise ValueError("tls: the torque is (numerically) independent of the regressor's smallest direction; "
                         "total least squares has no solution on these data")
    theta = -(v[:p] / v[p]) * s_tau / d
    ref = ols(ne, names, condition)  # rank, conditioning and the covariance's shape are those of the data
    rss_j = ne.joint_rss(theta)
    est = Estimate("tls", theta, ref.covariance, np.sqrt(rss_j / np.maximum(ne.rows - p / ne.dof, 1)), ref.rank,
                   ref.cond, rows, float(np.sqrt(rss_j.sum() / cc)) if cc > 0 else 0.0)
    est.notes.append("total least squares on unit-scaled columns; the covariance shown is the OLS one")
    return est


def _predict(W: np.ndarray, theta: np.ndarray, dof: int) -> np.ndarray:
    if W.ndim == 3:
        return (W @ theta).T
    return (W @ theta).reshape(-1, dof)


def huber_weights(r: np.ndarray, scale: np.ndarray, k: float = 1.345) -> np.ndarray:
    """Huber's weights min(1, k / |r/scale|) (95 % efficiency at the normal with k = 1.345)."""
    u = np.abs(r) / np.maximum(scale, 1e-300)
    return np.where(u <= k, 1.0, k / np.maximum(u, 1e-300))


ANDERSON_DEPTH = 3  # past IRLS steps the extrapolation uses


def irls(chunks: Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]], dof: int, params: int, names=None,
         k: float = 1.345, max_iterations: int = 20, tol: float = 1e-8,
         statistics: NormalEquations | None = None) -> Estimate:
    """Iteratively reweighted least squares with Huber weights, per-joint robust scale (MAD);
    it stops when an iteration changes the fitted torque by less than ``tol``, relative.

    ``chunks()`` must yield (W, tau) pairs afresh on every call (a pass over the data).
    """
    ne = statistics if statistics is not None else accumulate(chunks, dof, params)
    est = ols(ne, names)
    theta = est.theta
    notes = []
    A_all, b_all, _ = ne.total()
    # a joint's rows reach only the columns of the links it carries (its Gram's nonzero diagonal)
    reached = [np.flatnonzero(np.diagonal(ne.A[j]) > 0.0) for j in range(dof)]

    # each joint's rows on its reached columns only, contiguous, kept for every iteration: the
    # residual and the down-dating below read a fraction of the zero-padded rows. They stay in their
    # chunks: the sums below are then taken in the same order however the iteration is written.
    # A source that can hand out those rows without forming its full ones (``joint_rows``: model
    # selection's column subsets of one shared regressor) does so.
    joint_rows = getattr(chunks, "joint_rows", None)
    if joint_rows is not None:
        compact = list(joint_rows(reached))
    else:
        compact = []
        for W, tau in chunks():
            N = tau.shape[0]
            if W.ndim == 2:
                W = W.reshape(N, dof, W.shape[1]).transpose(1, 0, 2)
            compact.append(([W[j].take(cols, axis=1) for j, cols in enumerate(reached)], tau))
    total = sum(tau.shape[0] for _, tau in compact)

    def reweighted(theta: np.ndarray):
        """One IRLS step: Huber weights at ``theta``'s residuals, then the weighted solve."""
        # robust scale per joint: MAD of residuals (needs the residuals, one pass); each joint's
        # residuals in one contiguous row, which the medians run along
        resid = np.empty((dof, total))
        offset = 0
        for rows, tau in compact:
            N = tau.shape[0]
            for j, (Wj, cols) in enumerate(zip(rows, reached)):
                np.subtract(tau[:, j], Wj @ theta[cols], out=resid[j, offset: offset + N])
            offset += N
        scale = 1.4826 * np.median(np.abs(resid - np.median(resid, axis=1)[:, None]), axis=1)
        # Huber weights are 1 except on the rows beyond k robust scales (about a fifth of normal
        # data), so the weighted normal equations are the unweighted ones less those rows' share
        # (1 - w): the same sums for a fraction of a full weighted pass per iteration.
        shortfall = 1.0 - huber_weights(resid, scale[:, None], k)
        down = np.zeros_like(A_all)  # the upper triangle of the down-weighted rows' share
        b = b_all.copy()
        offset = 0
        for rows_j, tau in compact:
            N = tau.shape[0]
            for j, cols in enumerate(reached):
                rows = offset + np.flatnonzero(shortfall[j, offset: offset + N] > 0.0)
                if rows.size:
                    so = shortfall[j, rows]
                    Wr = rows_j[j][rows - offset]
                    # Wo^T Wo with Wo = sqrt(so) Wr, upper triangle; ``cols`` ascend, so it lands in
                    # the upper triangle
                    down[np.ix_(cols, cols)] += dsyrk(1.0, (Wr * np.sqrt(so)[:, None]).T, trans=0)
                    b[cols] -= Wr.T @ (so * tau[rows - offset, j])
            offset += N
        A = A_all - (down + np.triu(down, 1).T)
        A = 0.5 * (A + A.T)
        return (*_solve(A, b, names, condition=False), A)

    # The reweighting converges linearly (each step about half the last on real arm logs), so the
    # iterates are extrapolated to its fixed point by Anderson acceleration (Walker & Ni 2011) over
    # the last ANDERSON_DEPTH steps, in unit-scaled parameters; a step whose change grows falls back
    # to the plain one. The fixed point, and so the estimate, is the plain iteration's.
    unit = np.sqrt(np.maximum(np.diag(A_all), 1e-300))
    xs: list = []
    gs: list = []
    it = 0
    for it in range(1, max_iterations + 1):
        new_theta, inv, rank, _, note, weighted = reweighted(theta)
        change = new_theta - theta
        # converged when an iteration changes the fitted torque by less than tol, relative
        # (|W d| / |W theta| from the normal equations): directions the data do not excite move
        # the parameters but not the fit, and a parameter-norm test would wait on them
        step = np.sqrt(max(change @ A_all @ change, 0.0) / max(theta @ A_all @ theta, 1e-300))
        if step < tol:
            theta = new_theta
            break
        g = change * unit
        if gs and np.linalg.norm(g) > np.linalg.norm(gs[-1]):
            xs, gs = [], []
        xs.append(theta * unit)
        gs.append(g)
        xs, gs = xs[-ANDERSON_DEPTH - 1:], gs[-ANDERSON_DEPTH - 1:]
        if len(gs) > 1:
            dG = np.diff(np.array(gs), axis=0).T
            dX = np.diff(np.array(xs), axis=0).T
            gamma = np.linalg.lstsq(dG, g, rcond=1e-12)[0]
            theta = (xs[-1] + g - (dX + dG) @ gamma) / unit
        else:
            theta = new_theta
    else:
        theta = new_theta
        notes.append(f"IRLS stopped after {max_iterations} iterations without meeting tol {tol}")
    if note:
        notes.append(note)
    cond = _condition(weighted)  # of the last weighted solve, as the estimate reports it
    rss = ne.joint_rss(theta)
    rows = int(ne.rows.sum())
    sigma2 = float(rss.sum()) / max(rows - params, 1)
    cc = float(ne.c.sum())
    return Estimate("irls", theta, sigma2 * inv, np.sqrt(rss / np.maximum(ne.rows - params / dof, 1)), rank, cond,
                    rows, float(np.sqrt(rss.sum() / cc)) if cc > 0 else 0.0, iterations=it, notes=notes)


def accumulate(chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]], dof: int,
               params: int) -> NormalEquations:
    """Normal equations of every chunk. A source that can reduce itself in one fused pass (a
    ``normal_equations()`` method, see streaming.RegressorChunks) does so instead of yielding rows."""
    fused = getattr(chunks, "normal_equations", None)
    if fused is not None:
        ne = fused()
        if (ne.dof, ne.params) != (dof, params):
            raise ValueError(f"chunks: statistics for {ne.dof} joints x {ne.params} parameters, expected "
                             f"{dof} x {params}")
    else:
        ne = NormalEquations(dof, params)
        for W, tau in chunks():
            ne.add(W, tau)
    return enough_samples(ne)


def enough_samples(ne: NormalEquations) -> NormalEquations:
    """``ne``, refused in one line when a joint has no more samples than there are parameters."""
    if int(ne.rows.min()) <= ne.params:
        raise ValueError(f"recording: {int(ne.rows.min())} samples per joint cannot determine {ne.params} parameters; "
                         "record a longer excitation")
    return ne


def estimate(method: str, chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]], dof: int, params: int,
             names=None, statistics: NormalEquations | None = None,
             tolerance: float | None = None, condition: bool = True) -> tuple[Estimate, NormalEquations]:
    """Run one estimator of the table (names.ESTIMATORS); returns the estimate and the (unweighted)
    normal equations of the data. ``tolerance``, when given, is the convergence tolerance of an
    iterative estimator that takes one (``tol``); the others ignore it. ``condition=False``: an
    estimator that takes it leaves cond(W) out (NaN), for fits whose estimate alone is read."""
    spec = ESTIMATORS.get(method)
    if spec is None:
        raise ValueError(f"method: unknown estimator {method!r}; expected one of {list(ESTIMATORS)}")
    ne = statistics if statistics is not None else accumulate(chunks, dof, params)
    function = spec.load()
    if spec.passes:
        options = {}
        if tolerance is not None and "tol" in inspect.signature(function).parameters:
            options["tol"] = tolerance
        return function(chunks, dof, params, names, statistics=ne, **options), ne
    if not condition and "condition" in inspect.signature(function).parameters:
        return function(ne, names, condition=False), ne
    return function(ne, names), ne


def covariance_free_estimate(method: str, theta: np.ndarray, ne: NormalEquations, names, note: str) -> Estimate:
    """An Estimate for a method without a covariance (a metaheuristic, the physically consistent fit,
    a network): the rank and conditioning are the data's (OLS), the standard deviations unknown
    (NaN, written as null), the residuals the method's own."""
    reference = ols(ne, names)
    rss = ne.joint_rss(theta)
    cc = float(ne.c.sum())
    p = theta.shape[0]
    return Estimate(method, np.asarray(theta, float), np.full((p, p), np.nan),
                    np.sqrt(rss / np.maximum(ne.rows - ne.params / ne.dof, 1)), reference.rank, reference.cond,
                    int(ne.rows.sum()), float(np.sqrt(rss.sum() / cc)) if cc > 0 else 0.0, notes=[note])
