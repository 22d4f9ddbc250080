"""One optimizer interface for excitation design and metaheuristic parameter identification.

Every method minimises a *population fitness*: a function that takes a whole population
``X`` of shape (pop, dim) and returns its fitness (pop,). Evaluating a population in one call
lets the caller batch (one regressor call for all candidates) or distribute costly fitness
evaluations; a scalar function is adapted with :func:`vectorize`.

Methods (``minimize(..., method=...)``):

- ``slsqp``  scipy's SLSQP (the fmincon analogue). The gradient is a forward difference
             evaluated as ONE population call of dim+1 points. Linear constraints keep their
             exact Jacobian; nonlinear ones are differenced the same way.
- ``ga``     real-coded genetic algorithm; defaults are Chen et al. 2021's settings (population
             20, 800 generations, crossover 0.8, mutation 0.2); Ni et al. 2024 keep the best of 5
             runs (``restarts=5``).
- ``pso``    standard PSO: inertia weight falling linearly 0.9 -> 0.4, c1 = c2 = 2.
- ``icpso``  Zhong et al. 2023's improved chaotic PSO (eqs. 10-18): tanh inertia weight,
             fitness-adaptive learning factors, variance-based premature-convergence test and a
             tent-map chaotic search for the worst (upper-quartile) particles (see
             :func:`_chaotic_search` for the two readings that make it work, with measurements).
- ``apso``   the paper's baseline "APSO": its adaptive parameter strategy (section 2.2, eqs. 11-13)
             without the chaotic search; the paper does not define it further (see APSOOptions).
- ``grid``   exhaustive search on a regular grid over the box, then a few zooming refinements
             around the best point: for problems with at most three free coordinates (fixed ones
             have a zero-width box), where it proves the global minimum to the grid's resolution.
- ``lpso``   the paper's baseline "LPSO": inertia weight and learning factors varied linearly with
             the iteration over the same ranges (see LPSOOptions).
- ``wso``    the White Shark Optimizer as Ni et al. 2024 eqs. 12-28 give it (defaults 150 sharks x 3000
             iterations): wavy motion towards prey, random re-placement of sharks that left the
             box, movement towards the best shark and fish-school behaviour.

``restarts=k`` runs any method k times with independent seeds and keeps the best (multi-start,
best-of-k). ``callback(progress)`` is called once per iteration; returning True stops the run.
Constraints are ``g(x) <= 0``: SLSQP handles them natively, the metaheuristics rank candidates
by Deb's feasibility rules (any feasible point beats any infeasible one, infeasible points are
ranked by total violation). An optional ``repair(X)`` maps a population into the feasible set
before evaluation; repaired positions replace the originals (Lamarckian repair).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

PopulationFitness = Callable[[np.ndarray], np.ndarray]
METHODS = ("slsqp", "ga", "pso", "icpso")
# Methods added later, kept out of METHODS so that callers iterating over it (excitation design and
# its tests) see the set they were written for; minimize() accepts every method of ALL_METHODS.
ALL_METHODS = METHODS + ("wso", "apso", "lpso", "grid")

# Infeasible candidates are ranked above every feasible fitness by this offset plus their
# violation (Deb's rules in scalar form); fitness values of real problems stay far below it.
INFEASIBLE_OFFSET = 1e12


def vectorize(scalar_fitness: Callable[[np.ndarray], float]) -> PopulationFitness:
    """Adapt f(x) -> float to the population form F(X) -> (pop,)."""

    def population_fitness(X: np.ndarray) -> np.ndarray:
        return np.array([float(scalar_fitness(x)) for x in np.atleast_2d(X)])

    return population_fitness


# --------------------------------------------------------------------------- problem pieces


@dataclass(frozen=True)
class Bounds:
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self):
        lo = np.atleast_1d(np.asarray(self.lower, float))
        hi = np.atleast_1d(np.asarray(self.upper, float))
        if lo.shape != hi.shape or lo.ndim != 1 or lo.size == 0:
            raise ValueError(f"bounds: lower and upper must be equal-length 1-D arrays, got {lo.shape} and {hi.shape}")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError("bounds: every bound must be finite (the swarm and GA sample inside them)")
        if np.any(hi <= lo):
            k = int(np.argmax(hi <= lo))
            raise ValueError(f"bounds: upper[{k}] = {hi[k]} must exceed lower[{k}] = {lo[k]}")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def dim(self) -> int:
        return int(self.lower.size)

    @property
    def span(self) -> np.ndarray:
        return self.upper - self.lower

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return self.lower + rng.random((count, self.dim)) * self.span

    def clip(self, X: np.ndarray) -> np.ndarray:
        return np.clip(X, self.lower, self.upper)


@dataclass(frozen=True)
class LinearConstraint:
    """A x <= ub (rows are constraints)."""

    A: np.ndarray
    ub: np.ndarray

    def violation(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(X @ self.A.T - self.ub, 0.0).sum(axis=1)


@dataclass(frozen=True)
class NonlinearConstraint:
    """fun(X) -> (pop, m); a candidate is feasible when every entry is <= 0."""

    fun: Callable[[np.ndarray], np.ndarray]

    def violation(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(np.asarray(self.fun(X), float), 0.0).sum(axis=1)


@dataclass
class Progress:
    method: str
    iteration: int
    nfev: int
    best_fitness: float
    best_x: np.ndarray
    elapsed: float
    run: int = 0


@dataclass
class OptimizeResult:
    x: np.ndarray
    fun: float
    method: str
    nit: int
    nfev: int
    elapsed: float
    feasible: bool
    message: str
    history: list[float] = field(default_factory=list)  # best fitness after each iteration
    runs: list[dict] = field(default_factory=list)  # per start, for multi-start

    def to_dict(self) -> dict:
        return {"x": self.x.tolist(), "fun": self.fun, "method": self.method, "nit": self.nit,
                "nfev": self.nfev, "elapsed": self.elapsed, "feasible": self.feasible,
                "message": self.message, "runs": self.runs}


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class SLSQPOptions:
    max_iter: int = 200
    ftol: float = 1e-7
    fd_step: float = 1e-6  # relative forward-difference step
    # Pass the box to SLSQP too. Switch off when linear constraints already bound every variable:
    # the redundant rows can make SLSQP's subproblem report "constraints incompatible".
    box_constraints: bool = True


@dataclass(frozen=True)
class GAOptions:
    """Chen et al. 2021 Table 2: population 20, 800 generations, crossover 0.8, mutation 0.2."""

    population: int = 20
    generations: int = 800
    crossover: float = 0.8  # probability that a selected pair is recombined
    mutation: float = 0.2  # probability that a gene of a child is mutated
    blend: float = 0.3  # BLX-alpha: children may land alpha times the parents' gap outside them
    elite: int = 1
    tournament: int = 2


@dataclass(frozen=True)
class PSOOptions:
    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    c1: float = 2.0
    c2: float = 2.0
    v_max: float = 0.2  # velocity clamp as a fraction of each bound's span


CHAOS_REGIONS = ("best", "box")
CHAOS_ACCEPTANCE = ("improve", "always")


@dataclass(frozen=True)
class ICPSOOptions:
    """Zhong et al. 2023 sections 2 and 3.1: k1 = 4, k2 = 3, w in [0.4, 0.9], c in [0.5, 2.5],
    C = 10, delta = 1. The chaotic search's M, region and acceptance rule are not (or not usably)
    given in the paper; see :func:`_chaotic_search`."""

    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    k1: float = 4.0
    k2: float = 3.0
    c_min: float = 0.5
    c_max: float = 2.5
    variance_threshold: float = 10.0  # C of eq. 15
    delta: float = 1.0  # delta of eq. 15
    target: float = 0.0  # f_d of eq. 15: the known or hoped-for optimum
    chaos_steps: int = 10  # M tent-map iterations per premature particle (not given in the paper)
    # Where eq. 18 maps the chaotic sequence back: "best" = a box of half-width chaos_radius x span
    # around the swarm's best position (a chaotic local search); "box" = the variable's whole domain,
    # eq. 18 as printed (measured: in 30 dimensions its points are never better than the particle).
    chaos_region: str = "best"
    chaos_radius: float = 0.01
    # "improve": a particle moves to the best point of its chaotic sequence X^0..X^M (X^0 is the
    # particle itself, eq. 17), so it never gets worse; "always": the best of X^1..X^M replaces it.
    chaos_acceptance: str = "improve"
    v_max: float = 0.2

    def __post_init__(self):
        if self.chaos_region not in CHAOS_REGIONS:
            raise ValueError(f"chaos_region: expected one of {list(CHAOS_REGIONS)}, got {self.chaos_region!r}")
        if self.chaos_acceptance not in CHAOS_ACCEPTANCE:
            raise ValueError(f"chaos_acceptance: expected one of {list(CHAOS_ACCEPTANCE)}, "
                             f"got {self.chaos_acceptance!r}")
        if not 0.0 < self.chaos_radius <= 1.0:
            raise ValueError(f"chaos_radius: must be in (0, 1] (a fraction of each bound's span), got "
                             f"{self.chaos_radius}")
        if self.chaos_steps < 0:
            raise ValueError(f"chaos_steps: must be >= 0, got {self.chaos_steps}")


@dataclass(frozen=True)
class APSOOptions:
    """Zhong et al. 2023's baseline "APSO", read as the paper's adaptive parameter strategy alone.

    The paper names APSO and LPSO without defining them, but states that all three methods share
    c in [0.5, 2.5] and w in [0.4, 0.9] while only ICPSO has C and delta (section 3.1), and
    section 2.2 is titled "adaptive dynamic control parameter strategy". APSO is therefore ICPSO's
    eqs. 11-13 without the premature test and chaotic search of section 2.3: the comparison
    ICPSO vs APSO measures what the chaotic search adds."""

    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    k1: float = 4.0
    k2: float = 3.0
    c_min: float = 0.5
    c_max: float = 2.5
    v_max: float = 0.2


@dataclass(frozen=True)
class LPSOOptions:
    """Zhong et al. 2023's baseline "LPSO", read as PSO with linearly varied parameters over the
    ranges the paper gives all three methods: w falls linearly 0.9 -> 0.4, c1 falls 2.5 -> 0.5 and
    c2 rises 0.5 -> 2.5 (the "large c1 early, large c2 late" of section 2.2.2 as a schedule; the
    time-varying acceleration coefficients of Ratnaweera et al. 2004 use the same ranges)."""

    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    c_min: float = 0.5
    c_max: float = 2.5
    v_max: float = 0.2


@dataclass(frozen=True)
class WSOOptions:
    """Ni et al. 2024 section 3 and 4: 150 sharks, 3000 iterations, a in [0.5, 1.5], tau = 4.125,
    f in [0.07, 0.75], alpha0 = 6.25, alpha1 = 100, a2 (eq. 27) = 0.005."""

    population: int = 150
    iterations: int = 3000
    a_min: float = 0.5
    a_max: float = 1.5
    acceleration: float = 4.125  # tau of eq. 18
    f_min: float = 0.07
    f_max: float = 0.75
    alpha0: float = 6.25
    alpha1: float = 100.0
    school_a2: float = 0.005  # the a2 of eq. 27 (not the a2 of eq. 17)


@dataclass(frozen=True)
class GridOptions:
    points: int = 400  # per free coordinate, capped so that points ** free <= max_evaluations
    max_evaluations: int = 200_000
    batch: int = 2000  # candidates per fitness call
    refine_rounds: int = 4  # zoom: +- 2 cells around the best, refine_points per coordinate
    refine_points: int = 21
    max_free: int = 3


DEFAULT_OPTIONS = {"slsqp": SLSQPOptions(), "ga": GAOptions(), "pso": PSOOptions(), "icpso": ICPSOOptions(),
                   "wso": WSOOptions(), "apso": APSOOptions(), "lpso": LPSOOptions(),
                   "grid": GridOptions()}


def default_options(method: str):
    if method not in DEFAULT_OPTIONS:
        raise ValueError(f"method: unknown optimizer {method!r}; expected one of {list(ALL_METHODS)}")
    return DEFAULT_OPTIONS[method]


# --------------------------------------------------------------------------- shared machinery


class _Stop(Exception):
    pass


class _Evaluator:
    """Counts evaluations, applies repair and constraints, and remembers the best point seen."""

    def __init__(self, fitness: PopulationFitness, bounds: Bounds, constraints: Sequence, repair,
                 time_limit: float | None, tolerance: float = 0.0):
        self.fitness = fitness
        # total violation (constraint units) a point may have and still count as feasible: 0 for the
        # metaheuristics (Deb's rules rank any violation as infeasible), SLSQP's own `ftol` for SLSQP,
        # which declares convergence once the summed violation is below it (scipy's `acc`)
        self.tolerance = float(tolerance)
        self.bounds = bounds
        self.constraints = tuple(constraints)
        self.repair = repair
        self.nfev = 0
        self.best_x: np.ndarray | None = None
        self.best_f = np.inf  # ranked value (feasible fitness, or offset + violation)
        self.best_raw = np.inf  # the fitness itself at best_x
        self.t0 = time.perf_counter()
        self.deadline = None if time_limit is None else self.t0 + float(time_limit)

    def prepare(self, X: np.ndarray) -> np.ndarray:
        X = self.bounds.clip(np.atleast_2d(np.asarray(X, float)))
        if self.repair is not None:
            X = self.bounds.clip(np.asarray(self.repair(X), float))
        return X

    def violation(self, X: np.ndarray) -> np.ndarray:
        total = np.zeros(X.shape[0])
        for c in self.constraints:
            total += c.violation(X)
        return total

    def ranked(self, X: np.ndarray) -> np.ndarray:
        """Fitness with Deb's feasibility rules folded in; updates the incumbent."""
        F = np.asarray(self.fitness(X), float).reshape(X.shape[0])
        self.nfev += X.shape[0]
        F = np.where(np.isfinite(F), F, INFEASIBLE_OFFSET / 2)  # NaN/inf: worse than any real value
        viol = self.violation(X)
        R = np.where(viol > 0, INFEASIBLE_OFFSET + viol, F)
        k = int(np.argmin(R))
        if R[k] < self.best_f:
            self.best_f, self.best_raw = float(R[k]), float(F[k])
            self.best_x = X[k].copy()
        return R

    def is_feasible(self, x: np.ndarray) -> bool:
        return bool(self.violation(np.asarray(x, float)[None])[0] <= self.tolerance)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def _notify(callback, method, it, ev: _Evaluator, run: int) -> None:
    if callback is None:
        return
    stop = callback(Progress(method, it, ev.nfev, ev.best_f, None if ev.best_x is None else ev.best_x.copy(),
                             ev.elapsed, run))
    if stop:
        raise _Stop


# --------------------------------------------------------------------------- SLSQP


def _slsqp(ev: _Evaluator, x0, opts: SLSQPOptions, rng, callback, run, history) -> tuple[int, str]:
    import scipy.optimize

    lo, hi = ev.bounds.lower, ev.bounds.upper
    x0 = ev.prepare(ev.bounds.sample(rng, 1) if x0 is None else x0)[0]
    last: dict = {}  # the most recent point and its fitness: SLSQP asks for jac at the point it just evaluated

    def steps(x):
        # forward steps that stay inside the bounds (step backwards at an upper bound)
        h = opts.fd_step * np.maximum(1.0, np.abs(x))
        return np.where(x + h > hi, -h, h)

    def value(x) -> float:
        key = x.tobytes()
        if last.get("key") != key:
            f = float(np.asarray(ev.fitness(x[None]), float)[0])
            ev.nfev += 1
            last.update(key=key, f=f if np.isfinite(f) else INFEASIBLE_OFFSET)
        return last["f"]

    def fun(x):
        f = value(x)
        if f < ev.best_f and ev.is_feasible(x):
            ev.best_f, ev.best_raw, ev.best_x = f, f, x.copy()
        return f

    def jac(x):
        f0 = value(x)
        h = steps(x)
        F = np.asarray(ev.fitness(x + np.diag(h)), float)  # the dim perturbed points in one call
        ev.nfev += x.size
        F = np.where(np.isfinite(F), F, INFEASIBLE_OFFSET)
        return (F - f0) / h

    cons = []
    for c in ev.constraints:
        if isinstance(c, LinearConstraint):
            A, ub = c.A, c.ub
            cons.append({"type": "ineq", "fun": lambda x, A=A, ub=ub: ub - A @ x, "jac": lambda x, A=A: -A})
        else:
            def g(x, c=c):
                return -np.asarray(c.fun(x[None]), float)[0]

            def g_jac(x, c=c):
                h = steps(x)
                X = np.vstack([x, x + np.diag(h)])
                G = np.asarray(c.fun(X), float)
                return -(G[1:] - G[0]).T / h

            cons.append({"type": "ineq", "fun": g, "jac": g_jac})
    it = [0]

    def on_iteration(xk):
        it[0] += 1
        history.append(float(fun(xk)))
        _notify(callback, "slsqp", it[0], ev, run)
        if ev.out_of_time():
            raise _Stop

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = scipy.optimize.minimize(fun, x0, jac=jac, method="SLSQP",
                                          bounds=list(zip(lo, hi)) if opts.box_constraints else None,
                                          constraints=cons, callback=on_iteration,
                                          options={"maxiter": opts.max_iter, "ftol": opts.ftol})
        fun(res.x)  # let the final iterate compete for the incumbent
        return int(res.nit), str(res.message)
    except _Stop:
        return it[0], "stopped (callback or time limit)"


# --------------------------------------------------------------------------- GA


def _ga(ev: _Evaluator, x0, opts: GAOptions, rng, callback, run, history) -> tuple[int, str]:
    pop, dim = opts.population, ev.bounds.dim
    if pop < 2:
        raise ValueError("ga: population must be >= 2")
    X = ev.bounds.sample(rng, pop)
    if x0 is not None:
        X[0] = x0
    X = ev.prepare(X)
    F = ev.ranked(X)
    span = ev.bounds.span
    for gen in range(1, opts.generations + 1):
        order = np.argsort(F)
        elite = X[order[: opts.elite]]
        # tournament selection: the best of `tournament` random individuals, twice per child pair
        contestants = rng.integers(0, pop, size=(pop, opts.tournament))
        parents = X[contestants[np.arange(pop), np.argmin(F[contestants], axis=1)]]
        p1, p2 = parents[0::2], parents[1::2]
        m = min(len(p1), len(p2))
        p1, p2 = p1[:m], p2[:m]
        u = rng.uniform(-opts.blend, 1 + opts.blend, size=(m, dim))
        cross = rng.random(m) < opts.crossover
        c1 = np.where(cross[:, None], p1 + u * (p2 - p1), p1)
        c2 = np.where(cross[:, None], p2 + u * (p1 - p2), p2)
        children = np.vstack([c1, c2, parents[2 * m:]])[: pop - opts.elite]
        # Gaussian mutation whose width shrinks over the run: exploration first, refinement later
        sigma = span * (0.1 * (1 - gen / opts.generations) + 0.01)
        mutate = rng.random(children.shape) < opts.mutation
        children = children + mutate * rng.normal(size=children.shape) * sigma
        X = ev.prepare(np.vstack([elite, children]))
        F = ev.ranked(X)
        history.append(ev.best_f)
        _notify(callback, "ga", gen, ev, run)
        if ev.out_of_time():
            return gen, "stopped (time limit)"
    return opts.generations, "generation limit reached"


# --------------------------------------------------------------------------- exhaustive grid


def free_coordinates(bounds: Bounds) -> np.ndarray:
    """Indices of coordinates whose box has a real width (a pinned one spans <= 1e-7 relative)."""
    scale = np.maximum(1.0, np.maximum(np.abs(bounds.lower), np.abs(bounds.upper)))
    return np.flatnonzero(bounds.span > 1e-7 * scale)


def _grid(ev: _Evaluator, x0, opts: GridOptions, rng, callback, run, history) -> tuple[int, str]:
    free = free_coordinates(ev.bounds)
    d = free.size
    if d > opts.max_free:
        raise ValueError(f"grid: {d} free coordinates; the exhaustive search is for at most {opts.max_free}")
    center = (ev.bounds.lower + ev.bounds.upper) / 2.0
    if d == 0:
        ev.ranked(ev.prepare(center[None]))
        return 1, "no free coordinate: the only point was evaluated"
    k = int(max(2, min(opts.points, math.floor(opts.max_evaluations ** (1.0 / d) + 1e-9))))
    lo, hi = ev.bounds.lower[free], ev.bounds.upper[free]
    batches = [0]

    def evaluate(axes):
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
        for start in range(0, mesh.shape[0], opts.batch):
            X = np.broadcast_to(center, (min(opts.batch, mesh.shape[0] - start), center.size)).copy()
            X[:, free] = mesh[start:start + opts.batch]
            ev.ranked(ev.prepare(X))
            batches[0] += 1
            history.append(ev.best_f)
            _notify(callback, "grid", batches[0], ev, run)
            if ev.out_of_time():
                raise _Stop

    try:
        evaluate([np.linspace(lo[i], hi[i], k) for i in range(d)])
        cell = (hi - lo) / (k - 1)
        for _ in range(opts.refine_rounds):
            best = ev.best_x[free]
            evaluate([np.linspace(max(lo[i], best[i] - 2 * cell[i]), min(hi[i], best[i] + 2 * cell[i]),
                                  opts.refine_points) for i in range(d)])
            cell = cell * 4.0 / (opts.refine_points - 1)
    except _Stop:
        return batches[0], "stopped (callback or time limit)"
    return batches[0], f"grid of {k} points per free coordinate ({d} free), {opts.refine_rounds} refinements"


# --------------------------------------------------------------------------- PSO and ICPSO


def _swarm_init(ev: _Evaluator, x0, pop: int, rng):
    X = ev.bounds.sample(rng, pop)
    if x0 is not None:
        X[0] = x0
    X = ev.prepare(X)
    V = (rng.random(X.shape) - 0.5) * ev.bounds.span * 0.1
    F = ev.ranked(X)
    return X, V, F, X.copy(), F.copy()


def icpso_inertia(t: int, T: int, w_min: float, w_max: float, k1: float, k2: float) -> float:
    """Zhong et al. 2023 eq. 11: w = w_max - (w_max - w_min) tanh(k1 t / T)^k2 (slow, fast, slow)."""
    return w_max - (w_max - w_min) * np.tanh(k1 * t / T) ** k2


def icpso_learning_factors(F: np.ndarray, c_min: float, c_max: float) -> tuple[np.ndarray, np.ndarray]:
    """Zhong et al. 2023 eqs. 12-13, re-derived from the garbled OCR.

    f_low is the mean fitness of the particles at or below the lower quartile, f_avg the
    population mean. A particle at f_low or better gets c1 = c_max, c2 = c_min (trust its own
    memory, keep exploring); one at f_avg or worse gets c1 = c_min, c2 = c_max (follow the
    swarm's best); in between both vary linearly.
    """
    q1 = np.quantile(F, 0.25)
    f_low = float(F[F <= q1].mean())
    f_avg = float(F.mean())
    if f_avg - f_low <= 1e-300:
        r = np.full(F.shape, 0.5)  # all equal: no particle is better than average
    else:
        r = np.clip((F - f_low) / (f_avg - f_low), 0.0, 1.0)
    c1 = c_max - (c_max - c_min) * r
    c2 = c_min + (c_max - c_min) * r
    return c1, c2


def is_premature(F: np.ndarray, best: float, target: float, variance_threshold: float, delta: float) -> bool:
    """Zhong et al. 2023 eqs. 14-15: fitness variance (of the feasible particles) below C while the
    best is still delta above the target."""
    return premature_variance(F) < variance_threshold and best - target > delta


def tent_map_sequence(X01: np.ndarray, steps: int) -> np.ndarray:
    """Zhong et al. 2023 eq. 16 iterated ``steps`` times from each row of X01 (values in [0, 1]):
    X <- 2X if X < 0.5 else 2(1 - X). Returns (steps, *X01.shape)."""
    out = np.empty((steps,) + X01.shape)
    x = np.clip(X01, 0.0, 1.0)
    for m in range(steps):
        x = np.where(x < 0.5, 2.0 * x, 2.0 * (1.0 - x))
        out[m] = x
    return out


def premature_variance(F: np.ndarray) -> float:
    """Eq. 14's fitness variance s^2 (1/Size normalised) over the feasible particles: an infeasible
    particle is ranked at INFEASIBLE_OFFSET + violation, a number that says nothing about how the
    swarm has converged. With fewer than two feasible particles the swarm has not converged: inf."""
    feasible = F[F < INFEASIBLE_OFFSET]
    if feasible.size < 2:
        return float("inf")
    return float(np.mean((feasible - feasible.mean()) ** 2))


def _pso(ev: _Evaluator, x0, opts, rng, callback, run, history, variant: str) -> tuple[int, str]:
    """PSO (eq. 10 of Zhong et al. 2023) with the parameter schedule of ``variant``: "pso"
    (linear w, constant c), "lpso" (linear w and c), "apso" (eqs. 11-13) or "icpso" (eqs. 11-13
    plus the premature test and chaotic search of eqs. 14-18)."""
    pop, T = opts.population, opts.iterations
    X, V, F, P, PF = _swarm_init(ev, x0, pop, rng)
    vmax = opts.v_max * ev.bounds.span
    g = int(np.argmin(PF))
    chaos_events = improved = premature_particles = 0  # reported: is the chaotic search doing anything?
    for t in range(1, T + 1):
        if variant in ("icpso", "apso"):
            w = icpso_inertia(t, T, opts.w_min, opts.w_max, opts.k1, opts.k2)
            c1, c2 = icpso_learning_factors(F, opts.c_min, opts.c_max)
            c1, c2 = c1[:, None], c2[:, None]
        elif variant == "lpso":
            w = opts.w_max - (opts.w_max - opts.w_min) * t / T
            c1 = opts.c_max - (opts.c_max - opts.c_min) * t / T
            c2 = opts.c_min + (opts.c_max - opts.c_min) * t / T
        else:
            w = opts.w_max - (opts.w_max - opts.w_min) * t / T
            c1, c2 = opts.c1, opts.c2
        r1, r2 = rng.random(X.shape), rng.random(X.shape)
        V = np.clip(w * V + c1 * r1 * (P - X) + c2 * r2 * (P[g] - X), -vmax, vmax)  # eq. 10
        X = ev.prepare(X + V)
        F = ev.ranked(X)
        better = F < PF
        P[better], PF[better] = X[better], F[better]
        g = int(np.argmin(PF))
        if variant == "icpso" and opts.chaos_steps > 0 and is_premature(
                F, float(PF[g]), opts.target, opts.variance_threshold, opts.delta):
            chaos_events += 1
            X, F, moved, considered = _chaotic_search(ev, X, F, P[g], opts, rng)
            improved += moved
            premature_particles += considered
            better = F < PF
            P[better], PF[better] = X[better], F[better]
            g = int(np.argmin(PF))
        history.append(ev.best_f)
        _notify(callback, variant, t, ev, run)
        if ev.out_of_time():
            return t, "stopped (time limit)"
    msg = "iteration limit reached"
    if variant == "icpso":
        msg += (f"; chaotic search ran in {chaos_events} of {T} iterations and improved {improved} of "
                f"{premature_particles} premature particles")
    return T, msg


def _chaotic_search(ev: _Evaluator, X: np.ndarray, F: np.ndarray, best: np.ndarray, opts: ICPSOOptions, rng):
    """Zhong et al. 2023 eqs. 16-18 for the particles whose fitness is above the upper quartile.

    Each such particle is mapped to [0, 1] over the variables' domain (eq. 17) and iterated M
    times by the tent map (eq. 16); eq. 18 maps the sequence back and the best point replaces the
    particle. Printed literally (the whole domain, unconditional replacement) this is a random
    restart of a quarter of the swarm: on the paper's 30-dimensional benchmarks 98-100 % of the
    replaced particles got worse (bench/icpso/run.py --ablation), and the ICPSO lost to its own
    parameter strategy without chaos. Two readings fix that and are the defaults:

    - acceptance ("improve"): the sequence starts at X^0, the particle itself (eq. 17), so its best
      point is never worse than the particle; "always" keeps the printed reading;
    - region ("best"): eq. 18 maps back into a box of half-width ``chaos_radius`` x span around
      the swarm's best position instead of the whole domain: a chaotic *local* search where the
      swarm stalled, as in the chaotic PSOs the paper builds on (its refs. 5-6). "box" is the
      printed whole-domain map.

    Tent orbits in floating point collapse onto 0 from dyadic values (a particle clipped to a
    bound maps to exactly 0 or 1); such points are re-seeded uniformly so that M distinct points
    are tried. Returns (X, F, particles the sequence improved, particles considered).
    """
    worst = np.flatnonzero(F > np.quantile(F, 0.75))
    steps = opts.chaos_steps
    if worst.size == 0 or steps < 1:
        return X, F, 0, 0
    lo, span = ev.bounds.lower, ev.bounds.span
    z = np.clip((X[worst] - lo) / span, 0.0, 1.0)  # eq. 17
    seq = np.empty((steps,) + z.shape)
    for m in range(steps):
        stuck = (z <= 0.0) | (z >= 1.0)
        if stuck.any():
            z = np.where(stuck, rng.random(z.shape), z)
        z = np.where(z < 0.5, 2.0 * z, 2.0 * (1.0 - z))  # eq. 16
        seq[m] = z
    if opts.chaos_region == "box":
        points = lo + seq * span  # eq. 18 as printed
    else:
        radius = opts.chaos_radius * span
        points = best + radius * (2.0 * seq - 1.0)  # eq. 18 into the neighbourhood of the best
    candidates = ev.prepare(points.reshape(-1, X.shape[1]))
    Fc = ev.ranked(candidates).reshape(steps, worst.size)
    pick = np.argmin(Fc, axis=0)
    cols = np.arange(worst.size)
    newX = candidates.reshape(steps, worst.size, -1)[pick, cols]
    newF = Fc[pick, cols]
    improves = newF < F[worst]
    accept = improves if opts.chaos_acceptance == "improve" else np.ones(worst.size, bool)
    X, F = X.copy(), F.copy()
    X[worst[accept]], F[worst[accept]] = newX[accept], newF[accept]
    return X, F, int(np.count_nonzero(improves)), int(worst.size)


# --------------------------------------------------------------------------- WSO (Ni et al. 2024)


def wso_weights(k: int, K: int, a_min: float, a_max: float) -> tuple[float, float]:
    """Ni et al. 2024 eqs. 16-17: the pulls towards the global best (a1: 2.5 -> 1.5) and towards a
    shark's memory (a2: 1.5 -> 0.5) both decay as exp(-(4k/K)^2)."""
    decay = float(np.exp(-((4.0 * k / K) ** 2)))
    return a_max + (a_max - a_min) * decay, a_min + (a_max - a_min) * decay


def wso_constriction(acceleration: float) -> float:
    """Ni et al. 2024 eq. 18: mu = 2 / |2 - tau - sqrt(tau^2 - 4 tau)| (0.7034 for tau = 4.125)."""
    t = float(acceleration)
    if t * t - 4 * t < 0:
        raise ValueError(f"wso: acceleration tau must be >= 4 (or <= 0) for a real constriction factor, got {t}")
    return 2.0 / abs(2.0 - t - np.sqrt(t * t - 4.0 * t))


def wso_frequency(f_min: float, f_max: float) -> float:
    """Ni et al. 2024 eq. 23: the wavy-motion frequency f = f_min + (f_max - f_min) / (f_max + f_min)."""
    return f_min + (f_max - f_min) / (f_max + f_min)


def wso_movement_force(k: int, K: int, alpha0: float, alpha1: float) -> float:
    """Ni et al. 2024 eq. 24: mv = 1 / (alpha0 + exp((K/2 - k) / alpha1)); ~0 early, 1/(alpha0 + e^-K/2a1) late."""
    return 1.0 / (alpha0 + float(np.exp(min((K / 2.0 - k) / alpha1, 700.0))))


def wso_school_strength(k: int, K: int, a2: float) -> float:
    """Ni et al. 2024 eq. 27: S_s = |1 - exp(-a2 k / K)|."""
    return abs(1.0 - float(np.exp(-a2 * k / K)))


def wso_velocity(V, X, gbest, remembered, a1: float, a2: float, mu: float, c1, c2) -> np.ndarray:
    """Ni et al. 2024 eq. 15: v <- mu [v + a1 (p_gbest - p) c1 + a2 (p_best^nu - p) c2], with c1, c2
    uniform in [0, 1] and p_best^nu the best position remembered by shark nu (the memory term)."""
    return mu * (V + a1 * (gbest - X) * c1 + a2 * (remembered - X) * c2)


def wso_school(X, towards_best, r) -> np.ndarray:
    """Ni et al. 2024 eq. 28, the fish-school move: p <- (p + p~) / (2 rand), p~ the eq. 25 move.
    Dividing by rand (not multiplying) is what throws sharks far out when rand is small."""
    return (X + towards_best) / (2.0 * np.maximum(r, 1e-12))


def _wso(ev: _Evaluator, x0, opts: WSOOptions, rng, callback, run, history) -> tuple[int, str]:
    """White Shark Optimizer, Ni et al. 2024 eqs. 12-28 (re-derived where the OCR is garbled).

    Two readings needed a decision. (i) The memory term of eq. 15 is printed with superscript
    nu_k^i: the best position remembered by a randomly drawn shark nu (the text's gloss says "the
    i-th shark's own best"; the superscript is kept). (ii) eq. 19 prints the re-placement branch for
    rand > mv. The text below it says a large mv *prohibits* search; that holds only when the
    re-placement (which moves in-bounds sharks nowhere) is the rand < mv branch, so that order is used.
    As in the WSO, sharks outside the box are not evaluated and keep their memory until re-placed.
    """
    n, K = opts.population, opts.iterations
    if n < 2 or K < 1:
        raise ValueError("wso: population must be >= 2 and iterations >= 1")
    lo, hi = ev.bounds.lower, ev.bounds.upper
    X = ev.bounds.sample(rng, n)  # eq. 13
    if x0 is not None:
        X[0] = x0
    X = ev.prepare(X)
    V = np.zeros_like(X)
    memory, memory_f = X.copy(), ev.ranked(X)
    g = int(np.argmin(memory_f))
    mu = wso_constriction(opts.acceleration)
    f = wso_frequency(opts.f_min, opts.f_max)
    rows = np.arange(n)
    for k in range(1, K + 1):
        a1, a2 = wso_weights(k, K, opts.a_min, opts.a_max)
        mv = wso_movement_force(k, K, opts.alpha0, opts.alpha1)
        ss = wso_school_strength(k, K, opts.school_a2)
        gbest = memory[g]
        nu = rng.integers(0, n, size=n)
        V = wso_velocity(V, X, gbest, memory[nu], a1, a2, mu, rng.random(X.shape), rng.random(X.shape))  # eq. 15
        above, below = X > hi, X < lo  # eqs. 20-21
        outside = above ^ below  # eq. 22
        replace_rows = rng.random(n) < mv
        replaced = np.where(outside, 0.0, X) + hi * above + lo * below
        X = np.where(replace_rows[:, None], replaced, X + V / f)  # eq. 19
        # eqs. 25-28, per coordinate with probability S_s: shark 1 moves to the best shark (eq. 25),
        # the others average that move with where they are (fish school, eq. 28)
        school = rng.random(X.shape) < ss
        if school.any():
            D = np.abs(rng.random(X.shape) * (gbest - X))  # eq. 26
            towards_best = gbest + rng.random(X.shape) * D * np.sign(rng.random(X.shape) - 0.5)  # eq. 25
            schooled = wso_school(X, towards_best, rng.random(X.shape))  # eq. 28
            schooled[0] = towards_best[0]
            X = np.where(school, schooled, X)
        inside = rows[np.all((X >= lo) & (X <= hi), axis=1)]
        if inside.size:
            Xin = ev.prepare(X[inside])
            X[inside] = Xin
            F = ev.ranked(Xin)
            better = F < memory_f[inside]
            memory[inside[better]], memory_f[inside[better]] = Xin[better], F[better]
            g = int(np.argmin(memory_f))
        history.append(ev.best_f)
        _notify(callback, "wso", k, ev, run)
        if ev.out_of_time():
            return k, "stopped (time limit)"
    return K, "iteration limit reached"


# --------------------------------------------------------------------------- front door


def is_better(candidate: OptimizeResult, incumbent: OptimizeResult | None) -> bool:
    """The multi-start rule: feasible beats infeasible, then lower fitness; a tie keeps the incumbent
    (the earlier start), so the winner does not depend on which start finished first."""
    return incumbent is None or (candidate.feasible, -candidate.fun) > (incumbent.feasible, -incumbent.fun)


def best_of(results: Sequence[OptimizeResult]) -> OptimizeResult:
    """Combine single-start results (ordered by start index, each with its ``runs`` entry) into the
    result :func:`minimize` returns for all starts at once; ``elapsed`` is the sum of the starts'."""
    if not results:
        raise ValueError("best_of: no results to combine")
    best = None
    for r in results:
        if is_better(r, best):
            best = r
    runs = [run for r in results for run in r.runs]
    return replace(best, runs=runs, nfev=sum(r.nfev for r in results), elapsed=sum(r.elapsed for r in results))


def minimize(fitness: PopulationFitness, bounds: Bounds, method: str = "slsqp", *, seed=None, x0=None,
             options=None, constraints: Sequence = (), repair=None, callback=None, restarts: int = 1,
             time_limit: float | None = None, runs: Sequence[int] | None = None) -> OptimizeResult:
    """Minimise ``fitness`` over ``bounds`` with ``method``; see the module docstring.

    ``options`` is the method's options dataclass (defaults: :func:`default_options`).
    ``restarts`` > 1 runs independent starts (seeds spawned from ``seed``) and keeps the best;
    ``x0`` seeds the first start only. ``time_limit`` (s) bounds the whole call.
    ``runs`` (start indices, default all) runs only those of the ``restarts`` starts, each with the
    seed it has in the full run, so starts can execute on different machines and be combined by
    :func:`best_of` into the result of the full run.
    """
    method = method.lower()
    opts = default_options(method) if options is None else options
    if not isinstance(opts, type(default_options(method))):
        raise ValueError(f"options: expected {type(default_options(method)).__name__} for {method!r}, "
                         f"got {type(opts).__name__}")
    if not isinstance(bounds, Bounds):
        bounds = Bounds(*bounds)
    if int(restarts) < 1:
        raise ValueError(f"restarts: must be >= 1, got {restarts}")
    if x0 is not None:
        x0 = np.asarray(x0, float)
        if x0.shape != (bounds.dim,):
            raise ValueError(f"x0: expected {bounds.dim} values, got shape {x0.shape}")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    seeds = root.spawn(int(restarts))
    selected = range(int(restarts)) if runs is None else [int(k) for k in runs]
    if not selected or any(k < 0 or k >= int(restarts) for k in selected):
        raise ValueError(f"runs: expected start indices in [0, {int(restarts)}), got {list(selected)}")
    t_start = time.perf_counter()
    best: OptimizeResult | None = None
    run_docs = []  # not `runs`: that name is the parameter choosing the starts
    total_fev = 0
    for k in selected:
        ss = seeds[k]
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - t_start)
        if remaining is not None and remaining <= 0 and best is not None:
            break
        rng = np.random.default_rng(ss)
        ev = _Evaluator(fitness, bounds, constraints, repair, remaining,
                        tolerance=opts.ftol if method == "slsqp" else 0.0)
        history: list[float] = []
        stopped_by_user = False
        try:
            if method == "slsqp":
                nit, msg = _slsqp(ev, x0 if k == 0 else None, opts, rng, callback, k, history)
            elif method == "ga":
                nit, msg = _ga(ev, x0 if k == 0 else None, opts, rng, callback, k, history)
            elif method == "wso":
                nit, msg = _wso(ev, x0 if k == 0 else None, opts, rng, callback, k, history)
            elif method == "grid":
                nit, msg = _grid(ev, x0 if k == 0 else None, opts, rng, callback, k, history)
            else:
                nit, msg = _pso(ev, x0 if k == 0 else None, opts, rng, callback, k, history, method)
        except _Stop:
            nit, msg, stopped_by_user = len(history), "stopped by callback", True
        if ev.best_x is None:  # SLSQP never reached a feasible iterate: rank its start honestly
            ev.ranked(ev.prepare(x0 if (x0 is not None and k == 0) else bounds.sample(rng, 1)))
        feasible = bool(ev.best_f < INFEASIBLE_OFFSET and ev.is_feasible(ev.best_x))
        fun = ev.best_raw
        total_fev += ev.nfev
        result = OptimizeResult(ev.best_x, fun, method, nit, ev.nfev, ev.elapsed, feasible, msg, history)
        run_docs.append({"run": k, "fun": fun, "feasible": feasible, "nit": nit, "nfev": ev.nfev,
                         "elapsed": ev.elapsed, "message": msg})
        if is_better(result, best):
            best = result
        if stopped_by_user:
            break
    assert best is not None
    return replace(best, runs=run_docs, nfev=total_fev, elapsed=time.perf_counter() - t_start)


# --------------------------------------------------------------------------- benchmark functions


def ackley(X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    return (-20.0 * np.exp(-0.2 * np.sqrt(np.sum(X ** 2, axis=1) / d))
            - np.exp(np.sum(np.cos(2.0 * np.pi * X), axis=1) / d) + 20.0 + np.e)


def griewank(X: np.ndarray) -> np.ndarray:
    i = np.arange(1, X.shape[1] + 1)
    return np.sum(X ** 2, axis=1) / 4000.0 - np.prod(np.cos(X / np.sqrt(i)), axis=1) + 1.0


def schwefel_222(X: np.ndarray) -> np.ndarray:
    a = np.abs(X)
    return a.sum(axis=1) + a.prod(axis=1)


def schwefel_221(X: np.ndarray) -> np.ndarray:
    return np.abs(X).max(axis=1)


def quartic_with_noise(rng: np.random.Generator) -> PopulationFitness:
    def f(X: np.ndarray) -> np.ndarray:
        i = np.arange(1, X.shape[1] + 1)
        return np.sum(i * X ** 4, axis=1) + rng.random(X.shape[0])

    return f


# Zhong et al. 2023 Table 1: name, search range [-r, r] per variable; theoretical optimum 0 for all.
BENCHMARK_FUNCTIONS = {"F1": ("Ackley", 32.768), "F2": ("Griewank", 600.0), "F3": ("Schwefel 2.22", 10.0),
                       "F4": ("Schwefel 2.21", 100.0), "F5": ("Quartic with noise", 1.28)}


def benchmark(name: str, dim: int = 30, rng: np.random.Generator | None = None) -> tuple[PopulationFitness, Bounds]:
    """Fitness and bounds of one of the Table 1 functions F1..F5 in ``dim`` dimensions (F5 draws its
    noise from ``rng``)."""
    if name not in BENCHMARK_FUNCTIONS:
        raise ValueError(f"benchmark: unknown function {name!r}; expected one of {list(BENCHMARK_FUNCTIONS)}")
    r = BENCHMARK_FUNCTIONS[name][1]
    fitness = {"F1": ackley, "F2": griewank, "F3": schwefel_222, "F4": schwefel_221}.get(name)
    if fitness is None:
        fitness = quartic_with_noise(np.random.default_rng() if rng is None else rng)
    return fitness, Bounds(np.full(dim, -r), np.full(dim, r))
