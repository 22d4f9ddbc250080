"""Physically consistent identification: full standard parameters from base-parameter data.

The data determine only the base parameters pi_b = P pi; the null space of P is free. We solve, as a
semidefinite program (cvxpy with Clarabel, SCS as fallback),

    min_pi   J(P pi) / J_ols  +  w_ref * mean(((pi - pi_ref) / s)^2)
    s.t.     J_i(pi) >= eps I   (pseudo-inertia of every link, Wensing et al. 2017)
             m_i >= min_mass,  IA_i >= 0,  FV_i >= 0,  FC_i >= 0  (shared-motor columns alike)

where J(theta) is the unweighted torque fit of Ni et al. 2024 eq. 14 computed from the sufficient
statistics, J_ols its unconstrained minimum, and pi_ref nominal (CAD) values. The pseudo-inertia

    J_i = [[ tr(I)/2 * 1 - I ,  h ],
           [ h^T             ,  m ]]      (I: inertia about the joint frame origin, h = m c)

is positive semidefinite exactly when some non-negative mass density produces (m, h, I), which
implies the triangle inequalities of the central inertia. A small eps > 0 keeps the answer strictly
inside the cone, so solver tolerance can never push a link outside it. The small reference term
chooses a point of the free null space near the CAD values (or near zero without them); it barely
moves the fit, and the increase of the torque RMSE over OLS is reported.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .base_params import BaseParameters
from .estimators import NormalEquations, ols
from .regressor import ColumnSpec

INERTIAL = 10
DEFAULT_MIN_MASS = 1e-3  # kg
DEFAULT_MARGIN = 1e-7  # eps of J_i >= eps I (kg.m^2)
DEFAULT_REFERENCE_WEIGHT = 1e-4


# --------------------------------------------------------------------------- layout


def parameter_layout(spec: ColumnSpec, dof: int) -> dict:
    """Indices into the standard vector: per link its 10 inertial entries, and every parameter
    that physics requires to be non-negative (rotor inertia, viscous and Coulomb friction)."""
    per = spec.per_joint
    extra = spec.joint_names()[INERTIAL:]
    inertial = [list(range(i * per, i * per + INERTIAL)) for i in range(dof)]
    nonneg = []
    for i in range(dof):
        for k, name in enumerate(extra):
            if name in ("IA", "FV", "FC"):
                nonneg.append(i * per + INERTIAL + k)
    start = per * dof
    for k in range(len(spec.motor_couplings)):  # IAMk, FVMk, FCMk are all non-negative
        nonneg += [start + 3 * k, start + 3 * k + 1, start + 3 * k + 2]
    return {"inertial": inertial, "nonnegative": nonneg}


def pseudo_inertia(params10: np.ndarray) -> np.ndarray:
    """The 4x4 pseudo-inertia of [XX XY XZ YY YZ ZZ MX MY MZ M] (about the frame origin)."""
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = (float(v) for v in params10)
    I = np.array([[XX, XY, XZ], [XY, YY, YZ], [XZ, YZ, ZZ]])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = (MX, MY, MZ)
    J[3, 3] = M
    return J


# --------------------------------------------------------------------------- feasibility


def link_feasibility(params10: np.ndarray, tol: float = 1e-9) -> dict:
    """Physical consistency of one link: mass > 0, pseudo-inertia PSD, triangle inequalities of the
    principal central moments. ``tol`` is relative to the link's largest pseudo-inertia entry."""
    from robodyn.robot.model import com_inertia

    J = pseudo_inertia(params10)
    scale = max(float(np.max(np.abs(J))), 1e-300)
    eig_J = np.linalg.eigvalsh(J)
    mass, com, I_c = com_inertia(params10)
    principal = np.sort(np.linalg.eigvalsh(I_c)) if mass > 0 else np.full(3, np.nan)
    triangle = bool(mass > 0 and principal[0] + principal[1] >= principal[2] - tol * scale
                    and principal[0] >= -tol * scale)
    mass_ok = bool(mass > 0)
    psd = bool(eig_J[0] >= -tol * scale)
    return {"mass": float(mass), "com": com.tolist() if mass > 0 else None,
            "pseudo_inertia_min_eig": float(eig_J[0]), "central_principal_moments": principal.tolist(),
            "mass_positive": mass_ok, "pseudo_inertia_psd": psd, "triangle_inequalities": triangle,
            "feasible": mass_ok and psd and triangle}


def check_feasibility(pi: np.ndarray, spec: ColumnSpec, dof: int, names=None, tol: float = 1e-9) -> dict:
    """Per-link report and overall verdict for a full standard parameter vector."""
    pi = np.asarray(pi, float)
    layout = parameter_layout(spec, dof)
    links = [link_feasibility(pi[idx], tol) for idx in layout["inertial"]]
    negative = [int(k) for k in layout["nonnegative"] if pi[k] < 0]
    return {"links": links, "negative_parameters": [names[k] if names else k for k in negative],
            "feasible": all(l["feasible"] for l in links) and not negative}


# --------------------------------------------------------------------------- the SDP


@dataclass
class ConsistentResult:
    standard: np.ndarray  # full standard parameters
    standard_names: list[str]
    theta: np.ndarray  # base parameters P pi
    feasibility: dict
    fitness: float  # J(P pi) in N.m^2 (Ni et al. 2024 eq. 14, unweighted)
    fitness_ols: float
    metrics: dict
    metrics_ols: dict
    solver: str
    status: str
    elapsed: float
    reference_weight: float
    notes: list[str] = field(default_factory=list)

    @property
    def rmse_increase(self) -> dict:
        s, s0 = self.metrics["rmse_sum"], self.metrics_ols["rmse_sum"]
        return {"rmse_sum": s, "rmse_sum_ols": s0, "absolute": s - s0, "percent": 100.0 * (s - s0) / s0}

    def to_dict(self) -> dict:
        return {"standard_names": self.standard_names, "standard": self.standard.tolist(),
                "parameters": dict(zip(self.standard_names, self.standard.tolist())),
                "base_values": self.theta.tolist(), "feasibility": self.feasibility, "fitness": self.fitness,
                "fitness_ols": self.fitness_ols, "metrics": self.metrics, "metrics_ols": self.metrics_ols,
                "rmse_increase": self.rmse_increase, "solver": self.solver, "status": self.status,
                "elapsed_s": self.elapsed, "reference_weight": self.reference_weight, "notes": self.notes}


def _reference_scale(reference: np.ndarray, layout: dict) -> np.ndarray:
    """Per-parameter scale of the reference term: |pi_ref| with a floor per link so that parameters
    nominally zero are not pinned harder than the rest."""
    # rotor inertia, friction and shared-motor parameters are identifiable on their own whenever the
    # data excite them: a unit scale leaves them practically unregularised
    s = np.maximum(np.abs(reference).astype(float), 1.0)
    for idx in layout["inertial"]:
        idx = np.asarray(idx)
        inertia, moments, mass = idx[:6], idx[6:9], idx[9]
        m = max(abs(reference[mass]), 0.1)
        s[inertia] = np.maximum(np.abs(reference[inertia]), 1e-2 * m * 0.01)  # a fraction of m (10 cm)^2
        s[moments] = np.maximum(np.abs(reference[moments]), 1e-2 * m * 0.1)
        s[mass] = m
    return s


def identify_consistent(ne: NormalEquations, base: BaseParameters, dof: int, *, reference: np.ndarray | None = None,
                        reference_weight: float = DEFAULT_REFERENCE_WEIGHT, min_mass: float = DEFAULT_MIN_MASS,
                        margin: float = DEFAULT_MARGIN, joint_names=None, solver: str = "CLARABEL"
                        ) -> ConsistentResult:
    """Physically consistent full standard parameters that fit the accumulated data (see module doc)."""
    import cvxpy as cp

    t0 = time.perf_counter()
    spec = base.spec
    names = list(base.standard_names)
    P = base.projection
    n_std = P.shape[1]
    layout = parameter_layout(spec, dof)
    reference = np.zeros(n_std) if reference is None else np.asarray(reference, float)
    if reference.shape != (n_std,):
        raise ValueError(f"reference: expected {n_std} standard parameters, got shape {reference.shape}")
    joint_names = joint_names or [f"joint{j + 1}" for j in range(dof)]

    N = float(ne.rows.max())
    A, b, c = ne.total()
    H, g, c = A / N, b / N, c / N
    estimate = ols(ne, condition=False)  # its fit and residual are read, not its conditioning
    j_ols = float(c - 2 * g @ estimate.theta + estimate.theta @ H @ estimate.theta)
    # J(theta) - J_ols = ||L^T (theta - theta_ols)||^2 with H = L L^T: a numerically kind SOC form
    L = np.linalg.cholesky(H + 1e-14 * np.trace(H) / H.shape[0] * np.eye(H.shape[0]))
    scale = max(j_ols, 1e-12)

    # the program depends on the data only through the misfit's matrix and vector, so it is compiled
    # once per parameter layout and re-solved with new values (cvxpy's parameterised programs): model
    # selection solves the same layout once per fold and cut-off, and compiling cost more than solving
    program = _program(base, dof, reference, layout, reference_weight, min_mass, margin)
    # J(theta) - J_ols = ||L^T (theta - theta_ols)||^2 / scale = ||M pi - v||^2, M = L^T P / sqrt(scale)
    root = np.sqrt(scale)
    used = solver
    with program.lock:  # one program object: its parameters and answer belong to one solve at a time
        program.matrix.value = (L.T @ P) / root
        program.vector.value = (L.T @ estimate.theta) / root
        problem, pi = program.problem, program.pi
        try:
            problem.solve(solver=solver)
        except (cp.error.SolverError, ValueError):
            used = "SCS"
            problem.solve(solver="SCS", eps=1e-9, max_iters=200000)
        status = str(problem.status)
        value = None if pi.value is None else np.array(pi.value, float)
    if value is None or status not in ("optimal", "optimal_inaccurate"):
        raise ValueError(f"consistent identification: the SDP solver {used} returned {status}")
    notes = []
    nonneg = np.asarray(layout["nonnegative"], dtype=int)
    if nonneg.size:
        # the solver meets x >= 0 to its tolerance (~1e-10): make the sign exact
        tiny = value[nonneg] < 0
        if np.any(tiny):
            notes.append(f"{int(tiny.sum())} sign-constrained parameter(s) within solver tolerance of zero set to 0")
        value[nonneg] = np.maximum(value[nonneg], 0.0)
    theta = P @ value
    feas = check_feasibility(value, spec, dof, names)
    return ConsistentResult(value, names, theta, feas,
                            float(c - 2 * g @ theta + theta @ H @ theta), j_ols,
                            ne.metrics(theta, joint_names), ne.metrics(estimate.theta, joint_names), used,
                            status, time.perf_counter() - t0, reference_weight, notes)


@dataclass
class _Program:
    problem: object
    pi: object  # the standard-parameter variable
    matrix: object  # parameter M of the misfit ||M pi - v||^2
    vector: object  # parameter v
    lock: object = field(default_factory=threading.Lock)


_PROGRAMS: dict = {}
_PROGRAMS_LOCK = threading.Lock()
_PROGRAMS_KEPT = 8


def _program(base: BaseParameters, dof: int, reference: np.ndarray, layout: dict, reference_weight: float,
             min_mass: float, margin: float) -> _Program:
    """The semidefinite program of :func:`identify_consistent` for one parameter layout, with the
    misfit's data as cvxpy parameters: built and compiled on first use, re-solved afterwards."""
    import cvxpy as cp

    key = (base.spec, dof, tuple(base.independent.tolist()), tuple(base.dependent.tolist()), base.beta.tobytes(),
           reference.tobytes(), float(reference_weight), float(min_mass), float(margin))
    with _PROGRAMS_LOCK:
        hit = _PROGRAMS.get(key)
    if hit is not None:
        return hit
    n_std = len(base.standard_names)
    pi = cp.Variable(n_std)
    matrix = cp.Parameter((base.count, n_std))
    vector = cp.Parameter(base.count)
    misfit = cp.sum_squares(matrix @ pi - vector)
    s = _reference_scale(reference, layout)
    closeness = cp.sum_squares(cp.multiply(1.0 / s, pi - reference)) / n_std
    # one 4x4 semidefinite constraint per link on its pseudo-inertia J - margin I, an affine image of
    # pi written as one constant matrix (Wensing et al. 2017's LMI): a handful of constraints compile
    # several times faster than a slack matrix tied to pi entry by entry with ten equalities
    constraints = []
    masses = []
    for idx in layout["inertial"]:
        constraints.append(cp.reshape(_pseudo_inertia_map(idx, n_std) @ pi, (4, 4), order="F")
                           - margin * np.eye(4) >> 0)
        masses.append(idx[9])
    if masses:
        constraints.append(pi[masses] >= min_mass)
    if layout["nonnegative"]:
        constraints.append(pi[layout["nonnegative"]] >= 0)
    program = _Program(cp.Problem(cp.Minimize(misfit + reference_weight * closeness), constraints), pi, matrix,
                       vector)
    with _PROGRAMS_LOCK:
        if len(_PROGRAMS) >= _PROGRAMS_KEPT:
            _PROGRAMS.clear()
        return _PROGRAMS.setdefault(key, program)


def _pseudo_inertia_map(idx, n_std: int) -> np.ndarray:
    """(16, n_std) constant T with T @ pi the column-major 4x4 pseudo-inertia of the link whose
    standard parameters XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M sit at ``idx``:
    [[(-XX+YY+ZZ)/2, -XY, -XZ, MX], [-XY, (XX-YY+ZZ)/2, -YZ, MY], [-XZ, -YZ, (XX+YY-ZZ)/2, MZ],
    [MX, MY, MZ, M]]: symmetric, so its column-major and row-major flattenings agree."""
    XX, XY, XZ, YY, YZ, ZZ, MX, MY, MZ, M = idx
    entries = {(0, 0): {XX: -0.5, YY: 0.5, ZZ: 0.5}, (1, 1): {XX: 0.5, YY: -0.5, ZZ: 0.5},
               (2, 2): {XX: 0.5, YY: 0.5, ZZ: -0.5}, (3, 3): {M: 1.0},
               (0, 1): {XY: -1.0}, (0, 2): {XZ: -1.0}, (1, 2): {YZ: -1.0},
               (0, 3): {MX: 1.0}, (1, 3): {MY: 1.0}, (2, 3): {MZ: 1.0}}
    T = np.zeros((16, n_std))
    for (r, c), terms in entries.items():
        for k, w in terms.items():
            T[r + 4 * c, k] = T[c + 4 * r, k] = w
    return T


def nominal_reference(model, spec: ColumnSpec) -> np.ndarray:
    """The model's CAD values in standard column order (rotor inertia from the model, friction 0)."""
    from .regressor import standard_parameter_vector

    return standard_parameter_vector(model, spec)
