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

import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
from numba import njit, prange

from robodyn.robot.model import RobotModel

from . import optimizers as opt
from .base_params import BaseParameters, base_parameters
from .estimators import NormalEquations, accumulate, ols, wls
from .friction import DEFAULT_LINEAR_ZONE
from .pipeline import IdentificationConfig, _chunks, base_rows
from .regressor import gather_joint_major
from .signals import SampledData, process_windows

METAHEURISTICS = ("wso", "pso", "ga", "icpso")
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
    from .friction import FrictionModel

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


@njit(cache=True, inline="always")
def _stribeck_value(v, fc, fs, vs, qd0):
    """Ni et al. 2024 eq. 2 for one velocity (same model as friction.stribeck, without viscous friction)."""
    if vs == 0.0:
        vs = 1e-12
    if abs(v) >= qd0:
        r = v / vs
        f = fc + (fs - fc) * np.exp(-r * r)
        return f if v > 0 else -f
    r0 = qd0 / vs
    return (fc + (fs - fc) * np.exp(-r0 * r0)) / qd0 * v


@njit(cache=True, parallel=True)
def _stribeck_rss_kernel(linear_prediction, tau_j, qd_j, fc, fs, vs, qd0, out):
    """Per candidate c: sum_i (tau_i - linear_prediction[i, c] - F(qd_i; fc_c, fs_c, vs_c))^2."""
    N, pop = linear_prediction.shape
    for c in prange(pop):
        acc = 0.0
        a, b, s = fc[c], fs[c], abs(vs[c])
        for i in range(N):
            e = tau_j[i] - linear_prediction[i, c] - _stribeck_value(qd_j[i], a, b, s, qd0)
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


# --------------------------------------------------------------------------- comparison (Ni et al. 2024 Table 4)


def rmse_row(name: str, ident: dict, heldout: dict | None, extra: dict | None = None) -> dict:
    row = {"method": name, "identification_rmse": ident["rmse"], "identification_sum": ident["rmse_sum"]}
    if heldout is not None:
        row.update(heldout_rmse=heldout["rmse"], heldout_sum=heldout["rmse_sum"])
    row.update(extra or {})
    return row


def compare_linear(ident: NormalEquations, heldout: NormalEquations | None, joint_names, *,
                   methods: Sequence[str] = ("wso", "pso", "ga"), weights=None, seed: int = 0,
                   population: int = NI2024_POPULATION, iterations: dict | None = None,
                   callback=None, names=None) -> dict:
    """Table-4-style rows: each metaheuristic on eq. 14 in the OLS box, plus OLS and WLS closed forms."""
    rows = []
    estimate_ols = ols(ident, names)
    fitness = QuadraticFitness.from_statistics(ident, weights)
    reference = {"ols": estimate_ols.theta, "wls": wls(ident, names).theta}
    for name, theta in reference.items():
        rows.append(rmse_row(name, ident.metrics(theta, joint_names),
                             heldout.metrics(theta, joint_names) if heldout is not None else None,
                             {"fitness": float(fitness(theta)[0]), "elapsed_s": 0.0}))
    for method in methods:
        its = (iterations or {}).get(method)
        res = identify_linear(ident, method, weights=weights, seed=seed,
                              options=ni2024_options(method, population, its), callback=callback,
                              joint_names=joint_names, center=estimate_ols.theta)
        rows.append(rmse_row(method, res.metrics, heldout.metrics(res.theta, joint_names) if heldout else None,
                             {"fitness": res.fitness, "elapsed_s": res.elapsed, "nfev": res.nfev,
                              "iterations": res.iterations,
                              "history_every_10": res.history[::10]}))
    best = min(float(fitness(reference["ols"])[0]), *(r["fitness"] for r in rows))
    for r in rows:
        r["fitness_gap_to_best"] = r["fitness"] - best
    return {"joints": list(joint_names), "weights": joint_weights(weights, ident.dof).tolist(), "rows": rows}


def format_table(comparison: dict, heldout: bool = True) -> str:
    """Markdown table: per-joint RMSE (N.m) per method, then the sums (Ni et al. 2024 Table 4 layout)."""
    rows = comparison["rows"]
    header = "| joint | " + " | ".join(r["method"].upper() for r in rows) + " |"
    sep = "|---|" + "---|" * len(rows)
    out = []
    for label, key, total in (("identification trajectory", "identification_rmse", "identification_sum"),
                              ("held-out trajectory", "heldout_rmse", "heldout_sum")):
        if key not in rows[0] or (key.startswith("heldout") and not heldout):
            continue
        out += [f"**{label}** (RMSE, N.m)", "", header, sep]
        for j, name in enumerate(comparison["joints"]):
            out.append(f"| {name} | " + " | ".join(f"{r[key][j]:.4f}" for r in rows) + " |")
        out.append("| **sum** | " + " | ".join(f"**{r[total]:.4f}**" for r in rows) + " |")
        out.append("")
    return "\n".join(out)


def timed(fn, *args, repeat: int = 3):
    """Best wall time of ``repeat`` calls (the first result is returned too)."""
    best, value = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        v = fn(*args)
        best = min(best, time.perf_counter() - t0)
        value = v if value is None else value
    return best, value


# --------------------------------------------------------------------------- simulated recordings


# Reflected rotor inertias (kg.m^2) assumed for simulations of the Panda: the built-in model carries
# none and the paper's Table 5 values are not physical (negative). Order of magnitude of a 7-DOF
# cobot's motor + harmonic drive referred to the joint.
ASSUMED_PANDA_ROTOR_INERTIA = (0.30, 0.30, 0.25, 0.25, 0.12, 0.12, 0.10)


def excitation(model: RobotModel, seed: int, seconds: float = 60.0, harmonics: int = 5, amplitude: float = 0.12,
               period: float = 12.0):
    """A random rest-to-rest finite Fourier series (Ni et al. 2024 eq. 7 form) around mid-range, repeated
    to fill ``seconds``: the harmonics of the last order cancel the start and end velocity."""
    from robodyn.trajectory import FourierTrajectory

    r = np.random.default_rng(seed)
    n = model.dof
    a = r.normal(size=(n, harmonics)) * amplitude
    b = r.normal(size=(n, harmonics)) * amplitude
    a[:, -1] = -a[:, :-1].sum(1)
    orders = np.arange(1, harmonics + 1)
    b[:, -1] = -(b[:, :-1] * orders[:-1]).sum(1) / harmonics
    wf = 2 * np.pi / period
    lo = np.where(np.isfinite(model.q_min), model.q_min, -np.pi)
    hi = np.where(np.isfinite(model.q_max), model.q_max, np.pi)
    return FourierTrajectory(wf, (lo + hi) / 2, a, b, periods=seconds / period)


def simulated_recording(model: RobotModel, *, seed: int = 0, seconds: float = 60.0, rate_hz: float = 1000.0,
                        noise: float = 0.5, rotor_inertia=None, friction: dict | None = None,
                        stribeck=None, amplitude: float = 0.12) -> SampledData:
    """Torques of the independent RNEA (not the regressor) along a random excitation, plus Gaussian
    noise (N.m, per sample); optional linear friction (``friction`` dict for RNEA) or a Stribeck
    :class:`~.friction.FrictionModel`. qd and qdd are exact (the recording is 'preprocessed')."""
    from robodyn.robot.dynamics import inverse_dynamics

    traj = excitation(model, seed, seconds, amplitude=amplitude)
    t, q, qd, qdd, _ = traj.sample(rate_hz)
    rotor = model.rotor_inertia if rotor_inertia is None else np.asarray(rotor_inertia, float)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=rotor, friction=friction)
    if stribeck is not None:
        tau = tau + stribeck.torque(qd)
    tau = tau + noise * np.random.default_rng(seed + 10_000).normal(size=tau.shape)
    return SampledData(t, q, tau, qd, qdd)


# --------------------------------------------------------------------------- plants for `compare`


@dataclass(frozen=True)
class Plant:
    """What produces the torques a comparison identifies from.

    ``simulate(model, seed=, seconds=, rate_hz=, noise=, rotor_inertia=)`` returns a SampledData.
    ``differs_from_model`` says whether the plant contains effects the identifier's model lacks; a
    plant that does not is an inverse crime and every table it produces says so.
    ``exact_derivatives``: the data carry the exact qd and qdd (identified as 'preprocessed'); a
    plant without them returns a log as a sensor writes it, which goes through the one shared
    processing (pipeline.prepare) and is scored against its measured torque.
    ``sensor``: a sensor model (identification.realistic.SENSORS) that fixes the rate and the noise;
    ``record`` then returns the whole :class:`~.realistic.RealisticLog` (data and noise floor)."""

    name: str
    simulate: Callable[..., SampledData]
    differs_from_model: bool
    description: str
    exact_derivatives: bool = True
    sensor: str | None = None
    record: Callable | None = None


def realistic_plant(name: str, sensor: str, plant_seed: int = 7) -> Plant:
    """A plant of :mod:`.realistic`: the MuJoCo arm with what the identifier does not model
    (perturbed inertial parameters, rippling and load-dependent Stribeck friction, an elastic joint)
    seen through the ``sensor`` model of a real arm (noise, quantisation, jitter, gaps, delay,
    wrong drive gains). ``plant_seed`` fixes the arm, so every run of one comparison is the same
    arm; ``seed`` picks the excitation and the sensor noise of a run."""
    from . import realistic

    if sensor not in realistic.SENSORS:
        raise ValueError(f"sensor: expected one of {sorted(realistic.SENSORS)}, got {sensor!r}")

    def record(model: RobotModel, *, seed: int, seconds: float, rate_hz=None, noise=None, rotor_inertia=None):
        # rate and noise belong to the sensor model; rotor inertia to the simulated arm
        return realistic.realistic_log(sensor, seed, plant_seed=plant_seed, duration=seconds, robot=model.name)

    def simulate(model: RobotModel, **kw) -> SampledData:
        return record(model, **kw).data

    rate = realistic.SENSORS[sensor]["rate_hz"]
    return Plant(name, simulate, True,
                 f"MuJoCo arm unlike the identifier's model (inertial parameters perturbed 15 %, Stribeck friction "
                 f"with position ripple and load dependence, one elastic joint) through a {sensor}-like sensor model "
                 f"({rate:g} Hz; noise, quantisation, " + ("jittered sampling, dropped packets, drifting torque "
                                                            "offsets" if sensor == "franka" else
                                                            "motor currents through unknown drive gains, one sample "
                                                            "of delay") + ")",
                 exact_derivatives=False, sensor=sensor, record=record)


PLANTS: dict[str, Plant] = {
    "rnea": Plant("rnea", simulated_recording, False,
                  "robodyn's rigid-body RNEA (the identifier's own model) + Gaussian torque noise"),
    "franka_like": realistic_plant("franka_like", "franka"),
    "ur_like": realistic_plant("ur_like", "ur"),
}


def register_plant(plant: Plant) -> None:
    """Hook for simulators whose plant differs from the identifier's model (unmodelled friction,
    joint elasticity, sensor dynamics ...): once registered, `robodyn compare --simulate ROBOT
    --plant NAME` runs the Table-4 comparison on it."""
    if not plant.name or plant.name in PLANTS:
        raise ValueError(f"plant: name {plant.name!r} is empty or already registered ({sorted(PLANTS)})")
    PLANTS[plant.name] = plant


# --------------------------------------------------------------------------- real data


def split_recording(data: SampledData, fraction: float) -> tuple[SampledData, SampledData]:
    """The first ``fraction`` of a recording (by samples) and the rest: identification and held-out
    parts of one real recording."""
    if not 0.1 <= fraction <= 0.9:
        raise ValueError(f"split: the identification fraction must be in [0.1, 0.9], got {fraction}")
    k = int(round(data.t.size * fraction))

    def part(sl):
        return SampledData(*(None if getattr(data, f) is None else getattr(data, f)[sl]
                             for f in ("t", "q", "tau", "qd", "qdd", "tau_friction", "coulomb")))

    return part(slice(0, k)), part(slice(k, None))


def concatenate_recordings(pieces: Sequence[SampledData]) -> SampledData:
    if len(pieces) == 1:
        return pieces[0]
    fields = ("t", "q", "tau", "qd", "qdd", "tau_friction", "coulomb")
    return SampledData(*(None if getattr(pieces[0], f) is None else np.concatenate([getattr(p, f) for p in pieces])
                         for f in fields))


TX40_PLANT = "real Staubli TX40 (LS2N data set, figaroh-plus, Apache-2.0)"


def tx40_split(directory, fraction: float = 0.5):
    """The real Staubli TX40 set of LS2N (tests/data/staubli_tx40) ready for a comparison: its model
    (motor-side torques, coupled wrist), the identification config with the authors' processing, and
    the run processed ONCE and then split, its first ``fraction`` identifying and the rest held out
    (processing each half alone would put filter and differentiation transients at the cut; measured:
    the held-out RMSE sum rose from 6.2 to 33 N.m). Returns (model, config, identification, held out)."""
    from pathlib import Path

    from robodyn.robot.urdf import model_from_urdf

    from .datasets import tx40

    directory = Path(directory)
    if not (directory / "tx40_mdh_modified.urdf").exists():
        raise FileNotFoundError(f"dataset: the Staubli TX40 data set is not in {directory}; pass --data-dir (it ships "
                                "in the source tree under tests/data/staubli_tx40)")
    model = model_from_urdf(directory / "tx40_mdh_modified.urdf")
    config = IdentificationConfig(method="ols", friction="coulomb-viscous", processing=tx40.PROCESSING,
                                  motor_couplings=(tx40.WRIST_COUPLING,))
    pieces = [piece.data for piece in process_windows(tx40.load(directory), config.processing)]
    ident, held = split_recording(concatenate_recordings(pieces), fraction)
    return model, config, ident, held


def tx40_comparison(directory, *, fraction: float = 0.5, methods=("wso", "pso", "ga"), population: int = 150,
                    iteration_scale: float = 1.0, seed: int = 0, weights=None) -> dict:
    """The Table-4 comparison on REAL data (:func:`tx40_split`): compare_linear's table plus its
    provenance."""
    model, config, ident, held = tx40_split(directory, fraction)
    base, ne_ident = normal_equations_of(model, [ident], config, preprocessed=True)
    _, ne_held = normal_equations_of(model, [held], config, base=base, preprocessed=True)
    iterations = {m: max(1, int(round(NI2024_ITERATIONS[m] * iteration_scale))) for m in methods}
    table = compare_linear(ne_ident, ne_held, list(model.joint_names), methods=methods, weights=weights, seed=seed,
                           population=population, iterations=iterations, names=base.names)
    table.update(robot="staubli_tx40", base_parameters=base.count, iterations=iterations, population=population,
                 seed=seed, plant=TX40_PLANT, inverse_crime=False,
                 sources=[f"{directory}: the 9 s run processed once; its first {fraction:.0%} identifies, the rest is held out"],
                 equations={"identification": int(ne_ident.rows.sum()), "held_out": int(ne_held.rows.sum())},
                 cond_identification=float(ols(ne_ident, base.names).cond))
    return table


def tx40_raw_after(directory, held: SampledData) -> SampledData:
    """The raw TX40 samples (measured torque, unfiltered) from the first instant of the processed
    held-out part on: what a held-out figure is judged against."""
    from pathlib import Path

    from .datasets import tx40

    raw = tx40.load(Path(directory))
    return raw.select(raw.t >= held.t[0] - 1e-9)
