"""The pieces every optimizer shares: the population-fitness form, the box, constraints, progress
reports, the result, and the evaluator that counts evaluations, applies repair and ranks by Deb's
feasibility rules (any feasible point beats any infeasible one)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

PopulationFitness = Callable[[np.ndarray], np.ndarray]


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
    time_left: float | None = None  # s until the time limit (None: no limit)


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


# --------------------------------------------------------------------------- shared machinery


class _Stop(Exception):
    pass


class OutOfTime(_Stop):
    """The time limit passed: raised at the first evaluation after the deadline, and by a fitness
    that checks the deadline itself between parts of one population (``minimize`` catches it and
    returns the best point so far)."""


class Heartbeat:
    """``emit(progress)`` from inside the evaluations, at the first one and then whenever ``every_s``
    of ``clock`` time has passed since the last. An optimizer iteration can take minutes on a loaded
    host (an SLSQP iteration is a line search plus a finite-difference gradient), so a per-iteration
    callback alone can leave the user without news for that long."""

    def __init__(self, emit: Callable[[Progress], None], every_s: float = 5.0):
        if not every_s > 0:
            raise ValueError(f"heartbeat every_s: must be > 0, got {every_s}")
        self.emit = emit
        self.every_s = float(every_s)
        self.next_at: float | None = None
        self.beats = 0

    def tick(self, now: float, ev: "_Evaluator") -> None:
        if self.next_at is not None and now < self.next_at:
            return
        self.next_at = now + self.every_s
        self.beats += 1
        self.emit(ev.progress(now))


class _Evaluator:
    """Counts evaluations, applies repair and constraints, and remembers the best point seen.

    The time limit is judged on ``clock`` (wall time: it is the user's time) at every evaluation,
    inside the optimizers' inner loops (:meth:`checkpoint`), not once per iteration: an iteration
    can be long. ``deadline`` (on ``clock``) overrides ``time_limit`` when given, so several starts
    share one deadline."""

    def __init__(self, fitness: PopulationFitness, bounds: Bounds, constraints: Sequence, repair,
                 time_limit: float | None, tolerance: float = 0.0, *, clock: Callable[[], float] = time.monotonic,
                 deadline: float | None = None, heartbeat: Heartbeat | None = None, method: str = "",
                 run: int = 0, history: list | None = None):
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
        self.clock = clock
        self.t0 = clock()
        if deadline is None and time_limit is not None:
            deadline = self.t0 + float(time_limit)
        self.deadline = deadline
        self.heartbeat = heartbeat
        self.method = method
        self.run = run
        self.history = history if history is not None else []

    def checkpoint(self) -> None:
        """Before each evaluation: the heartbeat, then the time limit. Raises OutOfTime once the
        deadline has passed and at least one point was evaluated (a run always has a best point)."""
        now = self.clock()
        if self.heartbeat is not None:
            self.heartbeat.tick(now, self)
        if self.deadline is not None and now > self.deadline and self.nfev > 0:
            raise OutOfTime

    def progress(self, now: float | None = None) -> Progress:
        now = self.clock() if now is None else now
        return Progress(self.method, len(self.history), self.nfev, self.best_f,
                        None if self.best_x is None else self.best_x.copy(), now - self.t0, self.run,
                        None if self.deadline is None else max(0.0, self.deadline - now))

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

    def ranked(self, X: np.ndarray, check: bool = True) -> np.ndarray:
        """Fitness with Deb's feasibility rules folded in; updates the incumbent. ``check``: pass the
        :meth:`checkpoint` first (False only for the one evaluation that ranks a start with no point)."""
        if check:
            self.checkpoint()
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
        return self.deadline is not None and self.clock() > self.deadline

    @property
    def elapsed(self) -> float:
        return self.clock() - self.t0


def _notify(callback, method, it, ev: _Evaluator, run: int) -> None:
    if callback is None:
        return
    now = ev.clock()
    stop = callback(Progress(method, it, ev.nfev, ev.best_f, None if ev.best_x is None else ev.best_x.copy(),
                             now - ev.t0, run, None if ev.deadline is None else max(0.0, ev.deadline - now)))
    if stop:
        raise _Stop
