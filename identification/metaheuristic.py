"""Metaheuristic identification (Ni et al. 2024): fitness eq. 14, the OLS search box, WSO / PSO / GA / ICPSO.

Fitness (Ni et al. 2024 eq. 14, normalised by the samples per joint N so that it reads in N.m^2):

    J(theta) = (1/N) sum_j psi_j ||tau_j - W_j theta||^2
             = (1/N) sum_j psi_j (c_j - 2 theta^T b_j + theta^T A_j theta)

with the per-joint sufficient statistics A_j = W_j^T W_j, b_j = W_j^T tau_j, c_j = tau_j^T tau_j that
:class:`~.estimators.NormalEquations` already accumulates. Folding the weights in once
(H = sum psi_j A_j / N, ...) leaves one (pop x p) by (p x p) product per population: O(pop p^2),
independent of the recording length, instead of the naive O(pop N n p) residual evaluation.

A Stribeck friction model (Ni et al. 2024 eq. 2) identified inside the loop is not linear in its
parameters, so the residual has to be formed sample by sample. The linear part of every candidate's
prediction is one BLAS product for the whole population; the friction term and the weighted sum of
squares run in a parallel Numba kernel over (candidate, sample).

The search box is the OLS estimate +- 5 |p_hat| (Ni et al. 2024 section 4.2). The optimizers are those of
:mod:`.optimizers` (WSO, PSO, GA, ICPSO); their convergence history, seed and options are kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
from numba import njit, prange

from robodyn.robot.model import RobotModel

from . import optimizers as opt
from .base_params import BaseParameters, base_parameters
from .estimators import NormalEquations, accumulate, ols
from robodyn.robot.friction import DEFAULT_LINEAR_ZONE, stribeck_value
from .pipeline import IdentificationConfig, _chunks, base_rows
from .regressor import gather_joint_major
from .signals import SampledData
from .processing import process_windows
from .names import METAHEURISTICS

# Ni et al. 2024 section 4.2: iteration counts tuned per algorithm by the authors. The population is
# given only for WSO (150); the same population is used for PSO and GA so that each iteration
# costs the same number of fitness evaluations.
NI2024_ITERATIONS = {"wso": 3000, "pso": 800, "ga": 460, "icpso": 800}
NI2024_POPULATION = 150
BOX_FACTOR = 5.0


# --------------------------------------------------------------------------- data -> statistics


def processed_source(datasets: Sequence[SampledData], config: IdentificationConfig, preprocessed: bool,
                     friction=None):
    """A re-iterable source of processed windows, exactly as :func:`.pipeline.identify` processes them."""

    def source():
        for raw in datasets:
            if preprocessed:
                yield raw
            else:
                for piece in process_windows(raw, config.processing, friction=friction):
                    yield piece.data

    return source


def normal_equations_of(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig,
                        base: BaseParameters | None = None, preprocessed: bool = False
                        ) -> tuple[BaseParameters, NormalEquations]:
    """Base parameters and per-joint normal equations of recordings (the pipeline's chunked pass)."""
    base = base_parameters(model, config.spec) if base is None else base
    from robodyn.robot.friction import FrictionModel

    friction = FrictionModel.from_dict(config.friction_model) if config.friction_model else None
    chunks = _chunks(model, processed_source(datasets, config, preprocessed, friction), config.spec, base,
                     config.chunk_samples)
    return base, accumulate(chunks, model.dof, base.count)


def joint_major_data(model: RobotModel, base: BaseParameters, data: SampledData) -> np.ndarray:
    """Base regressor of one processed recording as contiguous per-joint blocks (n, N, b)."""
    return gather_joint_major(base_rows(model, data, base.spec), model.dof, base.independent)


# --------------------------------------------------------------------------- fitness


def joint_weights(weights, dof: int) -> np.ndarray:
    psi = np.ones(dof) if weights is None else np.asarray(weights, float).reshape(-1)
    if psi.shape != (dof,) or not np.all(np.isfinite(psi)) or np.any(psi < 0):
        raise ValueError(f"weights: expected {dof} finite non-negative joint weights, got {weights!r}")
    return psi


@dataclass(frozen=True)
class QuadraticFitness:
    """Ni et al. 2024 eq. 14 from sufficient statistics: J(Theta) for a population Theta (pop, p)."""

    H: np.ndarray  # (p, p) = sum_j psi_j A_j / N
    g: np.ndarray  # (p,)   = sum_j psi_j b_j / N
    c: float  # sum_j psi_j c_j / N

    @classmethod
    def from_statistics(cls, ne: NormalEquations, weights=None) -> "QuadraticFitness":
        psi = joint_weights(weights, ne.dof)
        N = float(ne.rows.max())
        A, b, c = ne.total(psi)
        return cls(A / N, b / N, c / N)

    def __call__(self, Theta: np.ndarray) -> np.ndarray:
        Theta = np.atleast_2d(Theta)
        quad = np.einsum("ip,ip->i", Theta @ self.H, Theta)
        # the cancellation c - 2 theta.g + quad can dip below zero by rounding at an exact fit
        return np.maximum(self.c - 2.0 * Theta @ self.g + quad, 0.0)


def naive_fitness(W_joint_major: np.ndarray, tau: np.ndarray, weights=None) -> Callable[[np.ndarray], np.ndarray]:
    """The same eq. 14 by forming every residual: O(pop N n p). A reference for tests and the benchmark."""
    n, N, _ = W_joint_major.shape
    psi = joint_weights(weights, n)

    def fitness(Theta: np.ndarray) -> np.ndarray:
        Theta = np.atleast_2d(Theta)
        total = np.zeros(Theta.shape[0])
        for j in range(n):
            residual = tau[:, j, None] - W_joint_major[j] @ Theta.T  # (N, pop)
            total += psi[j] * np.einsum("ip,ip->p", residual, residual)
        return total / N

    return fitness


@njit(cache=True, parallel=True)
def _stribeck_rss_kernel(linear_prediction, tau_j, qd_j, fc, fs, vs, qd0, out):
    """Per candidate c: sum_i (tau_i - linear_prediction[i, c] - F(qd_i; fc_c, fs_c, vs_c))^2."""
    N, pop = linear_prediction.shape
    for c in prange(pop):
        acc = 0.0
        a, b, s = fc[c], fs[c], abs(vs[c])
        for i in range(N):
            e = tau_j[i] - linear_prediction[i, c] - stribeck_value(qd_j[i], a, b, s, 0.0, qd0)
            acc += e * e
        out[c] = acc
    return out


@dataclass(frozen=True)
class StribeckFitness:
    """Eq. 14 with the base parameters AND a per-joint Stribeck model (fc, fs, vs) inside the loop.

    Candidates are [theta (p), fc (n), fs (n), vs (n)]."""

    W: np.ndarray  # (n, N, p) joint-major base regressor
    tau: np.ndarray  # (N, n)
    qd: np.ndarray  # (N, n)
    weights: np.ndarray  # (n,)
    qd0: float = DEFAULT_LINEAR_ZONE

    @classmethod
    def build(cls, W_joint_major, tau, qd, weights=None, qd0: float = DEFAULT_LINEAR_ZONE) -> "StribeckFitness":
        n = W_joint_major.shape[0]
        return cls(np.ascontiguousarray(W_joint_major), np.ascontiguousarray(tau, dtype=float),
                   np.ascontiguousarray(qd, dtype=float), joint_weights(weights, n), float(qd0))

    @property
    def linear_dim(self) -> int:
        return int(self.W.shape[2])

    def split(self, X: np.ndarray):
        p, n = self.linear_dim, self.W.shape[0]
        return X[:, :p], X[:, p:p + n], X[:, p + n:p + 2 * n], X[:, p + 2 * n:p + 3 * n]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(X)
        theta, fc, fs, vs = self.split(X)
        n, N, _ = self.W.shape
        total = np.zeros(X.shape[0])
        rss = np.empty(X.shape[0])
        for j in range(n):
            prediction = self.W[j] @ theta.T  # (N, pop): one BLAS call for the population
            _stribeck_rss_kernel(prediction, self.tau[:, j], self.qd[:, j], np.ascontiguousarray(fc[:, j]),
                                 np.ascontiguousarray(fs[:, j]), np.ascontiguousarray(vs[:, j]), self.qd0, rss)
            total += self.weights[j] * rss
        return total / N

    def joint_rmse(self, x: np.ndarray) -> np.ndarray:
        theta, fc, fs, vs = self.split(np.atleast_2d(x))
        n, N, _ = self.W.shape
        out = np.empty(n)
        rss = np.empty(1)
        for j in range(n):
            pred = self.W[j] @ theta.T
            _stribeck_rss_kernel(np.ascontiguousarray(pred), self.tau[:, j], self.qd[:, j], fc[:, j].copy(),
                                 fs[:, j].copy(), vs[:, j].copy(), self.qd0, rss)
            out[j] = np.sqrt(rss[0] / N)
        return out


# --------------------------------------------------------------------------- search box


def search_box(center: np.ndarray, factor: float = BOX_FACTOR, floor: float | None = None) -> opt.Bounds:
    """center +- factor |center| (Ni et al. 2024). Parameters estimated at (almost) zero would get an empty
    box, so each half-width is at least ``floor`` (default 1e-3 times the median |center|)."""
    center = np.asarray(center, float)
    if floor is None:
        floor = 1e-3 * max(float(np.median(np.abs(center))), 1e-12)
    half = np.maximum(factor * np.abs(center), floor)
    return opt.Bounds(center - half, center + half)


# --------------------------------------------------------------------------- identification


@dataclass
class MetaheuristicResult:
    method: str
    theta: np.ndarray
    fitness: float
    history: list[float]
    seed: int | None
    options: dict
    elapsed: float
    nfev: int
    iterations: int
    message: str
    bounds: tuple[list[float], list[float]]
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"method": self.method, "theta": self.theta.tolist(), "fitness": self.fitness,
                "history": self.history, "seed": self.seed, "options": self.options, "elapsed_s": self.elapsed,
                "nfev": self.nfev, "iterations": self.iterations, "message": self.message,
                "bounds": {"lower": self.bounds[0], "upper": self.bounds[1]}, "metrics": self.metrics}


def ni2024_options(method: str, population: int = NI2024_POPULATION, iterations: int | None = None):
    """Options of ``method`` with Ni et al. 2024's iteration count and population (overridable)."""
    base = opt.default_options(method)
    its = NI2024_ITERATIONS[method] if iterations is None else int(iterations)
    if method == "ga":
        return opt.GAOptions(**{**asdict(base), "population": population, "generations": its})
    return type(base)(**{**asdict(base), "population": population, "iterations": its})


def progress_printer(stream, every: int = 100) -> Callable[[opt.Progress], None]:
    """A callback that prints one progress line every ``every`` iterations."""

    def callback(p: opt.Progress) -> None:
        if p.iteration % every == 0:
            print(f"  {p.method} iter {p.iteration}: best J = {p.best_fitness:.6g} ({p.nfev} evaluations, "
                  f"{p.elapsed:.1f} s)", file=stream)

    return callback


def run_metaheuristic(fitness: Callable[[np.ndarray], np.ndarray], bounds: opt.Bounds, method: str, *,
                      seed: int | None = 0, options=None, x0=None, callback=None, restarts: int = 1,
                      constraints: Sequence = ()) -> MetaheuristicResult:
    """Minimise a population fitness with one of the optimizers; keeps history, seed and options."""
    if method not in METAHEURISTICS:
        raise ValueError(f"method: expected one of {list(METAHEURISTICS)}, got {method!r}")
    options = ni2024_options(method) if options is None else options
    res = opt.minimize(fitness, bounds, method, seed=seed, options=options, x0=x0, callback=callback,
                       restarts=restarts, constraints=constraints)
    return MetaheuristicResult(method, res.x, float(res.fun), [float(h) for h in res.history], seed, asdict(options),
                               res.elapsed, res.nfev, res.nit, res.message,
                               (bounds.lower.tolist(), bounds.upper.tolist()))


def identify_linear(ne: NormalEquations, method: str, *, weights=None, seed: int | None = 0, options=None,
                    callback=None, joint_names=None, center: np.ndarray | None = None,
                    box_factor: float = BOX_FACTOR, names=None) -> MetaheuristicResult:
    """Ni et al. 2024: OLS fixes the search box, then a metaheuristic minimises eq. 14 over it."""
    center = ols(ne, names).theta if center is None else np.asarray(center, float)
    bounds = search_box(center, box_factor)
    fitness = QuadraticFitness.from_statistics(ne, weights)
    result = run_metaheuristic(fitness, bounds, method, seed=seed, options=options, callback=callback)
    result.metrics = ne.metrics(result.theta, joint_names or [f"joint{j + 1}" for j in range(ne.dof)])
    return result


def stribeck_box(theta_center: np.ndarray, friction_center: dict, box_factor: float = BOX_FACTOR) -> opt.Bounds:
    """Box for [theta, fc, fs, vs]: the Ni et al. 2024 box around OLS for theta and around a nominal
    Stribeck model for the friction; friction levels and vs are kept positive."""
    lin = search_box(theta_center, box_factor)
    fc, fs, vs = (np.asarray(friction_center[k], float) for k in ("fc", "fs", "vs"))
    lo_f = np.concatenate([np.zeros_like(fc), np.zeros_like(fs), 1e-4 * np.ones_like(vs)])
    hi_f = np.concatenate([(1 + box_factor) * np.abs(fc), (1 + box_factor) * np.abs(fs),
                           (1 + box_factor) * np.abs(vs)])
    hi_f = np.maximum(hi_f, lo_f + 1e-3)
    return opt.Bounds(np.concatenate([lin.lower, lo_f]), np.concatenate([lin.upper, hi_f]))
