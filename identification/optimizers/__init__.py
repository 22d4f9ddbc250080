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
             :func:`.swarm._chaotic_search` for the two readings that make it work, with measurements).
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

import time
from dataclasses import replace
from typing import Sequence

import numpy as np

from .benchmarks import BENCHMARK_FUNCTIONS, ackley, benchmark, griewank, quartic_with_noise, schwefel_221, schwefel_222
from .genetic import _ga
from .local import _grid, _slsqp, free_coordinates
from .options import (ALL_METHODS, CHAOS_ACCEPTANCE, CHAOS_REGIONS, DEFAULT_OPTIONS, METHODS, APSOOptions, GAOptions,
                      GridOptions, ICPSOOptions, LPSOOptions, PSOOptions, SLSQPOptions, WSOOptions, default_options)
from .problem import (INFEASIBLE_OFFSET, Bounds, LinearConstraint, NonlinearConstraint, OptimizeResult,
                      Heartbeat, OutOfTime, PopulationFitness, Progress, _Evaluator, _Stop, vectorize)
from .swarm import (_pso, icpso_inertia, icpso_learning_factors, is_premature, premature_variance,
                    tent_map_sequence)
from .wso import (_wso, wso_constriction, wso_frequency, wso_movement_force, wso_school, wso_school_strength, wso_velocity,
                  wso_weights)

# the one interface: minimize and its pieces, plus the formulas the tests check one by one
__all__ = ["ALL_METHODS", "APSOOptions", "BENCHMARK_FUNCTIONS", "Bounds", "CHAOS_ACCEPTANCE", "CHAOS_REGIONS",
           "DEFAULT_OPTIONS", "GAOptions", "GridOptions", "Heartbeat", "ICPSOOptions", "INFEASIBLE_OFFSET", "LPSOOptions",
           "LinearConstraint", "METHODS", "NonlinearConstraint", "OptimizeResult", "OutOfTime", "PSOOptions",
           "PopulationFitness", "Progress", "SLSQPOptions", "WSOOptions", "ackley", "benchmark", "best_of",
           "default_options", "free_coordinates", "griewank", "icpso_inertia", "icpso_learning_factors", "is_better",
           "is_premature", "minimize", "premature_variance", "quartic_with_noise", "schwefel_221", "schwefel_222",
           "tent_map_sequence", "vectorize", "wso_constriction", "wso_frequency", "wso_movement_force", "wso_school",
           "wso_school_strength", "wso_velocity", "wso_weights"]

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
             time_limit: float | None = None, runs: Sequence[int] | None = None, deadline: float | None = None,
             clock=time.monotonic, heartbeat: Heartbeat | None = None) -> OptimizeResult:
    """Minimise ``fitness`` over ``bounds`` with ``method``; see the module docstring.

    ``options`` is the method's options dataclass (defaults: :func:`default_options`).
    ``restarts`` > 1 runs independent starts (seeds spawned from ``seed``) and keeps the best;
    ``x0`` seeds the first start only. ``time_limit`` (s) bounds the whole call; ``deadline`` (a time
    on ``clock``, wall time by default) does the same for a caller whose budget began earlier, and wins
    over ``time_limit``. Both are checked before every evaluation, and the best point so far is
    returned at the first check after the deadline (message "stopped (time limit)").
    ``heartbeat`` (:class:`Heartbeat`) reports progress from inside the evaluations.
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
    t_start = clock()
    if deadline is None and time_limit is not None:
        deadline = t_start + float(time_limit)
    best: OptimizeResult | None = None
    run_docs = []  # not `runs`: that name is the parameter choosing the starts
    total_fev = 0
    for k in selected:
        ss = seeds[k]
        if deadline is not None and clock() > deadline and best is not None:
            break
        rng = np.random.default_rng(ss)
        history: list[float] = []
        ev = _Evaluator(fitness, bounds, constraints, repair, None, tolerance=opts.ftol if method == "slsqp" else 0.0,
                        clock=clock, deadline=deadline, heartbeat=heartbeat, method=method, run=k, history=history)
        stopped = False
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
        except OutOfTime:
            nit, msg, stopped = len(history), "stopped (time limit)", True
        except _Stop:
            nit, msg, stopped = len(history), "stopped by callback", True
        stopped = stopped or msg == "stopped (time limit)"
        if ev.best_x is None:  # SLSQP never reached a feasible iterate: rank its start honestly
            ev.ranked(ev.prepare(x0 if (x0 is not None and k == 0) else bounds.sample(rng, 1)), check=False)
        feasible = bool(ev.best_f < INFEASIBLE_OFFSET and ev.is_feasible(ev.best_x))
        fun = ev.best_raw
        total_fev += ev.nfev
        result = OptimizeResult(ev.best_x, fun, method, nit, ev.nfev, ev.elapsed, feasible, msg, history)
        run_docs.append({"run": k, "fun": fun, "feasible": feasible, "nit": nit, "nfev": ev.nfev,
                         "elapsed": ev.elapsed, "message": msg})
        if is_better(result, best):
            best = result
        if stopped:
            break
    assert best is not None
    return replace(best, runs=run_docs, nfev=total_fev, elapsed=clock() - t_start)
