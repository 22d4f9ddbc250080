"""Gravity deflection without known link masses: the lumped (compliance x mass-moment) form.

A joint spring deflects by dq_i = -c_i tau_i(q), and the gravity torque is linear in the links'
mass moments (the static rows of the dynamic regressor: the MX, MY, MZ, M columns),
tau_i(q) = Y_i(q) phi. The masses therefore enter the deflection only through the products
c_i (P_i phi), P_i phi being the base (identifiable) combinations of the mass moments that act on
joint i. Those products, theta, are what the data can determine, so they are identified directly:

    dq_i(q) = -sum_t Y_i,t(q) theta_t          (t over the base columns of joint i's row)

The base columns of each joint's row come from the numerical QR of identification.base_params on
random configurations (structural: no data, no masses); a term whose position effect adds no new
direction to the geometry's columns at the identification poses (a constant torque absorbed by a
joint offset) is then dropped by an unpivoted QR, geometry first. With known masses and
compliances the lumped form reproduces the spring model exactly: theta = c_i P_i phi
(:func:`lumped_from_masses`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.identification.base_params import base_parameters_from_regressor
from robodyn.identification.regressor import ColumnSpec, regressor, sample_states
from robodyn.robot.model import INERTIAL_NAMES, RobotModel

from scipy.optimize import least_squares

from .geometric import robust_cost, robust_scale
from .measurements import Residual
from .parameters import robot_for
from .stiffness import DEFLECTION_MAX_ITER, DEFLECTION_TOL, payload_holding_torques

MASS_MOMENT_COLUMNS = tuple(INERTIAL_NAMES.index(k) for k in ("MX", "MY", "MZ", "M"))
STRUCTURAL_SAMPLES = 64
STRUCTURAL_TOL = 1e-8  # relative: base_params' tolerance for a zero column / R diagonal
DATA_TOL = 1e-2  # relative R diagonal (unit columns): a term with less of its own direction is noise x 100
SIGNIFICANCE = 2.0  # |theta| / sigma below which a term is not resolved from zero and left out


def _moment_indices(dof: int) -> np.ndarray:
    per = len(INERTIAL_NAMES)
    return np.array([per * k + c for k in range(dof) for c in MASS_MOMENT_COLUMNS])


def moment_names(dof: int) -> list[str]:
    return [f"{INERTIAL_NAMES[c]}{k + 1}" for k in range(dof) for c in MASS_MOMENT_COLUMNS]


def gravity_regressor(robot: RobotModel, q) -> np.ndarray:
    """Y (N, n, 4n): gravity torque of each joint per link mass moment (MX, MY, MZ, M of each link)."""
    q = np.atleast_2d(np.asarray(q, float))
    z = np.zeros_like(q)
    # one thread: a few dozen static poses per call, where waking the thread pool costs 10x the rows
    W = regressor(robot, q, z, z, ColumnSpec(), threads=1).reshape(q.shape[0], robot.dof, -1)
    return W[:, :, _moment_indices(robot.dof)]


@dataclass
class LumpedGravity:
    """The lumped gravity deflection: term t acts on ``joint[t]`` through the base mass-moment column
    ``column[t]`` of that joint's row; with masses, its value is c_joint (fold[t] @ phi)."""

    joint: np.ndarray  # (T,) 0-based joint of each term
    column: np.ndarray  # (T,) index into the 4n mass-moment columns
    fold: np.ndarray  # (T, 4n): the base combination of the mass moments (a row of base_params' P)
    values: np.ndarray  # (T,) theta, rad per unit of the column (torque per mass moment x compliance)
    std: np.ndarray  # (T,)
    names: list[str]

    @property
    def count(self) -> int:
        return int(self.joint.size)

    def columns(self, robot: RobotModel, q) -> np.ndarray:
        """(N, T): the torque each term's theta multiplies (its base column of the joint's row)."""
        Y = gravity_regressor(robot, q)
        return Y[:, self.joint, self.column]

    def deflection(self, robot: RobotModel, q, extra=None) -> np.ndarray:
        """Link minus encoder angles, dq = -sum Y theta at the deflected angles (fixed point), (N, n).
        ``extra(q_link)`` adds another deflection (a payload's, c tau) inside the fixed point."""
        q = np.atleast_2d(np.asarray(q, float))
        dq = np.zeros_like(q)
        for _ in range(DEFLECTION_MAX_ITER):
            new = self.torque_terms(robot, q + dq)
            if extra is not None:
                new = new + extra(q + dq)
            change = float(np.max(np.abs(new - dq))) if new.size else 0.0
            dq = new
            if change < DEFLECTION_TOL:
                break
        return dq

    def torque_terms(self, robot: RobotModel, q) -> np.ndarray:
        q = np.atleast_2d(q)
        out = np.zeros_like(q)
        if self.count:
            np.add.at(out.T, self.joint, -(self.columns(robot, q) * self.values).T)
        return out

    def with_values(self, values, std=None) -> "LumpedGravity":
        v = np.asarray(values, float)
        return LumpedGravity(self.joint, self.column, self.fold, v,
                             np.full(v.size, np.nan) if std is None else np.asarray(std, float), list(self.names))

    def subset(self, keep) -> "LumpedGravity":
        k = np.asarray(keep, int)
        return LumpedGravity(self.joint[k], self.column[k], self.fold[k], self.values[k], self.std[k],
                             [self.names[i] for i in k])

    def to_dict(self) -> dict:
        return {"terms": [{"joint": int(j) + 1, "column": self.names[t], "column_index": int(self.column[t]),
                           "fold": self.fold[t].tolist(), "value": float(self.values[t]),
                           "std": None if not np.isfinite(self.std[t]) else float(self.std[t])}
                          for t, j in enumerate(self.joint)]}

    @classmethod
    def from_dict(cls, d: dict | None) -> "LumpedGravity | None":
        if not d:
            return None
        terms = d["terms"]
        return cls(np.array([t["joint"] - 1 for t in terms], int), np.array([t["column_index"] for t in terms], int),
                   np.array([t["fold"] for t in terms], float).reshape(len(terms), -1),
                   np.array([t["value"] for t in terms], float),
                   np.array([np.nan if t["std"] is None else t["std"] for t in terms], float),
                   [t["column"] for t in terms])


def lumped_terms(robot: RobotModel) -> LumpedGravity:
    """The structural lumped terms: per joint, the base columns of its gravity-torque row (numerical
    QR on random configurations, identification.base_params). Values are zero."""
    q, _, _ = sample_states(robot, STRUCTURAL_SAMPLES, seed=20240101)
    Y = gravity_regressor(robot, q)
    names = moment_names(robot.dof)
    joint, column, fold, labels = [], [], [], []
    for i in range(robot.dof):
        Yi = Y[:, i, :]
        if not np.any(np.abs(Yi) > STRUCTURAL_TOL * max(float(np.abs(Y).max()), 1e-300)):
            continue  # this joint never carries gravity (a vertical first axis)
        bp = base_parameters_from_regressor(Yi, names, tolerance=STRUCTURAL_TOL)
        P = bp.projection  # (b, 4n): theta_t = c_i * (P phi)_t
        for k, col in enumerate(bp.independent):
            joint.append(i)
            column.append(int(col))
            fold.append(P[k])
            grouped = np.count_nonzero(P[k]) > 1
            labels.append(f"c{i + 1}*{names[col]}{'R' if grouped else ''}")
    T = len(joint)
    return LumpedGravity(np.array(joint, int), np.array(column, int), np.array(fold, float).reshape(T, -1),
                         np.zeros(T), np.full(T, np.nan), labels)


def lumped_from_masses(robot: RobotModel, compliance, terms: LumpedGravity | None = None) -> LumpedGravity:
    """The lumped values a model with masses and joint compliances implies: theta_t = c_i (P_i phi)_t."""
    terms = terms or lumped_terms(robot)
    phi = robot.inertial[:, list(MASS_MOMENT_COLUMNS)].reshape(-1)
    c = np.asarray(compliance, float)
    return terms.with_values(c[terms.joint] * (terms.fold @ phi))


def data_terms(terms: LumpedGravity, geometry_columns: np.ndarray, term_columns: np.ndarray) -> np.ndarray:
    """Indices of the terms that add a direction to the geometry's columns at the identification poses
    (unpivoted QR on unit columns, geometry first, terms in order)."""
    A = np.hstack([geometry_columns, term_columns])
    norms = np.linalg.norm(A, axis=0)
    big = max(float(norms.max()), 1e-300)
    live = norms > DATA_TOL * big
    U = A[:, live] / norms[live]
    R = np.linalg.qr(U, mode="r")
    diag = np.zeros(U.shape[1])
    k = min(U.shape)
    diag[:k] = np.abs(np.diag(R))[:k]
    d = np.zeros(A.shape[1])
    d[np.flatnonzero(live)] = diag
    g = geometry_columns.shape[1]
    return np.flatnonzero(d[g:] > DATA_TOL)


# --------------------------------------------------------------------------- the fit


@dataclass
class LumpedFit:
    params: np.ndarray
    std: np.ndarray  # (gm.size,)
    lumped: LumpedGravity
    compliance: np.ndarray  # payload compliances (prior where not fitted)
    compliance_identified: np.ndarray
    compliance_std: np.ndarray
    sigma: float
    chi2: float
    success: bool
    message: str
    nfev: int
    cost0: float
    cost: float
    dropped_terms: list[str]
    f_scale: float | None = None  # the robust loss's scale, stated-noise units (None: squared loss)


def lumped_link_angles(robot: RobotModel, lumped: LumpedGravity, q, compliance, load) -> np.ndarray:
    """Encoder angles + the lumped gravity deflection (+ the payload's c tau when ``load``)."""
    q = np.atleast_2d(np.asarray(q, float))
    extra = None
    if load is not None and load.mass > 0:
        c = np.asarray(compliance, float)

        def extra(ql):
            return -c * payload_holding_torques(robot, ql, load)
    return q + lumped.deflection(robot, q, extra)


def fit_lumped_gravity(gm, sets, free, start_params, prior, *, loss: str = "linear", f_scale=None,
                       excitation_tol: float = 1e-3) -> LumpedFit:
    """Geometry, the lumped gravity terms and (with a loaded set) the payload compliances, fitted
    together to every measurement set, starting from ``start_params`` (a geometric fit) with no sag.

    The terms kept are those the poses tell from the geometry (:func:`data_terms`) and, of those,
    the ones the data resolve from zero (|theta| >= SIGNIFICANCE sigma), chosen by backward
    elimination on the problem linearised at the start (:func:`select_terms`): a term at the noise
    level adds only variance to every prediction (a sweep plan resolves a handful of the 30 terms of
    a six-axis arm). The nonlinear fit then runs once, with the resolved terms, from the linear
    solution (the terms' and compliances' values; the geometry from ``start_params``)."""
    idx = gm.indices(free)
    residuals = [Residual(gm, s) for s in sets]
    robot0 = robot_for(gm, start_params)
    terms = lumped_terms(gm.robot)
    Jg_all, Jt_all, Jp_all, r0 = [], [], [], []
    for r, s in zip(residuals, sets):
        Jg, Jq = r.jacobian(start_params, s.q, joint=True)
        Jg_all.append(Jg[:, idx])
        Jt_all.append(-Jq[:, terms.joint] * terms.columns(robot0, s.q)[r.row_pose])
        loaded = s.load is not None and s.load.mass > 0
        tp = payload_holding_torques(robot0, s.q, s.load)[r.row_pose] if loaded else np.zeros((r.size, gm.dof))
        Jp_all.append(-Jq * tp)
        r0.append(r(start_params, s.q))
    Jg, Jt, Jp, r0 = np.vstack(Jg_all), np.vstack(Jt_all), np.vstack(Jp_all), np.concatenate(r0)
    keep = data_terms(terms, Jg, Jt)
    pn = np.linalg.norm(Jp, axis=0)
    cj = np.flatnonzero(pn > excitation_tol * float(pn.max())) if pn.max() > 0 else np.array([], int)
    keep, x = select_terms(Jg, Jt, Jp[:, cj], r0, keep)
    theta0 = x[idx.size:idx.size + keep.size]
    c0 = np.maximum(x[idx.size + keep.size:], 0.0)  # a compliance is never negative (the fit's bound)
    # the geometry starts where the geometric fit left it: the linear step's share in its poorly
    # identifiable directions is the pseudo-inverse's choice, not the data's
    fit = _solve(gm, sets, residuals, idx, terms.subset(keep), cj, start_params[idx], prior, loss, f_scale,
                 theta0=theta0, c0=c0)
    fit.dropped_terms = [terms.names[k] for k in range(terms.count) if k not in set(keep.tolist())]
    return fit


def select_terms(Jg: np.ndarray, Jt: np.ndarray, Jc: np.ndarray, r0: np.ndarray, keep) -> tuple[np.ndarray, np.ndarray]:
    """Backward elimination of the lumped terms on the linearised problem r0 + [Jg Jt Jc] dx: fit,
    drop the term of smallest |theta| / sigma while it is below SIGNIFICANCE, refit. One term at a
    time, because the terms of one joint are nearly collinear on a sweep plan: together they share
    one effect, so each one's sigma is inflated by the others and a single cut at 2 sigma can drop
    every one of them, the effect with them. The deflections are 1e-4 rad, so the first-order model
    is the nonlinear one to 1e-8 relative. Returns the kept term indices and the linear solution
    (geometry step, theta, compliances) for them."""
    keep = np.asarray(keep, int)
    g = Jg.shape[1]
    while True:
        A = np.hstack([Jg, Jt[:, keep], Jc])
        cn = np.maximum(np.linalg.norm(A, axis=0), 1e-300)  # unit columns, as in _solve's covariance
        An = A / cn
        # normal equations of the unit columns: one small pseudo-inverse gives the step and the
        # covariance (the tall lstsq / SVD per step cost 10x more where BLAS threads share busy cores)
        Ginv = np.linalg.pinv(An.T @ An, rcond=1e-12)
        xn = Ginv @ (An.T @ -r0)
        res = r0 + An @ xn
        chi2 = float(res @ res) / max(res.size - An.shape[1], 1)
        sd = np.sqrt(np.clip(np.diag(chi2 * Ginv), 0, None))
        t = np.abs(xn[g:g + keep.size]) / np.where(sd[g:g + keep.size] > 0, sd[g:g + keep.size], np.inf)
        if not keep.size or t.min() >= SIGNIFICANCE:
            return keep, xn / cn
        keep = np.delete(keep, int(np.argmin(t)))


def _solve(gm, sets, residuals, idx, terms: LumpedGravity, cj, start_free, prior, loss, f_scale, *, theta0, c0
           ) -> LumpedFit:
    n = gm.dof
    T = terms.count
    start_params = gm.nominal.copy()
    start_params[idx] = start_free
    robot0 = robot_for(gm, start_params)
    Jt = np.vstack([-r.jacobian(start_params, s.q, joint=True)[1][:, terms.joint] * terms.columns(robot0, s.q)[r.row_pose]
                    for r, s in zip(residuals, sets)])
    # x ~ 1 for a term moving the points by ~0.1 mm rms (the solver's units)
    t_scale = 1e-4 / np.maximum(np.linalg.norm(Jt, axis=0) / np.sqrt(max(Jt.shape[0], 1)), 1e-300)
    c_scale = float(np.mean(prior)) if np.mean(prior) > 0 else 1e-5

    def unpack(x):
        p = gm.nominal.copy()
        p[idx] = x[:idx.size]
        c = prior.copy()
        c[cj] = x[idx.size + T:] * c_scale
        return p, terms.with_values(x[idx.size:idx.size + T] * t_scale), c

    def link_q(p, lump, c, s):
        return lumped_link_angles(robot_for(gm, p), lump, s.q, c, s.load)

    def residual(x):
        p, lump, c = unpack(x)
        return np.concatenate([r(p, link_q(p, lump, c, s)) for r, s in zip(residuals, sets)])

    def jacobian(x):
        p, lump, c = unpack(x)
        robot = robot_for(gm, p)
        blocks = []
        for r, s in zip(residuals, sets):
            ql = link_q(p, lump, c, s)
            Jg, Jq = r.jacobian(p, ql, joint=True)
            Jth = -Jq[:, lump.joint] * lump.columns(robot, ql)[r.row_pose] * t_scale
            if cj.size and s.load is not None and s.load.mass > 0:
                Jc = -Jq[:, cj] * payload_holding_torques(robot, ql, s.load)[r.row_pose][:, cj] * c_scale
            else:
                Jc = np.zeros((r.size, cj.size))
            blocks.append(np.hstack([Jg[:, idx], Jth, Jc]))
        return np.vstack(blocks)

    x0 = np.concatenate([start_free, np.asarray(theta0, float) / t_scale, np.asarray(c0, float) / c_scale])
    lower = np.concatenate([np.full(idx.size + T, -np.inf), np.zeros(cj.size)])
    r0 = residual(x0)
    scale = 1.0 if loss == "linear" else (robust_scale(r0) if f_scale is None else float(f_scale))
    kwargs = {} if loss == "linear" else {"loss": loss, "f_scale": scale}
    sol = least_squares(residual, x0, jac=jacobian, method="trf", bounds=(lower, np.inf), x_scale="jac",
                        max_nfev=200, xtol=1e-12, ftol=1e-12, gtol=1e-12, **kwargs)
    p, lump, c = unpack(sol.x)
    r = residual(sol.x)
    nx = sol.x.size
    chi2 = float(r @ r) / max(r.size - nx, 1)
    J = jacobian(sol.x)
    cn = np.maximum(np.linalg.norm(J, axis=0), 1e-300)  # unit columns: pinv must not cut a poorly scaled one
    Jn = J / cn
    sd = np.sqrt(np.clip(np.diag(chi2 * np.linalg.pinv(Jn.T @ Jn, rcond=1e-12)), 0, None)) / cn
    std = np.full(gm.size, np.nan)
    std[idx] = sd[:idx.size]
    lump = lump.with_values(lump.values, sd[idx.size:idx.size + T] * t_scale)
    c_std = np.full(n, np.nan)
    c_std[cj] = sd[idx.size + T:] * c_scale
    c_ident = np.zeros(n, bool)
    c_ident[cj] = True
    raw = np.concatenate([rr.raw(p, link_q(p, lump, c, s))[:3 * len(rr.points)] for rr, s in zip(residuals, sets)])
    sigma = float(np.sqrt(np.mean(raw ** 2) * r.size / max(r.size - nx, 1))) if raw.size else float("nan")
    return LumpedFit(p, std, lump, c, c_ident, c_std, sigma, chi2, bool(sol.success), str(sol.message), int(sol.nfev),
                     robust_cost(r0, loss, scale), robust_cost(r, loss, scale), [], None if loss == "linear" else scale)
